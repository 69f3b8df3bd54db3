/** Keccak-256: hash-wasm on the hot path, @noble/hashes before init and as the fallback; both agree. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { keccak256 as viemKeccak } from 'viem';
import { forceNobleKeccak, initKeccak, keccak256, keccak256Noble, keccak256Parts, keccakBackend } from '../src/chains/evm/hash.js';

const hex = (b: Uint8Array) => '0x' + Buffer.from(b).toString('hex');

test('keccak256 answers with noble before initKeccak and with hash-wasm after', async () => {
  assert.equal(keccakBackend(), 'noble');
  assert.equal(hex(keccak256(new Uint8Array(0))), '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  await initKeccak();
  await initKeccak(); // idempotent
  assert.equal(keccakBackend(), 'hash-wasm');
  assert.equal(hex(keccak256(new Uint8Array(0))), '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
});

test('hash-wasm and noble agree with viem on sizes around the rate and the 16 KiB wasm chunk', async () => {
  await initKeccak();
  for (const n of [1, 135, 136, 137, 200, 1000, 16383, 16384, 16385, 40000]) {
    const b = new Uint8Array(randomBytes(n));
    const want = viemKeccak(b);
    assert.equal(hex(keccak256(b)), want, `wasm ${n}`);
    assert.equal(hex(keccak256Noble(b)), want, `noble ${n}`);
  }
});

test('keccak256Parts equals keccak256 of the concatenation, on both backends and on SharedArrayBuffer views', async () => {
  await initKeccak();
  const a = new Uint8Array(randomBytes(3));
  const sab = new Uint8Array(new SharedArrayBuffer(20001), 1, 20000);
  sab.set(randomBytes(20000));
  const c = new Uint8Array(randomBytes(35));
  const want = viemKeccak(new Uint8Array([...a, ...sab, ...c]));
  for (const noble of [false, true]) {
    forceNobleKeccak(noble);
    assert.equal(hex(keccak256Parts(a, sab, c)), want);
    assert.equal(hex(keccak256Parts(a, sab.subarray(0, 10))), viemKeccak(new Uint8Array([...a, ...sab.subarray(0, 10)])));
  }
  forceNobleKeccak(false);
});
