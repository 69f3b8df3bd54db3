/**
 * Ed25519 (RFC 8032) verification of every signature of a decoded Solana
 * transaction: signature i by static account key i over the message bytes
 * (legacy/v0: the message after the signatures; v1: everything before them,
 * SIMD-0385 "Signatures").
 *
 * Hot path: libsodium through sodium-native. Fallback when the native addon
 * cannot load: tweetnacl, pure JS and about 300x slower (bench/solana.bench.ts
 * on the 2-core CI machine: ~40 µs vs ~12 ms per single-signer transaction).
 */

import { createRequire } from 'node:module';
import nacl from 'tweetnacl';
import { MAX_V1_TX_SIZE, type SolanaTxView } from './decode.js';

export type Ed25519Backend = 'sodium-native' | 'tweetnacl';

interface SodiumVerify {
  crypto_sign_verify_detached(sig: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

function loadSodium(): SodiumVerify | null {
  try {
    const mod = createRequire(import.meta.url)('sodium-native') as Partial<SodiumVerify>;
    return typeof mod.crypto_sign_verify_detached === 'function' ? (mod as SodiumVerify) : null;
  } catch {
    return null;
  }
}

const sodium = loadSodium();

/** The backend `verifySolanaTransaction` uses in this process. */
export const ed25519Backend: Ed25519Backend = sodium !== null ? 'sodium-native' : 'tweetnacl';

const SIGNATURE_BYTES = 64;
const KEY_BYTES = 32;

// sodium-native 5.1 passes `typedArray.buffer` to its binding, and for a
// SharedArrayBuffer the binding returns undefined: no throw, no boolean
// (measured on Node 20.20). Bytes living in a worker's shared slab are
// therefore copied into this thread's scratch buffer first; the bench shows
// the copy costs ~1 µs of a ~41 µs verification. Module-level, so one per
// thread, and safe because verification is synchronous.
let scratch = new Uint8Array(MAX_V1_TX_SIZE);

function unshared(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof ArrayBuffer) return bytes;
  if (bytes.length > scratch.length) scratch = new Uint8Array(bytes.length);
  scratch.set(bytes);
  return scratch;
}

/**
 * The last view handed out over a buffer, reused when the next one asks for
 * the same window of the same buffer. Transactions from a shared slab are
 * all verified in `scratch`, and transactions of one shape put their first
 * signature, first key and (same size) message at the same offsets, so most
 * checks need no new view: three fewer objects (~290 B of JS heap) per
 * transaction. A view is only a window; what it shows is the bytes there now.
 */
class ViewCache {
  private buf: Uint8Array | null = null;
  private at = -1;
  private len = -1;
  private last: Uint8Array | null = null;

  of(buf: Uint8Array, at: number, len: number): Uint8Array {
    if (buf === this.buf && at === this.at && len === this.len) return this.last!;
    this.buf = buf;
    this.at = at;
    this.len = len;
    return (this.last = buf.subarray(at, at + len));
  }
}
const msgViews = new ViewCache();
const sigViews = new ViewCache();
const keyViews = new ViewCache();

/** Verifies every signature with the process backend. `view` must come from decoding `bytes`. */
export function verifySolanaTransaction(bytes: Uint8Array, view: SolanaTxView): boolean {
  return verifyWith(ed25519Backend, bytes, view);
}

/** As `verifySolanaTransaction`, with the backend chosen by the caller (tests, bench). */
export function verifyWith(backend: Ed25519Backend, bytes: Uint8Array, view: SolanaTxView): boolean {
  const n = view.numSignatures;
  if (n === 0 || bytes.length !== view.size) return false;
  if (backend === 'sodium-native') {
    if (sodium === null) throw new Error('sodium-native is not available in this process');
    const b = unshared(bytes);
    const message = msgViews.of(b, view.messageOffset, view.messageLength);
    for (let i = 0; i < n; i++) {
      const s = view.signaturesOffset + i * SIGNATURE_BYTES;
      const k = view.accountKeysOffset + i * KEY_BYTES;
      // `=== true`: anything else the binding may return counts as a failure.
      if (sodium.crypto_sign_verify_detached(sigViews.of(b, s, SIGNATURE_BYTES), message, keyViews.of(b, k, KEY_BYTES)) !== true) {
        return false;
      }
    }
    return true;
  }
  const message = bytes.subarray(view.messageOffset, view.messageOffset + view.messageLength);
  for (let i = 0; i < n; i++) {
    const s = view.signaturesOffset + i * SIGNATURE_BYTES;
    const k = view.accountKeysOffset + i * KEY_BYTES;
    // libsodium (and Solana's verify_strict) reject a non-canonical S;
    // tweetnacl does not, so check it here to keep the backends in step.
    if (!isCanonicalScalar(bytes, s + 32)) return false;
    if (!nacl.sign.detached.verify(message, bytes.subarray(s, s + SIGNATURE_BYTES), bytes.subarray(k, k + KEY_BYTES))) return false;
  }
  return true;
}

/** The Ed25519 group order L = 2^252 + 27742317777372353535851937790883648493, little-endian. */
const L = Uint8Array.from([
  0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
]);

/** S < L (RFC 8032 section 5.1.7 step 1). */
export function isCanonicalScalar(b: Uint8Array, o: number): boolean {
  for (let i = 31; i >= 0; i--) {
    const x = b[o + i]!;
    const l = L[i]!;
    if (x < l) return true;
    if (x > l) return false;
  }
  return false; // S == L
}
