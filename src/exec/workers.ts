/**
 * The verification workers: a piscina pool whose tasks serve the job table
 * (src/exec/jobs.ts). A task claims and checks jobs, parking between them,
 * and returns once it has been idle for a second (verify-worker.ts); the
 * main thread then stands in for that worker in the table's sleeper count, so
 * the next wake-up (`JobTable.wake`, as for a parked worker) starts a new
 * task. Traffic pays only the table's Atomics; a piscina task is paid once
 * per wake-up after a quiet second (docs/architecture.md#threads).
 *
 * This starts the pool once every thread has loaded, counts the workers in
 * service, and restarts a dead one within the restart budget (restarts.ts).
 */
import { Piscina } from 'piscina';
import type { DedupHandle } from '../tables/dedup.js';
import type { SlabHandle } from '../tables/slab.js';
import { JobTable, type JobTableHandle } from './jobs.js';
import { RestartBudget } from './restarts.js';

export interface WorkerData {
  slab: SlabHandle;
  jobs: JobTableHandle;
  dedup: DedupHandle;
  chainId: string;
  maxWaitMs: number;
  /** How long a task serves without a job before it returns (default 1000 ms; tests shorten it). */
  idleMs?: number;
}

interface WorkerOptions {
  threads: number;
  data: WorkerData & Record<string, unknown>;
  filename?: URL;
  /** A worker died: its claimed jobs must be answered; `error` is for the log. */
  onDeath(index: number, error: unknown): void;
}

export class VerifyWorkers {
  readonly threads: number;
  /** Workers in service: serving a task, or idle with the main thread standing in. */
  live = 0;
  restarts = 0;
  /** Tasks started, the start-up probes left out: one per wake-up after idle, and per restart. */
  tasks = 0;
  private readonly piscina: Piscina | null;
  private readonly jobs: JobTable;
  /** Per worker index: what runs for it (its task, or the main thread's wait for its next wake-up). */
  private readonly serving: (Promise<void> | null)[];
  /** Past it, the worker stays down and the acceptor checks what it would have. */
  private readonly budget = new RestartBudget();
  private closed = false;

  constructor(private readonly opts: WorkerOptions) {
    this.threads = opts.threads;
    this.jobs = JobTable.attach(opts.data.jobs);
    this.serving = new Array<Promise<void> | null>(this.threads).fill(null);
    this.piscina =
      this.threads === 0
        ? null
        : new Piscina({
            filename: (opts.filename ?? new URL('./verify-worker.js', import.meta.url)).href,
            minThreads: this.threads,
            maxThreads: this.threads,
            // The threads stay loaded (keccak's WebAssembly, the crypto libraries) between tasks.
            idleTimeout: Infinity,
            // At most one task per worker index runs, and a task parks between jobs: never two on one thread.
            concurrentTasksPerWorker: 1,
            workerData: opts.data,
            recordTiming: false,
          });
  }

  /** Resolves once every worker has loaded (a no-op task each) and serves. */
  async start(): Promise<void> {
    const p = this.piscina;
    if (p === null) return;
    await Promise.all(Array.from({ length: this.threads }, () => p.run({ index: -1 })));
    for (let i = 0; i < this.threads; i++) {
      this.live++;
      this.serve(i);
    }
  }

  /** Waits for the tasks to return (the job table's STOP flag is set by the caller), then ends the threads. */
  async stop(): Promise<void> {
    this.closed = true;
    for (let pending = this.serving.filter((p) => p !== null); pending.length > 0; pending = this.serving.filter((p) => p !== null)) {
      await Promise.all(pending.map((p) => p!.catch(() => {})));
    }
    await this.piscina?.destroy();
  }

  private serve(index: number): void {
    this.tasks++;
    this.serving[index] = this.piscina!.run({ index }).then(
      () => {
        if (this.closed) this.serving[index] = null;
        else this.idle(index);
      },
      (err: unknown) => {
        this.serving[index] = null;
        this.live--;
        if (this.closed) return;
        this.opts.onDeath(index, err);
        if (!this.budget.take()) return;
        this.restarts++;
        // In service only once loaded: until then the acceptor checks rather than leave a share to a starting thread.
        const again = (): void => {
          if (this.closed) return;
          this.live++;
          this.serve(index);
        };
        this.piscina!.run({ index: -1 }).then(again, again);
      },
    );
  }

  /** Worker `index`'s task ended idle: the main thread waits in its place and starts its next task on a wake-up. */
  private idle(index: number): void {
    this.serving[index] = this.jobs.parkAsync().then(() => {
      if (this.closed) this.serving[index] = null;
      else this.serve(index);
    });
  }
}
