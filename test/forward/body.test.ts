/**
 * Request bodies (src/forward/body.ts), pure: the body of a range is the
 * documented call alone or '[' calls joined by ',' ']', encoded once per
 * range, and a batch stays under MAX_BATCH items and MAX_BATCH_BYTES.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Encoder, MAX_BATCH, MAX_BATCH_BYTES } from '../../src/forward/body.js';
import { CallKind, bundleCall, evmCall, solanaCall } from '../../src/forward/wire.js';

const text = (b: { buf: Buffer; length: number }): string => b.buf.toString('latin1', 0, b.length);

test('one item is the call alone; several are a JSON-RPC array with ids from..from+n-1', () => {
  const items = ['AQID', 'BAUG', 'BwgJ'];
  let asked = 0;
  const e = new Encoder(CallKind.SOLANA, (s) => (asked++, items[s - 10]!));
  const one = e.encode(10, 1);
  assert.equal(text(one), solanaCall(10, 'AQID'));
  assert.deepEqual([one.firstId, one.count, one.batch], [10, 1, false]);
  const three = e.encode(10, 3);
  assert.equal(text(three), '[' + items.map((t, i) => solanaCall(10 + i, t)).join(',') + ']');
  assert.deepEqual([three.firstId, three.count, three.batch], [10, 3, true]);
  assert.deepEqual(JSON.parse(text(three)).map((c: { id: number }) => c.id), [10, 11, 12]);
  void asked;
});

test('encoded once per range: a second upstream sent the same range reuses the bytes without reading the items again', () => {
  let asked = 0;
  const e = new Encoder(CallKind.EVM, (s) => (asked++, '0x' + s.toString(16).padStart(4, '0')));
  const first = e.encode(5, 2);
  const n = asked;
  const again = e.encode(5, 2);
  assert.equal(asked, n);
  assert.equal(again, first);
  assert.equal(text(again), '[' + evmCall(5, '0x0005') + ',' + evmCall(6, '0x0006') + ']');
  e.encode(5, 1);
  assert.ok(asked > n, 'another range is encoded afresh');
  assert.equal(text(e.encode(5, 1)), evmCall(5, '0x0005'));
});

test('bundles are never batched: one sendBundle per request', () => {
  const e = new Encoder(CallKind.BUNDLE, () => ['AQ==', 'Ag==']);
  assert.equal(e.batchSize(0, 10), 1);
  assert.equal(text(e.encode(0, 1)), bundleCall(0, ['AQ==', 'Ag==']));
});

test('a batch takes at most MAX_BATCH items and MAX_BATCH_BYTES; a single larger item still goes alone', () => {
  const small = new Encoder(CallKind.SOLANA, () => 'QUJD');
  assert.equal(small.batchSize(0, 1000), MAX_BATCH);
  assert.equal(small.batchSize(0, 3), 3);
  const big = 'A'.repeat(1644); // the largest transaction, in base64
  const e = new Encoder(CallKind.SOLANA, () => big);
  const n = e.batchSize(0, 1000);
  assert.ok(n > 1 && n < MAX_BATCH);
  assert.ok(e.encode(0, n).length <= MAX_BATCH_BYTES);
  assert.ok(e.encode(0, n + 1).length > MAX_BATCH_BYTES, 'one more would not fit');
  const huge = new Encoder(CallKind.EVM, () => '0x' + 'ab'.repeat(MAX_BATCH_BYTES));
  assert.equal(huge.batchSize(0, 5), 1);
  const body = huge.encode(0, 1);
  assert.equal(text(body), evmCall(0, '0x' + 'ab'.repeat(MAX_BATCH_BYTES)));
});
