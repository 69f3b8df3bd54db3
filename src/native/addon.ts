/**
 * The project's native addon (native/: base58.c, keccak.c), loaded once per
 * thread. Built at install time by scripts/build-native.mjs; absent, broken
 * or disabled (`TXRELAY_NO_NATIVE=1`), every user falls back to JavaScript
 * or WebAssembly (src/native/base58.ts, src/chains/evm/hash.ts).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The addon's exports. */
export interface NativeAddon {
  encode(bytes: Uint8Array): string;
  encode64At(bytes: Uint8Array, offset: number): string;
  decode(str: string, maxLen?: number): Uint8Array | null;
  /** Largest input the base58 functions' stack buffers take; larger goes to JS. */
  readonly maxBytes: number;
  /** Keccak-256 (Ethereum's) of in[inOffset, inOffset + inLength), written at out[outOffset]; allocates nothing. */
  keccak256At(input: Uint8Array, inOffset: number, inLength: number, out: Uint8Array, outOffset: number): void;
  /** A plain ArrayBuffer over the memory of a Uint8Array spanning a SharedArrayBuffer (native/shared.c). */
  sharedAlias?(view: Uint8Array): ArrayBuffer;
  /** Ed25519 check with libsodium's rule (native/ed25519.c, docs/protocol.md); false for a wrong-sized sig or key. */
  ed25519Verify?(sig: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
  /** As ed25519Verify, with signature, key and message at offsets of one array (RangeError outside it). */
  ed25519VerifyAt?(buf: Uint8Array, sigAt: number, keyAt: number, msgAt: number, msgLen: number): boolean;
  /**
   * n <= 64 checks of ed25519VerifyAt in one call, sharing one field inversion: item i's
   * signature, key, message offsets and message length are spec[4i..4i+3]; out[i] = 1 or 0,
   * each exactly ed25519VerifyAt's answer. Returns how many are 1.
   */
  ed25519VerifyBatchAt?(buf: Uint8Array, spec: Uint32Array, n: number, out: Uint8Array): number;
  /** The arithmetic of the native ed25519 check's scalar multiplication: 'avx512ifma' (vector, native/ed25519_avx512.h) or 'scalar'. */
  readonly ed25519Arith?: string;
  /** The canonical encoding of the point a 32-byte string decodes to (libsodium's decoder), or null (tests). */
  ed25519DecodePoint?(enc: Uint8Array): Uint8Array | null;
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
    // An addon built before keccak256At existed, or computing it wrong: keccak-256 of "" is c5d246…a470.
    const digest = new Uint8Array(32);
    if (typeof addon.keccak256At !== 'function') return { addon: null, reason: 'built without keccak256At; rebuild it' };
    addon.keccak256At(digest, 0, 0, digest, 0);
    if (Buffer.from(digest).toString('hex') !== EMPTY_KECCAK) return { addon: null, reason: 'failed its self-check' };
    return { addon, reason: null };
  } catch (err) {
    return { addon: null, reason: `failed to load: ${(err as Error).message}` };
  }
}

const EMPTY_KECCAK = 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';

const loaded = loadAddon();

/** The addon, or null when it is absent, disabled or broken (see nativeUnavailableReason). */
export const nativeAddon: NativeAddon | null = loaded.addon;
/** Why the addon is not in use, for a startup log line; null when it is. */
export const nativeUnavailableReason: string | null = loaded.reason;

/**
 * A plain ArrayBuffer over the same memory as `sab`, for libraries that refuse
 * shared memory; null without the addon or when the alias fails its check (the
 * caller copies). The caller keeps `sab` alive while it uses the result.
 */
export function sharedAlias(sab: SharedArrayBuffer): ArrayBuffer | null {
  const f = loaded.addon?.sharedAlias;
  if (f === undefined) return null;
  // Nothing to alias (and V8 gives an empty external buffer no memory: it would come back detached).
  if (sab.byteLength === 0) return new ArrayBuffer(0);
  const ab = f(new Uint8Array(sab));
  if (ab.byteLength !== sab.byteLength) return null;
  // One byte written through the alias must read back through the SharedArrayBuffer.
  const a = new Uint8Array(ab);
  const s = new Uint8Array(sab);
  if (a.length > 0) {
    const was = s[0]!;
    a[0] = was ^ 0xff;
    const same = s[0] === (was ^ 0xff);
    s[0] = was;
    if (!same) return null;
  }
  return ab;
}
