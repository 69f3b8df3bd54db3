/**
 * Request bodies, encoded once by the lane and handed to the HTTP client
 * (docs/protocol.md#forwarding). A body is calls from..from+n-1 of the lane's
 * ring: the call alone, or '[' call (',' call)* ']' for a batch.
 *
 * Copy-once: each item's hex/base64 string is written into the encoder's one
 * buffer (wire.ts, no body string built); the client copies those bytes
 * behind its request head during `post`, so the buffer is free again when
 * `post` returns. The last range encoded is kept, so the other upstreams of a
 * lane, sent the same range in the same pump, reuse it instead of re-encoding.
 */
import { CallKind, callLength, writeCall } from './wire.js';

/** evm.max_batch's default, so a client batch travels as one request. */
export const MAX_BATCH = 64;
/** A larger single item still goes alone. agave's RPC refuses bodies over 50 kB, the smallest known limit. */
export const MAX_BATCH_BYTES = 48 * 1024;
/** A single Solana v1 call (5.5 KB of base64) fits the first buffer. */
const MIN_BUFFER = 8 * 1024;
/** A full batch fits; a larger body (one huge item) gets a buffer of its own, so what a lane keeps stays bounded. */
const MAX_KEPT_BUFFER = 64 * 1024;

/** One request's body: `buf[0..length)`, calls with ids firstId.., an array when `batch`. Read it during `post`, do not keep it. */
export interface RequestBody {
  buf: Buffer;
  length: number;
  firstId: number;
  count: number;
  batch: boolean;
}

/** An item as queued: hex or base64, or a bundle's base64 transactions. */
type Item = string | readonly string[];

export class Encoder {
  private readonly body: RequestBody = { buf: Buffer.allocUnsafe(MIN_BUFFER), length: 0, firstId: -1, count: 0, batch: false };
  private readonly maxBatch: number;

  constructor(
    private readonly kind: CallKind,
    /** The item at a seq; only asked for seqs the lane still holds. */
    private readonly item: (seq: number) => Item,
  ) {
    this.maxBatch = kind === CallKind.BUNDLE ? 1 : MAX_BATCH;
  }

  /** How many items from `from` (before `tail`) one request takes: up to MAX_BATCH and MAX_BATCH_BYTES, unless the first alone is larger. */
  batchSize(from: number, tail: number): number {
    const max = Math.min(tail - from, this.maxBatch);
    let bytes = callLength(this.kind, from, this.item(from)) + 2;
    let n = 1;
    while (n < max) {
      const b = callLength(this.kind, from + n, this.item(from + n)) + 1;
      if (bytes + b > MAX_BATCH_BYTES) break;
      bytes += b;
      n++;
    }
    return n;
  }

  /** The body of calls from..from+n-1; the same object each call, valid until the next. */
  encode(from: number, n: number): RequestBody {
    const b = this.body;
    // Same range, same bytes: seqs are never reused, and an item never changes while held.
    if (b.firstId === from && b.count === n) return b;
    const kind = this.kind;
    // A batch is '[' call (',' call)* ']': n + 1 bytes of punctuation.
    let len = n > 1 ? n + 1 : 0;
    for (let s = from; s < from + n; s++) len += callLength(kind, s, this.item(s));
    if (b.buf.length < len) {
      if (len > MAX_KEPT_BUFFER) {
        const buf = Buffer.allocUnsafe(len);
        return { buf, length: this.write(buf, from, n), firstId: from, count: n, batch: n > 1 };
      }
      b.buf = Buffer.allocUnsafe(Math.min(Math.max(len, b.buf.length * 2), MAX_KEPT_BUFFER));
    }
    b.length = this.write(b.buf, from, n);
    b.firstId = from;
    b.count = n;
    b.batch = n > 1;
    return b;
  }

  private write(buf: Buffer, from: number, n: number): number {
    const kind = this.kind;
    if (n === 1) return writeCall(buf, 0, kind, from, this.item(from));
    let off = 0;
    buf[off++] = 0x5b;
    for (let s = from; s < from + n; s++) {
      if (s > from) buf[off++] = 0x2c;
      off = writeCall(buf, off, kind, s, this.item(s));
    }
    buf[off++] = 0x5d;
    return off;
  }
}
