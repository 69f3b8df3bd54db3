/**
 * A verification worker: one long piscina task that claims jobs from the ring
 * and checks them in place in the slab until stopped. It parks in Atomics.wait
 * while the ring is empty and never goes through a message port.
 */
import { workerData } from 'piscina';
import { Slab } from '../tables/slab.js';
import { DedupFilter } from '../tables/dedup.js';
import { systemClock } from '../clock.js';
import { initKeccak } from '../chains/evm/hash.js';
import { runClaimed, type CheckContext } from './check.js';
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
/** A parked worker re-checks the stop flag this often even if no wake-up arrives. */
const PARK_MS = 1000;

/** `index` -1 is the start-up probe (returns at once, proving the module loaded). Returns jobs checked. */
export default function serve(task: { index: number }): number {
  if (task.index < 0) return 0;
  let n = 0;
  let unannounced = false;
  for (;;) {
    const s = jobs.claim(task.index, systemClock());
    if (s >= 0) {
      runClaimed(ctx, s);
      jobs.complete(s, systemClock());
      unannounced = true;
      if (jobs.waiting() === 0) {
        jobs.announce();
        unannounced = false;
      }
      n++;
      continue;
    }
    if (unannounced) {
      jobs.announce();
      unannounced = false;
    }
    if (jobs.stopping) return n;
    jobs.park(PARK_MS);
  }
}
