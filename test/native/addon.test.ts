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
