import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Lane } from '../src/forward/lane.js';
import type { LogLevel } from '../src/forward/upstream.js';
import { startUpstream, type TestUpstream } from './helpers/upstream.js';

// Upstream trouble must never surface as an unhandled rejection (it would crash the node).
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown): void => void unhandled.push(e);
process.on('unhandledRejection', onUnhandled);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'cd'.repeat(40);

const open: { close(): Promise<void> }[] = [];
async function upstream(...args: Parameters<typeof startUpstream>): Promise<TestUpstream> {
  const u = await startUpstream(...args);
  open.push(u);
  return u;
}
function lane<N extends ConstructorParameters<typeof Lane>[0]>(name: N, opts: ConstructorParameters<typeof Lane>[1]): Lane<N> {
  const l = new Lane(name, opts);
  open.push(l);
  return l;
}
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

after(async () => {
  for (const o of open.reverse()) await o.close();
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no unhandled rejections');
});

test('JSON-RPC errors are counted per item as rpcErrors, the items as dropped, and do not open the breaker', async () => {
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
});

test('HTTP 500 is counted as httpErrors and never throws out of the lane', async () => {
  const up = await upstream({ mode: 'http-500' });
  const l = lane('solana-single', { upstreams: [up.url] });
  for (let i = 0; i < 3; i++) {
    l.offer(Buffer.from([i]).toString('base64'));
    await l.whenIdle();
  }
  const u = l.stats().upstreams[0]!;
  assert.equal(u.httpErrors, 3);
  assert.equal(u.requests, 3);
  assert.ok(u.lastLatencyMs > 0);
  assert.equal(l.stats().dropped, 3);
});

test('time-outs are counted as timeouts', async () => {
  // undici runs headers/body time-outs on a coarse (about 1 s) timer, so the answer must be later than that.
  const up = await upstream({ mode: { delayMs: 3_000 } });
  const l = lane('evm-free', { upstreams: [up.url], timeoutMs: 100 });
  l.offer(hexTx(1));
  l.offer(hexTx(2));
  await l.whenIdle();
  const u = l.stats().upstreams[0]!;
  assert.equal(u.requests, 1);
  assert.equal(u.timeouts, 2, 'counted per item');
  assert.equal(u.ok, 0);
  assert.equal(l.stats().dropped, 2);
});

test('dropped connections and refused connections are counted as connErrors', async () => {
  const dropper = await upstream({ mode: 'drop' });
  const gone = await startUpstream();
  const goneUrl = gone.url;
  await gone.close();
  const l = lane('evm-free', { upstreams: [dropper.url, goneUrl] });
  for (let i = 0; i < 3; i++) {
    l.offer(hexTx(i));
    await l.whenIdle();
  }
  const [d, g] = l.stats().upstreams;
  assert.equal(d!.connErrors, 3);
  assert.equal(g!.connErrors, 3);
  assert.equal(l.stats().dropped, 3);
});

test('an upstream that answers a batch with one error is switched to single requests', async () => {
  const up = await upstream({ mode: { delayMs: 10, then: 'no-batch' } });
  const log = logger();
  const l = lane('evm-paid', { upstreams: [up.url], log: log.log });
  for (let i = 0; i < 20; i++) l.offer(hexTx(i));
  await l.whenIdle();
  for (let i = 20; i < 40; i++) l.offer(hexTx(i));
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.upstreams[0]!.batching, false);
  assert.ok(s.upstreams[0]!.ok >= 20, 'the second burst went one per request and was accepted');
  assert.equal(up.requests.filter((r) => Array.isArray(r)).length, 1, 'only the first batch was tried');
  assert.ok(log.lines.some((x) => x.msg.includes('refuses JSON-RPC batches')));
});

test('the breaker opens after consecutive failures; the lane is unavailable only when every upstream is open, and recovers after they heal', async () => {
  const a = await upstream();
  const b = await upstream();
  const log = logger();
  const l = lane('evm-paid', { upstreams: [a.url, b.url], breaker: { cooldownMs: 600, maxCooldownMs: 1_200 }, log: log.log });
  const send = async (i: number): Promise<void> => {
    assert.equal(l.offer(hexTx(i)), true);
    await l.whenIdle();
  };
  let i = 0;
  a.setMode('http-500');
  for (let k = 0; k < 4; k++) await send(i++);
  assert.equal(l.stats().upstreams[0]!.breaker, 'closed', '4 failures are not enough');
  await send(i++);
  assert.equal(l.stats().upstreams[0]!.breaker, 'open');
  assert.equal(l.available(), true, 'one healthy upstream keeps the lane available');
  await send(i++);
  let s = l.stats();
  assert.equal(s.upstreams[0]!.skipped, 1, 'an open upstream is skipped, not sent to');
  assert.equal(a.requests.length, 5);
  assert.equal(s.forwarded, i, 'the healthy upstream took everything');

  b.setMode('http-500');
  for (let k = 0; k < 5; k++) await send(i++);
  s = l.stats();
  assert.equal(s.upstreams[1]!.breaker, 'open');
  assert.equal(l.available(), false, 'every upstream open: the lane refuses admissions');
  assert.equal(s.available, false);
  assert.ok(log.lines.some((x) => x.level === 'error' && x.msg.includes('lane evm-paid unavailable')));

  a.setMode('ok');
  b.setMode('ok');
  await until(() => l.available()); // a's cool-down is over first
  await sleep(700); // and now b's
  await send(i++); // the probe for both
  s = l.stats();
  assert.equal(s.upstreams[0]!.breaker, 'closed');
  assert.equal(s.upstreams[1]!.breaker, 'closed');
  assert.ok(log.lines.some((x) => x.msg.includes('lane evm-paid available again')));
  const okBefore = s.upstreams[0]!.ok;
  await send(i++);
  assert.equal(l.stats().upstreams[0]!.ok, okBefore + 1, 'sending resumed');
});

test('a failed probe keeps the breaker open and items waiting behind the probe are not lost to other upstreams', async () => {
  const bad = await upstream({ mode: 'http-500' });
  const good = await upstream();
  const l = lane('solana-single', { upstreams: [bad.url, good.url], breaker: { cooldownMs: 100 } });
  for (let k = 0; k < 5; k++) {
    l.offer(Buffer.from([k]).toString('base64'));
    await l.whenIdle();
  }
  assert.equal(l.stats().upstreams[0]!.breaker, 'open');
  await sleep(120);
  for (let k = 0; k < 10; k++) l.offer(Buffer.from([k, 1]).toString('base64'));
  await l.whenIdle();
  const s = l.stats();
  assert.equal(s.upstreams[0]!.breaker, 'open');
  assert.equal(bad.requests.length, 6, 'exactly one probe was sent while half-open');
  assert.equal(s.upstreams[0]!.skipped, 9);
  assert.equal(s.forwarded, 15);
});

test('logs name upstreams by origin only, carry no transaction contents, and are rate-limited', async () => {
  const secretPath = '/v2/SECRETKEY0123456789';
  const failing = await upstream({ path: secretPath, mode: 'http-500' });
  const echoing = await upstream({ path: secretPath + '?api-key=SECRETQUERY', mode: { rejectIf: () => true, message: (c) => `tx ${c.params[0]} rejected: nonce too low` } });
  const log = logger();
  const l = lane('evm-paid', { upstreams: [failing.url, echoing.url], log: log.log, breaker: { threshold: 1_000 } });
  const tx = hexTx(0xabcdef);
  for (let k = 0; k < 20; k++) {
    l.offer(tx);
    await l.whenIdle();
  }
  const text = JSON.stringify(log.lines);
  assert.ok(!text.includes('SECRET'), 'no path or query of an upstream URL');
  assert.ok(!text.includes(tx), 'no transaction contents');
  assert.ok(!text.includes(tx.slice(2, 40)), 'not even a long slice of them');
  const port = new URL(failing.url).port;
  const failed = log.lines.filter((x) => x.msg === 'upstream request failed');
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
  await l.whenIdle();
  up.setMode('ok');
  l.offer(hexTx(2));
  await l.whenIdle();
  assert.equal(l.stats().forwarded, 1);
});
