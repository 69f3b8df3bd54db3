/**
 * `POST /`: one JSON-RPC endpoint for both families, dispatched on `method`
 * (DECISIONS 3). Handlers answer through `reply`, so the same handler serves
 * a single call and an element of a standard JSON-RPC array.
 *
 * The per-IP bucket is charged here, one credit per call, before any
 * per-call work: one credit before the body is even parsed, the rest once an
 * array's length is known; the queue controller's shed decision is taken
 * here too, before the body is read. Handlers then gate with `ip` null. An array holds
 * at most `maxArray` calls (issue 8: 43k unauthenticated `{}` in one body
 * cost 0.22 s of the event loop and a 4.5 MB answer), so an answer is at most
 * a few hundred bytes per call plus the ids the client sent.
 */
import { E, RelayError } from '../../errors.js';
import { begin, readBodyTo, retryAfterHeaders, send, sendHeld, type BodyTarget, type Headers, type LatencyTimer, type Res } from '../http.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';
import { scanCall } from './rpc-scan.js';

export interface RpcCall {
  method: string;
  params: unknown;
  /** The request id re-serialised as JSON text (number, string or null), echoed verbatim. */
  id: string;
}

/** Request facts read synchronously from uWS before the body arrives. */
export interface RequestInfo {
  /** The client IP (its bucket is already charged for this call; for records and logs). */
  ip: string;
  apiKey: string | null;
  authorization: string | null;
  inArray: boolean;
}

export type Reply = (status: number, contentType: string, body: string, headers?: Headers) => void;
export type RpcHandler = (reply: Reply, info: RequestInfo, call: RpcCall) => void;

/** Renders a JSON-RPC error object from the catalogue. */
export function rpcErrorBody(err: RelayError, id: string, extra?: Record<string, unknown>): string {
  // A flood over one limit asks for the same body per request: the last one is reused.
  if (extra === undefined && err.spec === last.spec && err.detail === last.detail && id === last.id) return last.body;
  const body = buildErrorBody(err, id, extra);
  if (extra === undefined) {
    last.spec = err.spec;
    last.detail = err.detail;
    last.id = id;
    last.body = body;
  }
  return body;
}
const last: { spec: RelayError['spec'] | null; detail: string; id: string; body: string } = { spec: null, detail: '', id: '', body: '' };

function buildErrorBody(err: RelayError, id: string, extra?: Record<string, unknown>): string {
  let dataJson = '';
  if (extra) {
    const data: Record<string, unknown> = { ...extra };
    if (err.spec.retry) data.retry = err.spec.retry;
    if (Object.keys(data).length) dataJson = `,"data":${JSON.stringify(data)}`;
  } else if (err.spec.retry) {
    // The common case (every refusal at the gate): no object to build and stringify. `retry` is one of two fixed words.
    dataJson = `,"data":{"retry":"${err.spec.retry}"}`;
  }
  return `{"jsonrpc":"2.0","id":${id},"error":{"code":${err.spec.rpc},"message":${JSON.stringify(err.message)}${dataJson}}}`;
}

/** Methods allowed inside a standard JSON-RPC array (DECISIONS 3). */
const ARRAY_METHODS = new Set(['eth_sendRawTransaction']);

/** Charges `n` credits of an IP's bucket; a RelayError (429) when they are not there. */
export type IpCharge = (ip: string, n: number) => RelayError | null;
/** The queue controller's verdict for an arrival; a RelayError (503) when it is shed. */
export type ShedCheck = () => RelayError | null;

export class RpcDispatcher {
  private readonly handlers = new Map<string, RpcHandler>();

  constructor(
    readonly maxBody: number,
    /** Calls per JSON-RPC array at most (`evm.max_batch`). */
    private readonly maxArray: number,
    private readonly chargeIp: IpCharge,
    private readonly shed: ShedCheck,
  ) {}

  register(method: string, h: RpcHandler): void {
    this.handlers.set(method, h);
  }

  mount(app: TemplatedApp, ip: (res: HttpResponse, req: HttpRequest) => string, timer?: LatencyTimer): void {
    app.post('/', (r, req) => {
      const res = begin(r, timer);
      const apiKey = req.getHeader('api-key') || null;
      // Shed before anything else is read (the peer address is a syscall), so a shed answer costs about a bare request.
      const shed = this.shed();
      if (shed) return this.failEarly(res, apiKey, shed);
      const call = new RpcRequest(this, res, ip(res, req), apiKey, req.getHeader('authorization') || null);
      // SPEC 4.4 and DECISIONS 6: JSON-RPC is application/json; a missing Content-Type is 415 too.
      const ctype = req.getHeader('content-type');
      if (!/^application\/json\s*(;|$)/i.test(ctype)) {
        return this.fail(res, new RelayError(E.UNSUPPORTED_MEDIA, 'use application/json'));
      }
      const limited = this.chargeIp(call.ip, 1);
      if (limited) return this.failEarly(res, apiKey, limited);
      readBodyTo(res, req, this.maxBody, call);
    });
  }

  /** @internal */
  fail(res: Res, err: RelayError, id = 'null'): void {
    send(res, err.spec.http, 'application/json', rpcErrorBody(err, id));
  }

  /** A 429 or a shed 503 for the whole request: SPEC 7.2's plain text for a family B caller (api-key), JSON-RPC otherwise. */
  private failEarly(res: Res, apiKey: string | null, err: RelayError): void {
    const h = err.spec.http === 429 ? retryAfterHeaders(err.retryAfterMs) : undefined;
    if (apiKey !== null) return sendHeld(res, err.holdMs, err.spec.http, 'text/plain; charset=utf-8', err.text, h);
    sendHeld(res, err.holdMs, err.spec.http, 'application/json', rpcErrorBody(err, 'null'), h);
  }

  /** @internal */
  dispatch(res: Res, info: RequestInfo, body: Uint8Array): void {
    // An array is counted from its bytes before it is parsed: 43k `{}` cost ~2 ms of JSON.parse alone.
    const calls = topLevelElements(body, this.maxArray);
    if (calls > this.maxArray) {
      return this.fail(res, new RelayError(E.INVALID_REQUEST, `a JSON-RPC array holds at most ${this.maxArray} calls`));
    }
    const single: Reply = (status, contentType, text, headers) => send(res, status, contentType, text, headers);
    if (calls === 0) {
      // The usual single call, read from its bytes (rpc-scan.ts); whatever it declines is parsed below.
      const fast = scanCall(body);
      if (fast !== null) {
        const h = this.handlers.get(fast.method);
        if (h) return h(single, info, fast);
      }
    }
    let msg: unknown;
    try {
      msg = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
    } catch {
      return this.fail(res, new RelayError(E.PARSE, 'body is not valid JSON'));
    }
    if (!Array.isArray(msg)) return this.call(single, info, msg);
    if (msg.length === 0) return this.fail(res, new RelayError(E.INVALID_REQUEST, 'empty array'));
    if (msg.length > this.maxArray) {
      return this.fail(res, new RelayError(E.INVALID_REQUEST, `a JSON-RPC array holds at most ${this.maxArray} calls, got ${msg.length}`));
    }
    if (msg.length > 1) {
      const limited = this.chargeIp(info.ip, msg.length - 1);
      if (limited) return this.failEarly(res, info.apiKey, limited);
    }
    // Standard JSON-RPC array: answered as an array of single responses, in order.
    const bodies: string[] = new Array(msg.length);
    const statuses: number[] = new Array(msg.length);
    let pending = msg.length;
    const arrayInfo: RequestInfo = { ip: info.ip, apiKey: info.apiKey, authorization: info.authorization, inArray: true };
    msg.forEach((m, i) => {
      const reply: Reply = (status, _ct, text) => {
        bodies[i] = text;
        statuses[i] = status;
        if (--pending === 0) send(res, arrayStatus(statuses), 'application/json', `[${bodies.join(',')}]`);
      };
      const method = (m as { method?: unknown })?.method;
      if (typeof method === 'string' && !ARRAY_METHODS.has(method) && this.handlers.has(method)) {
        const err = new RelayError(E.INVALID_REQUEST, `${method} cannot be sent inside a JSON-RPC array`);
        return reply(err.spec.http, 'application/json', rpcErrorBody(err, idOf(m)));
      }
      this.call(reply, arrayInfo, m);
    });
  }

  private call(reply: Reply, info: RequestInfo, m: unknown): void {
    const c = readCall(m);
    if (c instanceof RelayError) return reply(c.spec.http, 'application/json', rpcErrorBody(c, idOf(m)));
    const h = this.handlers.get(c.method);
    if (!h) {
      const err = new RelayError(E.METHOD_NOT_FOUND, c.method.slice(0, 64));
      return reply(err.spec.http, 'application/json', rpcErrorBody(err, c.id));
    }
    h(reply, info, c);
  }
}

/** One parsed JSON-RPC call as the dispatcher reads it, or the request error it answers with (id: `idOf`). */
export function readCall(m: unknown): RpcCall | RelayError {
  if (typeof m !== 'object' || m === null) return new RelayError(E.INVALID_REQUEST, 'not a JSON-RPC object');
  const o = m as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
  if (o.jsonrpc !== '2.0') return new RelayError(E.INVALID_REQUEST, 'jsonrpc must be "2.0"');
  if (typeof o.method !== 'string') return new RelayError(E.INVALID_REQUEST, 'method must be a string');
  if (o.id !== undefined && o.id !== null && typeof o.id !== 'number' && typeof o.id !== 'string') {
    return new RelayError(E.INVALID_REQUEST, 'id must be a number, a string or null');
  }
  return { method: o.method, params: o.params, id: idOf(m) };
}

/**
 * One `POST /` request: the facts read from uWS before its body arrives
 * (its `RequestInfo`) and the target its body is read into. One object per
 * request, where an info object, a closure per body callback and their
 * shared context were.
 */
class RpcRequest implements RequestInfo, BodyTarget {
  inArray = false;

  constructor(
    private readonly d: RpcDispatcher,
    private readonly res: Res,
    readonly ip: string,
    readonly apiKey: string | null,
    readonly authorization: string | null,
  ) {}

  body(bytes: Uint8Array): void {
    this.d.dispatch(this.res, this, bytes);
  }

  tooLarge(n: number): void {
    this.d.fail(this.res, new RelayError(E.TOO_LARGE, `body of ${n} bytes exceeds http.max_body_bytes (${this.d.maxBody})`));
  }
}

const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

/**
 * Elements of a top-level JSON array, counted from the bytes without parsing
 * them, stopping as soon as the count passes `max` (then max + 1). Anything
 * that is not an array, or is malformed, answers 0: JSON.parse decides that.
 * One pass, no allocation: strings (with escapes) and nesting are skipped.
 */
export function topLevelElements(b: Uint8Array, max: number): number {
  let i = 0;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  if (b[i] !== LBRACKET) return 0;
  let depth = 0;
  let n = 0;
  let seen = false;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      for (i++; i < b.length && b[i] !== QUOTE; i++) if (b[i] === BACKSLASH) i++;
      if (depth === 1) seen = true;
    } else if (c === LBRACKET || c === LBRACE) {
      if (depth === 1) seen = true;
      depth++;
    } else if (c === RBRACKET || c === RBRACE) {
      if (--depth === 0) return seen ? n + 1 : 0;
    } else if (c === COMMA) {
      if (depth === 1 && ++n >= max) return max + 1;
    } else if (depth === 1 && c > 0x20) {
      seen = true;
    }
  }
  return 0;
}

/**
 * The HTTP status of a JSON-RPC array answer, by the batch rule of
 * DECISIONS 6: 202 when anything was accepted, else 400 if any element was
 * invalid, else 503 for capacity, else 429, else the first element's status.
 */
export function arrayStatus(statuses: number[]): number {
  if (statuses.some((x) => x < 300)) return 202;
  for (const s of [400, 503, 429]) if (statuses.includes(s)) return s;
  return statuses[0] ?? 400;
}

function idOf(m: unknown): string {
  const id = (m as { id?: unknown } | null)?.id;
  return typeof id === 'number' || typeof id === 'string' ? JSON.stringify(id) : 'null';
}
