import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { TokenBucketTable } from '../../src/tables/token-bucket.js';
import { IpLimiter } from '../../src/tables/ip-limiter.js';
import { DedupFilter } from '../../src/tables/dedup.js';
import { Slab } from '../../src/tables/slab.js';
import type { HammerData, HammerResult } from '../fixtures/shared-hammer.js';

const WORKERS = 4;
const NOW = 1_700_000_000_000; // frozen: no refill while the workers run
const BURSTS = [20_000, 7_777, 50_000];
const KEYS = 40_000;

function keyOf(i: number): Uint8Array {
  const out = new Uint8Array(32);
  new DataView(out.buffer).setUint32(0, i);
  for (let j = 4; j < 32; j++) out[j] = (i * 7 + j) & 0xff;
  return out;
}

async function round(): Promise<void> {
  const buckets = TokenBucketTable.create({ slots: BURSTS.length, nowMs: NOW });
  BURSTS.forEach((b, s) => buckets.configure(s, 1000, b, NOW));
  const ip = IpLimiter.create({ nowMs: NOW });
  const dedup = DedupFilter.create({ windowMs: 120_000, capacity: 2 * KEYS });
  const slab = Slab.create({ capacity: 4096 });
  const block = slab.alloc(1232);
  slab.bytes.fill(3, block, block + 1232);

  const gate = new Int32Array(new SharedArrayBuffer(16));
  gate[2] = block;
  const data = (id: number): HammerData => ({
    id,
    gate: gate.buffer as SharedArrayBuffer,
    nowMs: NOW,
    buckets: buckets.handle(),
    slots: BURSTS.length,
    takesPerSlot: 20_000,
    ip: ip.handle(),
    ipTakes: 5000,
    dedup: dedup.handle(),
    keys: KEYS,
    slab: slab.handle(),
  });
  const workers = Array.from({ length: WORKERS }, (_, id) => new Worker(new URL('../fixtures/shared-hammer.js', import.meta.url), { workerData: data(id) }));
  const results = workers.map(
    (w) =>
      new Promise<HammerResult>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      }),
  );
  // Open the gate once every worker is parked on it, so they all start together.
  // Polled without blocking the event loop, so a worker that fails to start surfaces as an error.
  const deadline = Date.now() + 30_000;
  while (Atomics.load(gate, 1) < WORKERS) {
    if (Date.now() > deadline) throw new Error('workers did not reach the start gate');
    await Promise.race([new Promise((r) => setTimeout(r, 5)), ...results]);
  }
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
  const got = await Promise.all(results);
  await Promise.all(workers.map((w) => w.terminate()));

  // Token buckets: with the clock frozen, exactly `burst` takes succeed per slot, whatever the interleaving.
  BURSTS.forEach((b, s) => {
    const total = got.reduce((sum, r) => sum + r.admitted[s]!, 0);
    assert.equal(total, b, `slot ${s}: ${got.map((r) => r.admitted[s]).join('+')} admitted, burst ${b}`);
    assert.equal(buckets.available(s, NOW), 0);
  });
  assert.equal(
    got.reduce((sum, r) => sum + r.ipAdmitted, 0),
    ip.burst,
    'one IP from four threads gets exactly its burst',
  );

  // Dedup: every key claimed by exactly one thread; no double claim, none lost.
  for (let i = 0; i < KEYS; i++) {
    let owners = 0;
    for (const r of got) owners += r.claimed[i]!;
    if (owners !== 1) assert.fail(`key ${i} claimed by ${owners} threads`);
    if (dedup.claim(keyOf(i), NOW)) assert.fail(`key ${i} not present after the race`);
  }
  assert.equal(dedup.freshEvictions, 0);

  for (const r of got) assert.equal(r.slabSum, 3 * 1232, 'workers read the slab block in place');
}

test('four threads on one shared token bucket, IP limiter and dedup filter: no lost update, no double claim (frozen clock)', async () => {
  for (let i = 0; i < 3; i++) await round();
});
