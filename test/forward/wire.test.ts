/**
 * The calls written as bytes into request buffers are byte for byte the
 * documented string forms (evmCall, solanaCall, bundleCall), and their
 * announced lengths are exact; a lane's batch body is '[' calls joined by ',' ']',
 * encoded once per range, and a batch stays under MAX_BATCH items and MAX_BATCH_BYTES.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CallKind, Encoder, MAX_BATCH, MAX_BATCH_BYTES, bundleCall, callLength, decimalDigits, evmCall, solanaCall, writeCall, writeDecimal } from '../../src/forward/wire.js';
import { Lane } from '../../src/forward/lane.js';
import { startUpstream } from '../helpers/upstream.js';

const idArb = fc.oneof(fc.constantFrom(0, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1), fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
const hexArb = fc.uint8Array({ maxLength: 300 }).map((b) => '0x' + Buffer.from(b).toString('hex'));
const b64Arb = fc.uint8Array({ minLength: 1, maxLength: 1300 }).map((b) => Buffer.from(b).toString('base64'));

function written(kind: CallKind, id: number, item: string | string[]): string {
  const buf = Buffer.alloc(callLength(kind, id, item) + 8, 0x2a);
  const end = writeCall(buf, 4, kind, id, item);
  assert.equal(end - 4, callLength(kind, id, item), 'callLength is exact');
  assert.equal(buf[3], 0x2a);
  assert.equal(buf[end], 0x2a, 'nothing written past the announced length');
  return buf.toString('latin1', 4, end);
}

test('decimal ids up to 2^53 are written exactly', () => {
  fc.assert(
    fc.property(idArb, (n) => {
      const buf = Buffer.alloc(20);
      const end = writeDecimal(buf, 1, n);
      assert.equal(buf.toString('latin1', 1, end), String(n));
      assert.equal(decimalDigits(n), String(n).length);
    }),
  );
});

test('written calls are byte for byte the documented string forms', () => {
  fc.assert(
    fc.property(idArb, hexArb, b64Arb, fc.array(b64Arb, { minLength: 1, maxLength: 4 }), (id, hex, b64, txs) => {
      assert.equal(written(CallKind.EVM, id, hex), evmCall(id, hex));
      assert.equal(written(CallKind.SOLANA, id, b64), solanaCall(id, b64));
      assert.equal(written(CallKind.BUNDLE, id, txs), bundleCall(id, txs));
    }),
    { numRuns: 300 },
  );
});

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const o of open.reverse()) await o.close();
});

test('a lane batch body is [call,call,...] of the string forms, and a lone item is the call alone', async () => {
  const up = await startUpstream({ mode: { delayMs: 30 } });
  open.push(up);
  const l = new Lane('solana-single', { upstreams: [up.url], connections: 1 });
  open.push(l);
  const txs = Array.from({ length: 10 }, (_, i) => Buffer.alloc(50 + i, i).toString('base64'));
  l.offer(txs[0]!);
  await new Promise((r) => setImmediate(r)); // it leaves; the rest pile up behind it on the one connection
  for (const t of txs.slice(1)) l.offer(t);
  await l.whenIdle();
  assert.equal(up.raw[0], solanaCall(0, txs[0]!), 'the first offer left alone, at once');
  assert.equal(up.raw[1], '[' + txs.slice(1).map((t, i) => solanaCall(i + 1, t)).join(',') + ']');
});

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
