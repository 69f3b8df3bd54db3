import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LogLevel } from '../../src/forward/log.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { laneHarness } from '../helpers/lanes.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'cd'.repeat(40);

const { upstream, lane } = laneHarness();
function logger(): { lines: { level: LogLevel; msg: string; fields?: Record<string, unknown> }[]; log: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void } {
  const lines: { level: LogLevel; msg: string; fields?: Record<string, unknown> }[] = [];
  return { lines, log: (level, msg, fields) => void lines.push({ level, msg, fields }) };
}
async function until(pred: () => boolean, timeoutMs = 3_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await sleep(10);
  }
}

test('JSON-RPC errors are counted per item as rpcErrors, the items as dropped (rejected), and do not open the breaker', async () => {
  const up = await upstream({ mode: 'rpc-error' });
  const l = lane('evm-paid', { upstreams: [up.url] });
  for (let i = 0; i < 8; i++) {
    assert.equal(l.offer(hexTx(i)), true);
    await l.whenIdle();
  }
  const s = l.stats();
  assert.equal(s.upstreams[0]!.rpcErrors, 8);
  assert.equal(s.upstreams[0]!.ok, 0);
  assert.equal(s.dropped, 8);
  assert.equal(s.droppedBy.rejected, 8);
  assert.equal(s.forwarded, 0);
  assert.equal(s.upstreams[0]!.breaker, 'closed', 'an upstream that answers is up');
  assert.equal(l.available(), true);
});

test('per-item errors inside a batch answer count as errors for those items only', async () => {
  const odd = (c: { params: any }): boolean => parseInt(String(c.params[0]).slice(6, 14), 16) % 2 === 1;
  const up = await upstream({ mode: { delayMs: 10, then: { rejectIf: odd } } });
  const l = lane('evm-paid', { upstreams: [up.url] });
  for (let i = 0; i < 100; i++) l.offer(hexTx(i));
  await l.whenIdle();
  assert.ok(up.requests.some((r) => Array.isArray(r)), 'items went in batches');
  const s = l.stats();
  assert.equal(s.upstreams[0]!.ok, 50);
  assert.equal(s.upstreams[0]!.rpcErrors, 50);
  assert.equal(s.forwarded, 50);
  assert.equal(s.dropped, 50);
  assert.equal(s.droppedBy.rejected, 50);
  assert.equal(s.upstreams[0]!.retried, 0, 'a refused item is not resent');
});

test('HTTP 500 is counted as httpErrors, never throws out of the lane, and the items are resent', async () => {
  const up = await upstream({ mode: { first: 3, mode: 'http-500', then: 'ok' } });
  const l = lane('solana-single', { upstreams: [up.url], batching: false });
  l.offer(Buffer.from([1]).toString('base64'));
  await l.whenIdle();
  const u = l.stats().upstreams[0]!;
  assert.equal(u.httpErrors, 3);
  assert.equal(u.requests, 4);
  assert.equal(u.retried, 3);
  assert.equal(u.ok, 1);
  assert.ok(u.lastLatencyMs > 0);
  assert.equal(l.stats().forwarded, 1);
  assert.equal(l.stats().dropped, 0);
});

test('time-outs are counted as timeouts, per item, and the items are resent', async () => {
  const up = await upstream({ mode: { first: 1, mode: { delayMs: 3_000 }, then: 'ok' } });
  const l = lane('evm-free', { upstreams: [up.url], timeoutMs: 100 });
  l.offer(hexTx(1));
  l.offer(hexTx(2));
  await l.whenIdle();
  const u = l.stats().upstreams[0]!;
  assert.equal(u.requests, 2);
  assert.equal(u.timeouts, 2, 'counted per item');
  assert.equal(u.ok, 2);
  assert.equal(l.stats().dropped, 0);
});

test('dropped connections and refused connections are counted as connErrors; items are held for the refusing one until the maximum age', async () => {
  const dropper = await upstream({ mode: { first: 3, mode: 'drop', then: 'ok' } });
  const gone = await startUpstream();
  const goneUrl = gone.url;
  await gone.close();
  const l = lane('evm-free', { upstreams: [dropper.url, goneUrl], batching: false, maxAgeMs: 500 });
  for (let i = 0; i < 3; i++) l.offer(hexTx(i));
  await l.whenIdle();
  const [d, g] = l.stats().upstreams;
  assert.equal(d!.connErrors, 3);
  assert.equal(d!.ok, 3);
  assert.ok(g!.connErrors >= 3);
  assert.equal(g!.expired, 3, 'the refusing upstream gave them up at the maximum age');
  assert.equal(l.stats().forwarded, 3);
  assert.equal(l.stats().dropped, 0);
});

test('an upstream that answers a batch with one error is switched to single requests, and that batch is resent one by one', async () => {
  const up = await upstream({ mode: { delayMs: 10, then: 'no-batch' } });
  const log = logger();
  const l = lane('evm-paid', { upstreams: [up.url], log: log.log });
  for (let i = 0; i < 20; i++) l.offer(hexTx(i));
  await l.whenIdle();
  for (let i = 20; i < 40; i++) l.offer(hexTx(i));
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.upstreams[0]!.batching, false);
  assert.equal(s.upstreams[0]!.ok, 40, 'every item, those of the refused batch included, was accepted one per request');
  assert.equal(s.dropped, 0);
  assert.equal(up.requests.filter((r) => Array.isArray(r)).length, 1, 'only the first batch was tried');
  assert.ok(log.lines.some((x) => x.msg.includes('refuses JSON-RPC batches')));
});

test('the breaker opens after consecutive failures and holds that upstream\'s items; the lane is unavailable only when every upstream is open; healed, both get everything', async () => {
  const a = await upstream({ mode: 'http-500' });
  const b = await upstream();
  const log = logger();
  const l = lane('evm-paid', { upstreams: [a.url, b.url], batching: false, breaker: { cooldownMs: 600, maxCooldownMs: 1_200 }, log: log.log });
  const txs = [hexTx(0), hexTx(1), hexTx(2)];
  assert.equal(l.offer(txs[0]!), true);
  // One item, resent after each failure (20, 40, 80, 160 ms back-off): the fifth failure opens the breaker.
  await until(() => l.stats().upstreams[0]!.breaker === 'open');
  assert.equal(a.requests.length, 5);
  assert.equal(l.available(), true, 'one healthy upstream keeps the lane available');
  assert.equal(l.offer(txs[1]!), true);
  await until(() => l.stats().forwarded === 2);
  let s = l.stats();
  assert.equal(a.requests.length, 5, 'an open upstream is not sent to');
  assert.equal(s.upstreams[0]!.backlog, 2, 'its items are held for it');
  assert.equal(s.dropped, 0);

  b.setMode('http-500');
  assert.equal(l.offer(txs[2]!), true);
  await until(() => !l.available());
  s = l.stats();
  assert.equal(s.upstreams[1]!.breaker, 'open');
  assert.equal(s.available, false, 'every upstream open: the lane refuses admissions');
  assert.ok(log.lines.some((x) => x.level === 'error' && x.msg.includes('lane evm-paid unavailable')));

  a.setMode('ok');
  b.setMode('ok');
  await l.whenIdle();
  s = l.stats();
  assert.equal(s.upstreams[0]!.breaker, 'closed');
  assert.equal(s.upstreams[1]!.breaker, 'closed');
  assert.ok(log.lines.some((x) => x.msg.includes('lane evm-paid available again')));
  for (const up of [a, b]) assert.deepEqual(new Set(up.results.map((c) => c.params[0])), new Set(txs), 'each upstream got every item once healed');
  assert.equal(s.forwarded, 3);
  assert.equal(s.dropped, 0);
});

test('a half-open probe carries one held item; after it fails the rest wait for the next one, held, while the other upstream takes everything', async () => {
  const bad = await upstream({ mode: 'http-500' });
  const good = await upstream();
  const l = lane('solana-single', { upstreams: [bad.url, good.url], batching: false, breaker: { cooldownMs: 100, maxCooldownMs: 400 } });
  l.offer(Buffer.from([0]).toString('base64'));
  await until(() => l.stats().upstreams[0]!.breaker === 'open');
  assert.equal(bad.requests.length, 5);
  for (let k = 1; k <= 10; k++) l.offer(Buffer.from([k, 1]).toString('base64'));
  await until(() => bad.requests.length === 6); // the probe, ~100 ms after opening
  await sleep(60);
  let s = l.stats();
  assert.equal(bad.requests.length, 6, 'exactly one probe per cool-down');
  assert.equal(bad.calls()[5]!.params[0], Buffer.from([0]).toString('base64'), 'the probe is the oldest held item');
  assert.equal(s.upstreams[0]!.breaker, 'open');
  assert.equal(s.upstreams[0]!.backlog, 11);
  assert.equal(s.forwarded, 11, 'the good upstream took everything meanwhile');
  bad.setMode('ok');
  await l.whenIdle();
  s = l.stats();
  assert.equal(new Set(bad.results.map((c) => c.params[0])).size, 11, 'every held item reached it after it healed');
  assert.equal(s.dropped, 0);
});

test('logs name upstreams by origin only, carry no transaction contents, and are rate-limited', async () => {
  const secretPath = '/v2/SECRETKEY0123456789';
  const failing = await upstream({ path: secretPath, mode: 'http-500' });
  const echoing = await upstream({ path: secretPath + '?api-key=SECRETQUERY', mode: { rejectIf: () => true, message: (c) => `tx ${c.params[0]} rejected: nonce too low` } });
  const log = logger();
  const l = lane('evm-paid', { upstreams: [failing.url, echoing.url], log: log.log, breaker: { threshold: 1_000 }, batching: false });
  const tx = hexTx(0xabcdef);
  for (let k = 0; k < 20; k++) {
    l.offer(tx);
    await until(() => echoing.requests.length === k + 1);
  }
  await until(() => failing.requests.length >= 25);
  const text = JSON.stringify(log.lines);
  assert.ok(!text.includes('SECRET'), 'no path or query of an upstream URL');
  assert.ok(!text.includes(tx), 'no transaction contents');
  assert.ok(!text.includes(tx.slice(2, 40)), 'not even a long slice of them');
  const port = new URL(failing.url).port;
  const failed = log.lines.filter((x) => x.msg.startsWith('upstream request failed'));
  assert.equal(failed.length, 1, 'one line per upstream per interval, not one per transaction');
  assert.equal(failed[0]!.fields!.upstream, `http://127.0.0.1:${port}/…`);
  assert.equal(failed[0]!.fields!.reason, 'http 500');
  const refused = log.lines.filter((x) => x.msg === 'upstream refused transactions');
  assert.equal(refused.length, 1);
  assert.match(String(refused[0]!.fields!.reason), /^rpc -32000: tx 0x02f800ab… rejected: nonce too low$/);
});

test('a throwing log sink does not stop forwarding', async () => {
  const up = await upstream({ mode: 'http-500' });
  const l = lane('evm-paid', {
    upstreams: [up.url],
    log: () => {
      throw new Error('sink broke');
    },
  });
  l.offer(hexTx(1));
  await until(() => up.requests.length > 0);
  up.setMode('ok');
  l.offer(hexTx(2));
  await l.whenIdle();
  assert.equal(l.stats().forwarded, 2);
});

test('a 4xx refusal other than 408/429 is final for that item: sent once, counted rejected, and the breaker stays closed', async () => {
  for (const status of [400, 401, 403, 404, 413]) {
    const up = await upstream({ mode: { status } });
    const l = lane('evm-paid', { upstreams: [up.url], batching: false, breaker: { threshold: 2 } });
    for (let i = 0; i < 4; i++) l.offer(hexTx(i));
    await l.whenIdle();
    await sleep(50);
    const s = l.stats();
    assert.equal(up.requests.length, 4, `${status}: no resend`);
    assert.deepEqual(s.droppedBy, { rejected: 4, expired: 0, shutdown: 0, expired_after_restart: 0 }, String(status));
    assert.equal(s.upstreams[0]!.breaker, 'closed', `${status}: an upstream that answers is up`);
    assert.equal(s.upstreams[0]!.httpErrors, 4);
  }
});

test('408 and 429 are resent after the back-off, like a 5xx', async () => {
  for (const status of [408, 429]) {
    const up = await upstream({ mode: { first: 2, mode: { status }, then: 'ok' } });
    const l = lane('evm-paid', { upstreams: [up.url] });
    l.offer(hexTx(1));
    await l.whenIdle();
    const s = l.stats();
    assert.equal(up.requests.length, 3, String(status));
    assert.equal(s.forwarded, 1);
    assert.equal(s.upstreams[0]!.retried, 2);
  }
});

test('a batch refused with a 4xx is resent one transaction per request', async () => {
  const up = await upstream({ mode: { first: 1, mode: { delayMs: 20 }, then: { first: 1, mode: { status: 413 }, then: 'ok' } } });
  const l = lane('solana-single', { upstreams: [up.url], connections: 1 });
  l.offer(Buffer.from([0]).toString('base64'));
  await new Promise((r) => setImmediate(r));
  for (let k = 1; k <= 5; k++) l.offer(Buffer.from([k]).toString('base64'));
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.forwarded, 6);
  assert.equal(s.dropped, 0);
  assert.ok(Array.isArray(up.requests[1]) && up.requests[1].length === 5, 'the second request was the batch, refused');
  assert.ok(up.requests.slice(2).every((r) => !Array.isArray(r)), 'then one per request');
  assert.equal(s.upstreams[0]!.batching, true, 'batching stays on: a size refusal is not a refusal of batches');
});
