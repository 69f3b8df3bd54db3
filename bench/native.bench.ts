/**
 * base58: the native addon against the `bs58` package on the relay's two hot
 * shapes: encoding a 64-byte signature (every Solana response) and decoding a
 * ~1700-char `encoding: "base58"` transaction (a full 1232-byte packet).
 * Native entries are omitted when the addon is not built.
 */
import { jsBase58, nativeBase58, type Base58Codec } from '../src/native/base58.js';

/** Solana's maximum packet size; its base58 form is ~1683 chars. */
const SOLANA_PACKET = 1232;
const SIGS = 256;
const TXS = 8;

/** Deterministic filler so every run measures the same numbers. */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const sigs = Array.from({ length: SIGS }, (_, i) => bytes(64, i + 1));
/** The same signatures packed in one SharedArrayBuffer slab, as the verify workers hold them. */
const slab = new Uint8Array(new SharedArrayBuffer(SIGS * 64));
sigs.forEach((s, i) => slab.set(s, i * 64));
const txStrings = Array.from({ length: TXS }, (_, i) => jsBase58.encode(bytes(SOLANA_PACKET, 1000 + i)));

/** Results feed this so no call can be optimised away. */
export let sink = 0;

function encodeSigs(codec: Base58Codec): () => void {
  return () => {
    for (let i = 0; i < SIGS; i++) sink += codec.encode(sigs[i]!).length;
  };
}

function encodeSlab(codec: Base58Codec): () => void {
  return () => {
    for (let i = 0; i < SIGS; i++) sink += codec.encodeAt(slab, i * 64, 64).length;
  };
}

function decodeTxs(codec: Base58Codec): () => void {
  return () => {
    for (let i = 0; i < TXS; i++) sink += codec.decode(txStrings[i]!, SOLANA_PACKET)?.length ?? 0;
  };
}

const backends: [string, Base58Codec][] = [['bs58', jsBase58]];
if (nativeBase58 !== null) backends.unshift(['native', nativeBase58]);

export const benches: { name: string; items: number; setup?: () => Promise<void> | void; fn: () => void }[] = [
  ...backends.map(([name, c]) => ({ name: `base58 encode 64 B signature (${name})`, items: SIGS, fn: encodeSigs(c) })),
  ...backends.map(([name, c]) => ({ name: `base58 encode 64 B at offset of a SharedArrayBuffer (${name})`, items: SIGS, fn: encodeSlab(c) })),
  ...backends.map(([name, c]) => ({ name: `base58 decode ${txStrings[0]!.length}-char transaction (${name})`, items: TXS, fn: decodeTxs(c) })),
];
