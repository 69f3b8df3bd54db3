/**
 * Sender recovery: secp256k1 public-key recovery (SEC 1 v2 §4.1.6); the
 * address is the last 20 bytes of keccak-256 of the key without its 0x04.
 *
 * libsecp256k1 through the `secp256k1` package's native binding (48 µs vs
 * 1.1-1.7 ms for @noble/curves, bench/evm.bench.ts); noble where the binding
 * cannot load. `secp256k1/bindings` is required directly because the main
 * entry silently falls back to the slow `elliptic` JavaScript. r and s are
 * copied into thread-local scratch first: inputs may be SharedArrayBuffer views.
 */

import { createRequire } from 'node:module';
import { secp256k1 as nobleSecp } from '@noble/curves/secp256k1.js';
import { DecodeError } from '../../errors.js';
import type { EvmTx } from './decode.js';
import { keccak256, keccak256At } from './hash.js';

/** The part of the `secp256k1` package's API we use (it ships no type declarations). */
interface NativeSecp256k1 {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean, output?: Uint8Array): Uint8Array;
}

type SecpBackendName = 'native' | 'noble';

function loadNative(): NativeSecp256k1 | null {
  if (process.env.TXRELAY_SECP_BACKEND === 'noble') return null;
  try {
    const require = createRequire(import.meta.url);
    return require('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return null;
  }
}

const native = loadNative();

/** Which implementation `recoverSender` uses in this thread. */
export let secpBackend: SecpBackendName = native === null ? 'noble' : 'native';

/** Whether the native binding loaded in this thread (the noble fallback is always available). */
export const nativeSecpAvailable = native !== null;

/**
 * Selects the backend (tests and benchmarks; `TXRELAY_SECP_BACKEND=noble`
 * does the same at start-up). Asking for native when it did not load throws.
 */
export function useSecpBackend(name: SecpBackendName): void {
  if (name === 'native' && native === null) throw new Error('native secp256k1 binding is not available');
  secpBackend = name;
}

// Thread-local scratch; recovery is synchronous, so one call never overlaps another.
const sig64 = new Uint8Array(64);
const pub65 = new Uint8Array(65);

/**
 * The 20-byte sender address, from a transaction that passed
 * `validateEvmTransaction` and its `signingHash`; failures are DecodeErrors.
 */
export function recoverSender(tx: EvmTx, hash: Uint8Array): Uint8Array {
  return keccak256(recoverPublicKey(tx, hash).subarray(1)).slice(12);
}

/**
 * Whether the signature recovers a public key (false where `recoverSender`
 * throws); with `out`, the sender's 20-byte address is written at out[outAt]
 * (landing follows the sender's nonce), a keccak that cannot fail.
 */
export function recovers(tx: EvmTx, hash: Uint8Array, out?: Uint8Array, outAt = 0): boolean {
  try {
    const pub = recoverPublicKey(tx, hash);
    if (out) addressInto(pub, out, outAt);
    return true;
  } catch (e) {
    if (e instanceof DecodeError) return false;
    throw e;
  }
}

/**
 * `recovers` for a transaction decoded elsewhere (a batch item decoded on the
 * main thread): r and s as offsets into `raw`, the signing hash at msg[msgAt..+32).
 */
export function recoversAt(raw: Uint8Array, rAt: number, rLen: number, sAt: number, sLen: number, recid: number, msg: Uint8Array, msgAt: number, out?: Uint8Array, outAt = 0): boolean {
  for (let i = 0; i < 32; i++) hash32[i] = msg[msgAt + i]!;
  try {
    const pub = recoverFrom(raw, rAt, rLen, sAt, sLen, recid, hash32);
    if (out) addressInto(pub, out, outAt);
    return true;
  } catch (e) {
    if (e instanceof DecodeError) return false;
    throw e;
  }
}

const hash32 = new Uint8Array(32);
const addr32 = new Uint8Array(32);

/** The address of an uncompressed public key: the last 20 bytes of keccak-256 of the key without its 0x04. */
function addressInto(pub: Uint8Array, out: Uint8Array, outAt: number): void {
  keccak256At(pub, 1, 64, addr32, 0);
  for (let i = 0; i < 20; i++) out[outAt + i] = addr32[12 + i]!;
}

/** The uncompressed public key (65 bytes; with libsecp256k1, this thread's scratch, valid until the next call). */
function recoverPublicKey(tx: EvmTx, hash: Uint8Array): Uint8Array {
  return recoverFrom(tx.raw, tx.rAt, tx.rLen, tx.sAt, tx.sLen, tx.yParity, hash);
}

function recoverFrom(raw: Uint8Array, rAt: number, rLen: number, sAt: number, sLen: number, recid: number, hash: Uint8Array): Uint8Array {
  if (recid !== 0 && recid !== 1) throw new DecodeError('invalid signature: bad recovery id');
  // r and s right-aligned in 32 bytes each, copied from the input without a view of either.
  sig64.fill(0);
  for (let i = 0, at = 32 - rLen; i < rLen; i++) sig64[at + i] = raw[rAt + i]!;
  for (let i = 0, at = 64 - sLen; i < sLen; i++) sig64[at + i] = raw[sAt + i]!;
  if (secpBackend === 'native') {
    try {
      return native!.ecdsaRecover(sig64, recid, hash, false, pub65);
    } catch {
      throw new DecodeError('invalid signature: public key recovery failed');
    }
  }
  try {
    const sig = nobleSecp.Signature.fromBytes(sig64, 'compact').addRecoveryBit(recid);
    return sig.recoverPublicKey(hash).toBytes(false);
  } catch {
    throw new DecodeError('invalid signature: public key recovery failed');
  }
}
