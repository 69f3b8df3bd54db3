import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nativeAddon, nativeUnavailableReason, sharedAlias } from '../../src/native/addon.js';

const skip = nativeAddon === null ? `native addon ${nativeUnavailableReason}` : false;

test('sharedAlias: a plain ArrayBuffer over the very memory of a SharedArrayBuffer, both ways', { skip }, () => {
  const sab = new SharedArrayBuffer(4096);
  const shared = new Uint8Array(sab);
  const ab = sharedAlias(sab);
  assert.ok(ab instanceof ArrayBuffer, 'not shared: libraries that refuse shared memory take it');
  assert.equal(ab!.byteLength, sab.byteLength);
  const alias = new Uint8Array(ab!);
  shared[100] = 7;
  assert.equal(alias[100], 7, 'a write to the shared buffer is seen through the alias');
  alias[4095] = 9;
  assert.equal(shared[4095], 9, 'and the other way');
});

test('sharedAlias of an empty SharedArrayBuffer is an empty buffer, not an error', { skip }, () => {
  assert.equal(sharedAlias(new SharedArrayBuffer(0))?.byteLength, 0);
});

test('ed25519Arith names the arithmetic the addon was built with: avx512ifma exactly where this CPU has IFMA (it is built with -march=native)', { skip: skip || (nativeAddon?.ed25519Verify === undefined ? 'built without ed25519' : false) }, async () => {
  const { readFileSync } = await import('node:fs');
  const { arch, platform } = await import('node:os');
  const arith = nativeAddon!.ed25519Arith;
  assert.ok(arith === 'avx512ifma' || arith === 'scalar', `ed25519Arith is ${arith}`);
  if (platform() === 'linux' && arch() === 'x64') {
    const flags = readFileSync('/proc/cpuinfo', 'utf8');
    const ifma = /\bavx512ifma\b/.test(flags) && /\bavx512vl\b/.test(flags);
    assert.equal(arith, ifma ? 'avx512ifma' : 'scalar');
  }
  // The verifier reports the same in the relay's start-up line (src/relay.ts).
  const { ed25519Arith, ed25519Backend } = await import('../../src/chains/solana/verify.js');
  if (ed25519Backend === 'native') assert.equal(ed25519Arith, arith);
});
