/**
 * Ed25519 (RFC 8032) check of every signature of a decoded Solana transaction:
 * signature i by static key i over the message (legacy/v0: after the
 * signatures; v1: before them). The project's native addon (native/ed25519.c,
 * libsodium's rule, docs/protocol.md) when it loads and passes a self-test,
 * else libsodium via sodium-native (42-55 µs per signature), else node:crypto
 * (~74 µs); never a pure-JS verifier, ~300x slower. The start-up log names
 * the backend and, when it is not the native one, why.
 */

import { createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import { MAX_V1_TX_SIZE, type SolanaTxView } from './decode.js';
import { nativeAddon, nativeUnavailableReason, sharedAlias, type NativeAddon } from '../../native/addon.js';
import { ed25519SelfTest } from './verify-selftest.js';

export type Ed25519Backend = 'native' | 'sodium-native' | 'node:crypto';

interface SodiumVerify {
  crypto_sign_verify_detached(sig: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

function loadSodium(): SodiumVerify | null {
  if (process.env.TXRELAY_ED25519_BACKEND === 'node:crypto') return null;
  try {
    const mod = createRequire(import.meta.url)('sodium-native') as Partial<SodiumVerify>;
    return typeof mod.crypto_sign_verify_detached === 'function' ? (mod as SodiumVerify) : null;
  } catch {
    return null;
  }
}

const sodium = loadSodium();

type NativeVerify = Required<Pick<NativeAddon, 'ed25519Verify' | 'ed25519VerifyAt'>> & Pick<NativeAddon, 'ed25519VerifyBatchAt'>;

/** The addon's verifier when it is built with one and answers its self-test like libsodium. */
function loadNative(): { native: NativeVerify | null; reason: string | null } {
  const a = nativeAddon;
  if (a === null) return { native: null, reason: `native addon ${nativeUnavailableReason ?? 'not loaded'}` };
  if (typeof a.ed25519Verify !== 'function' || typeof a.ed25519VerifyAt !== 'function') return { native: null, reason: 'native addon built without ed25519; rebuild it' };
  const failed = ed25519SelfTest(a.ed25519Verify);
  return failed === null ? { native: a as NativeVerify, reason: null } : { native: null, reason: `native ed25519 failed its self-test (${failed})` };
}

const forced = process.env.TXRELAY_ED25519_BACKEND;
const loadedNative = forced === 'sodium-native' || forced === 'node:crypto' ? { native: null, reason: `TXRELAY_ED25519_BACKEND=${forced}` } : loadNative();
const native = loadedNative.native;

/** The backend `verifySolanaTransaction` uses in this process. */
export const ed25519Backend: Ed25519Backend = native !== null ? 'native' : sodium !== null && forced !== 'node:crypto' ? 'sodium-native' : 'node:crypto';
/** The native check's arithmetic (for the start-up line): 'avx512ifma' or 'scalar'; null when it is not in use. */
export const ed25519Arith: string | null = native !== null ? (nativeAddon?.ed25519Arith ?? 'scalar') : null;
/** Why the native verifier is not in use (for the start-up line); null when it is. */
export const ed25519FallbackReason: string | null = loadedNative.reason;
/** The backends this process can use (tests, bench). */
export const ed25519Backends: Ed25519Backend[] = [...(native !== null ? (['native'] as const) : []), ...(sodium !== null ? (['sodium-native'] as const) : []), 'node:crypto'];

const SIGNATURE_BYTES = 64;
const KEY_BYTES = 32;

/** Signatures per native batch call at most (native/ed25519.h). */
const BATCH_MAX = 64;
const batchVerify = native?.ed25519VerifyBatchAt ?? null;
/** Whether `SignatureBatch` works in this process: the native backend with its batch call. */
export const ed25519Batchable = ed25519Backend === 'native' && batchVerify !== null;

/**
 * The signatures of several transactions checked in native batch calls of up
 * to 64 (a verify worker under load, src/exec/check.ts). Each signature gets
 * exactly its single check's answer (docs/protocol.md#signature-rule); the
 * calls only share one field inversion and the trip into native code. All
 * transactions lie in one array, given to `run`.
 */
export class SignatureBatch {
  private readonly spec = new Uint32Array(4 * BATCH_MAX);
  private readonly out = new Uint8Array(BATCH_MAX);
  /** Per transaction added: its first item and its signature count. */
  private readonly first: number[] = [];
  private readonly count: number[] = [];
  private items = 0;

  /** Transactions added since the last `run`. */
  get size(): number {
    return this.count.length;
  }

  /** Adds a transaction (offsets as `verifySignatures`); false when its signatures do not fit (run first; over 64 never fit). */
  add(at: number, n: number, sigAt: number, keysAt: number, msgAt: number, msgLen: number): boolean {
    if (this.items + n > BATCH_MAX) return false;
    const spec = this.spec;
    for (let i = 0; i < n; i++) {
      const j = 4 * (this.items + i);
      spec[j] = at + sigAt + i * SIGNATURE_BYTES;
      spec[j + 1] = at + keysAt + i * KEY_BYTES;
      spec[j + 2] = at + msgAt;
      spec[j + 3] = msgLen;
    }
    this.first.push(this.items);
    this.count.push(n);
    this.items += n;
    return true;
  }

  /** ok[t]: every signature of the t-th transaction added is valid (none: false, as `verifySignatures`). Empties the batch. */
  run(bytes: Uint8Array, ok: boolean[]): void {
    if (batchVerify === null) throw new Error('the native ed25519 batch call is not available in this process');
    ok.length = 0;
    if (this.items > 0) batchVerify(bytes, this.spec, this.items, this.out);
    for (let t = 0; t < this.count.length; t++) {
      const from = this.first[t]!;
      const n = this.count[t]!;
      let all = n > 0;
      for (let i = from; i < from + n && all; i++) all = this.out[i] === 1;
      ok.push(all);
    }
    this.first.length = 0;
    this.count.length = 0;
    this.items = 0;
  }
}

/** A multi-signature transaction's signatures in one call. */
const txBatch = new SignatureBatch();
const txOk: boolean[] = [];

/**
 * sodium-native 5.1 returns undefined (no throw) for SharedArrayBuffer-backed
 * input, so slab bytes go through a plain ArrayBuffer alias of the same memory
 * (`sharedAlias`, native addon) or, without the addon, a copy into this
 * thread's scratch (~1 µs of ~41 µs). Safe per thread: verification is synchronous.
 */
let scratch = new Uint8Array(MAX_V1_TX_SIZE);
let aliasOf: SharedArrayBuffer | null = null;
let alias: Uint8Array | null = null;

function unshared(bytes: Uint8Array): Uint8Array {
  const buf = bytes.buffer;
  if (buf instanceof ArrayBuffer) return bytes;
  if (buf !== aliasOf) {
    const ab = sharedAlias(buf as SharedArrayBuffer);
    aliasOf = buf as SharedArrayBuffer;
    alias = ab === null ? null : new Uint8Array(ab);
  }
  if (alias !== null) return alias.subarray(bytes.byteOffset, bytes.byteOffset + bytes.length);
  if (bytes.length > scratch.length) scratch = new Uint8Array(bytes.length);
  scratch.set(bytes);
  return scratch.subarray(0, bytes.length);
}

/**
 * The last view over a buffer, reused for the same window: transactions of one
 * shape put signature, key and message at the same offsets, saving three views
 * (~290 B) per transaction. A view shows whatever bytes are there now.
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
  if (bytes.length !== view.size) return false;
  return verifySignatures(backend, bytes, 0, view.numSignatures, view.signaturesOffset, view.accountKeysOffset, view.messageOffset, view.messageLength);
}

/**
 * The signatures of the transaction at bytes[at..], decoded elsewhere (a
 * bundle member decoded on the main thread, checked on a worker): `n`
 * signatures at `sigAt`, their keys at `keysAt`, the signed message at
 * [msgAt, msgAt + msgLen), offsets relative to `at`.
 */
export function verifySignatures(backend: Ed25519Backend, bytes: Uint8Array, at: number, n: number, sigAt: number, keysAt: number, msgAt: number, msgLen: number): boolean {
  if (n === 0) return false;
  if (backend === 'native') {
    if (native === null) throw new Error('the native ed25519 verifier is not available in this process');
    if (n > 1 && batchVerify !== null && txBatch.add(at, n, sigAt, keysAt, msgAt, msgLen)) {
      txBatch.run(bytes, txOk);
      return txOk[0]!;
    }
    for (let i = 0; i < n; i++) {
      if (!native.ed25519VerifyAt(bytes, at + sigAt + i * SIGNATURE_BYTES, at + keysAt + i * KEY_BYTES, at + msgAt, msgLen)) return false;
    }
    return true;
  }
  if (backend === 'sodium-native') {
    if (sodium === null) throw new Error('sodium-native is not available in this process');
    const b = unshared(bytes);
    const message = msgViews.of(b, at + msgAt, msgLen);
    for (let i = 0; i < n; i++) {
      const s = at + sigAt + i * SIGNATURE_BYTES;
      const k = at + keysAt + i * KEY_BYTES;
      // `=== true`: anything else the binding may return counts as a failure.
      if (sodium.crypto_sign_verify_detached(sigViews.of(b, s, SIGNATURE_BYTES), message, keyViews.of(b, k, KEY_BYTES)) !== true) return false;
    }
    return true;
  }
  const message = bytes.subarray(at + msgAt, at + msgAt + msgLen);
  for (let i = 0; i < n; i++) {
    const s = at + sigAt + i * SIGNATURE_BYTES;
    const k = at + keysAt + i * KEY_BYTES;
    // libsodium (and Solana's verify_strict) reject a non-canonical S; check it here so the backends agree.
    if (!isCanonicalScalar(bytes, s + 32)) return false;
    if (!cryptoVerify(null, message, publicKey(bytes, k), bytes.subarray(s, s + SIGNATURE_BYTES))) return false;
  }
  return true;
}

/** DER SubjectPublicKeyInfo prefix of a raw Ed25519 key (RFC 8410): node:crypto takes keys as objects. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const spki = Buffer.alloc(SPKI_PREFIX.length + KEY_BYTES);
SPKI_PREFIX.copy(spki);

function publicKey(bytes: Uint8Array, at: number): KeyObject {
  spki.set(bytes.subarray(at, at + KEY_BYTES), SPKI_PREFIX.length);
  return createPublicKey({ key: spki, format: 'der', type: 'spki' });
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
