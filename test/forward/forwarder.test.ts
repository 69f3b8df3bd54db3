import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Forwarder } from '../../src/forward/forwarder.js';
import { LANE_NAMES } from '../../src/forward/lane.js';
import type { LogLevel } from '../../src/forward/log.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';

const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'ef'.repeat(40);
const b64 = (i: number): string => Buffer.alloc(80, i).toString('base64');

const open: { close(): Promise<void> }[] = [];
async function upstream(...args: Parameters<typeof startUpstream>): Promise<TestUpstream> {
  const u = await startUpstream(...args);
  open.push(u);
  return u;
}
function forwarder(opts: ConstructorParameters<typeof Forwarder>[0]): Forwarder {
  const f = new Forwarder(opts);
  open.push(f);
  return f;
}
after(async () => {
  for (const o of open.reverse()) await o.close();
});

test('start-up warns once per dry lane, in plain words', () => {
  const lines: { level: LogLevel; msg: string }[] = [];
  forwarder({ lanes: { 'evm-paid': ['http://127.0.0.1:9/'] }, log: (level, msg) => void lines.push({ level, msg }) });
  assert.deepEqual(lines, [
    { level: 'warn', msg: 'lane evm-free has no upstream configured: admitted transactions are counted and dropped' },
    { level: 'warn', msg: 'lane solana-single has no upstream configured: admitted transactions are counted and dropped' },
    { level: 'warn', msg: 'lane solana-bundle has no upstream configured: admitted transactions are counted and dropped' },
  ]);
});

test('each lane carries its own format to its own upstreams; stats report every lane and upstream', async () => {
  const evm = await upstream();
  const sol = await upstream();
  const jito = await upstream();
  const f = forwarder({ lanes: { 'evm-paid': [evm.url], 'evm-free': [evm.url], 'solana-single': [sol.url], 'solana-bundle': [jito.url] }, queueCapacity: 100 });
  assert.equal(f.lane('evm-paid').offer(hexTx(1)), true);
  assert.equal(f.lane('evm-free').offer(hexTx(2)), true);
  assert.equal(f.lane('solana-single').offer(b64(3)), true);
  assert.equal(f.lane('solana-bundle').offer([b64(4), b64(5)]), true);
  await Promise.all(LANE_NAMES.map((n) => f.lane(n).whenIdle()));
  assert.deepEqual(evm.calls().map((c) => [c.method, c.params[0]]).sort(), [
    ['eth_sendRawTransaction', hexTx(1)],
    ['eth_sendRawTransaction', hexTx(2)],
  ]);
  assert.equal(sol.calls()[0]!.method, 'sendTransaction');
  assert.deepEqual(jito.calls()[0]!.params, [[b64(4), b64(5)], { encoding: 'base64' }]);

  const s = f.stats();
  assert.equal(s.draining, false);
  assert.deepEqual(Object.keys(s.lanes), ['evm-paid', 'evm-free', 'solana-single', 'solana-bundle']);
  const bundle = s.lanes['solana-bundle'];
  assert.equal(bundle.capacity, 100);
  assert.equal(bundle.depth, 0);
  assert.equal(bundle.admitted, 1);
  assert.equal(bundle.forwarded, 1);
  assert.equal(bundle.discarded, 0);
  assert.equal(bundle.dropped, 0);
  assert.deepEqual(bundle.droppedBy, { rejected: 0, expired: 0, shutdown: 0, expired_after_restart: 0 });
  const u = bundle.upstreams[0]!;
  assert.equal(u.breaker, 'closed');
  assert.equal(u.sent, 1);
  assert.equal(u.ok, 1);
  for (const k of ['requests', 'rpcErrors', 'httpErrors', 'timeouts', 'connErrors', 'lastLatencyMs', 'retried', 'overrun', 'expired', 'backlog', 'inFlight'] as const) {
    assert.equal(typeof u[k], 'number', k);
  }
});

test('a dry lane admits, counts discarded and forwards nothing', () => {
  const f = forwarder({ lanes: {} });
  const l = f.lane('solana-bundle');
  assert.equal(l.offer([b64(1)]), true);
  assert.equal(l.available(), true);
  assert.equal(f.stats().lanes['solana-bundle'].discarded, 1);
});

test('drain refuses new items, waits for queued and in-flight items, then returns how many went out', async () => {
  const up = await upstream({ mode: { delayMs: 150 } });
  const f = forwarder({ lanes: { 'evm-paid': [up.url] } });
  const l = f.lane('evm-paid');
  for (let i = 0; i < 30; i++) assert.equal(l.offer(hexTx(i)), true);
  const t0 = Date.now();
  const done = f.drain(5_000);
  assert.equal(f.draining, true);
  assert.equal(l.offer(hexTx(99)), false, 'offer returns false while draining');
  const r = await done;
  assert.ok(Date.now() - t0 >= 100, 'it waited for the in-flight requests');
  assert.deepEqual(r, { sent: 30, abandoned: 0, spill: [] });
  assert.equal(up.calls().length, 30);
  assert.equal(f.stats().lanes['evm-paid'].forwarded, 30);
  assert.equal(l.offer(hexTx(100)), false);
});

test('drain gives up at its time-out and hands back the unaccepted items to be written down, in flight or not', async () => {
  const up = await upstream({ mode: { delayMs: 5_000 } });
  const f = forwarder({ lanes: { 'solana-single': [up.url] }, connections: 1, batching: { 'solana-single': false } });
  const l = f.lane('solana-single');
  for (let i = 0; i < 5; i++) l.offer(b64(i));
  const t0 = Date.now();
  const r = await f.drain(200);
  const took = Date.now() - t0;
  assert.ok(took >= 190 && took < 2_000, `drain took ${took} ms`);
  assert.equal(r.abandoned, 0);
  assert.deepEqual(
    r.spill.map((e) => e.item),
    Array.from({ length: 5 }, (_, i) => b64(i)),
  );
  assert.equal(f.stats().lanes['solana-single'].droppedBy.shutdown, 0);
  assert.equal(l.spilled, 5);
});

test('drain with nothing queued returns at once', async () => {
  const f = forwarder({ lanes: {} });
  assert.deepEqual(await f.drain(), { sent: 0, abandoned: 0, spill: [] });
});

test('a bad upstream URL stops construction with a code that names the lane, not the URL', () => {
  assert.throws(
    () => new Forwarder({ lanes: { 'evm-paid': ['http://127.0.0.1:9/'], 'solana-bundle': ['mailto:KEY@example.com'] } }),
    (e: any) => e.code === 'TXR_FORWARD_CONFIG' && e.message.startsWith('lane solana-bundle upstream 0') && !e.message.includes('KEY'),
  );
});
