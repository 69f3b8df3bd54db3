/**
 * Reading a request body from uWS (docs/protocol.md#limits):
 * - `onData` chunks are copied before the callback returns (uWS neuters them after);
 * - body bytes are counted while streaming, and an oversized body is
 *   answered from its Content-Length before a byte of it is buffered;
 * - a request whose Content-Length headers disagree is refused by closing
 *   its connection, since nobody can tell where the next request starts.
 */
import type { HttpRequest } from './uws.js';
import type { AckFirst } from './ack-first.js';
import { watchAbort, type Res } from './reply.js';

/** Where a request's body goes: the Submission itself, instead of a closure per callback. */
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
export function readBodyTo(res: Res, req: HttpRequest, max: number, t: BodyTarget, ack: AckFirst | null): void {
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
  watchAbort(res);
  res.onData((chunk, isLast) => {
    if (res.aborted || res.done) return;
    const c = new Uint8Array(chunk);
    if (buf === null) {
      // The whole body in one chunk and no destination wanted: the target reads the chunk during the call.
      if (isLast && !wantsInto && (expected < 0 || c.length === expected)) {
        if (c.length > max) return t.tooLarge(c.length);
        return deliver(t, c, ack);
      }
      if (wantsInto && expected >= 0) {
        buf = t.into(expected);
        // The target answered (e.g. 503 when the slab is full): stop reading.
        if (buf === null && res.done) return;
      }
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
      const body = len === buf.length ? buf : buf.subarray(0, len);
      buf = null;
      deliver(t, body, ack);
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
