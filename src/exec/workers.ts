/**
 * The verification workers: piscina threads, each running one long task
 * (`serve` in verify-worker.ts) that claims jobs from the ring until stopped.
 * This starts them once all have loaded, counts the live ones, and restarts a
 * dead one a few times a minute at most (a crash loop must not spin).
 */
import { Piscina } from 'piscina';
import type { DedupHandle } from '../tables/dedup.js';
import type { SlabHandle } from '../tables/slab.js';
import type { JobTableHandle } from './jobs.js';

/** Worker restarts tolerated per minute before the acceptor checks alone. */
const MAX_RESTARTS_PER_MINUTE = 5;

export interface WorkerData {
  slab: SlabHandle;
  jobs: JobTableHandle;
  dedup: DedupHandle;
  chainId: string;
  maxWaitMs: number;
}

export interface WorkerOptions {
  threads: number;
  data: WorkerData & Record<string, unknown>;
  filename?: URL;
  /** A worker died: its claimed jobs must be answered; `error` is for the log. */
  onDeath(index: number, error: unknown): void;
}

export class VerifyWorkers {
  readonly threads: number;
  live = 0;
  restarts = 0;
  private readonly piscina: Piscina | null;
  private readonly serving: (Promise<void> | null)[];
  private recent: number[] = [];
  private closed = false;

  constructor(private readonly opts: WorkerOptions) {
    this.threads = opts.threads;
    this.serving = new Array<Promise<void> | null>(this.threads).fill(null);
    this.piscina =
      this.threads === 0
        ? null
        : new Piscina({
            filename: (opts.filename ?? new URL('./verify-worker.js', import.meta.url)).href,
            minThreads: this.threads,
            maxThreads: this.threads,
            idleTimeout: Infinity,
            // One long task per worker: queueing a second would wait for the first forever.
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
    for (let i = 0; i < this.threads; i++) this.serve(i);
  }

  /** Waits for the serve loops to return (the ring's STOP flag is set by the caller), then ends the threads. */
  async stop(): Promise<void> {
    this.closed = true;
    await Promise.all(this.serving.map((p) => p?.catch(() => {})));
    await this.piscina?.destroy();
  }

  private serve(index: number): void {
    this.live++;
    this.serving[index] = this.piscina!.run({ index }).then(
      () => {
        this.serving[index] = null;
        this.live--;
      },
      (err: unknown) => {
        this.serving[index] = null;
        this.live--;
        if (this.closed) return;
        this.opts.onDeath(index, err);
        const now = performance.now();
        this.recent = this.recent.filter((t) => now - t < 60_000);
        if (this.recent.length >= MAX_RESTARTS_PER_MINUTE) return;
        this.recent.push(now);
        this.restarts++;
        // Live only once loaded: until then the acceptor checks rather than leave a share to a starting thread.
        const again = (): void => {
          if (!this.closed) this.serve(index);
        };
        this.piscina!.run({ index: -1 }).then(again, again);
      },
    );
  }
}
