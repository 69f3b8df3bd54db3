/**
 * Keccak-256 as Ethereum uses it (padding byte 0x01, not SHA3-256's 0x06), and
 * the transaction and signing hashes over the byte ranges decode.ts records.
 *
 * Backends, best first, behind one API: the native addon (native/keccak.c)
 * writes the digest in place and allocates nothing, then hash-wasm, then
 * @noble/hashes (bench/evm.bench.ts, 200 B: 0.76 µs, 0.93-1.04 µs, 7.6 µs).
 * hash-wasm compiles asynchronously, so every thread awaits `initKeccak()` at
 * start-up; until then, or without WebAssembly, noble answers.
 */

import { createKeccak, type IHasher } from 'hash-wasm';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { nativeAddon } from '../../native/addon.js';
import type { EvmTx } from './decode.js';
import { writeHeader, writeUint } from './rlp.js';

let wasm: IHasher | null = null;
let initPromise: Promise<void> | null = null;

/** Compiles the WebAssembly keccak once per thread; never rejects (noble stays in place on failure). */
export function initKeccak(): Promise<void> {
  initPromise ??= createKeccak(256).then(
    (h) => {
      wasm = h;
    },
    () => {
      wasm = null;
    },
  );
  return initPromise;
}

export type KeccakBackend = 'native' | 'hash-wasm' | 'noble';

/** The addon's keccak, or null (not built, disabled, or a test leaving it out). */
let native = nativeAddon;

/** Which implementation answers `keccak256` right now. */
export function keccakBackend(): KeccakBackend {
  if (native !== null) return 'native';
  return wasm === null || forceNoble ? 'noble' : 'hash-wasm';
}

/** Test hook: route every call to @noble/hashes (true) or back to the best loaded backend (false). */
let forceNoble = false;
export function forceNobleKeccak(on: boolean): void {
  forceNoble = on;
  native = on ? null : nativeAddon;
}

/** Test hook: leave the addon out (true), so hash-wasm or noble answer, or take it back (false). */
export function skipNativeKeccak(on: boolean): void {
  native = on || forceNoble ? null : nativeAddon;
}

/** Keccak-256 of `bytes`; returns a fresh 32-byte array. */
export function keccak256(bytes: Uint8Array): Uint8Array {
  if (native !== null) {
    const out = new Uint8Array(32);
    native.keccak256At(bytes, 0, bytes.length, out, 0);
    return out;
  }
  const h = forceNoble ? null : wasm;
  if (h === null) return keccak_256(bytes);
  return h.init().update(bytes).digest('binary');
}

/** Keccak-256 of input[off, off + len), written at out[outOff] (either may be SharedArrayBuffer-backed). */
export function keccak256At(input: Uint8Array, off: number, len: number, out: Uint8Array, outOff: number): void {
  if (native !== null) native.keccak256At(input, off, len, out, outOff);
  else out.set(keccak256(input.subarray(off, off + len)), outOff);
}

/**
 * Up to this size the parts are copied into one scratch and hashed once (1.0 µs
 * vs 1.2-1.4 µs for three hash-wasm updates of a 156-byte signing payload);
 * 16 KiB is hash-wasm's chunk size, so larger inputs gain nothing from the copy.
 */
const CONCAT_LIMIT = 16384;
const concatScratch = new Uint8Array(CONCAT_LIMIT);

/** Keccak-256 of `a || b || c` (a signing hash: re-encoded header, raw slice, short suffix). */
export function keccak256Parts(a: Uint8Array, b: Uint8Array, c?: Uint8Array): Uint8Array {
  const out = new Uint8Array(32);
  keccak256PartsAt(out, 0, a, b, c);
  return out;
}

/** `keccak256Parts` written at out[outOff]. */
function keccak256PartsAt(out: Uint8Array, outOff: number, a: Uint8Array, b: Uint8Array, c: Uint8Array = NO_PART): void {
  keccakFramedAt(out, outOff, a, a.length, b, 0, b.length, c, c.length);
}
const NO_PART = new Uint8Array(0);

/** Over the scratch's size the parts are streamed, which the addon (one contiguous range) cannot do. */
function streamParts(out: Uint8Array, outOff: number, a: Uint8Array, b: Uint8Array, c: Uint8Array): void {
  const h = forceNoble ? null : wasm;
  if (h === null) {
    out.set(keccak_256.create().update(a).update(b).update(c).digest(), outOff);
    return;
  }
  out.set(h.init().update(a).update(b).update(c).digest('binary'), outOff);
}

/** Keccak-256 through @noble/hashes only; the benchmark's reference point. */
export function keccak256Noble(bytes: Uint8Array): Uint8Array {
  return keccak_256(bytes);
}

/** Legacy transactions have no type byte (decode.ts TX_LEGACY). */
const LEGACY = 0;

// Scratch for the few bytes re-encoded around the raw slices; hashing consumes them synchronously.
const typeByte = new Uint8Array(1);
/** Type byte + list header: at most 1 + 1 + 4 bytes. */
const head = new Uint8Array(8);
/** rlp(chainId) of up to 32 bytes, then rlp(0), rlp(0). */
const tail = new Uint8Array(36);

/** Keccak-256 of the canonical encoding; for blob network forms `0x03 || tx_payload_body`, no sidecar. */
export function txHash(raw: Uint8Array, tx: EvmTx): Uint8Array {
  const out = new Uint8Array(32);
  txHashAt(raw, tx, out, 0);
  return out;
}

/** `txHash` written at out[outOff] (the verifier writes it straight into its job slot). */
export function txHashAt(raw: Uint8Array, tx: EvmTx, out: Uint8Array, outOff: number): void {
  if (tx.type === LEGACY || tx.bodyStart === 1) return keccak256At(raw, 0, tx.bodyEnd, out, outOff);
  typeByte[0] = tx.type;
  keccakFramedAt(out, outOff, typeByte, 1, raw, tx.bodyStart, tx.bodyEnd, tail, 0);
}

/** Keccak-256 of the raw bytes: the reconciliation handle for input that did not decode (else use `txHash`). */
export function txHashOfRaw(raw: Uint8Array): Uint8Array {
  return keccak256(raw);
}

/**
 * The hash the sender signed. Legacy: rlp([nonce, gasPrice, gas, to, value,
 * data, chainId, 0, 0]) (EIP-155), or the first six fields alone when
 * unprotected. Typed (EIP-2718): `type || rlp(fields before yParity)`.
 */
export function signingHash(raw: Uint8Array, tx: EvmTx): Uint8Array {
  const out = new Uint8Array(32);
  signingHashAt(raw, tx, out, 0);
  return out;
}

/** `signingHash` written at out[outOff]. */
export function signingHashAt(raw: Uint8Array, tx: EvmTx, out: Uint8Array, outOff: number): void {
  const start = tx.unsignedStart;
  const end = tx.unsignedEnd;
  const len = end - start;
  if (tx.type !== LEGACY) {
    head[0] = tx.type;
    return keccakFramedAt(out, outOff, head, writeHeader(head, 1, 0xc0, len), raw, start, end, tail, 0);
  }
  if (tx.chainId === null) {
    return keccakFramedAt(out, outOff, head, writeHeader(head, 0, 0xc0, len), raw, start, end, tail, 0);
  }
  let t = writeUint(tail, 0, tx.chainId);
  tail[t++] = 0x80;
  tail[t++] = 0x80;
  keccakFramedAt(out, outOff, head, writeHeader(head, 0, 0xc0, len + t), raw, start, end, tail, t);
}

/** Ranges copied byte by byte below this length; longer ones through a view (one allocation, beside a long copy). */
const COPY_LOOP_LIMIT = 512;

/**
 * Keccak-256 of pre[0, preLen) || src[start, end) || post[0, postLen) into
 * out[outOff, outOff + 32): ranges, not views, so a transaction's hashes allocate none.
 */
function keccakFramedAt(
  out: Uint8Array,
  outOff: number,
  pre: Uint8Array,
  preLen: number,
  src: Uint8Array,
  start: number,
  end: number,
  post: Uint8Array,
  postLen: number,
): void {
  const len = end - start;
  const total = preLen + len + postLen;
  if (total > CONCAT_LIMIT) {
    return streamParts(out, outOff, pre.subarray(0, preLen), src.subarray(start, end), post.subarray(0, postLen));
  }
  const buf = concatScratch;
  for (let i = 0; i < preLen; i++) buf[i] = pre[i]!;
  if (len < COPY_LOOP_LIMIT) {
    for (let i = 0; i < len; i++) buf[preLen + i] = src[start + i]!;
  } else {
    buf.set(src.subarray(start, end), preLen);
  }
  for (let i = 0, at = preLen + len; i < postLen; i++) buf[at + i] = post[i]!;
  keccak256At(buf, 0, total, out, outOff);
}
