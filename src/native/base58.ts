/**
 * base58 with the Bitcoin/Solana alphabet: the encoding of every Solana
 * signature we return and of `encoding: "base58"` transactions we accept.
 *
 * Uses the native addon (native/base58.c, built at install time by
 * scripts/build-native.mjs) when it loads, and the `bs58` package otherwise.
 * Both backends give byte-identical results; test/native-base58.test.ts pins
 * that. `TXRELAY_NO_NATIVE=1` forces the JavaScript backend.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import bs58 from 'bs58';

export type Base58Backend = 'native' | 'js';

export interface Base58Codec {
  encode(bytes: Uint8Array): string;
  /** Encodes bytes[offset, offset + length) without the caller making a subarray. */
  encodeAt(bytes: Uint8Array, offset: number, length: number): string;
  /** null on a character outside the alphabet or a result longer than maxLen. */
  decode(str: string, maxLen: number): Uint8Array | null;
}

/** The addon's exports (native/base58.c). */
interface NativeAddon {
  encode(bytes: Uint8Array): string;
  encode64At(bytes: Uint8Array, offset: number): string;
  decode(str: string, maxLen?: number): Uint8Array | null;
  /** Largest input the addon's stack buffers take; larger goes to JS. */
  readonly maxBytes: number;
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

/**
 * The package root: the nearest ancestor of this file holding
 * native/binding.gyp (shipped in the package's `files`), so the lookup works
 * from dist/src/native/ and from an installed node_modules/txrelay alike.
 */
function packageRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'native', 'binding.gyp'))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Where the addon is expected (null if the package root was not found). */
export const nativeAddonPath: string | null = (() => {
  const root = packageRoot();
  return root === null ? null : join(root, 'native', 'build', 'Release', 'txrelay_native.node');
})();

function loadAddon(): { addon: NativeAddon | null; reason: string | null } {
  if (process.env.TXRELAY_NO_NATIVE === '1') return { addon: null, reason: 'disabled by TXRELAY_NO_NATIVE=1' };
  if (nativeAddonPath === null || !existsSync(nativeAddonPath)) {
    return { addon: null, reason: `not built (${nativeAddonPath ?? 'package root not found'}); run node scripts/build-native.mjs` };
  }
  try {
    const addon = createRequire(import.meta.url)(nativeAddonPath) as NativeAddon;
    // A wrong answer is worse than a slow one: refuse an addon that fails a known vector.
    const probe = new Uint8Array([0, 0, 0x28, 0x7f, 0xb4, 0xcd]);
    if (addon.encode(probe) !== '11233QC4' || addon.decode('11233QC4', 16)?.join() !== probe.join()) {
      return { addon: null, reason: 'failed its self-check' };
    }
    return { addon, reason: null };
  } catch (err) {
    return { addon: null, reason: `failed to load: ${(err as Error).message}` };
  }
}

const loaded = loadAddon();

/** The native codec, or null when the addon is absent, disabled or broken (see nativeUnavailableReason). */
export const nativeBase58: Base58Codec | null = loaded.addon === null ? null : wrapAddon(loaded.addon);
/** Why the native codec is not in use, for a startup log line; null when it is. */
export const nativeUnavailableReason: string | null = loaded.reason;

export const base58Backend: Base58Backend = nativeBase58 === null ? 'js' : 'native';

const codec = nativeBase58 ?? jsBase58;

export const base58Encode: (bytes: Uint8Array) => string = codec.encode;
/** Encode bytes[offset, offset + length), e.g. a 64-byte signature inside a SharedArrayBuffer slab. */
export const base58EncodeAt: (bytes: Uint8Array, offset: number, length: number) => string = codec.encodeAt;
export const base58Decode: (str: string, maxLen: number) => Uint8Array | null = codec.decode;
