/**
 * The wire format of the three kinds of send (docs/protocol.md#forwarding):
 *
 *   EVM            {"jsonrpc":"2.0","id":N,"method":"eth_sendRawTransaction","params":["0x…"]}
 *   Solana single  … "method":"sendTransaction","params":["<b64>",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}
 *   Solana bundle  … "method":"sendBundle","params":[["<b64>",…],{"encoding":"base64"}]}
 *
 * Bodies are concatenated, not JSON.stringify'd: the params are hex or base64
 * our decoders accepted, so they need no escaping (1.2 vs 3.3 µs per Solana
 * call). The id is the item's sequence number in its lane, so a batch answer
 * maps back in any order and upstream logs correlate with ours.
 */
const HEAD = '{"jsonrpc":"2.0","id":';
const EVM_MID = ',"method":"eth_sendRawTransaction","params":["';
const EVM_TAIL = '"]}';
const SOL_MID = ',"method":"sendTransaction","params":["';
const SOL_TAIL = '",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}';
const BUNDLE_MID = ',"method":"sendBundle","params":[["';
const BUNDLE_TAIL = '"],{"encoding":"base64"}]}';

export function evmCall(id: number, hex: string): string {
  return HEAD + id + EVM_MID + hex + EVM_TAIL;
}

/** Preflight off and no RPC-side retries: the relay lands bytes fast, it does not simulate. */
export function solanaCall(id: number, base64: string): string {
  return HEAD + id + SOL_MID + base64 + SOL_TAIL;
}

export function bundleCall(id: number, txs: readonly string[]): string {
  let s = HEAD + id + BUNDLE_MID + txs[0];
  for (let i = 1; i < txs.length; i++) s += '","' + txs[i];
  return s + BUNDLE_TAIL;
}

/**
 * The same calls written as bytes into a request buffer, so no body string is
 * built per request (bench/forward: 0.4 vs 1.3 KB of heap per request).
 * test/forward/wire.test.ts pins them to the string forms above.
 */
export const CallKind = { EVM: 0, SOLANA: 1, BUNDLE: 2 } as const;
export type CallKind = (typeof CallKind)[keyof typeof CallKind];

const HEAD_B = Buffer.from(HEAD, 'latin1');
const MID_B = [Buffer.from(EVM_MID, 'latin1'), Buffer.from(SOL_MID, 'latin1'), Buffer.from(BUNDLE_MID, 'latin1')];
const TAIL_B = [Buffer.from(EVM_TAIL, 'latin1'), Buffer.from(SOL_TAIL, 'latin1'), Buffer.from(BUNDLE_TAIL, 'latin1')];
const FIXED = [0, 1, 2].map((k) => HEAD_B.length + MID_B[k]!.length + TAIL_B[k]!.length);

/** Bytes of one call; `item` is the hex/base64 string, or the bundle's base64 strings. */
export function callLength(kind: CallKind, id: number, item: string | readonly string[]): number {
  let n = FIXED[kind]! + decimalDigits(id);
  if (kind !== CallKind.BUNDLE) return n + (item as string).length;
  const txs = item as readonly string[];
  for (let i = 0; i < txs.length; i++) n += txs[i]!.length;
  return n + 3 * (txs.length - 1);
}

/** Writes one call at buf[off..] (room checked by the caller); returns the offset after it. */
export function writeCall(buf: Buffer, off: number, kind: CallKind, id: number, item: string | readonly string[]): number {
  buf.set(HEAD_B, off);
  off = writeDecimal(buf, off + HEAD_B.length, id);
  const mid = MID_B[kind]!;
  buf.set(mid, off);
  off += mid.length;
  if (kind !== CallKind.BUNDLE) {
    off += buf.write(item as string, off, 'latin1');
  } else {
    const txs = item as readonly string[];
    off += buf.write(txs[0]!, off, 'latin1');
    for (let i = 1; i < txs.length; i++) {
      buf[off] = 0x22;
      buf[off + 1] = 0x2c;
      buf[off + 2] = 0x22;
      off += buf.write(txs[i]!, off + 3, 'latin1') + 3;
    }
  }
  const tail = TAIL_B[kind]!;
  buf.set(tail, off);
  return off + tail.length;
}

export function decimalDigits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** A non-negative integer (below 2^53) in decimal at buf[off..]; returns the offset after it. */
export function writeDecimal(buf: Buffer, off: number, n: number): number {
  const end = off + decimalDigits(n);
  let p = end;
  do {
    const q = Math.floor(n / 10);
    buf[--p] = 48 + (n - q * 10);
    n = q;
  } while (n > 0);
  return end;
}

// ---- request bodies ------------------------------------------------------------

/*
 * Request bodies, encoded once by the lane and handed to the HTTP client
 * (docs/protocol.md#forwarding). A body is calls from..from+n-1 of the lane's
 * ring: the call alone, or '[' call (',' call)* ']' for a batch.
 *
 * Copy-once: each item's hex/base64 string is written into the encoder's one
 * buffer (no body string built); the client copies those bytes behind its
 * request head during `post`, so the buffer is free again when `post` returns. The last range encoded is kept, so the other upstreams of a
 * lane, sent the same range in the same pump, reuse it instead of re-encoding.
 */

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
