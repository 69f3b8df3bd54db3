/** bench pieces without a relay: the open-loop scheduler on a fake clock, the tx cache, the sink's scanner. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runOpenLoop, runClosedLoop, SLACK_MS, type Clock } from '../../src/bench/scheduler.js';
import { readTxCache, writeTxCache, cacheFile, type CacheKey } from '../../src/bench/txcache.js';
import { scanJsonRpc, startSink } from '../../src/bench/sink.js';
import { parseDuration } from '../../src/bench/cli.js';

/** Virtual time: sleeps and fake request delays are timers the driver fires in order. */
class FakeClock implements Clock {
  t = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];
  private seq = 0;
  now(): number {
    return this.t;
  }
  sleepUntil(at: number): Promise<void> {
    return new Promise((resolve) => this.timers.push({ at, seq: this.seq++, fn: resolve }));
  }
  after(ms: number): Promise<void> {
    return this.sleepUntil(this.t + ms);
  }
  async drive<T>(p: Promise<T>): Promise<T> {
    let done = false;
    void p.then(() => (done = true));
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (done) return p;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (!next) throw new Error('deadlock: nothing scheduled');
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
  }
}

test('open loop: latency counts from the intended start when a request has to wait', async () => {
  const clock = new FakeClock();
  const results: { i: number; latency: number; service: number }[] = [];
  // 100/s = one every 10 ms; one connection; request 0 takes 50 ms, the rest 1 ms.
  const stats = await clock.drive(
    runOpenLoop({
      rate: 100,
      total: 6,
      connections: 1,
      clock,
      send: async (i) => {
        await clock.after(i === 0 ? 50 : 1);
        return i;
      },
      onResult: (i, intended, started, ended) => results.push({ i, latency: ended - intended, service: ended - started }),
    }),
  );
  results.sort((a, b) => a.i - b.i);
  assert.equal(results.length, 6);
  assert.equal(results[0]!.latency, 50);
  // Request 1 was due at 10 ms, could only start at 50 ms, done at 51: latency 41, service 1.
  assert.equal(results[1]!.latency, 41);
  assert.equal(results[1]!.service, 1);
  // 2: due 20, starts 51, done 52 -> 32. 3: due 30 -> 23. 4: due 40 -> 14. 5: due 50, starts 54, done 55 -> 5.
  assert.deepEqual(results.map((r) => r.latency), [50, 41, 32, 23, 14, 5]);
  assert.equal(stats.scheduled, 6);
  assert.equal(stats.late, 5, 'requests 1-5 started more than the slack behind schedule');
  assert.ok(stats.maxBacklog >= 3);
});

test('open loop: on time when the server keeps up (no late starts, latency = service time)', async () => {
  const clock = new FakeClock();
  const lat: number[] = [];
  const stats = await clock.drive(
    runOpenLoop({
      rate: 1000,
      total: 50,
      connections: 4,
      clock,
      send: async () => {
        await clock.after(0.5);
        return 0;
      },
      onResult: (_i, intended, _s, ended) => lat.push(ended - intended),
    }),
  );
  assert.equal(stats.late, 0);
  assert.ok(lat.every((l) => l === 0.5));
  assert.ok(SLACK_MS >= 1);
});

test('closed loop: workers send back to back until the end time', async () => {
  const clock = new FakeClock();
  let n = 0;
  const r = await clock.drive(
    runClosedLoop({
      connections: 2,
      total: 1000,
      endAt: 100,
      clock,
      send: async () => {
        await clock.after(10);
        return 0;
      },
      onResult: () => n++,
    }),
  );
  assert.equal(r.exhausted, false);
  assert.equal(n, 20); // 2 workers x 10 sequential 10 ms requests
});

test('tx cache: round trip, key mismatch and damage are misses', () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-cache-'));
  try {
    const key: CacheKey = { door: 'solana-v2', count: 3, chainId: 1 };
    const txs = [Buffer.from([1, 2, 3]), Buffer.alloc(1232, 7), Buffer.from([9])];
    const file = writeTxCache(dir, key, txs);
    assert.equal(file, cacheFile(dir, key));
    const hit = readTxCache(dir, key);
    assert.ok(hit);
    assert.deepEqual(hit.txs.map((t) => t.toString('hex')), txs.map((t) => t.toString('hex')));
    assert.equal(hit.header.key.door, 'solana-v2');
    assert.ok(Date.parse(hit.header.createdAt) > 0);
    assert.equal(readTxCache(dir, { ...key, door: 'solana-rpc' }), null);
    assert.equal(readTxCache(dir, { ...key, chainId: 5 }), null);
    const buf = readFileSync(file);
    writeFileSync(file, buf.subarray(0, buf.length - 1));
    assert.equal(readTxCache(dir, key), null, 'truncated');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sink: scans single calls and arrays without parsing, answers every id', async () => {
  const one = scanJsonRpc('{"jsonrpc":"2.0","id":7,"method":"sendTransaction","params":["AQ==",{"encoding":"base64"}]}');
  assert.deepEqual(one, { ids: ['7'], methods: ['sendTransaction'], batch: false });
  const arr = scanJsonRpc('[{"jsonrpc":"2.0","id":1,"method":"a","params":[]},{"jsonrpc":"2.0","id":"x","method":"b","params":[]}]');
  assert.deepEqual(arr, { ids: ['1', '"x"'], methods: ['a', 'b'], batch: true });
  // Spaced JSON falls back to a real parse.
  const spaced = scanJsonRpc('{ "id" : 3, "method" : "c" }');
  assert.deepEqual(spaced, { ids: ['3'], methods: ['c'], batch: false });

  const sink = await startSink({ port: 0 });
  try {
    const r = await fetch(sink.url, {
      method: 'POST',
      body: '[{"jsonrpc":"2.0","id":1,"method":"sendBundle","params":[]},{"jsonrpc":"2.0","id":2,"method":"sendBundle","params":[]}]',
    });
    assert.deepEqual(await r.json(), [
      { jsonrpc: '2.0', id: 1, result: 'ok' },
      { jsonrpc: '2.0', id: 2, result: 'ok' },
    ]);
    const r2 = await fetch(sink.url, { method: 'POST', body: '{"jsonrpc":"2.0","id":9,"method":"eth_sendRawTransaction","params":["0x"]}' });
    assert.deepEqual(await r2.json(), { jsonrpc: '2.0', id: 9, result: 'ok' });
    assert.deepEqual(sink.counts(), { requests: 2, items: 3, byMethod: { sendBundle: 2, eth_sendRawTransaction: 1 } });
  } finally {
    await sink.close();
  }
});

test('durations', () => {
  assert.equal(parseDuration('10s'), 10_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('2m'), 120_000);
  assert.equal(parseDuration('3'), 3000);
  assert.throws(() => parseDuration('ten'));
});
