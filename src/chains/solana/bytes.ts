/**
 * Bounds-checked byte reader for the Solana wire format, modelled on Agave's
 * transaction-view `bytes.rs`: the one place lengths are trusted or refused
 * and compact-u16 ("shortvec") is decoded, so non-canonical or out-of-bounds
 * input is refused here and nowhere else. Failures are `DecodeError`s whose
 * short message is safe to show the submitter.
 */

import { DecodeError } from '../../errors.js';

const EMPTY = new Uint8Array(0);

/** A cursor over one byte string; fields start as numbers so V8 keeps one hidden class, and decoders `reset()` one per thread. */
export class ByteReader {
  bytes: Uint8Array = EMPTY;
  pos = 0;
  end = 0;
  /** Steps since `reset()`, one per byte inspected or bounded operation: the DoS tests assert linear growth, not timing. */
  ops = 0;

  reset(bytes: Uint8Array): this {
    this.bytes = bytes;
    this.pos = 0;
    this.end = bytes.length;
    this.ops = 0;
    return this;
  }

  /** Drops the reference so a reused reader does not pin a large buffer. */
  release(): void {
    this.bytes = EMPTY;
    this.pos = 0;
    this.end = 0;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  u8(): number {
    this.ops++;
    const p = this.pos;
    if (p >= this.end) throw truncated();
    this.pos = p + 1;
    return this.bytes[p]!;
  }

  u16le(): number {
    this.ops++;
    const p = this.pos;
    if (this.end - p < 2) throw truncated();
    this.pos = p + 2;
    const b = this.bytes;
    return b[p]! | (b[p + 1]! << 8);
  }

  u32le(): number {
    this.ops++;
    const p = this.pos;
    if (this.end - p < 4) throw truncated();
    this.pos = p + 4;
    const b = this.bytes;
    return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  }

  /**
   * Compact-u16: 7 bits per byte, little-endian, high bit = "more". Shortest
   * form only (no zero continuation byte), third byte at most 2 bits: the chain
   * refuses other encodings, which would share a signature but differ in bytes.
   */
  shortU16(): number {
    this.ops++;
    const b = this.bytes;
    const p = this.pos;
    const end = this.end;
    if (p >= end) throw truncated();
    const b0 = b[p]!;
    if (b0 < 0x80) {
      this.pos = p + 1;
      return b0;
    }
    if (p + 1 >= end) throw truncated();
    const b1 = b[p + 1]!;
    if (b1 === 0) throw nonCanonical();
    if (b1 < 0x80) {
      this.pos = p + 2;
      return (b0 & 0x7f) | (b1 << 7);
    }
    if (p + 2 >= end) throw truncated();
    const b2 = b[p + 2]!;
    if (b2 === 0) throw nonCanonical();
    if (b2 > 3) throw new DecodeError('compact-u16 length overflows u16');
    this.pos = p + 3;
    return (b0 & 0x7f) | ((b1 & 0x7f) << 7) | (b2 << 14);
  }

  // Bounds-checked random access into a region already `skip`ped (e.g. v1 instruction headers).
  u8At(offset: number): number {
    this.ops++;
    if (offset < 0 || offset >= this.end) throw truncated();
    return this.bytes[offset]!;
  }

  u16leAt(offset: number): number {
    this.ops++;
    if (offset < 0 || offset + 2 > this.end) throw truncated();
    const b = this.bytes;
    return b[offset]! | (b[offset + 1]! << 8);
  }

  u32leAt(offset: number): number {
    this.ops++;
    if (offset < 0 || offset + 4 > this.end) throw truncated();
    const b = this.bytes;
    return (b[offset]! | (b[offset + 1]! << 8) | (b[offset + 2]! << 16) | (b[offset + 3]! << 24)) >>> 0;
  }

  /** Advances past `n` bytes and returns the offset where they start. */
  skip(n: number): number {
    this.ops++;
    const p = this.pos;
    if (n > this.end - p) throw truncated();
    this.pos = p + n;
    return p;
  }

  /**
   * Advances past `n` index bytes and returns the largest of them (-1 when
   * n is 0): how decoders range-check account indexes in one pass.
   */
  maxByte(n: number): number {
    const p = this.pos;
    if (n > this.end - p) throw truncated();
    const b = this.bytes;
    let max = -1;
    for (let i = p, e = p + n; i < e; i++) {
      const v = b[i]!;
      if (v > max) max = v;
    }
    this.ops += n + 1;
    this.pos = p + n;
    return max;
  }

  /** Costs a step per call so callers can charge non-reading loops too. */
  charge(n: number): void {
    this.ops += n;
  }

  expectEnd(): void {
    const extra = this.end - this.pos;
    if (extra !== 0) {
      throw new DecodeError(extra === 1 ? '1 trailing byte after transaction' : `${extra} trailing bytes after transaction`);
    }
  }
}

function truncated(): DecodeError {
  return new DecodeError('transaction is truncated');
}

function nonCanonical(): DecodeError {
  return new DecodeError('non-canonical compact-u16 length');
}

/** Encodes a compact-u16 (shortest form). Used by tests and builders, never on the hot path. */
export function encodeShortU16(value: number): number[] {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff) throw new RangeError(`compact-u16 out of range: ${value}`);
  const out: number[] = [];
  let v = value;
  for (;;) {
    const low = v & 0x7f;
    v >>>= 7;
    if (v === 0) {
      out.push(low);
      return out;
    }
    out.push(low | 0x80);
  }
}
