/**
 * Strict RLP reader (Yellow Paper appendix B). Every family A decoder goes
 * through this one bounds-checked cursor, so non-canonical encodings are
 * refused in one place, as go-ethereum's `rlp` package refuses them: a byte
 * below 0x80 not encoded as itself, a long-form length that fits the short
 * form (< 56) or has a leading zero, an integer with a leading zero (zero is
 * the empty string), an item past its list, a list with trailing bytes.
 * Items are offsets into the caller's buffer (maybe a SharedArrayBuffer view).
 *
 *   byte      item                      payload
 *   00..7f    the byte itself           [pos, pos+1)
 *   80..b7    string, len = b-0x80      [pos+1, pos+1+len)
 *   b8..bf    string, len in b-0xb7 B   [pos+1+ll, ...)
 *   c0..f7    list, len = b-0xc0        [pos+1, pos+1+len)
 *   f8..ff    list, len in b-0xf7 B     [pos+1+ll, ...)
 */

import { DecodeError } from '../../errors.js';

/** Longest length-of-length we can meet: 5+ bytes mean >= 4 GiB, more than any input we hold. */
const MAX_LENGTH_OF_LENGTH = 4;

/** Lengths below this must use the one-byte short form. */
const SHORT_FORM_LIMIT = 56;

let headersRead = 0;

/** RLP headers decoded so far in this thread: the DoS tests count these, not time, to assert linear work. */
export function rlpHeadersRead(): number {
  return headersRead;
}

const EMPTY = new Uint8Array(0);

export class RlpReader {
  buf: Uint8Array = EMPTY;
  /** Offset of the next item. */
  pos = 0;
  /** Payload offset and length of the item last read. */
  start = 0;
  len = 0;

  reset(buf: Uint8Array, pos = 0): this {
    this.buf = buf;
    this.pos = pos;
    this.start = 0;
    this.len = 0;
    return this;
  }

  /** Whether the next item (which must exist before `limit`) is a list. */
  nextIsList(limit: number, what: string): boolean {
    if (this.pos >= limit) throw new DecodeError(`${what}: unexpected end of list`);
    return this.buf[this.pos]! >= 0xc0;
  }

  /** Enters the list at `pos`; returns the end offset of its payload and leaves `pos` at its first item. */
  list(limit: number, what: string): number {
    if (!this.header(limit, what)) throw new DecodeError(`${what}: expected a list`);
    this.pos = this.start;
    return this.start + this.len;
  }

  /** Reads a string item; its payload is [start, start+len). Returns len. */
  string(limit: number, what: string): number {
    if (this.header(limit, what)) throw new DecodeError(`${what}: expected a string, got a list`);
    this.pos = this.start + this.len;
    return this.len;
  }

  /** Reads a string of exactly `size` bytes and returns its payload offset. */
  fixed(limit: number, size: number, what: string): number {
    if (this.string(limit, what) !== size) throw new DecodeError(`${what}: must be ${size} bytes`);
    return this.start;
  }

  /** Reads a canonical unsigned integer of at most `maxBytes` bytes. */
  uint(limit: number, maxBytes: number, what: string): bigint {
    const len = this.string(limit, what);
    if (len === 0) return 0n;
    if (len > maxBytes) throw new DecodeError(`${what}: integer wider than ${maxBytes * 8} bits`);
    if (this.buf[this.start] === 0) throw new DecodeError(`${what}: integer has a leading zero byte`);
    return bytesToBigInt(this.buf, this.start, len);
  }

  /** Checks a canonical unsigned integer of at most `maxBytes` bytes without converting it. */
  skipUint(limit: number, maxBytes: number, what: string): void {
    const len = this.string(limit, what);
    if (len === 0) return;
    if (len > maxBytes) throw new DecodeError(`${what}: integer wider than ${maxBytes * 8} bits`);
    if (this.buf[this.start] === 0) throw new DecodeError(`${what}: integer has a leading zero byte`);
  }

  /** Skips one item of any kind, checking only its header. */
  skip(limit: number, what: string): void {
    this.header(limit, what);
    this.pos = this.start + this.len;
  }

  /** Asserts that the list ending at `end` has been consumed exactly. */
  finish(end: number, what: string): void {
    if (this.pos !== end) throw new DecodeError(`${what}: unexpected extra items`);
  }

  /**
   * Decodes the header at `pos`, bounded by `limit` (the end of the enclosing
   * list or of the input). Sets `start`/`len`; returns true for a list.
   */
  private header(limit: number, what: string): boolean {
    headersRead++;
    const buf = this.buf;
    const pos = this.pos;
    if (pos >= limit) throw new DecodeError(`${what}: unexpected end of input`);
    const b = buf[pos]!;
    let list = false;
    if (b < 0x80) {
      this.start = pos;
      this.len = 1;
      return false;
    } else if (b < 0xb8) {
      this.start = pos + 1;
      this.len = b - 0x80;
      if (this.len === 1 && pos + 1 < limit && buf[pos + 1]! < 0x80) {
        throw new DecodeError(`${what}: non-canonical single byte`);
      }
    } else if (b < 0xc0) {
      this.longLength(b - 0xb7, limit, what);
    } else if (b < 0xf8) {
      list = true;
      this.start = pos + 1;
      this.len = b - 0xc0;
    } else {
      list = true;
      this.longLength(b - 0xf7, limit, what);
    }
    if (this.start + this.len > limit) throw new DecodeError(`${what}: item runs past its container`);
    return list;
  }

  private longLength(lenOfLen: number, limit: number, what: string): void {
    const buf = this.buf;
    const first = this.pos + 1;
    if (first + lenOfLen > limit) throw new DecodeError(`${what}: truncated length`);
    if (buf[first] === 0) throw new DecodeError(`${what}: length has a leading zero byte`);
    if (lenOfLen > MAX_LENGTH_OF_LENGTH) throw new DecodeError(`${what}: item runs past its container`);
    let len = 0;
    for (let i = 0; i < lenOfLen; i++) len = len * 256 + buf[first + i]!;
    if (len < SHORT_FORM_LIMIT) throw new DecodeError(`${what}: non-canonical length (short form required)`);
    this.start = first + lenOfLen;
    this.len = len;
  }
}

/** Big-endian unsigned integer from `len` bytes at `start`, six bytes per step to stay in exact doubles. */
export function bytesToBigInt(buf: Uint8Array, start: number, len: number): bigint {
  const end = start + len;
  let head = len % 6;
  if (head === 0) head = 6;
  let n = 0;
  let i = start;
  for (; i < start + head; i++) n = n * 256 + buf[i]!;
  let x = BigInt(n);
  while (i < end) {
    n = 0;
    for (const stop = i + 6; i < stop; i++) n = n * 256 + buf[i]!;
    x = (x << 48n) | BigInt(n);
  }
  return x;
}

/** Length of the RLP header for a payload of `len` bytes (strings of one byte < 0x80 excepted). */
export function headerSize(len: number): number {
  if (len < SHORT_FORM_LIMIT) return 1;
  let ll = 1;
  while (len >= 2 ** (8 * ll)) ll++;
  return 1 + ll;
}

/**
 * Writes an RLP header for a payload of `len` bytes at `out[at]`, `base` 0x80
 * for a string or 0xc0 for a list. Returns the offset just after it.
 */
export function writeHeader(out: Uint8Array, at: number, base: number, len: number): number {
  if (len < SHORT_FORM_LIMIT) {
    out[at] = base + len;
    return at + 1;
  }
  const ll = headerSize(len) - 1;
  out[at] = base + 55 + ll;
  for (let i = ll; i >= 1; i--) {
    out[at + i] = len & 0xff;
    len = Math.floor(len / 256);
  }
  return at + 1 + ll;
}

/** Writes the canonical RLP encoding of unsigned integer `x` at `out[at]`; returns the end offset. */
export function writeUint(out: Uint8Array, at: number, x: bigint): number {
  if (x === 0n) {
    out[at] = 0x80;
    return at + 1;
  }
  if (x < 0x80n) {
    out[at] = Number(x);
    return at + 1;
  }
  let n = 0;
  for (let t = x; t > 0n; t >>= 8n) n++;
  out[at] = 0x80 + n; // integers here are at most 32 bytes, always the short form
  for (let i = n; i >= 1; i--) {
    out[at + i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return at + 1 + n;
}
