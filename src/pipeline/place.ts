/**
 * Placing a transaction's bytes in the shared slab: their one copy between
 * socket and check. Raw bodies are read straight into their block (`reserve`),
 * text is decoded straight into it, a datagram is copied. Each function sets
 * the admission's `offset` and `length`, or returns the refusal holding nothing.
 */
import { E, RelayError } from '../errors.js';
import type { Slab } from '../tables/slab.js';
import { base58Decode } from '../native/base58.js';
import { MAX_V1_TX_SIZE } from '../chains/solana/decode.js';
import { base64DecodedLength, decodeBase64Into } from '../chains/solana/base64.js';
import { decodeHexInto, hexTransactionLength, parseHexTransaction } from '../chains/evm/hex.js';
import { Encoding } from './submission.js';
import type { Admission } from './admission.js';

/** base58 of 4096 bytes is at most ~5600 characters (log 256 / log 58 = 1.366 per byte). */
/** Base64's alphabet with a character base58 leaves out: base64 sent without saying so (docs/protocol.md#solana-bundles). */
const BASE64_LOOK = /^(?=[^]*[0OIl+/=])[A-Za-z0-9+/]+={0,2}$/;
const MAX_BASE58_CHARS = Math.ceil(MAX_V1_TX_SIZE * 1.3658) + 1;

export const SLAB_FULL = 'slab full';

export class Placer {
  /** The slab, and the same memory as a Buffer: codecs work at an offset without a view per call. */
  readonly bytes: Uint8Array;
  readonly buf: Buffer;

  constructor(private readonly slab: Slab) {
    this.bytes = slab.bytes;
    this.buf = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.length);
  }

  /** A block of `length` bytes for `a`; false when in-flight bytes are at their bound. */
  reserve(a: Admission, length: number): boolean {
    const offset = this.slab.alloc(length);
    if (offset < 0) return false;
    a.offset = offset;
    a.length = length;
    return true;
  }

  view(offset: number, length: number): Uint8Array {
    return this.bytes.subarray(offset, offset + length);
  }

  /** Copies src[start, end) into a new block; -1 when the slab is full. */
  copy(src: Uint8Array, start: number, end: number): number {
    const offset = this.slab.alloc(end - start);
    if (offset < 0) return -1;
    if (src instanceof Buffer) src.copy(this.buf, offset, start, end);
    else this.bytes.set(src.subarray(start, end), offset);
    return offset;
  }

  release(offset: number): void {
    this.slab.free(offset);
  }

  releaseOf(a: Admission): void {
    if (a.offset >= 0) {
      this.slab.free(a.offset);
      a.offset = -1;
    }
    const parts = a.bundle;
    if (parts !== null && parts.offsets !== null) {
      for (const o of parts.offsets) this.slab.free(o);
      parts.offsets = null;
    }
  }

  /** Base64 strict (standard alphabet, padded, canonical, as the Solana RPC decodes it) or base58. */
  solanaText(a: Admission, text: string, encoding: Encoding): RelayError | null {
    const bad = (m: string) => new RelayError(E.SOL_DECODE, m);
    if (encoding === Encoding.Base58) {
      if (text.length > MAX_BASE58_CHARS) return bad('transaction too large');
      const bytes = base58Decode(text, MAX_V1_TX_SIZE);
      if (bytes === null) return bad(BASE64_LOOK.test(text) ? 'invalid base58 (this looks like base64: pass {"encoding":"base64"})' : 'invalid base58');
      const offset = this.copy(bytes, 0, bytes.length);
      if (offset < 0) return new RelayError(E.CAPACITY, SLAB_FULL);
      a.offset = offset;
      a.length = bytes.length;
      return null;
    }
    const len = base64DecodedLength(text);
    if (len < 0) return bad('invalid base64');
    if (len === 0) return bad('empty transaction');
    if (len > MAX_V1_TX_SIZE) return bad(`transaction is ${len} bytes, more than ${MAX_V1_TX_SIZE}`);
    if (!this.reserve(a, len)) return new RelayError(E.CAPACITY, SLAB_FULL);
    if (!decodeBase64Into(text, this.buf, a.offset, len)) {
      this.releaseOf(a);
      return bad('invalid base64');
    }
    return null;
  }

  /** `0x` hex; a malformed text is told so even when the slab is full. */
  hex(a: Admission, text: string): RelayError | null {
    let len: number;
    try {
      len = hexTransactionLength(text);
    } catch (e) {
      return new RelayError(E.TX_INVALID, (e as Error).message);
    }
    if (this.reserve(a, len)) {
      if (decodeHexInto(text, this.buf, a.offset, len)) return null;
      this.releaseOf(a);
    }
    // Refused or no room. The table parser names the bad digit and refuses exactly what Node's decoder
    // refuses (test/chains/evm/hex.test.ts), so a text it accepts only lacked room.
    try {
      parseHexTransaction(text);
    } catch (e) {
      return new RelayError(E.TX_INVALID, (e as Error).message);
    }
    return new RelayError(E.CAPACITY, SLAB_FULL);
  }
}
