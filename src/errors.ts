/**
 * The one catalogue of rejections. Each entry ties a stable code to the HTTP
 * status, the JSON-RPC code (family A, DECISIONS 6), the plain-text body
 * (family B, SPEC 7.2) and the retry advice. Doors render responses from it;
 * tests assert against it. Messages never contain a credential.
 */

export type Retry = 'retry_safe' | 'do_not_retry_automatically';

export interface ErrorSpec {
  /** Stable machine code; callers branch on this, never on message text. */
  readonly code: string;
  readonly http: number;
  /** JSON-RPC error code used by family A and by family B's JSON-RPC door. */
  readonly rpc: number;
  /** Human message; `{}` is replaced by the detail given at the throw site. */
  readonly message: string;
  /** Family B plain-text body (SPEC 7.2); `{}` as above. Defaults to message. */
  readonly text?: string;
  readonly retry?: Retry;
}

function spec(code: string, http: number, rpc: number, message: string, extra: Partial<ErrorSpec> = {}): ErrorSpec {
  return Object.freeze({ code, http, rpc, message, ...extra });
}

export const E = {
  // Request shape (family A codes from DECISIONS 6).
  PARSE: spec('TXR_PARSE', 400, -32700, 'Parse error: {}'),
  INVALID_REQUEST: spec('TXR_INVALID_REQUEST', 400, -32600, 'Invalid request: {}'),
  METHOD_NOT_FOUND: spec('TXR_METHOD_NOT_FOUND', 400, -32601, 'Method not found: {}'),
  INVALID_PARAMS: spec('TXR_INVALID_PARAMS', 400, -32602, 'Invalid params: {}'),
  TX_INVALID: spec('TXR_TX_INVALID', 400, -32602, 'Invalid transaction: {}', {
    retry: 'do_not_retry_automatically',
  }),
  TOO_LARGE: spec('TXR_TOO_LARGE', 413, -32013, 'Request too large: {}'),
  UNSUPPORTED_MEDIA: spec('TXR_UNSUPPORTED_MEDIA', 415, -32015, 'Unsupported Content-Type: {}'),
  NOT_FOUND: spec('TXR_NOT_FOUND', 404, -32601, 'Not found'),

  // Authentication (SPEC 7.2 bodies for family B, DECISIONS 4).
  AUTH_MISSING: spec('TXR_AUTH_MISSING', 401, -32010, 'Unauthorized: account UUID missing', {
    text: 'Not Found api-key',
  }),
  AUTH_INVALID: spec('TXR_AUTH_INVALID', 401, -32010, 'Unauthorized: account UUID not recognised', {
    text: 'Invalid Api-Key',
  }),

  // Rate limits (SPEC 7.1 -32005, SPEC 7.2 429 body; N is the TPS).
  RATE_ACCOUNT: spec('TXR_RATE_ACCOUNT', 429, -32005, 'Account rate limit: {} per second', {
    text: 'Exceed Rate Limit: {} per second',
    retry: 'retry_safe',
  }),
  RATE_IP: spec('TXR_RATE_IP', 429, -32005, 'IP rate limit: {} per second', {
    text: 'Exceed Rate Limit: {} per second',
    retry: 'retry_safe',
  }),

  // Capacity and availability (DECISIONS 6, 8).
  CAPACITY: spec('TXR_CAPACITY', 503, -32006, 'Insufficient capacity: {}', {
    text: 'Server Busy',
    retry: 'retry_safe',
  }),
  UNAVAILABLE: spec('TXR_UNAVAILABLE', 503, -32001, 'Transaction not sent: {}', {
    text: 'Upstream Unavailable',
    retry: 'retry_safe',
  }),
  DRAINING: spec('TXR_DRAINING', 503, -32001, 'Transaction not sent: node is shutting down', {
    text: 'Service Unavailable: shutting down',
    retry: 'retry_safe',
  }),
  CHECK_FAILED: spec('TXR_CHECK_FAILED', 503, -32001, 'Transaction not sent: {}', {
    text: 'Service Unavailable: transaction check failed',
    retry: 'retry_safe',
  }),
  BATCH_RECORD: spec('TXR_BATCH_RECORD', 503, -32011, 'Batch receive record could not be persisted; nothing was sent', {
    retry: 'retry_safe',
  }),

  // Family B decoding and bundle rules (SPEC 7.2, DECISIONS 6).
  SOL_DECODE: spec('TXR_SOL_DECODE', 400, -32602, 'Transaction Decode Error: {}', {
    retry: 'do_not_retry_automatically',
  }),
  BATCH_DECODE: spec('TXR_BATCH_DECODE', 605, -32602, 'Batch Decode Error: {}', {
    retry: 'do_not_retry_automatically',
  }),
  TIP_NOT_FOUND: spec('TXR_TIP_NOT_FOUND', 606, -32602, 'Tip Instruction Not Found', {
    retry: 'do_not_retry_automatically',
  }),
  TIP_TOO_LOW: spec('TXR_TIP_TOO_LOW', 607, -32602, 'Please add a minimum tip of {} lamports (batch total)', {
    retry: 'do_not_retry_automatically',
  }),

  INTERNAL: spec('TXR_INTERNAL', 500, -32603, 'Internal error'),
} as const;

export type ErrorKey = keyof typeof E;

/**
 * A rejection travelling through the pipeline: the catalogue entry plus a
 * detail for `{}`. Plain data, not an Error: it is returned, never thrown on
 * the hot path, and a refusal at the gate is made per request under
 * overload, where V8's Error constructor (a stack-frame walk even with
 * `stackTraceLimit` 0) and formatting a message nobody reads were measurable.
 * The message and the plain-text body are formatted when asked for.
 */
export class RelayError {
  readonly spec: ErrorSpec;
  readonly detail: string;
  /** Milliseconds until a retry can succeed (rate limits only). */
  readonly retryAfterMs: number;
  /** What failed underneath (a store write), for logs. */
  cause: unknown = undefined;
  /**
   * Milliseconds to hold the answer before writing it: a door shed under a
   * standing queue (`limits.shed_hold_ms`, README "Load shedding"). 0: at once.
   */
  holdMs = 0;

  constructor(s: ErrorSpec, detail = '', retryAfterMs = 0) {
    this.spec = s;
    this.detail = detail;
    this.retryAfterMs = retryAfterMs;
  }

  get code(): string {
    return this.spec.code;
  }

  get name(): string {
    return 'RelayError';
  }

  /** The catalogue message with the detail filled in. */
  get message(): string {
    return messageMemo.fill(this.spec.message, this.detail);
  }

  /** Family B plain-text body. */
  get text(): string {
    return textMemo.fill(this.spec.text ?? this.spec.message, this.detail);
  }

  toString(): string {
    return `${this.name} ${this.code}: ${this.message}`;
  }
}

function fill(template: string, detail: string): string {
  return template.includes('{}') ? template.replace('{}', detail) : template;
}

/**
 * The last filled text, reused while the same refusal repeats (a flood over
 * one limit asks for the same message per request: filling it anew was a
 * string allocation per refusal).
 */
class FillMemo {
  private template = '';
  private detail = '';
  private out = '';

  fill(template: string, detail: string): string {
    if (template === this.template && detail === this.detail) return this.out;
    this.template = template;
    this.detail = detail;
    return (this.out = fill(template, detail));
  }
}
const messageMemo = new FillMemo();
const textMemo = new FillMemo();

/** Thrown by pure decoders; doors map it to SOL_DECODE / BATCH_DECODE / TX_INVALID. */
export class DecodeError extends Error {
  constructor(message: string) {
    // Hostile input makes these by the thousand; a stack trace would only cost time.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'DecodeError';
  }
}
