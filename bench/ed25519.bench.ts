/**
 * Ed25519 verification per signature, in one run: the native addon's single
 * check and its batch call (8, 16 and 64 signatures per call, each answered
 * on its own: native/ed25519.c) against sodium-native and node:crypto, which
 * check one signature per call. Two key mixes: 64 keys that repeat (a hot
 * fee payer; the native per-thread cache builds their tables) and 2048 keys
 * cycled in order (more than the cache's 128 slots, so every check is a
 * key's first). Messages are 200 bytes.
 */
import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { createRequire } from 'node:module';
import { nativeAddon } from '../src/native/addon.js';

interface MicroBench {
  name: string;
  items: number;
  setup?: () => Promise<void> | void;
  fn: () => void;
}

interface Sodium {
  crypto_sign_keypair(pk: Uint8Array, sk: Uint8Array): void;
  crypto_sign_detached(sig: Uint8Array, m: Uint8Array, sk: Uint8Array): void;
  crypto_sign_verify_detached(s: Uint8Array, m: Uint8Array, k: Uint8Array): boolean;
}
const sodium = createRequire(import.meta.url)('sodium-native') as Sodium;

/** One item: signature at 0, key at 64, message at 96 (200 bytes). */
const ITEM = 296;
const MSG = 200;
const COUNT = 2048;
const N = 64;

interface Pool {
  buf: Uint8Array;
  spki: Buffer[];
}
const pools = new Map<number, Pool>();

/** COUNT signed items by `keys` distinct keys (item i by key i % keys). */
function pool(keys: number): Pool {
  let p = pools.get(keys);
  if (p !== undefined) return p;
  const buf = new Uint8Array(COUNT * ITEM);
  const sks: Uint8Array[] = [];
  for (let k = 0; k < keys; k++) {
    const sk = new Uint8Array(64);
    sodium.crypto_sign_keypair(new Uint8Array(32), sk);
    sks.push(sk);
  }
  const prefix = Buffer.from('302a300506032b6570032100', 'hex');
  const spki: Buffer[] = [];
  for (let i = 0; i < COUNT; i++) {
    const o = i * ITEM;
    const sk = sks[i % keys]!;
    buf.set(sk.subarray(32, 64), o + 64);
    const msg = buf.subarray(o + 96, o + 96 + MSG);
    for (let j = 0; j < MSG; j++) msg[j] = (i * 31 + j * 7) & 0xff;
    sodium.crypto_sign_detached(buf.subarray(o, o + 64), msg, sk);
    spki.push(Buffer.concat([prefix, buf.subarray(o + 64, o + 96)]));
  }
  p = { buf, spki };
  pools.set(keys, p);
  return p;
}

let sink = 0;
let at = 0;
const spec = new Uint32Array(4 * 64);
const out = new Uint8Array(64);

function single(keys: number, check: (p: Pool, i: number) => boolean): () => void {
  return () => {
    const p = pool(keys);
    for (let n = 0; n < N; n++) {
      if (check(p, at)) sink++;
      at = (at + 1) % COUNT;
    }
  };
}

function batched(keys: number, size: number): () => void {
  return () => {
    const p = pool(keys);
    for (let n = 0; n < N; n += size) {
      for (let j = 0; j < size; j++) {
        const o = at * ITEM;
        spec[4 * j] = o;
        spec[4 * j + 1] = o + 64;
        spec[4 * j + 2] = o + 96;
        spec[4 * j + 3] = MSG;
        at = (at + 1) % COUNT;
      }
      sink += nativeAddon!.ed25519VerifyBatchAt!(p.buf, spec, size, out);
    }
  };
}

const nativeOne = (p: Pool, i: number): boolean => nativeAddon!.ed25519VerifyAt!(p.buf, i * ITEM, i * ITEM + 64, i * ITEM + 96, MSG);
const sodiumOne = (p: Pool, i: number): boolean => {
  const o = i * ITEM;
  return sodium.crypto_sign_verify_detached(p.buf.subarray(o, o + 64), p.buf.subarray(o + 96, o + 96 + MSG), p.buf.subarray(o + 64, o + 96));
};
const nodeOne = (p: Pool, i: number): boolean => {
  const o = i * ITEM;
  return cryptoVerify(null, p.buf.subarray(o + 96, o + 96 + MSG), createPublicKey({ key: p.spki[i]!, format: 'der', type: 'spki' }), p.buf.subarray(o, o + 64));
};

function mix(keys: number, label: string): MicroBench[] {
  const setup = (): void => void pool(keys);
  const hasNative = nativeAddon?.ed25519VerifyBatchAt !== undefined;
  return [
    ...(hasNative
      ? [
          { name: `ed25519 ${label}: native single`, items: N, setup, fn: single(keys, nativeOne) },
          ...[8, 16, 64].map((size) => ({ name: `ed25519 ${label}: native batch of ${size}`, items: N, setup, fn: batched(keys, size) })),
        ]
      : []),
    { name: `ed25519 ${label}: sodium-native single`, items: N, setup, fn: single(keys, sodiumOne) },
    { name: `ed25519 ${label}: node:crypto single`, items: N, setup, fn: single(keys, nodeOne) },
  ];
}

export const benches: MicroBench[] = [...mix(64, '64 keys repeating'), ...mix(COUNT, 'every key new')];
