/**
 * A verification worker's task (src/exec/workers.ts starts one per wake-up
 * after idle): claims jobs from the ring and checks them in place in the slab.
 * Between jobs it parks in Atomics.wait, so under load no job goes through a
 * message port; after IDLE_MS without a job it returns, giving the thread
 * back to the pool until the next wake-up.
 */
import { workerData } from 'piscina';
import { Slab } from '../tables/slab.js';
import { DedupFilter } from '../tables/dedup.js';
import { systemClock } from '../clock.js';
import { initKeccak } from '../chains/evm/hash.js';
import { batchesSignatures, runClaimed, runClaimedBatch, type CheckContext } from './check.js';
import { JobTable } from './jobs.js';
import type { WorkerData } from './workers.js';

// Before the first job, so no check pays for compiling keccak's WebAssembly.
await initKeccak();

const data = workerData as WorkerData;
const jobs = JobTable.attach(data.jobs);
const ctx: CheckContext = {
  jobs,
  slab: Slab.attach(data.slab).bytes,
  dedup: DedupFilter.attach(data.dedup),
  chainId: BigInt(data.chainId),
  clock: systemClock,
  maxWaitMs: data.maxWaitMs,
};
/**
 * A task ends after this long without a job. Far longer than the gaps between
 * a loaded acceptor's turns, so traffic pays no task (a task costs the main
 * thread 14-27 µs, a job-table hand-off under 1 µs once jobs queue:
 * docs/architecture.md#how-the-threads-run).
 */
const IDLE_MS = data.idleMs ?? 1000;

/**
 * Under load (more jobs waiting than this worker's one), a worker takes up to
 * this many at once so their Solana signatures go through native batch calls
 * (check.ts). It takes no more than it leaves waiting, so another worker (or
 * the acceptor's turn-end sweep) still has its share to run in parallel; an
 * idle or serial job is still checked alone, at a single check's latency.
 */
const BATCH_JOBS = 16;
const slots: number[] = [];

/** `index` -1 is the start-up probe (returns at once, proving the module loaded). Returns jobs checked. */
export default function serve(task: { index: number }): number {
  if (task.index < 0) return 0;
  let n = 0;
  let unannounced = false;
  let idleSince = -1;
  for (;;) {
    const s = jobs.claim(task.index, systemClock());
    if (s >= 0) {
      slots.length = 0;
      slots.push(s);
      while (batchesSignatures && slots.length < BATCH_JOBS && jobs.waiting() > slots.length) {
        const more = jobs.claim(task.index, systemClock());
        if (more < 0) break;
        slots.push(more);
      }
      if (slots.length === 1) {
        runClaimed(ctx, s);
        jobs.complete(s, systemClock());
      } else {
        // Each job gets an equal share of the batch's time, so the service-time estimate stays per job (verifier.ts).
        const start = systemClock();
        runClaimedBatch(ctx, slots);
        const share = (systemClock() - start) / slots.length;
        for (let i = 0; i < slots.length; i++) jobs.complete(slots[i]!, start + (i + 1) * share, start + i * share);
      }
      n += slots.length - 1;
      unannounced = true;
      if (jobs.waiting() === 0) {
        jobs.announce();
        unannounced = false;
      }
      n++;
      idleSince = -1;
      continue;
    }
    if (unannounced) {
      jobs.announce();
      unannounced = false;
    }
    if (jobs.stopping) return n;
    const now = performance.now();
    if (idleSince < 0) idleSince = now;
    else if (now - idleSince >= IDLE_MS) return n;
    jobs.park(IDLE_MS - (now - idleSince));
  }
}
