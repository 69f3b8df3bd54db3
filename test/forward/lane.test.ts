import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lane } from '../../src/forward/lane.js';
import { MAX_BATCH, MAX_BATCH_BYTES } from '../../src/forward/wire.js';
import type { TestUpstream } from '../helpers/upstream.js';
import { laneHarness } from '../helpers/lanes.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'ab'.repeat(40);
const b64Tx = (i: number, len = 200): string => Buffer.alloc(len, i % 251).toString('base64');

const { upstream, lane } = laneHarness();

/** Params in lane order: requests sorted by their first id, batches flattened. */
function paramsInIdOrder(up: TestUpstream): unknown[] {
  return up
    .calls()
    .slice()
    .sort((a, b) => (a.id as number) - (b.id as number))
    .map((c) => c.params);
}

test('evm lane: eth_sendRawTransaction with the offered 0x hex, one request per item at low load', async () => {
  const up = await upstream();
  const l = lane('evm-paid', { upstreams: [up.url] });
  const sent: string[] = [];
  for (let i = 0; i < 5; i++) {
    sent.push(hexTx(i));
    assert.equal(l.offer(hexTx(i)), true);
    await l.whenIdle();
  }
  assert.equal(up.requests.length, 5);
  for (const r of up.requests) assert.equal(Array.isArray(r), false);
  assert.deepEqual(
    up.calls().map((c) => c.params),
    sent.map((h) => [h]),
  );
  assert.equal(up.raw[0], `{"jsonrpc":"2.0","id":0,"method":"eth_sendRawTransaction","params":["${sent[0]}"]}`);
  const s = l.stats();
  assert.equal(s.admitted, 5);
  assert.equal(s.forwarded, 5);
  assert.equal(s.dropped, 0);
  assert.equal(s.upstreams[0]!.ok, 5);
  assert.equal(s.upstreams[0]!.requests, 5);
});

test('solana-single lane: sendTransaction [base64, {encoding base64, skipPreflight true, maxRetries 0}]', async () => {
  const up = await upstream();
  const l = lane('solana-single', { upstreams: [up.url] });
  const tx = b64Tx(7);
  assert.equal(l.offer(tx), true);
  await l.whenIdle();
  assert.equal(
    up.raw[0],
    `{"jsonrpc":"2.0","id":0,"method":"sendTransaction","params":["${tx}",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}`,
  );
  assert.deepEqual(up.calls()[0]!.params, [tx, { encoding: 'base64', skipPreflight: true, maxRetries: 0 }]);
});

test('solana-bundle lane: one sendBundle per bundle, transactions in request order, never merged even under load', async () => {
  const up = await upstream({ mode: { delayMs: 10 } });
  const l = lane('solana-bundle', { upstreams: [up.url], batching: true });
  const bundles: string[][] = [];
  for (let i = 0; i < 50; i++) {
    const b = Array.from({ length: 1 + (i % 4) }, (_, k) => b64Tx(i * 4 + k, 100 + k));
    bundles.push(b);
    assert.equal(l.offer(b), true);
  }
  await l.whenIdle();
  assert.equal(up.requests.length, 50);
  for (const r of up.requests) {
    assert.equal(Array.isArray(r), false, 'a bundle request is never a JSON-RPC batch');
    assert.equal(r.method, 'sendBundle');
  }
  assert.deepEqual(
    paramsInIdOrder(up),
    bundles.map((b) => [b, { encoding: 'base64' }]),
  );
  const one = bundles[3]!;
  const r3 = up.raw.find((t) => t.includes(`"id":3,`))!;
  assert.equal(r3, `{"jsonrpc":"2.0","id":3,"method":"sendBundle","params":[["${one.join('","')}"],{"encoding":"base64"}]}`);
});

test('fan-out: every admitted item reaches every upstream of the lane, in order', async () => {
  const a = await upstream();
  const b = await upstream({ mode: { delayMs: 5 } });
  const l = lane('evm-free', { upstreams: [a.url, b.url] });
  const sent = Array.from({ length: 40 }, (_, i) => hexTx(i));
  for (const t of sent) {
    assert.equal(l.offer(t), true);
    await sleep(1);
  }
  await l.whenIdle();
  const want = sent.map((h) => [h]);
  assert.deepEqual(paramsInIdOrder(a), want);
  assert.deepEqual(paramsInIdOrder(b), want);
  const s = l.stats();
  assert.equal(s.forwarded, 40);
  assert.equal(s.upstreams[0]!.sent, 40);
  assert.equal(s.upstreams[1]!.sent, 40);
});

test('under load single items leave as JSON-RPC arrays (at most MAX_BATCH) whose concatenation is the offered sequence', async () => {
  const up = await upstream({ mode: { delayMs: 15 } });
  const l = lane('solana-single', { upstreams: [up.url] });
  const sent: string[] = [];
  for (let i = 0; i < 600; i++) {
    sent.push(b64Tx(i, 64 + (i % 7)));
    assert.equal(l.offer(sent[i]!), true);
    if (i === 0 || i % 10 === 9) await new Promise((r) => setImmediate(r));
  }
  await l.whenIdle();
  assert.equal(up.calls().length, 600);
  assert.ok(up.requests.length < 600 / 4, `expected batching, got ${up.requests.length} requests for 600 items`);
  assert.ok(up.requests.some((r) => Array.isArray(r)));
  for (const r of up.requests) {
    if (!Array.isArray(r)) continue;
    assert.ok(r.length > 1 && r.length <= MAX_BATCH);
    r.forEach((c: { id: number }, k: number) => assert.equal(c.id, r[0].id + k, 'a batch is a contiguous run of the lane'));
  }
  const byFirst = up.requests.slice().sort((x, y) => (Array.isArray(x) ? x[0].id : x.id) - (Array.isArray(y) ? y[0].id : y.id));
  const concatenated = byFirst.flatMap((r) => (Array.isArray(r) ? r : [r])).map((c) => c.params[0]);
  assert.deepEqual(concatenated, sent);
  assert.equal(Array.isArray(up.requests[0]), false, 'the first item, alone, went alone');
  assert.equal(l.stats().forwarded, 600);
});

test('batching can be switched off per lane: one request per item', async () => {
  const up = await upstream({ mode: { delayMs: 5 } });
  const l = lane('evm-paid', { upstreams: [up.url], batching: false });
  for (let i = 0; i < 30; i++) l.offer(hexTx(i));
  await l.whenIdle();
  assert.equal(up.requests.length, 30);
  assert.ok(up.requests.every((r) => !Array.isArray(r)));
  assert.equal(l.stats().upstreams[0]!.batching, false);
});

test('queue full: offer returns false at capacity, and accepts again once the upstream has taken items', async () => {
  const up = await upstream();
  const l = lane('evm-paid', { upstreams: [up.url], capacity: 8 });
  for (let i = 0; i < 8; i++) assert.equal(l.offer(hexTx(i)), true);
  assert.equal(l.depth, 8);
  assert.equal(l.depth >= l.capacity, true, 'depth reaches capacity exactly when offer refuses');
  assert.equal(l.offer(hexTx(8)), false);
  assert.equal(l.stats().admitted, 8);
  await l.whenIdle();
  assert.equal(l.depth, 0);
  assert.equal(l.offer(hexTx(9)), true);
  await l.whenIdle();
  assert.equal(up.calls().length, 9);
});

test('dry lane: offer accepts, the item is counted as discarded and dropped', async () => {
  const l = lane('solana-bundle', { upstreams: [] });
  assert.equal(l.dry, true);
  assert.equal(l.available(), true);
  for (let i = 0; i < 3; i++) assert.equal(l.offer([b64Tx(i)]), true);
  const s = l.stats();
  assert.equal(s.admitted, 3);
  assert.equal(s.discarded, 3);
  assert.equal(s.forwarded, 0);
  assert.equal(s.depth, 0);
  assert.equal(s.upstreams.length, 0);
  await l.whenIdle();
});

test('a slow upstream is overrun instead of throttling the lane: the fast one gets everything', async () => {
  const fast = await upstream();
  const slow = await upstream({ mode: { delayMs: 400 } });
  const l = lane('evm-paid', { upstreams: [fast.url, slow.url], capacity: 16 });
  const sent: string[] = [];
  for (let i = 0; i < 60; i++) {
    sent.push(hexTx(i));
    assert.equal(l.offer(sent[i]!), true, `offer ${i} refused although the fast upstream keeps up`);
    await sleep(2);
  }
  await l.whenIdle();
  const s = l.stats();
  const [f, sl] = s.upstreams;
  assert.deepEqual(paramsInIdOrder(fast), sent.map((h) => [h]));
  assert.equal(f!.sent, 60);
  assert.ok(sl!.overrun > 0, 'the slow upstream fell behind and was overrun');
  assert.ok(sl!.sent + sl!.overrun >= 60, 'every item was sent to the slow upstream, skipped for it, or both (overrun while in flight)');
  assert.equal(s.held, 0);
  assert.equal(s.forwarded, 60);
  assert.equal(s.dropped, 0);
});

test('when every upstream is saturated the lane refuses at capacity rather than grow; capacity counts items in flight too', async () => {
  const a = await upstream({ mode: { delayMs: 200 } });
  const b = await upstream({ mode: { delayMs: 200 } });
  const l = lane('evm-free', { upstreams: [a.url, b.url], capacity: 10, connections: 1 });
  assert.equal(l.offer(hexTx(0)), true);
  await sleep(20); // both upstreams took item 0 and are busy
  let accepted = 0;
  for (let i = 1; i < 30; i++) if (l.offer(hexTx(i))) accepted++;
  assert.equal(accepted, 9, 'item 0 is unanswered, so it still takes a place');
  assert.equal(l.depth, 10);
  await l.whenIdle();
  assert.equal(l.stats().forwarded, 10);
});

test('a bad upstream URL is refused at construction with a stable code and without echoing the URL', () => {
  assert.throws(
    () => new Lane('evm-paid', { upstreams: ['ftp://user:SECRET@host/key'] }),
    (e: any) => e.code === 'TXR_FORWARD_CONFIG' && !String(e.message).includes('SECRET') && e.message.includes('lane evm-paid upstream 0'),
  );
  assert.throws(() => new Lane('evm-paid', { upstreams: ['not a url SECRET'] }), (e: any) => e.code === 'TXR_FORWARD_CONFIG' && !e.message.includes('SECRET'));
  assert.throws(() => new Lane('evm-paid', { upstreams: [], capacity: 0 }), (e: any) => e.code === 'TXR_FORWARD_CONFIG');
});

test('a batch request stays under MAX_BATCH_BYTES (agave refuses bodies over 50 kB); an item larger than that goes alone', async () => {
  const up = await upstream({ mode: { delayMs: 15 } });
  const l = lane('solana-single', { upstreams: [up.url], connections: 1 });
  const big = (i: number): string => Buffer.alloc(1232, i).toString('base64'); // the largest legacy/v0 transaction
  l.offer(big(0));
  await new Promise((r) => setImmediate(r));
  for (let i = 1; i <= 100; i++) l.offer(big(i));
  await l.whenIdle();
  assert.equal(up.calls().length, 101);
  for (const body of up.raw) assert.ok(Buffer.byteLength(body) <= MAX_BATCH_BYTES, `a ${Buffer.byteLength(body)}-byte request`);
  assert.ok(up.requests.some((r) => Array.isArray(r) && r.length > 1), 'still batched');
  const huge = '0x' + 'ab'.repeat(MAX_BATCH_BYTES);
  const e = lane('evm-paid', { upstreams: [up.url], connections: 1 });
  e.offer(hexTx(1));
  await new Promise((r) => setImmediate(r));
  e.offer(huge);
  e.offer(hexTx(2));
  await e.whenIdle();
  const tail = up.requests.slice(-2);
  assert.equal(tail.filter((r) => !Array.isArray(r) && r.params[0] === huge).length, 1, 'the oversized item went alone');
  assert.equal(e.stats().forwarded, 3);
});
