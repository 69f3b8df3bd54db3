/**
 * uWebSockets.js plumbing shared by every door. The rules this file exists to
 * keep in one place (uWS aborts the process or corrupts memory otherwise):
 * - `onAborted` is registered before any asynchronous step (`readBody` does
 *   it; a request answered in its handler needs none, which is what keeps a
 *   refusal at the gate about as cheap as a bare request);
 * - a response written after an await is corked;
 * - `onData` chunks are copied before the callback returns (they are neutered after);
 * - body bytes are counted while streaming, and an oversized body is answered
 *   from its Content-Length before a byte of it is buffered;
 * - a request whose Content-Length headers disagree is refused by closing its
 *   connection, since nobody can tell where the next request starts.
 */
import type { HttpRequest, HttpResponse } from './uws.js';
import { RelayError } from '../errors.js';
import { drainAfterAcks, enterAckScope, leaveAckScope } from './ack-first.js';

/** Receives a door's accept latency in seconds (a pre-bound prom-client histogram child). */
export interface LatencyTimer {
  observe(seconds: number): void;
}

/** Per-request state hung on the uWS response object. */
export interface Res extends HttpResponse {
  aborted?: boolean;
  done?: boolean;
  /** Whether the abort handler is registered. */
  watching?: boolean;
  /** performance.now() when the handler started, for the accept-latency histogram. */
  t0?: number;
  timer?: LatencyTimer | undefined;
}

const REASONS: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
  // SPEC 7.2: family B batch uses these non-standard statuses as its error codes.
  605: '605 Batch Decode Error',
  606: '606 Tip Instruction Not Found',
  607: '607 Tip Too Low',
};

export function statusLine(code: number): string {
  return REASONS[code] ?? `${code} Status`;
}

/**
 * Protocol text that every answer repeats (status lines, header names,
 * content types), encoded once. uWS.js copies a JS string argument through
 * V8's Utf8Value (a length pass, a heap allocation and a copy) on every call;
 * bytes it reads in place. Only texts from this module's own constants and
 * the doors' constant header lists come through here, so the cache stays small.
 */
const encoded = new Map<string, Uint8Array>();
function bytesOf(text: string): Uint8Array {
  let b = encoded.get(text);
  if (b === undefined) {
    b = Buffer.from(text, 'latin1');
    if (encoded.size < MAX_ENCODED) encoded.set(text, b);
  }
  return b;
}
/** A bound on the cache, should a caller ever pass varying text. */
const MAX_ENCODED = 256;
const CONTENT_TYPE = bytesOf('content-type');

export type Headers = readonly (readonly [string, string])[];

/** Names and values of a fixed header list, encoded once, alternating. */
const ENCODED = Symbol('encoded');
type EncodedHeaders = Headers & { [ENCODED]?: readonly Uint8Array[] };

/**
 * A header list answers reuse as is (the doors' constants, a run of refusals'
 * Retry-After pair): its values are encoded once too, so writing it hands
 * uWS bytes only. Lists made per answer are left as they are.
 */
export function fixedHeaders(list: readonly (readonly [string, string])[]): Headers {
  const h = list as EncodedHeaders;
  const enc: Uint8Array[] = [];
  for (const [k, v] of list) enc.push(bytesOf(k), Buffer.from(v, 'latin1'));
  h[ENCODED] = enc;
  return Object.freeze(h);
}

/**
 * `a` then `b` as one list. The last pair asked for is kept, as answers of a
 * run ask for the same one, and encoded once it is asked for again (a list
 * used once, such as one carrying a wait that changes every time, is not
 * worth encoding).
 */
export function joinHeaders(a: Headers, b: Headers): Headers {
  if (a.length === 0) return b;
  if (a === joined.a && b === joined.b) {
    if (!joined.fixed) {
      joined.both = fixedHeaders(joined.both);
      joined.fixed = true;
    }
    return joined.both;
  }
  joined.a = a;
  joined.b = b;
  joined.fixed = false;
  return (joined.both = [...a, ...b]);
}
const joined: { a: Headers | null; b: Headers | null; both: Headers; fixed: boolean } = { a: null, b: null, both: [], fixed: false };

/**
 * Starts a request's state. With a timer, the time until `send` is recorded
 * (from the handler's start: kernel and uWS parsing time before it are not
 * included). An answer written before the handler returns needs nothing
 * more; anything asynchronous needs `watchAbort` first (readBody calls it).
 */
export function begin(res: HttpResponse, timer?: LatencyTimer): Res {
  // The previous socket's callback has returned, so its acknowledgements are out: what waited for them goes now.
  drainAfterAcks();
  const r = res as Res;
  r.aborted = false;
  r.done = false;
  r.watching = false;
  r.timer = timer;
  if (timer) r.t0 = performance.now();
  return r;
}

/** Registers the abort handler (once): required before the request goes asynchronous. */
export function watchAbort(r: Res): void {
  if (r.watching) return;
  r.watching = true;
  r.onAborted(() => {
    r.aborted = true;
  });
}

/** `begin` and `watchAbort` at once, for handlers that go asynchronous without reading a body. */
export function guard(res: HttpResponse, timer?: LatencyTimer): Res {
  const r = begin(res, timer);
  watchAbort(r);
  return r;
}

/**
 * Writes a whole response; corked, so it is safe after an await. No-op once
 * aborted or answered. `close` ends the connection after it (framing errors).
 *
 * The first answer of an event-loop turn is written at once; later answers of
 * the same turn are held until the turn ends (`setImmediate`) and then written
 * back to back. On loopback and in VMs, each answer that reaches a client
 * asleep in epoll costs the sender a wake-up of the client's CPU (an IPI,
 * a VM exit under a hypervisor): answers spaced one check apart (~80 µs)
 * wake the client once each, answers written together wake it once.
 * `npm run bench:coalesce` on the 2-core VM, /v2 pinned at 16 connections:
 * 0.91-1.28x the relay CPU per transaction with it off in three runs, cheaper
 * with it on in 10 of 12 rounds (README, "Answer coalescing").
 * A lone request (serial clients, light load) is never held, and forwarding
 * is not held either: only the acknowledgement of the 2nd+ answer in a turn,
 * by at most the turn's length (inline checks stop at 1 ms per turn). A
 * batch the verifier answers at the end of a turn is held whole, its first
 * answer included (`holdAnswers`), and written when the batch is done.
 */
export function send(res: Res, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers, close = false): void {
  if (res.aborted || res.done) return;
  res.done = true;
  if (!coalescing) return write(res, status, contentType, body, headers, close);
  if (answersThisTurn++ === 0) {
    setImmediate(endTurn);
    write(res, status, contentType, body, headers, close);
    return;
  }
  // Held past the handler's return: uWS wants an abort handler for that.
  watchAbort(res);
  const i = held.length;
  held.push(res);
  heldStatus[i] = status;
  heldType[i] = contentType;
  heldBody[i] = body;
  heldHeaders[i] = headers;
  heldClose[i] = close;
}

// The answer being written, for `writeCorked`: one module-level callback instead of a closure per answer.
let wRes: Res | null = null;
let wStatus = 0;
let wType: string | null = null;
let wBody: string | Uint8Array = '';
let wHeaders: Headers | undefined;
let wClose = false;

function writeCorked(): void {
  const res = wRes!;
  res.writeStatus(bytesOf(statusLine(wStatus)));
  if (wType) res.writeHeader(CONTENT_TYPE, bytesOf(wType));
  const h = wHeaders;
  if (h) {
    const enc = (h as EncodedHeaders)[ENCODED];
    if (enc !== undefined) for (let i = 0; i < enc.length; i += 2) res.writeHeader(enc[i]!, enc[i + 1]!);
    else for (let i = 0; i < h.length; i++) res.writeHeader(bytesOf(h[i]![0]), h[i]![1]);
  }
  res.end(wBody, wClose);
}

function write(res: Res, status: number, contentType: string | null, body: string | Uint8Array, headers: Headers | undefined, close: boolean): void {
  wRes = res;
  wStatus = status;
  wType = contentType;
  wBody = body;
  wHeaders = headers;
  wClose = close;
  try {
    res.cork(writeCorked);
  } finally {
    wRes = null;
    wBody = '';
    wHeaders = undefined;
  }
  if (res.timer) res.timer.observe((performance.now() - res.t0!) / 1000);
}

/**
 * Holds every answer made from here until `flushHeldAnswers`, the first one
 * included. The verifier calls it before answering a batch outside a socket
 * callback (its end-of-turn checks, its workers' results): writing the
 * batch's first answer at once woke the client's thread for that one answer
 * and again, a few checks later, for the rest.
 */
export function holdAnswers(): void {
  if (!coalescing || answersThisTurn > 0) return;
  answersThisTurn = 1;
  setImmediate(endTurn);
}

/** `http.coalesce_answers`: off, every answer is written when it is made. */
export function setAnswerCoalescing(on: boolean): void {
  coalescing = on;
}

// Answers held for the end of the turn, in parallel arrays: holding one costs no closure.
let coalescing = true;
let answersThisTurn = 0;
const held: Res[] = [];
const heldStatus: number[] = [];
const heldType: (string | null)[] = [];
const heldBody: (string | Uint8Array | undefined)[] = [];
const heldHeaders: (Headers | undefined)[] = [];
const heldClose: boolean[] = [];

function endTurn(): void {
  answersThisTurn = 0;
  flushHeldAnswers();
}

/**
 * Writes every held answer now. The turn's `setImmediate` does it for answers
 * made while reading sockets; answers made inside a `setImmediate` callback
 * (the verifier collecting worker results) would otherwise wait a whole
 * further loop iteration, so that caller flushes when it is done.
 */
export function flushHeldAnswers(): void {
  // An answer written here may run user callbacks that answer more: those join this flush, in order.
  for (let i = 0; i < held.length; i++) {
    const res = held[i]!;
    // A client that went away while its answer was held gets nothing (uWS forbids writing to it).
    if (!res.aborted) write(res, heldStatus[i]!, heldType[i]!, heldBody[i]!, heldHeaders[i], heldClose[i]!);
    held[i] = undefined as unknown as Res;
    heldBody[i] = undefined;
    heldHeaders[i] = undefined;
  }
  held.length = 0;
}

/**
 * `send`, held `ms` first: a door shed under a standing queue
 * (`RelayError.holdMs`, README "Load shedding"). A client that resends a
 * refusal at once then comes back about when the queue it was turned away
 * from has moved, instead of spending the relay's CPU on refusals (at 1024
 * closed-loop connections, most of it). Held answers wait in arrays, in
 * arrival order, behind one timer; a client that goes away meanwhile gets
 * nothing, and `releaseHeldRefusals` writes them all at once (shutdown).
 */
export function sendHeld(res: Res, ms: number, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers): void {
  if (ms <= 0) return send(res, status, contentType, body, headers);
  if (res.aborted || res.done) return;
  res.done = true;
  watchAbort(res);
  const due = performance.now() + ms;
  const i = paced.length;
  paced.push(res);
  // Due times in arrival order never go backwards, so the head is always the next one due.
  pacedDue[i] = i > pacedHead && due < pacedDue[i - 1]! ? pacedDue[i - 1]! : due;
  pacedStatus[i] = status;
  pacedType[i] = contentType;
  pacedBody[i] = body;
  pacedHeaders[i] = headers;
  if (pacedTimer === null) pacedTimer = setTimeout(releaseDue, ms);
}

const paced: Res[] = [];
const pacedDue: number[] = [];
const pacedStatus: number[] = [];
const pacedType: (string | null)[] = [];
const pacedBody: (string | Uint8Array | undefined)[] = [];
const pacedHeaders: (Headers | undefined)[] = [];
let pacedHead = 0;
let pacedTimer: NodeJS.Timeout | null = null;

/** Refusals held by `sendHeld` and not yet written. */
export function heldRefusals(): number {
  return paced.length - pacedHead;
}

function releaseDue(): void {
  pacedTimer = null;
  releasePaced(performance.now());
}

/** Writes every held refusal now (shutdown: nothing is left unanswered when the listeners close). */
export function releaseHeldRefusals(): void {
  if (pacedTimer !== null) clearTimeout(pacedTimer);
  pacedTimer = null;
  releasePaced(Infinity);
}

function releasePaced(now: number): void {
  // Held answers are written back to back: one wake-up of each client thread, as coalescing does.
  let i = pacedHead;
  for (; i < paced.length && pacedDue[i]! <= now + 0.5; i++) {
    const res = paced[i]!;
    if (!res.aborted) write(res, pacedStatus[i]!, pacedType[i]!, pacedBody[i]!, pacedHeaders[i], false);
    paced[i] = undefined as unknown as Res;
    pacedBody[i] = undefined;
    pacedHeaders[i] = undefined;
  }
  pacedHead = i;
  if (pacedHead === paced.length) {
    paced.length = pacedDue.length = pacedStatus.length = pacedType.length = pacedBody.length = pacedHeaders.length = 0;
    pacedHead = 0;
    return;
  }
  if (pacedHead >= 4096 && pacedHead * 2 >= paced.length) {
    for (const a of [paced, pacedDue, pacedStatus, pacedType, pacedBody, pacedHeaders] as unknown[][]) a.splice(0, pacedHead);
    pacedHead = 0;
  }
  pacedTimer = setTimeout(releaseDue, Math.max(1, pacedDue[pacedHead]! - performance.now()));
}

export function sendJson(res: Res, status: number, body: string, headers?: Headers): void {
  send(res, status, 'application/json', body, headers);
}

export function sendText(res: Res, status: number, body: string, headers?: Headers): void {
  send(res, status, 'text/plain; charset=utf-8', body, headers);
}

/** Retry headers for a 429 (DECISIONS 6): whole seconds rounded up, and milliseconds. */
export function retryHeaders(err: RelayError): Headers {
  return err.spec.http === 429 ? retryAfterHeaders(err.retryAfterMs) : [];
}

/** `Retry-After` and `x-ratelimit-retry-after-ms` for a wait of `ms`. */
export function retryAfterHeaders(ms: number): Headers {
  // A request that can never fit (n > burst, or a 0 TPS account) gets a minute: retrying sooner cannot succeed.
  const wait = Number.isFinite(ms) ? Math.max(1, Math.ceil(ms)) : 60_000;
  // Refusals come in runs with the same wait (a flood over one limit): the last pair is reused,
  // and encoded once it is (a wait that changes every time is not worth encoding).
  if (wait === lastWait) {
    if (!lastRetryFixed) {
      lastRetry = fixedHeaders(lastRetry);
      lastRetryFixed = true;
    }
    return lastRetry;
  }
  lastWait = wait;
  lastRetryFixed = false;
  lastRetry = [
    ['retry-after', String(Math.ceil(wait / 1000))],
    ['x-ratelimit-retry-after-ms', String(wait)],
  ];
  return lastRetry;
}
let lastWait = 60_000;
let lastRetryFixed = true;
let lastRetry: Headers = fixedHeaders([
  ['retry-after', '60'],
  ['x-ratelimit-retry-after-ms', '60000'],
]);

// Framing check state: uWS hands headers one callback at a time; module-level so a request allocates no closure.
let lengths = 0;
let firstLength = '';
let conflicting = false;
const onHeader = (key: string, value: string): void => {
  if (key !== 'content-length') return;
  if (lengths++ === 0) firstLength = value;
  else if (value !== firstLength) conflicting = true;
};

/**
 * Content-Length headers that disagree (RFC 9112 section 6.3: a request
 * smuggling vector when an intermediary frames by another one than we do).
 * uWS frames by the first and does not look further.
 */
export function conflictingContentLength(req: HttpRequest): boolean {
  lengths = 0;
  conflicting = false;
  req.forEach(onHeader);
  return conflicting;
}

/**
 * Where a request's body goes (`readBodyTo`). A door with a hot path makes
 * one object per request that is its own target, instead of a closure per
 * callback and a context for what they share.
 */
export interface BodyTarget {
  /**
   * The whole body. Without `into`, the bytes may be uWS's own chunk, which
   * it takes back (detaches) when the callback returns: read them during the
   * call, and copy what must outlive it.
   */
  body(bytes: Uint8Array): void;
  /** The body is over the limit: `declared` from Content-Length, else what arrived so far. The caller answers. */
  tooLarge(declared: number): void;
  /**
   * The destination for a body of known length (a slab block, so the bytes
   * are copied exactly once); it may answer the request itself and return
   * null to stop reading.
   */
  into?(len: number): Uint8Array | null;
}

/**
 * Streams the request body into one buffer. `into(len)` supplies the
 * destination once the declared length is known (a slab block, so the bytes
 * are copied exactly once); it may answer the request itself and return null
 * to stop reading. `onTooLarge` fires, before anything is buffered when
 * Content-Length says so, once the body exceeds `max`; the caller answers.
 * `onBody` reads the body during the call (BodyTarget.body).
 */
export function readBody(
  res: Res,
  req: HttpRequest,
  max: number,
  onBody: (body: Uint8Array) => void,
  onTooLarge: (declared: number) => void,
  into?: (len: number) => Uint8Array | null,
): void {
  readBodyTo(res, req, max, into ? { body: onBody, tooLarge: onTooLarge, into } : { body: onBody, tooLarge: onTooLarge });
}

/** `readBody` with the callbacks as one object's methods. */
export function readBodyTo(res: Res, req: HttpRequest, max: number, t: BodyTarget): void {
  if (conflictingContentLength(req)) {
    // RFC 9112 wants a 400 and then the close, but uWS keeps parsing whatever the client already sent
    // after a response, even one ending the connection, and close() discards unflushed output: so the
    // connection is closed at once, without a status, before a byte past the ambiguous request is read.
    res.done = true;
    res.close();
    return;
  }
  const declared = req.getHeader('content-length');
  let expected = -1;
  if (declared !== '') {
    expected = Number(declared);
    if (!Number.isSafeInteger(expected) || expected < 0) expected = -1;
    else if (expected > max) {
      t.tooLarge(expected);
      return;
    }
  }
  const wantsInto = t.into !== undefined;
  let buf: Uint8Array | null = null;
  let len = 0;
  watchAbort(res);
  res.onData((chunk, isLast) => {
    if (res.aborted || res.done) return;
    const c = new Uint8Array(chunk);
    if (buf === null) {
      // Fast path: the whole body in one chunk and no slab wanted. The target reads it during the
      // call (BodyTarget.body), so it gets the chunk itself, not a copy.
      if (isLast && !wantsInto && (expected < 0 || c.length === expected)) {
        if (c.length > max) return t.tooLarge(c.length);
        bodyInScope(t, c);
        return;
      }
      if (wantsInto && expected >= 0) {
        buf = t.into!(expected);
        // The door answered (e.g. 503 when the slab is full): stop reading.
        if (buf === null && res.done) return;
      }
      // Chunked bodies (no Content-Length) are assembled here first; the door copies them on.
      buf ??= Buffer.allocUnsafe(expected >= 0 ? expected : Math.min(max, Math.max(c.length * 2, 4096)));
    }
    if (len + c.length > max) {
      buf = null;
      t.tooLarge(len + c.length);
      return;
    }
    if (len + c.length > buf.length) {
      // Chunked or lying Content-Length: grow (bounded by max).
      const grown = Buffer.allocUnsafe(Math.min(max, Math.max(buf.length * 2, len + c.length)));
      grown.set(buf.subarray(0, len));
      buf = grown;
    }
    buf.set(c, len);
    len += c.length;
    if (isLast) {
      // A destination filled exactly (the usual case) is the body as it is: no second view of it.
      const body = len === buf.length ? buf : buf.subarray(0, len);
      buf = null;
      bodyInScope(t, body);
    }
  });
}

/**
 * Calls a door's body handler inside an ack scope: uWS flushes what it answers
 * only after this callback returns, so forwarding it admits waits for that
 * (src/ingress/ack-first.ts).
 */
function bodyInScope(t: BodyTarget, body: Uint8Array): void {
  enterAckScope();
  try {
    t.body(body);
  } finally {
    leaveAckScope();
  }
}

/** The client's IP: the socket peer, or the first X-Forwarded-For hop when `trust_proxy` is on. */
export function clientIp(res: HttpResponse, req: HttpRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.getHeader('x-forwarded-for');
    if (xff) {
      const first = xff.split(',')[0]!.trim();
      if (first) return first;
    }
  }
  // From the binary address: one IPv4 client is one key whether the listener is v4 or dual-stack v6,
  // where uWS's text form of a mapped address is the full ffff-hex spelling.
  const b = new Uint8Array(res.getRemoteAddress());
  if (b.length === 4) return dotted(b, 0);
  if (b.length === 16 && isV4Mapped(b)) return dotted(b, 12);
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/**
 * Dotted IPv4 text by address, so a client's every request reuses one string
 * instead of building (and flattening) a new one: 164 B of the ~4.5 KB of JS
 * heap a /v2 transaction allocated (scripts/heap-sample.mjs). Cleared when
 * full, so it is bounded (~5 MiB) and a flood of new addresses costs what it
 * cost before.
 */
const V4_NAMES_MAX = 65_536;
const v4Names = new Map<number, string>();

function dotted(b: Uint8Array, at: number): string {
  const key = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  let name = v4Names.get(key);
  if (name === undefined) {
    if (v4Names.size >= V4_NAMES_MAX) v4Names.clear();
    name = b[at] + '.' + b[at + 1] + '.' + b[at + 2] + '.' + b[at + 3];
    v4Names.set(key, name);
  }
  return name;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}
