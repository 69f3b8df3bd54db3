/**
 * The verification workers' pool on its own (src/exec/workers.ts): a piscina
 * task serves the job table until it has been idle, the main thread then
 * stands in for the worker, and the next wake-up starts a new task; steady
 * traffic starts none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Slab } from '../../src/tables/slab.js';
import { DedupFilter } from '../../src/tables/dedup.js';
import { systemClock } from '../../src/clock.js';
import { VerifyWorkers } from '../../src/exec/workers.js';
import { JobKind, JobResult, JobTable, S_RESULT } from '../../src/exec/jobs.js';
import { legacyTransfer } from '../helpers/solana.js';

/** A short idle time, so a test sees a task return. */
const IDLE_MS = 100;

function setup(idleMs = IDLE_MS) {
  const slab = Slab.create({ capacity: 1 << 20 });
  const jobs = JobTable.create(64);
  const dedup = DedupFilter.create({ windowMs: 60_000, capacity: 1000 });
  const deaths: number[] = [];
  const workers = new VerifyWorkers({
    threads: 1,
    data: { slab: slab.handle(), jobs: jobs.handle(), dedup: dedup.handle(), chainId: '1', maxWaitMs: 60_000, idleMs },
    onDeath: (i) => deaths.push(i),
  });
  /** Submits one Solana transaction as the verifier does (a wake-up when a worker sleeps) and resolves with its result. */
  const check = async (bytes: Uint8Array): Promise<JobResult> => {
    const off = slab.alloc(bytes.length);
    slab.bytes.set(bytes, off);
    const s = jobs.acquire();
    jobs.set(s, JobKind.SolanaTx, off, bytes.length, 0);
    if (jobs.submit(s, systemClock())) jobs.wake(1);
    for (let waited = 0; waited < 10_000; waited += 2) {
      const d = jobs.nextDone();
      if (d >= 0) {
        assert.equal(d, s);
        const r = jobs.field(d, S_RESULT) as JobResult;
        jobs.release(d);
        slab.free(off);
        return r;
      }
      await sleep(2);
    }
    throw new Error('no worker answered within 10 s');
  };
  const stop = async () => {
    jobs.stop();
    await workers.stop();
  };
  return { workers, jobs, check, stop, deaths };
}

test('a worker idle past its time gives its task back; the main thread stands in, and the next submission starts a task that checks it', async () => {
  const { workers, jobs, check, stop, deaths } = setup();
  await workers.start();
  try {
    assert.equal(workers.live, 1);
    assert.equal(await check(legacyTransfer().bytes), JobResult.Ok);
    assert.equal(workers.tasks, 1);
    await sleep(IDLE_MS * 4);
    // The task returned; the worker still counts in service, and as a sleeper a submission wakes.
    assert.equal(workers.live, 1);
    assert.equal(jobs.hasSleeper(), true);
    assert.equal(await check(legacyTransfer().bytes), JobResult.Ok);
    assert.equal(workers.tasks, 2);
    assert.deepEqual(deaths, []);
  } finally {
    await stop();
  }
});

test('steady traffic (a job every few ms, gaps far below the idle time) runs in one task: no task, no message per transaction', async () => {
  // The relay's own idle time: a busy test machine's stalls stay far below it.
  const { workers, check, stop } = setup(1000);
  await workers.start();
  try {
    for (let i = 0; i < 30; i++) {
      assert.equal(await check(legacyTransfer().bytes), JobResult.Ok);
      await sleep(5);
    }
    assert.equal(workers.tasks, 1);
  } finally {
    await stop();
  }
});

test('stop ends a worker that is idle with the main thread standing in', async () => {
  const { workers, stop } = setup();
  await workers.start();
  await sleep(IDLE_MS * 3);
  const t0 = performance.now();
  await stop();
  assert.ok(performance.now() - t0 < 5000);
  assert.equal(workers.tasks, 1);
});
