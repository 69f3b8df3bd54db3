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

/**
 * Where a request's body goes. One object per request is its own target
 * (the pipeline's Submission), instead of a closure per callback.
 */
export interface BodyTarget {
  /** Whether `into` supplies the destination once the length is known (a slab block: one copy). */
  readonly wantsInto: boolean;
  /** The destination for a body of known length; it may answer the request itself and return null to stop reading. */
  into(len: number): Uint8Array | null;
  /**
   * The whole body. Unless it came through `into`, the bytes may be uWS's
   * own chunk, which it takes back when the callback returns: read them
   * during the call, and copy what must outlive it.
   */
  bodyBytes(bytes: Uint8Array): void;
  /** The body is over the limit: `declared` from Content-Length, else what arrived so far. The target answers. */
  tooLarge(declared: number): void;
}

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
function conflictingContentLength(req: HttpRequest): boolean {
  lengths = 0;
  conflicting = false;
  req.forEach(onHeader);
  return conflicting;
}

/**
 * Streams the request body into one buffer, at most `max` bytes: into the
 * target's own destination when it wants one and the length is declared,
 * else assembled here. The target's handler runs inside `ack`'s scope: uWS
 * flushes what it answers only after this callback returns, so forwarding it
 * admits waits for that.
 */
export function readBodyTo(res: Res, req: HttpRequest, max: number, t: BodyTarget, ack: AckFirst | null): void {
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
  const wantsInto = t.wantsInto;
  let buf: Uint8Array | null = null;
  let len = 0;
  watchAbort(res);
  res.onData((chunk, isLast) => {
    if (res.aborted || res.done) return;
    const c = new Uint8Array(chunk);
    if (buf === null) {
      // Fast path: the whole body in one chunk and no destination wanted. The target reads it during
      // the call, so it gets the chunk itself, not a copy.
      if (isLast && !wantsInto && (expected < 0 || c.length === expected)) {
        if (c.length > max) return t.tooLarge(c.length);
        return deliver(t, c, ack);
      }
      if (wantsInto && expected >= 0) {
        buf = t.into(expected);
        // The target answered (e.g. 503 when the slab is full): stop reading.
        if (buf === null && res.done) return;
      }
      // Chunked bodies (no Content-Length) are assembled here first; the target copies them on.
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
