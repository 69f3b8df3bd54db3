/**
 * The default pool of `txrelay bench` is sized to the run: a closed-loop run
 * that used up its pre-signed transactions is repeated with a pool sized to
 * the rate it reached, which then lasts the whole run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRelay } from '../helpers/relay.js';
import { startSink } from '../../src/bench/sink.js';
import { runBench } from '../../src/bench/generator.js';
import { MAX_POOL, poolForRun } from '../../src/bench/cli.js';

test('a closed-loop run that ran out is sized again from its rate, and the second pool lasts', { timeout: 60_000 }, async (t) => {
  const sink = await startSink({ port: 0 });
  t.after(() => sink.close());
  const relay = await startTestRelay({ limits: { ip_rps: 1_000_000, ip_burst: 1_000_000 }, evm: { upstreams: { paid: [sink.url], free: [sink.url] } } });
  t.after(() => relay.stop());
  const { uuid } = (await relay.createAccount({ evm: { tps: 100_000, burst: 100_000 } })) as unknown as { uuid: string };
  const args = { door: 'evm-rpc' as const, url: relay.base, key: uuid, connections: 4, durationMs: 1000, warmupMs: 0, cacheDir: null };
  // A pool far too small for a second of flat-out sending (even on a loaded test machine), as the default was for a fast relay.
  const first = await runBench({ ...args, count: 50 });
  assert.equal(first.exhausted, true);
  const resized = poolForRun(first, 1000);
  assert.ok(resized && resized.count > 50 && resized.rate > 0, JSON.stringify(resized));
  const second = await runBench({ ...args, count: resized.count });
  // The pool holds twice the first run's rate: it lasts unless this run went over twice as fast
  // (a test machine's other work can slow the first run that much).
  const secondRate = second.requests.sent / second.measuredS;
  assert.ok(!second.exhausted || secondRate > 2 * resized.rate, `ran out again with ${resized.count} at ${secondRate.toFixed(0)}/s (first ${resized.rate.toFixed(0)}/s)`);
  assert.equal(second.requests.ok, second.requests.sent);
});

test('the pool is not resized when it lasted, in open loop, or past the cap', () => {
  const base = { exhausted: true, mode: 'closed', measuredS: 0.9, requests: { sent: 900, warmup: 100 }, txs: { perRequest: 1 }, transactions: { count: 1000 }, startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.000Z' };
  assert.deepEqual(poolForRun(base, 10_000), { count: 20_000, rate: 1000 });
  assert.equal(poolForRun({ ...base, exhausted: false }, 10_000), null);
  assert.equal(poolForRun({ ...base, mode: 'open' }, 10_000), null);
  assert.equal(poolForRun({ ...base, requests: { sent: 10_000_000, warmup: 0 } }, 10_000)!.count, MAX_POOL);
  // Spent inside the warm-up: the whole run's rate.
  assert.deepEqual(poolForRun({ ...base, requests: { sent: 0, warmup: 1000 } }, 10_000), { count: 20_000, rate: 1000 });
  // Bundles: the count is in transactions.
  assert.deepEqual(poolForRun({ ...base, txs: { perRequest: 4 }, transactions: { count: 4000 } }, 10_000), { count: 80_000, rate: 1000 });
});
