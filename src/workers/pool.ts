/**
 * Signature verification in micro-batches, off the main thread when there
 * is a core for it.
 *
 * A piscina task costs 25-35 µs of main-thread time on these machines, more
 * than an ed25519 check, so jobs are never handed over one at a time: they
 * gather until the event loop's check phase (setImmediate), i.e. everything
 * that arrived in one poll of the sockets travels in one task, or until
 * MAX_BATCH. The bytes stay where the door copied them, in the shared slab;
 * a job is three integers.
 *
 * With a single core (an affinity mask of one CPU, or `workers.threads`
 * auto on a one-core host) a worker thread only adds that hand-off to the
 * same core: bench:e2e measured it costing more than the HTTP acceptor. The
 * same micro-batches are then verified on the main thread at setImmediate.
 *
 * In-flight work is bounded by time, not count: the pool keeps an estimate of
 * how long the queued jobs will take (EWMA of measured µs per job) and
 * refuses new work once that exceeds MAX_QUEUE_MS, so overload is answered
 * with 503 at once instead of growing latency for everyone.
 */
import { Piscina } from 'piscina';
import { JOB_WORDS, JobKind, JobResult, type VerifyReply, type VerifyTask } from './protocol.js';
import { verifyJobs } from './verify.js';

/** Jobs per task at most: beyond this the batch's own latency starts to matter more than task overhead. */
const MAX_BATCH = 256;
/** Queue-time budget: accept latency stays in single-digit milliseconds under overload (issue 4 target). */
const MAX_QUEUE_MS = 3;
/** Starting per-job estimate (sodium-native ed25519 ~42 µs measured here) until workers report. */
const INITIAL_JOB_US = 50;
/**
 * Jobs per thread always admitted whatever the estimate says: ~1.6 ms of work
 * at 50 µs, inside the budget anyway, so no latency risk; it keeps a transient
 * spike in the estimate (JIT warm-up, a GC pause, a noisy neighbour) from
 * refusing light traffic.
 */
const MIN_ADMIT_PER_THREAD = 32;
/** One batch's per-job sample is clamped here so a single stall cannot dominate the average. */
const MAX_SAMPLE_US = 2000;

export type VerifyCallback = (result: JobResult) => void;

export interface VerifyPoolOptions {
  /** Worker threads; 0 verifies inline on the main thread (the caller resolves `workers.threads` auto). */
  threads: number;
  slabHandle: unknown;
  /** The main thread's view of the slab, for inline verification. */
  slabBytes: Uint8Array;
}

export class VerifyPool {
  private readonly piscina: Piscina<VerifyTask, VerifyReply> | null;
  /** Worker threads; 0 when verification runs inline on the main thread. */
  readonly threads: number;
  private readonly bytes: Uint8Array;
  private pending: number[] = [];
  private pendingCbs: VerifyCallback[] = [];
  private scheduled = false;
  private inflightJobs = 0;
  private jobUs = INITIAL_JOB_US;
  private closed = false;

  readonly stats = { tasks: 0, jobs: 0, shed: 0, failedTasks: 0 };

  constructor(opts: VerifyPoolOptions) {
    this.threads = opts.threads;
    this.bytes = opts.slabBytes;
    this.piscina =
      this.threads === 0
        ? null
        : new Piscina({
            filename: new URL('./verify-worker.js', import.meta.url).href,
            minThreads: this.threads,
            maxThreads: this.threads,
            idleTimeout: Infinity,
            workerData: { slab: opts.slabHandle },
            recordTiming: false,
          });
  }

  /** Verification lanes working in parallel: the workers, or the main thread. */
  private get lanes(): number {
    return this.threads || 1;
  }

  /**
   * Resolves once the workers have loaded (crypto libraries, WebAssembly):
   * the relay listens only after this, so the first requests do not queue
   * behind worker start-up and get shed.
   */
  async ready(): Promise<void> {
    const p = this.piscina;
    if (p) await Promise.all(Array.from({ length: this.threads }, () => p.run({ jobs: new Int32Array(0) })));
  }

  /** Estimated milliseconds before a job submitted now would be verified. */
  queueMs(): number {
    return (this.inflightJobs * this.jobUs) / this.lanes / 1000;
  }

  /** Whether `n` more jobs fit the queue-time budget; count a shed when not. */
  admit(n: number): boolean {
    if (this.closed) return false;
    const after = this.inflightJobs + n;
    if (after <= MIN_ADMIT_PER_THREAD * this.lanes || (after * this.jobUs) / this.lanes / 1000 <= MAX_QUEUE_MS) return true;
    this.stats.shed++;
    return false;
  }

  /** Queues one job; `cb` runs on the main thread with the result. Call `admit` first. */
  submit(kind: JobKind, offset: number, length: number, cb: VerifyCallback): void {
    this.pending.push(kind, offset, length);
    this.pendingCbs.push(cb);
    this.inflightJobs++;
    // Inline batches always wait for setImmediate: a callback never runs inside submit().
    if (this.piscina && this.pendingCbs.length >= MAX_BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  private readonly flushSoon = (): void => {
    this.scheduled = false;
    this.flush();
  };

  private flush(): void {
    const n = this.pendingCbs.length;
    if (n === 0) return;
    const jobs = Int32Array.from(this.pending);
    const cbs = this.pendingCbs;
    this.pending = [];
    this.pendingCbs = [];
    this.stats.tasks++;
    this.stats.jobs += n;
    if (this.piscina === null) return this.settle(cbs, verifyJobs(this.bytes, jobs));
    this.piscina.run({ jobs }, { transferList: [jobs.buffer] }).then(
      (reply) => this.settle(cbs, reply),
      () => {
        this.inflightJobs -= n;
        this.stats.failedTasks++;
        for (let i = 0; i < n; i++) cbs[i]!(JobResult.Malformed);
      },
    );
  }

  private settle(cbs: VerifyCallback[], reply: VerifyReply): void {
    const n = cbs.length;
    this.inflightJobs -= n;
    // EWMA over batches: adapts to the mix of ed25519 and secp256k1 work.
    if (reply.micros > 0) this.jobUs = this.jobUs * 0.8 + Math.min(MAX_SAMPLE_US, reply.micros / n) * 0.2;
    for (let i = 0; i < n; i++) cbs[i]!(reply.results[i] as JobResult);
  }

  get inflight(): number {
    return this.inflightJobs;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    await this.piscina?.destroy();
  }
}

export { JOB_WORDS, JobKind, JobResult };
