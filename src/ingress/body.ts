/**
 * Reading a request body from uWS (docs/protocol.md#limits):
 * - `onData` chunks are copied before the callback returns (uWS neuters them after);
 * - body bytes are counted while streaming, and an oversized body is
 *   answered from its Content-Length before a byte of it is buffered;
 * - a buffer grows with the bytes that arrived, never to a declared length
 *   up front, and every buffer of the thread counts toward one budget
 *   (`BodyBudget`): a body that would pass it is refused 503, so slow or
 *   stalled senders cannot hold more memory than the budget; a raw
 *   transaction goes straight into its slab block only when it arrived whole
 *   (the usual case), else it is assembled here and copied in at its end;
 * - a request whose Content-Length headers disagree is refused by closing
 *   its connection, since nobody can tell where the next request starts.
 */
import type { HttpRequest } from './uws.js';
import type { AckFirst } from './ack-first.js';
import { watchAbort, type Res } from './reply.js';

/** Request body bytes held in buffers on this thread, against `http.max_buffered_body_bytes`. */
export class BodyBudget {
  used = 0;
  /** Bodies refused for it since start (a metric). */
  refused = 0;

  constructor(readonly max: number) {}

  take(n: number): boolean {
    if (this.used + n > this.max) {
      this.refused++;
      return false;
    }
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }
}

/** Where a request's body goes: the pipeline's admission of it (src/pipeline/admission.ts), instead of a closure per callback. */
export interface BodyTarget {
  /** `into` supplies the destination once the length is known (a slab block: one copy). */
  readonly wantsInto: boolean;
  /** May answer the request itself and return null to stop reading. */
  into(len: number): Uint8Array | null;
  /**
   * Unless it came through `into`, the bytes may be uWS's own chunk, taken
   * back when the callback returns: copy what must outlive the call.
   */
  bodyBytes(bytes: Uint8Array): void;
  /** `declared` from Content-Length, else what arrived so far. The target answers. */
  tooLarge(declared: number): void;
  /** The thread's body budget is spent: the target answers (503, retry-safe). */
  overBudget(): void;
}

// Module-level so a request allocates no closure.
let lengths = 0;
let firstLength = '';
let conflicting = false;
const onHeader = (key: string, value: string): void => {
  if (key !== 'content-length') return;
  if (lengths++ === 0) firstLength = value;
  else if (value !== firstLength) conflicting = true;
};

/**
 * Content-Length headers that disagree (RFC 9112 section 6.3): a smuggling
 * vector when an intermediary frames by another one; uWS frames by the first.
 */
function conflictingContentLength(req: HttpRequest): boolean {
  lengths = 0;
  conflicting = false;
  req.forEach(onHeader);
  return conflicting;
}

/**
 * Streams at most `max` bytes of body into the target's destination, or one
 * buffer here. The target runs inside `ack`'s scope: uWS flushes its answer
 * only after this callback returns, and forwarding waits for that.
 */
export function readBodyTo(res: Res, req: HttpRequest, max: number, t: BodyTarget, ack: AckFirst | null, budget: BodyBudget | null = null): void {
  if (conflictingContentLength(req)) {
    // RFC 9112 wants a 400 then the close, but uWS keeps parsing what follows a response and close()
    // discards unflushed output: close at once, before a byte past the ambiguous request is read.
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
  const wantsInto = t.wantsInto;
  let buf: Uint8Array | null = null;
  let len = 0;
  /** Bytes of `buf` counted in the budget (a slab block from `into` is not: the slab bounds itself). */
  let held = 0;
  const drop = (): void => {
    if (held > 0) budget!.give(held);
    held = 0;
    buf = null;
  };
  watchAbort(res);
  if (budget !== null) res.onGone = drop;
  res.onData((chunk, isLast) => {
    if (res.aborted || res.done) return drop();
    const c = new Uint8Array(chunk);
    if (buf === null) {
      // The whole body in one chunk and no destination wanted: the target reads the chunk during the call.
      if (isLast && !wantsInto && (expected < 0 || c.length === expected)) {
        if (c.length > max) return t.tooLarge(c.length);
        return deliver(t, c, ack);
      }
      // Its slab block only once the body is whole: an incomplete one waits in the budget's buffers, so one
      // account's stalled bodies cannot fill the slab every tenant's transactions pass through.
      if (wantsInto && expected >= 0 && isLast && c.length === expected) {
        buf = t.into(expected);
        // The target answered (e.g. 503 when the slab is full): stop reading.
        if (buf === null && res.done) return;
      }
    }
    if (len + c.length > max) {
      drop();
      t.tooLarge(len + c.length);
      return;
    }
    if (buf === null || len + c.length > buf.length) {
      // Grown with what arrived (doubling, at most the declared length or the limit), never up front.
      const cap = expected >= 0 ? expected : max;
      const size = Math.min(cap, Math.max(buf === null ? 4096 : buf.length * 2, len + c.length));
      if (budget !== null && !budget.take(size - held)) {
        drop();
        t.overBudget();
        return;
      }
      const grown = Buffer.allocUnsafe(size);
      if (buf !== null) grown.set(buf.subarray(0, len));
      buf = grown;
      held = budget !== null ? size : 0;
    }
    buf.set(c, len);
    len += c.length;
    if (isLast) {
      const body = len === buf.length ? buf : buf.subarray(0, len);
      // The target takes the bytes during the call (copying what it keeps): the budget is free again after it.
      const n = held;
      held = 0;
      buf = null;
      try {
        deliver(t, body, ack);
      } finally {
        if (n > 0) budget!.give(n);
      }
    }
  });
}

function deliver(t: BodyTarget, body: Uint8Array, ack: AckFirst | null): void {
  if (ack === null) return t.bodyBytes(body);
  ack.enter();
  try {
    t.bodyBytes(body);
  } finally {
    ack.leave();
  }
}
