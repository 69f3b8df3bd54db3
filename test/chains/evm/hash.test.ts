/**
 * Keccak-256: the addon (native/keccak.c) when it loads, hash-wasm once
 * initialised, @noble/hashes before and as the fallback; all agree with viem.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { keccak256 as viemKeccak } from 'viem';
import { keccak_256 } from '@noble/hashes/sha3.js';
import {
  forceNobleKeccak,
  initKeccak,
  keccak256,
  keccak256At,
  keccak256Noble,
  keccak256Parts,
  keccakBackend,
  skipNativeKeccak,
  type KeccakBackend,
} from '../../../src/chains/evm/hash.js';
import { nativeAddon } from '../../../src/native/addon.js';

const hex = (b: Uint8Array) => '0x' + Buffer.from(b).toString('hex');
const EMPTY = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';

/** Runs `fn` with each backend this machine has answering, then restores the default. */
async function eachBackend(fn: (b: KeccakBackend) => void): Promise<void> {
  await initKeccak();
  const backends: [KeccakBackend, () => void][] = [
    ['hash-wasm', () => skipNativeKeccak(true)],
    ['noble', () => forceNobleKeccak(true)],
  ];
  if (nativeAddon !== null) backends.unshift(['native', () => {}]);
  try {
    for (const [name, pick] of backends) {
      pick();
      assert.equal(keccakBackend(), name);
      fn(name);
      forceNobleKeccak(false);
      skipNativeKeccak(false);
    }
  } finally {
    forceNobleKeccak(false);
    skipNativeKeccak(false);
  }
}

test('without the addon: noble before initKeccak, hash-wasm after; with it, the addon throughout', async () => {
  skipNativeKeccak(true);
  try {
    assert.equal(keccakBackend(), 'noble');
    assert.equal(hex(keccak256(new Uint8Array(0))), EMPTY);
    await initKeccak();
    await initKeccak(); // idempotent
    assert.equal(keccakBackend(), 'hash-wasm');
    assert.equal(hex(keccak256(new Uint8Array(0))), EMPTY);
  } finally {
    skipNativeKeccak(false);
  }
  if (process.env.TXRELAY_NO_NATIVE === '1') assert.equal(keccakBackend(), 'hash-wasm');
  else {
    assert.ok(nativeAddon !== null, 'the addon is built by npm ci here');
    assert.equal(keccakBackend(), 'native');
  }
  assert.equal(hex(keccak256(new Uint8Array(0))), EMPTY);
});

test('every backend agrees with viem on sizes around the rate and the 16 KiB wasm chunk', async () => {
  const inputs = [0, 1, 135, 136, 137, 200, 271, 272, 1000, 16383, 16384, 16385, 40000].map((n) => new Uint8Array(randomBytes(n)));
  await eachBackend((b) => {
    for (const x of inputs) assert.equal(hex(keccak256(x)), viemKeccak(x), `${b} ${x.length}`);
  });
  for (const x of inputs) assert.equal(hex(keccak256Noble(x)), viemKeccak(x), `noble ${x.length}`);
});

test('keccak256Parts equals keccak256 of the concatenation, on every backend and on SharedArrayBuffer views', async () => {
  const a = new Uint8Array(randomBytes(3));
  const sab = new Uint8Array(new SharedArrayBuffer(20001), 1, 20000);
  sab.set(randomBytes(20000));
  const c = new Uint8Array(randomBytes(35));
  const want = viemKeccak(new Uint8Array([...a, ...sab, ...c]));
  await eachBackend((b) => {
    assert.equal(hex(keccak256Parts(a, sab, c)), want, b);
    assert.equal(hex(keccak256Parts(a, sab.subarray(0, 10))), viemKeccak(new Uint8Array([...a, ...sab.subarray(0, 10)])), b);
    // A middle part over the byte-by-byte copy's limit (512) and under the scratch's size.
    assert.equal(hex(keccak256Parts(a, sab.subarray(0, 1000), c)), viemKeccak(new Uint8Array([...a, ...sab.subarray(0, 1000), ...c])), b);
  });
});

test('keccak256At hashes the range asked for and writes 32 bytes where asked, into shared memory too, and nothing else', async () => {
  await eachBackend((b) => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 700 }), fc.nat(40), fc.nat(40), fc.nat(60), (data, pre, post, at) => {
        const input = new Uint8Array(new SharedArrayBuffer(pre + data.length + post));
        input.fill(0xa5);
        input.set(data, pre);
        const out = new Uint8Array(new SharedArrayBuffer(at + 32 + 7));
        out.fill(0x5a);
        keccak256At(input, pre, data.length, out, at);
        assert.equal(hex(out.subarray(at, at + 32)), hex(keccak_256(data)), b);
        assert.ok(out.subarray(0, at).every((x) => x === 0x5a) && out.subarray(at + 32).every((x) => x === 0x5a), `${b}: bytes outside the digest`);
      }),
      { numRuns: 150 },
    );
  });
});

test('the addon refuses ranges outside its arrays instead of reading or writing past them', { skip: nativeAddon === null ? 'the addon is not built here' : false }, () => {
  const k = nativeAddon!.keccak256At;
  const buf = new Uint8Array(64);
  assert.throws(() => k(buf, 60, 5, buf, 0), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => k(buf, -1, 5, buf, 0), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => k(buf, 0, 5, buf, 33), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => k(buf, 0, 5, new Uint8Array(31), 0), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => k(buf, 0.5, 5, buf, 0), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => k(new Uint16Array(8) as unknown as Uint8Array, 0, 5, buf, 0), { code: 'TXR_KECCAK_ARG' });
  assert.throws(() => (k as (...a: unknown[]) => void)(buf, 0, 5), { code: 'TXR_KECCAK_ARG' });
});
