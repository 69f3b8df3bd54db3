/**
 * The verification pool: micro-batches in real piscina workers reading the
 * shared slab in place, and its bound — when the estimated queue time passes
 * its budget, new work is refused at once (the doors answer 503) instead of
 * queueing and growing everyone's latency (issue 2, item 6).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slab } from '../src/shared/slab.js';
import { VerifyPool, JobKind, JobResult } from '../src/workers/pool.js';
import { legacyTransfer } from './helpers/solana.js';
import { signed1559 } from './helpers/evm.js';

test('valid and forged transactions are told apart by the workers, reading the slab in place', async () => {
  const slab = Slab.create({ capacity: 1 << 20 });
  const pool = new VerifyPool({ threads: 1, slabHandle: slab.handle(), slabBytes: slab.bytes });
  try {
    const put = (b: Uint8Array) => {
      const off = slab.alloc(b.length);
      slab.bytes.set(b, off);
      return off;
    };
    const good = legacyTransfer().bytes;
    const forged = Uint8Array.from(legacyTransfer().bytes);
    forged[forged.length - 1]! ^= 1;
    const evm = (await signed1559({ nonce: 3 })).raw;
    const jobs: [JobKind, Uint8Array][] = [
      [JobKind.Solana, good],
      [JobKind.Solana, forged],
      [JobKind.Evm, evm],
    ];
    const results = await Promise.all(
      jobs.map(([k, b]) => new Promise<JobResult>((res) => pool.submit(k, put(b), b.length, res))),
    );
    assert.deepEqual(results, [JobResult.Ok, JobResult.BadSignature, JobResult.Ok]);
    assert.equal(pool.stats.tasks, 1, 'the three jobs travelled in one micro-batch');
  } finally {
    await pool.close();
  }
});

test('past its queue-time budget the pool refuses new work at once, and accepts again once it drains', async () => {
  const slab = Slab.create({ capacity: 8 << 20 });
  const pool = new VerifyPool({ threads: 1, slabHandle: slab.handle(), slabBytes: slab.bytes });
  try {
    const tx = legacyTransfer().bytes;
    const off = slab.alloc(tx.length);
    slab.bytes.set(tx, off);
    let admitted = 0;
    const done: Promise<JobResult>[] = [];
    // All in one synchronous turn: nothing has been verified yet, the estimate only grows.
    while (pool.admit(1) && admitted < 100_000) {
      done.push(new Promise((res) => pool.submit(JobKind.Solana, off, tx.length, res)));
      admitted++;
    }
    assert.ok(admitted > 0 && admitted < 1000, `admitted ${admitted} before refusing`);
    assert.equal(pool.admit(1), false);
    assert.ok(pool.stats.shed >= 2);
    assert.ok(pool.queueMs() > 0);
    const results = await Promise.all(done);
    assert.ok(results.every((r) => r === JobResult.Ok));
    assert.equal(pool.inflight, 0);
    assert.equal(pool.admit(1), true, 'accepts again once drained');
  } finally {
    await pool.close();
  }
});

test('with no worker threads the same micro-batches are verified inline on the main thread, still bounded', async () => {
  const slab = Slab.create({ capacity: 8 << 20 });
  const pool = new VerifyPool({ threads: 0, slabHandle: slab.handle(), slabBytes: slab.bytes });
  try {
    await pool.ready();
    const good = legacyTransfer().bytes;
    const forged = Uint8Array.from(legacyTransfer().bytes);
    forged[forged.length - 1]! ^= 1;
    const put = (b: Uint8Array) => {
      const off = slab.alloc(b.length);
      slab.bytes.set(b, off);
      return off;
    };
    let called = false;
    const results = Promise.all(
      [good, forged].map((b) => new Promise<JobResult>((res) => pool.submit(JobKind.Solana, put(b), b.length, (r) => ((called = true), res(r))))),
    );
    assert.equal(called, false, 'callbacks never run inside submit()');
    assert.deepEqual(await results, [JobResult.Ok, JobResult.BadSignature]);
    assert.equal(pool.stats.tasks, 1);
    let admitted = 0;
    const off = put(good);
    const done: Promise<JobResult>[] = [];
    while (pool.admit(1) && admitted < 100_000) {
      done.push(new Promise((res) => pool.submit(JobKind.Solana, off, good.length, res)));
      admitted++;
    }
    assert.ok(admitted > 0 && admitted < 1000, `admitted ${admitted} before refusing`);
    assert.ok((await Promise.all(done)).every((r) => r === JobResult.Ok));
    assert.equal(pool.admit(1), true);
  } finally {
    await pool.close();
  }
});
