/**
 * Acknowledged work is never silently dropped (without the hold, 47% of
 * transactions acknowledged during a 15 s upstream hang were dropped). An item no upstream
 * has accepted is held and retried until the maximum age; every item that
 * ends unaccepted is counted by reason. Real upstream servers throughout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Forwarder } from '../../src/forward/forwarder.js';
import type { LogLevel } from '../../src/forward/log.js';
import type { TestUpstream } from '../helpers/upstream.js';
import { laneHarness } from '../helpers/lanes.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const b64Tx = (i: number): string => Buffer.alloc(120, i % 251).fill(i >> 8, 0, 1).toString('base64');
const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'ab'.repeat(40);

const { upstream, lane, track } = laneHarness();
async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    await sleep(10);
  }
}
/** The first params (the transaction) of every call answered with a result. */
const acceptedTxs = (up: TestUpstream): Set<string> => new Set(up.results.map((c) => c.params[0] as string));

test('an upstream that hangs for seconds then recovers gets every item offered during the hang, and none is dropped', async () => {
  const up = await upstream({ mode: 'hang' });
  const l = lane('solana-single', { upstreams: [up.url], timeoutMs: 300, breaker: { cooldownMs: 100, maxCooldownMs: 400 } });
  const offered: string[] = [];
  const hangEnds = Date.now() + 2_500;
  let opened = false;
  for (let i = 0; Date.now() < hangEnds; i++) {
    // Offered regardless of available(): this pins what the lane does with what it was given.
    assert.equal(l.offer(b64Tx(i)), true, `offer ${i} refused during the hang`);
    offered.push(b64Tx(i));
    opened ||= l.stats().upstreams[0]!.breaker !== 'closed';
    await sleep(40);
  }
  assert.ok(opened, 'the hang opened the breaker');
  assert.equal(up.results.length, 0, 'nothing was answered during the hang');
  up.setMode('ok');
  await l.whenIdle();
  const got = acceptedTxs(up);
  for (const tx of offered) assert.ok(got.has(tx), 'an item offered during the hang reached the upstream after it recovered');
  const s = l.stats();
  assert.equal(s.forwarded, offered.length);
  assert.equal(s.dropped, 0);
  assert.deepEqual(s.droppedBy, { rejected: 0, expired: 0, shutdown: 0, expired_after_restart: 0 });
  assert.ok(s.upstreams[0]!.retried > 0, 'the timed-out requests were retried');
  assert.equal(s.upstreams[0]!.breaker, 'closed');
});

test('two upstreams, one hung: every item reaches the healthy one and the hung one never blocks admission', async () => {
  const hung = await upstream({ mode: 'hang' });
  const healthy = await upstream();
  const l = lane('evm-paid', { upstreams: [hung.url, healthy.url], capacity: 16, timeoutMs: 300, breaker: { cooldownMs: 100 } });
  const offered: string[] = [];
  for (let i = 0; i < 150; i++) {
    assert.equal(l.available(), true, 'one healthy upstream keeps the lane available');
    assert.equal(l.offer(hexTx(i)), true, `offer ${i} refused although an upstream keeps up`);
    offered.push(hexTx(i));
    await sleep(3);
  }
  await until(() => l.stats().forwarded === offered.length, 3_000, 'everything forwarded by the healthy upstream');
  const got = acceptedTxs(healthy);
  for (const tx of offered) assert.ok(got.has(tx));
  const s = l.stats();
  assert.ok(s.held <= 16, 'the hung upstream backlog stays inside the ring');
  assert.ok(s.upstreams[0]!.overrun > 0, 'the hung upstream was overrun for items the healthy one had taken');
  assert.equal(s.dropped, 0);
  await l.close();
  assert.equal(l.stats().dropped, 0, 'items the healthy upstream accepted are not dropped when the lane closes');
});

test('an item no upstream accepts within the maximum age is dropped and counted expired, and logged without its contents', async () => {
  const up = await upstream({ mode: 'http-500' });
  const lines: { level: LogLevel; msg: string; fields?: Record<string, unknown> }[] = [];
  const l = lane('solana-single', { upstreams: [up.url], maxAgeMs: 400, log: (level, msg, fields) => void lines.push({ level, msg, fields }) });
  const t0 = Date.now();
  assert.equal(l.offer(b64Tx(1)), true);
  await l.whenIdle();
  assert.ok(Date.now() - t0 >= 390, 'held until the maximum age');
  assert.ok(up.requests.length >= 2, 'retried while young enough');
  const s = l.stats();
  assert.equal(s.dropped, 1);
  assert.deepEqual(s.droppedBy, { rejected: 0, expired: 1, shutdown: 0, expired_after_restart: 0 });
  assert.equal(s.upstreams[0]!.expired, 1);
  assert.equal(s.held, 0, 'its slot is free');
  const line = lines.find((x) => x.fields?.reason === 'expired');
  assert.ok(line, 'the drop is logged');
  assert.equal(line.fields!.items, 1);
  assert.ok(!JSON.stringify(lines).includes(b64Tx(1).slice(0, 24)));
});

test('a JSON-RPC error answer is final: each item is sent once and counted rejected', async () => {
  const up = await upstream({ mode: 'rpc-error' });
  const l = lane('evm-free', { upstreams: [up.url] });
  for (let i = 0; i < 6; i++) {
    l.offer(hexTx(i));
    await l.whenIdle();
  }
  await sleep(100);
  assert.equal(up.calls().length, 6, 'no retry after a JSON-RPC error');
  const s = l.stats();
  assert.deepEqual(s.droppedBy, { rejected: 6, expired: 0, shutdown: 0, expired_after_restart: 0 });
  assert.equal(s.upstreams[0]!.retried, 0);
  assert.equal(s.upstreams[0]!.breaker, 'closed');
});

test('items of a request that failed at the transport level are resent: HTTP 5xx, unparseable answer, dropped connection, time-out', async () => {
  for (const mode of ['http-500', 'garbage', 'drop', { delayMs: 2_500 }] as const) {
    const up = await upstream({ mode: { first: 2, mode, then: 'ok' } });
    const l = lane('solana-single', { upstreams: [up.url], timeoutMs: 200 });
    const txs = [b64Tx(10), b64Tx(11), b64Tx(12)];
    for (const t of txs) l.offer(t);
    await l.whenIdle();
    const s = l.stats();
    const name = JSON.stringify(mode);
    assert.equal(s.forwarded, 3, name);
    assert.equal(s.dropped, 0, name);
    assert.ok(s.upstreams[0]!.retried >= 3, `${name}: retried`);
    const got = acceptedTxs(up);
    for (const t of txs) assert.ok(got.has(t), name);
    await l.close();
  }
});

test('during a half-open window admission stays open and what it admits is held for the probe, not dropped', async () => {
  const up = await upstream({ mode: 'http-500' });
  const l = lane('solana-single', { upstreams: [up.url], breaker: { threshold: 2, cooldownMs: 150 } });
  l.offer(b64Tx(100));
  await until(() => l.stats().upstreams[0]!.breaker === 'open', 2_000, 'breaker open');
  assert.equal(l.available(), false, 'open and cooling down: admissions refused');
  up.setMode({ delayMs: 300 }); // the probe will take a while: a half-open window
  await until(() => l.stats().upstreams[0]!.breaker === 'half-open', 2_000, 'probe sent');
  assert.equal(l.available(), true);
  const more = [b64Tx(101), b64Tx(102), b64Tx(103)];
  for (const t of more) assert.equal(l.offer(t), true);
  await sleep(50);
  assert.equal(up.requests.length, 3, 'two failures, then the probe alone; the rest wait for its verdict');
  assert.equal(l.stats().upstreams[0]!.backlog, 3);
  up.setMode('ok');
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.upstreams[0]!.breaker, 'closed');
  assert.equal(s.forwarded, 4);
  assert.equal(s.dropped, 0);
  const got = acceptedTxs(up);
  for (const t of [b64Tx(100), ...more]) assert.ok(got.has(t));
});

test('a full ring of items no upstream has answered refuses offers (503 backpressure) and admits again once they are accepted', async () => {
  const up = await upstream({ mode: 'hang' });
  const l = lane('evm-paid', { upstreams: [up.url], capacity: 8, timeoutMs: 200, breaker: { cooldownMs: 100 } });
  for (let i = 0; i < 8; i++) assert.equal(l.offer(hexTx(i)), true);
  assert.equal(l.offer(hexTx(8)), false, 'full: refused, nothing was dropped to make room');
  assert.equal(l.depth, 8);
  await sleep(400);
  assert.equal(l.offer(hexTx(9)), false, 'still full while the upstream hangs');
  up.setMode('ok');
  await l.whenIdle();
  assert.equal(l.offer(hexTx(10)), true);
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.forwarded, 9);
  assert.equal(s.dropped, 0);
});

test('drain hands back what no upstream accepted, to be written down, not dropped; accepted ones are not', async () => {
  const hung = await upstream({ mode: 'hang' });
  const ok = await upstream();
  const f = new Forwarder({ lanes: { 'solana-single': [hung.url], 'evm-paid': [hung.url, ok.url] }, timeoutMs: 5_000 });
  track(f);
  for (let i = 0; i < 5; i++) f.lane('solana-single').offer(b64Tx(i));
  for (let i = 0; i < 3; i++) f.lane('evm-paid').offer(hexTx(i));
  await until(() => f.lane('evm-paid').stats().forwarded === 3, 2_000, 'evm items accepted by the healthy upstream');
  const r = await f.drain(200);
  assert.equal(r.sent, 0);
  assert.equal(r.abandoned, 0);
  assert.deepEqual(
    r.spill.map((e) => [e.lane, e.family, e.item]),
    Array.from({ length: 5 }, (_, i) => ['solana-single', 'solana', b64Tx(i)]),
  );
  const s = f.stats().lanes;
  assert.deepEqual(s['solana-single'].droppedBy, { rejected: 0, expired: 0, shutdown: 0, expired_after_restart: 0 });
  assert.equal(f.lane('solana-single').spilled, 5);
  assert.equal(s['evm-paid'].dropped, 0, 'accepted by one upstream: forwarded, not abandoned');
});
