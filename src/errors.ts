/**
 * The one table of every error the relay can produce (wire, admin API,
 * start-up, store): a stable code, HTTP status, JSON-RPC code, Solana
 * plain-text body and retry advice (docs/protocol.md#errors). Answers are
 * rendered from it and tests assert against it. Messages never hold a
 * credential. The thrown errors (start-up, store, admin) live here too, each
 * carrying its entry.
 */
import { RPC_UNAVAILABLE, RPC_RATE_LIMITED, type Retry } from './shared/codes.js';
import { uuidTextWords } from './shared/uuid.js';

// Shared with the client (src/shared/codes.ts), which imports nothing from the server.
export type { Retry };

export interface ErrorSpec {
  /** Stable machine code; callers branch on this, never on message text. */
  readonly code: string;
  /** The HTTP status of an answer carrying it (start-up errors: 500, never sent). */
  readonly http: number;
  readonly rpc: number;
  /** `{}` is replaced by the detail given where it is raised. */
  readonly message: string;
  /** Solana plain-text body; `{}` as above. Defaults to message. */
  readonly text?: string;
  readonly retry?: Retry;
}

function spec(code: string, http: number, rpc: number, message: string, extra: Partial<ErrorSpec> = {}): ErrorSpec {
  return Object.freeze({ code, http, rpc, message, ...extra });
}

const DO_NOT_RETRY = { retry: 'do_not_retry_automatically' } as const;
/** AUTH_MISSING's detail for a Solana call that came with only the EVM header: which one to use. */
export const SOLANA_HEADER = ' (Solana methods take the api-key header or ?api-key=; Authorization: Bearer is for EVM methods)';

/** AUTH_INVALID's detail for a credential that is not a UUID at all, not merely unknown. */
export const NOT_A_UUID = ' (not a UUID)';

export const E = {
  // Request shape.
  PARSE: spec('TXR_PARSE', 400, -32700, 'Parse error: {}'),
  INVALID_REQUEST: spec('TXR_INVALID_REQUEST', 400, -32600, 'Invalid request: {}'),
  // Found by a linear scan before any parse (docs/protocol.md#limits).
  JSON_TOO_DEEP: spec('TXR_JSON_TOO_DEEP', 400, -32600, 'Invalid request: {}'),
  METHOD_NOT_FOUND: spec('TXR_METHOD_NOT_FOUND', 400, -32601, 'Method not found: {}'),
  INVALID_PARAMS: spec('TXR_INVALID_PARAMS', 400, -32602, 'Invalid params: {}'),
  TX_INVALID: spec('TXR_TX_INVALID', 400, -32602, 'Invalid transaction: {}', DO_NOT_RETRY),
  TOO_LARGE: spec('TXR_TOO_LARGE', 413, -32013, 'Request too large: {}'),
  UNSUPPORTED_MEDIA: spec('TXR_UNSUPPORTED_MEDIA', 415, -32015, 'Unsupported Content-Type: {}'),
  // A door that is off, or a path no door or admin route serves (the admin API words it as its own).
  NOT_FOUND: spec('TXR_NOT_FOUND', 404, -32601, 'Not found'),

  // Authentication: the Solana bodies are the fixed texts its clients know.
  // Detail: how this door takes the credential, where the request came with the other family's (SOLANA_HEADER, or the doors' EVM forms).
  AUTH_MISSING: spec('TXR_AUTH_MISSING', 401, -32010, 'Unauthorized: account UUID missing{}', { text: 'Not Found api-key{}' }),
  // Detail: NOT_A_UUID where the key is not a UUID at all.
  AUTH_INVALID: spec('TXR_AUTH_INVALID', 401, -32010, 'Unauthorized: account UUID not recognised{}', { text: 'Invalid Api-Key{}' }),

  // Rate limits; `{}` is the limit in requests per second.
  RATE_ACCOUNT: spec('TXR_RATE_ACCOUNT', 429, RPC_RATE_LIMITED, 'Account rate limit: {} per second', { text: 'Exceed Rate Limit: {} per second', retry: 'retry_safe' }),
  RATE_IP: spec('TXR_RATE_IP', 429, RPC_RATE_LIMITED, 'IP rate limit: {} per second', { text: 'Exceed Rate Limit: {} per second', retry: 'retry_safe' }),

  // Capacity and availability: nothing was sent, so every one is retry-safe.
  CAPACITY: spec('TXR_CAPACITY', 503, -32006, 'Insufficient capacity: {}', { text: 'Server Busy', retry: 'retry_safe' }),
  UNAVAILABLE: spec('TXR_UNAVAILABLE', 503, RPC_UNAVAILABLE, 'Transaction not sent: {}', { text: 'Upstream Unavailable', retry: 'retry_safe' }),
  DRAINING: spec('TXR_DRAINING', 503, RPC_UNAVAILABLE, 'Transaction not sent: node is shutting down', { text: 'Service Unavailable: shutting down', retry: 'retry_safe' }),
  // 499 (nginx's "client closed request"): written nowhere, since the client is gone; counted.
  CLIENT_GONE: spec('TXR_CLIENT_GONE', 499, RPC_UNAVAILABLE, 'Transaction not sent: the client went away before its answer', { text: 'Client Closed Request', retry: 'retry_safe' }),
  CHECK_FAILED: spec('TXR_CHECK_FAILED', 503, RPC_UNAVAILABLE, 'Transaction not sent: {}', { text: 'Service Unavailable: transaction check failed', retry: 'retry_safe' }),
  BATCH_RECORD: spec('TXR_BATCH_RECORD', 503, -32011, 'Batch receive record could not be persisted; nothing was sent', { retry: 'retry_safe' }),

  // Solana decoding and bundle rules; the bundle statuses are the error codes Solana bundle clients know.
  SOL_DECODE: spec('TXR_SOL_DECODE', 400, -32602, 'Transaction Decode Error: {}', DO_NOT_RETRY),
  // -32003 is what Solana clients know a bad signature by; the plain-text doors keep the decode error's text.
  SOL_SIGNATURE: spec('TXR_SOL_SIGNATURE', 400, -32003, 'Transaction signature verification failure', {
    text: 'Transaction Decode Error: signature verification failed',
    ...DO_NOT_RETRY,
  }),
  BATCH_DECODE: spec('TXR_BATCH_DECODE', 605, -32602, 'Batch Decode Error: {}', DO_NOT_RETRY),
  // Detail: the tip accounts, added by the door's answer (answers/answer.ts).
  TIP_NOT_FOUND: spec('TXR_TIP_NOT_FOUND', 606, -32602, 'Tip Instruction Not Found{}', DO_NOT_RETRY),
  TIP_TOO_LOW: spec('TXR_TIP_TOO_LOW', 607, -32602, 'Please add a minimum tip of {} lamports (batch total)', DO_NOT_RETRY),

  // Admin API (JSON bodies `{"error":{"code","message"}}`).
  ADMIN_AUTH: spec('TXR_ADMIN_AUTH', 401, -32010, "admin bearer token missing or not this relay's"),
  ACCOUNT_INVALID: spec('TXR_ACCOUNT_INVALID', 400, -32602, '{}'),
  ACCOUNT_NOT_FOUND: spec('TXR_ACCOUNT_NOT_FOUND', 404, -32602, 'account not found'),
  // 507 Insufficient Storage: the node cannot hold another live account; nothing was stored.
  ACCOUNT_LIMIT: spec('TXR_ACCOUNT_LIMIT', 507, -32006, '{}'),
  BATCH_NOT_FOUND: spec('TXR_BATCH_NOT_FOUND', 404, -32602, 'no batch record with that id'),
  ACCOUNT_REVOKED: spec('TXR_ACCOUNT_REVOKED', 409, -32602, 'account is revoked; a revoked account cannot be changed'),
  // Postgres registry mode: admission goes on from the replica; only account changes wait for the database.
  REGISTRY_UNAVAILABLE: spec('TXR_REGISTRY_UNAVAILABLE', 503, RPC_UNAVAILABLE, 'account registry database unreachable; account changes are refused until it answers: {}', {
    retry: 'retry_safe',
  }),

  // Start-up: the process stops with the message (never an HTTP answer).
  CONFIG: spec('TXR_CONFIG', 500, -32603, '{}'),
  ACCEPTOR: spec('TXR_ACCEPTOR', 500, -32603, '{}'),
  FORWARD_CONFIG: spec('TXR_FORWARD_CONFIG', 500, -32603, '{}'),
  // Postgres registry mode: never synced and no database, a schema newer than this binary, a node name in use.
  REGISTRY_START: spec('TXR_REGISTRY_START', 500, -32603, '{}'),
  // A listener's port in use, not permitted (below 1024 without the privilege), or its address not on this machine.
  LISTEN: spec('TXR_LISTEN', 500, -32603, '{}'),
  // storage.data_dir cannot be created, or its files cannot be written.
  DATA_DIR: spec('TXR_DATA_DIR', 500, -32603, '{}'),
  // A listener's TLS certificate or key missing, unreadable, not PEM, or not a pair (at start-up; on SIGHUP the old pair stays).
  TLS: spec('TXR_TLS', 500, -32603, '{}'),

  // Store: after a failed commit every write is refused until a restart.
  STORE_FAILED: spec('TXR_STORE_FAILED', 500, -32603, 'embedded store write failed; store refuses writes until restart'),

  INTERNAL: spec('TXR_INTERNAL', 500, -32603, 'Internal error'),
} as const;

export const ERROR_TABLE: readonly ErrorSpec[] = Object.freeze(Object.values(E));

/**
 * A refusal travelling through the pipeline: the table's entry plus a detail
 * for `{}`. Plain data, returned, never thrown: gate refusals are made per
 * request under overload, where V8's Error constructor (a stack walk even with
 * `stackTraceLimit` 0) was measurable. Texts are formatted when asked for.
 */
export class RelayError {
  readonly spec: ErrorSpec;
  readonly detail: string;
  /** Milliseconds until a retry can succeed (rate limits only). */
  readonly retryAfterMs: number;
  /** For logs. */
  cause: unknown = undefined;
  /** Ms to hold a door shed's answer (`limits.shed_hold_ms`, docs/protocol.md#capacity); 0: at once. */
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

  get message(): string {
    return messageMemo.fill(this.spec.message, this.detail);
  }

  /** Solana plain-text body. */
  get text(): string {
    return textMemo.fill(this.spec.text ?? this.spec.message, this.detail);
  }

  toString(): string {
    return `${this.name} ${this.code}: ${this.message}`;
  }
}

const scratch = new Int32Array(4);

/** A credential no live account has: said to be no UUID at all where it is not one (docs/protocol.md#authentication). */
export function unknownKey(credential: string | null): RelayError {
  return new RelayError(E.AUTH_INVALID, credential === null || uuidTextWords(credential, scratch) ? '' : NOT_A_UUID);
}

/** The thrown form, off the hot path (admin API, start-up, store): an Error carrying its table entry. */
export class TxrelayError extends Error {
  readonly spec: ErrorSpec;

  constructor(s: ErrorSpec, detail = '', options?: { cause?: unknown }) {
    super(fill(s.message, detail), options);
    this.spec = s;
    this.name = 'TxrelayError';
  }

  get code(): string {
    return this.spec.code;
  }
}

// ---- The thrown errors, each an entry of the table --------------------------

/**
 * A configuration that cannot start the relay (TXR_CONFIG). The message is
 * one line, `<what> — <what to do>` (several joined by `; `), naming the key.
 */
export class ConfigError extends TxrelayError {
  constructor(message: string) {
    super(E.CONFIG, message);
    this.name = 'ConfigError';
  }
}

/** `storage.data_dir` (resolved) that cannot be created or written (TXR_DATA_DIR); `errno` is the system's code. */
export class DataDirError extends TxrelayError {
  constructor(
    readonly path: string,
    readonly errno: string,
    /** Whether the directory was there: not writable, or not creatable. */
    readonly exists: boolean,
    cause: unknown,
  ) {
    super(E.DATA_DIR, `storage.data_dir ${path}: ${errno}`, { cause });
    this.name = 'DataDirError';
  }
}

/** Another live process holds `storage.data_dir` (TXR_DATA_DIR). */
export class DataDirLockedError extends TxrelayError {
  constructor(
    readonly path: string,
    readonly pid: number,
  ) {
    super(E.DATA_DIR, `storage.data_dir ${path} is in use by pid ${pid}`);
    this.name = 'DataDirLockedError';
  }
}

type AccountErrorCode = 'TXR_ACCOUNT_INVALID' | 'TXR_ACCOUNT_NOT_FOUND' | 'TXR_ACCOUNT_LIMIT' | 'TXR_ACCOUNT_REVOKED';

const ACCOUNT_SPECS: Record<AccountErrorCode, ErrorSpec> = {
  TXR_ACCOUNT_INVALID: E.ACCOUNT_INVALID,
  TXR_ACCOUNT_NOT_FOUND: E.ACCOUNT_NOT_FOUND,
  TXR_ACCOUNT_LIMIT: E.ACCOUNT_LIMIT,
  TXR_ACCOUNT_REVOKED: E.ACCOUNT_REVOKED,
};

/** An account refused by the registry (TXR_ACCOUNT_*): invalid input, not found, over the cap, revoked. */
export class AccountError extends TxrelayError {
  /** Dotted path of the offending field (invalid input only). */
  readonly field: string | undefined;
  constructor(code: AccountErrorCode, message: string, field?: string) {
    super(ACCOUNT_SPECS[code], message);
    this.name = 'AccountError';
    this.field = field;
  }

  override get code(): AccountErrorCode {
    return this.spec.code as AccountErrorCode;
  }
}

/** updateOutcome for a batch id this store has no record of (stable code, as the admin API's 404). */
export class BatchNotFoundError extends TxrelayError {
  constructor() {
    super(E.BATCH_NOT_FOUND);
    this.name = 'BatchNotFoundError';
  }
}

/** The rejection every write gets once the store has failed (TXR_STORE_FAILED). */
export class StoreFailedError extends TxrelayError {
  constructor(cause: unknown) {
    super(E.STORE_FAILED, '', { cause });
    this.name = 'StoreFailedError';
  }
}

/** A listener's TLS certificate or key that cannot serve (TXR_TLS). */
export class TlsError extends TxrelayError {
  constructor(
    readonly listener: 'http' | 'admin',
    message: string,
  ) {
    super(E.TLS, message);
    this.name = 'TlsError';
  }
}

/** Why a port could not be had, in words. */
const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'in use',
  EACCES: 'not permitted',
  EADDRNOTAVAIL: 'address not on this machine',
  ENOTFOUND: 'host not found',
};

/** A listener that could not have its port (TXR_LISTEN): which one, where, and the system's reason. */
export class ListenError extends TxrelayError {
  constructor(
    /** The listener, named as its configuration section. */
    readonly listener: 'http' | 'admin' | 'udp',
    readonly host: string,
    readonly port: number,
    /** The system error code (EADDRINUSE, EACCES, ...); '' when it could not be learned. */
    readonly errno: string,
  ) {
    super(E.LISTEN, `${listener}: cannot listen on ${host}:${port} (${LISTEN_REASONS[errno] ?? (errno || 'reason unknown')})`);
    this.name = 'ListenError';
  }
}

/** `metrics.listen` could not be bound; `errno` is the system's reason. */
export class MetricsListenError extends TxrelayError {
  constructor(
    readonly value: string,
    readonly errno: string,
  ) {
    super(E.LISTEN, `metrics.listen ${value}: cannot listen (${errno || 'reason unknown'})`);
    this.name = 'MetricsListenError';
  }
}

/** No usable uWS build for this platform (TXR_ACCEPTOR): the message names what was tried. */
export class AcceptorError extends TxrelayError {
  constructor(message: string) {
    super(E.ACCEPTOR, message);
    this.name = 'AcceptorError';
  }
}

/** Thrown at construction for a configuration that cannot work; the message names the lane and index, never the URL. */
export class ForwardConfigError extends TxrelayError {
  constructor(message: string) {
    super(E.FORWARD_CONFIG, message);
    this.name = 'ForwardConfigError';
  }
}

/** INTERNAL for what is not ours. */
export function specOf(e: unknown): ErrorSpec {
  return e instanceof TxrelayError ? e.spec : E.INTERNAL;
}

function fill(template: string, detail: string): string {
  return template.includes('{}') ? template.replace('{}', detail) : template;
}

/** The last filled text, reused while a flood repeats the same refusal: no string per refusal. */
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

/** Thrown by pure decoders; the pipeline maps it to the door's decode error (TX_INVALID, SOL_DECODE, BATCH_DECODE). */
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
