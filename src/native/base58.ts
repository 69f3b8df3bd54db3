/**
 * base58 (Bitcoin/Solana alphabet) for the Solana signatures we return and the
 * `encoding: "base58"` transactions we accept: the native addon
 * (native/base58.c) when it loads, else `bs58` (`TXRELAY_NO_NATIVE=1` forces
 * it); test/native/base58.test.ts pins identical results.
 */
import bs58 from 'bs58';
import { nativeAddon, nativeAddonPath, nativeUnavailableReason, type NativeAddon } from './addon.js';

type Base58Backend = 'native' | 'js';

export interface Base58Codec {
  encode(bytes: Uint8Array): string;
  /** Encodes bytes[offset, offset + length) without the caller making a subarray. */
  encodeAt(bytes: Uint8Array, offset: number, length: number): string;
  /** null on a character outside the alphabet or a result longer than maxLen. */
  decode(str: string, maxLen: number): Uint8Array | null;
}

/**
 * Longest string that can decode to at most maxLen bytes: encoded length is
 * at most ceil(n * log(256)/log(58)) = ceil(n * 1.36566) chars. Checked before
 * decoding so a long hostile string costs nothing (decoding is quadratic).
 */
export function maxBase58Chars(maxLen: number): number {
  return Math.floor((maxLen * 138) / 100) + 1;
}

function checkMaxLen(maxLen: number): void {
  if (!Number.isSafeInteger(maxLen) || maxLen < 0) {
    throw Object.assign(new TypeError('base58: maxLen must be a non-negative integer'), { code: 'TXR_B58_ARG' });
  }
}

function checkRange(bytes: Uint8Array, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > bytes.length) {
    throw Object.assign(new RangeError('base58: offset/length outside the array'), { code: 'TXR_B58_RANGE' });
  }
}

export const jsBase58: Base58Codec = {
  encode: (bytes) => bs58.encode(bytes),
  encodeAt(bytes, offset, length) {
    checkRange(bytes, offset, length);
    return bs58.encode(bytes.subarray(offset, offset + length));
  },
  decode(str, maxLen) {
    checkMaxLen(maxLen);
    if (str.length > maxBase58Chars(maxLen)) return null;
    const out = bs58.decodeUnsafe(str);
    return out === undefined || out.length > maxLen ? null : out;
  },
};

function wrapAddon(addon: NativeAddon): Base58Codec {
  const max = addon.maxBytes;
  const encode = (bytes: Uint8Array): string => (bytes.length <= max ? addon.encode(bytes) : jsBase58.encode(bytes));
  return {
    encode,
    encodeAt(bytes, offset, length) {
      if (length === 64) return addon.encode64At(bytes, offset);
      checkRange(bytes, offset, length);
      return encode(bytes.subarray(offset, offset + length));
    },
    decode: (str, maxLen) => (maxLen <= max ? addon.decode(str, maxLen) : jsBase58.decode(str, maxLen)),
  };
}

/** The native codec, or null when the addon is absent, disabled or broken (see nativeUnavailableReason). */
export const nativeBase58: Base58Codec | null = nativeAddon === null ? null : wrapAddon(nativeAddon);
export { nativeAddonPath, nativeUnavailableReason };

export const base58Backend: Base58Backend = nativeBase58 === null ? 'js' : 'native';

const codec = nativeBase58 ?? jsBase58;

export const base58Encode: (bytes: Uint8Array) => string = codec.encode;
/** Encode bytes[offset, offset + length), e.g. a 64-byte signature inside a SharedArrayBuffer slab. */
export const base58EncodeAt: (bytes: Uint8Array, offset: number, length: number) => string = codec.encodeAt;
export const base58Decode: (str: string, maxLen: number) => Uint8Array | null = codec.decode;
