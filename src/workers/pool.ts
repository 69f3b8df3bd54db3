/**
 * Where transaction checks run: inline on the acceptor while it has headroom,
 * on the verification workers when it does not.
 *
 * Measured on these 2-core machines (issue 7): handing one transaction to a
 * worker and waking the acceptor for its answer costs ~20 µs of main-thread
 * CPU per wake-up either way (Atomics.waitAsync or a MessagePort), and ~50 µs
 * of latency; an ed25519 check costs ~45 µs. So a lightly loaded relay checks
 * inline, in the request handler, and answers before returning to the event
 * loop: no hop at all. Only when the acceptor is busy (event-loop utilisation
 * over ELU_INLINE_MAX) are jobs submitted to the shared ring (jobs.ts); a busy
 * acceptor never sleeps, so it collects answers at the end of each loop turn
 * without paying for wake-ups. When the workers fall behind, the acceptor
 * helps: at the end of a turn it takes waiting jobs itself, within a budget,
 * so both cores stay busy and no turn grows long. Inline checks too have a
 * budget per turn (INLINE_TURN_BUDGET_MS): past it, arrivals wait in the ring
 * and are checked over the next turns, by workers or, with none, by the
 * acceptor a slice at a time, so sockets (upstream answers included) are
 * read every few milliseconds even when thousands of requests arrive at once.
 *
 * The workers are piscina threads, each running one long task (`serve` in
 * verify-worker.ts) that claims jobs from the ring until told to stop;
 * piscina owns their lifecycle. A worker that dies leaves its claimed jobs
 * behind: they are answered as retry-safe failures and the worker is
 * restarted (a few times a minute at most, then the acceptor checks alone).
 *
 * Admission control (controller.ts) is fed every LAG_TICK_MS with the worst
 * of: the age of the oldest waiting job, the longest wait of jobs started
 * since the last sample, and the event loop's lag (what inline checks waited
 * in the kernel) — the lag only as far as the acceptor's own checks in that
 * window explain it. A loop slowed by anything else (a GC pause, a starved
 * CPU, other work in the process) is not a queue of transactions, and
 * shedding them would not shorten it. Likewise the ring counts only while at
 * least one job per verifier waits (RFC 8289 never drops from a queue
 * holding less than a packet): a job or two waiting for a descheduled worker
 * is no standing queue.
 */
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import type { Clock } from '../shared/clock.js';
import type { DedupFilter, DedupHandle } from '../shared/dedup.js';
import type { SlabHandle } from '../shared/slab.js';
import { runCheck, type CheckContext } from './check.js';
import { QueueController, Shed, type ControllerOptions } from './controller.js';
import { C_COMPLETED, JobResult, S_RESULT, S_WORKER, SlotState, T_END, T_START, T_SUBMIT, type JobTable, type JobTableHandle } from './jobs.js';

/** Inline while the acceptor's event-loop utilisation over the last window is below this. */
const ELU_INLINE_MAX = 0.75;
/** How often the utilisation is re-read: short enough to follow a load step, long enough to be a stable ratio. */
const ELU_WINDOW_MS = 5;
/** Controller sampling period; also bounds how stale its view of the queue gets. */
const LAG_TICK_MS = 5;
/**
 * Inline checks per event-loop turn before further ones wait in the ring.
 * A turn handles every request that became readable at once: at 1024
 * connections, checking them all inline made turns of ~100 ms, in which each
 * upstream connection could carry one request, so forwarding fell behind
 * admission and the lanes filled (measured). Bounding the inline work keeps
 * turns short; what is deferred is checked in the following turns, between
 * which sockets are read.
 */
const INLINE_TURN_BUDGET_MS = 1;
/**
 * A gap this long since the last inline check means the event loop went back
 * to the sockets in between: the turn's inline budget starts afresh. Within
 * one long turn consecutive checks are only an HTTP request apart (~10 µs).
 */
const TURN_GAP_MS = 0.2;
/** Checks of deferred jobs per turn when no worker serves (the acceptor alone). */
const ALONE_TICK_BUDGET_MS = 2;
/**
 * Most the acceptor spends checking jobs for busy workers per loop turn,
 * the same slice as its own inline budget. While jobs still wait it helps
 * again next turn instead of sleeping: measured on 2 cores, helping only
 * 0.2 ms per turn left the acceptor idle 23% of the time with jobs waiting.
 */
const HELP_BUDGET_MS = 1;
/** Starting per-check estimate (sodium-native ed25519 ~42 µs here) until checks are timed. */
const INITIAL_SERVICE_MS = 0.05;
/** A single sample is clamped so one stall cannot dominate the average. */
const MAX_SAMPLE_MS = 2;
/** Worker restarts tolerated per minute before the acceptor checks alone (a crash loop must not spin). */
const MAX_RESTARTS_PER_MINUTE = 5;

export type JobCallback = (slot: number) => void;

/** ES2024's Atomics.waitAsync, present since Node 16; the project compiles against the ES2023 library. */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

export interface VerifierOptions {
  /** Worker threads; 0 checks everything inline on the main thread. */
  threads: number;
  jobs: JobTable;
  slab: { bytes: Uint8Array; handle(): SlabHandle };
  dedup: DedupFilter;
  chainId: bigint;
  clock: Clock;
  controller?: ControllerOptions;
  /**
   * `auto`: check inline while the acceptor has headroom (the default);
   * `never`: always hand checks to the workers when there are any (keeps the
   * acceptor for HTTP alone, e.g. on hosts with many cores).
   */
  inline?: 'auto' | 'never';
  /** The worker module and extra workerData (tests use a worker that dies). */
  worker?: { filename: URL; data?: Record<string, unknown> };
  /** Called once per worker that died unexpectedly (for logs). */
  onWorkerError?: (index: number, error: unknown) => void;
  /** Called after answers collected outside a socket callback were handed out (the acceptor flushes held answers). */
  afterAnswers?: () => void;
}

export interface VerifierStats {
  inline: number;
  offloaded: number;
  helped: number;
  /** Jobs whose check failed internally (a bug, or the worker died): answered retry-safe 503. */
  internal: number;
  workerRestarts: number;
}

export interface WorkerData {
  slab: SlabHandle;
  jobs: JobTableHandle;
  dedup: DedupHandle;
  chainId: string;
}

export class Verifier {
  readonly threads: number;
  readonly controller: QueueController;
  readonly stats: VerifierStats = { inline: 0, offloaded: 0, helped: 0, internal: 0, workerRestarts: 0 };
  private readonly jobs: JobTable;
  private readonly ctx: CheckContext;
  private readonly clock: Clock;
  private readonly piscina: Piscina | null;
  private readonly serving: (Promise<void> | null)[];
  private readonly cbs: (JobCallback | undefined)[];
  private readonly onWorkerError: ((index: number, error: unknown) => void) | undefined;
  private readonly afterAnswers: () => void;
  private readonly inlineAuto: boolean;
  /** Jobs submitted to the ring whose answer has not been collected. */
  private outstanding = 0;
  private armed = false;
  private tickScheduled = false;
  private closed = false;
  private serviceMs = INITIAL_SERVICE_MS;
  private elu = performance.eventLoopUtilization();
  private eluAt = 0;
  private busy = false;
  /** Longest wait of a job started since the last controller sample. */
  private worstSojourn = 0;
  /** Milliseconds the acceptor spent checking since the last controller sample. */
  private checkMs = 0;
  /** Milliseconds of inline checks in the current event-loop turn (reset by `tick`, or after a gap). */
  private turnMs = 0;
  private lastInlineAt = 0;
  private lagTimer: NodeJS.Timeout | null = null;
  private lagExpected = 0;
  private restarts: number[] = [];

  constructor(opts: VerifierOptions) {
    this.threads = opts.threads;
    this.jobs = opts.jobs;
    this.clock = opts.clock;
    this.onWorkerError = opts.onWorkerError;
    this.afterAnswers = opts.afterAnswers ?? (() => {});
    this.inlineAuto = (opts.inline ?? 'auto') === 'auto';
    this.controller = new QueueController(opts.controller);
    this.ctx = { jobs: opts.jobs, slab: opts.slab.bytes, dedup: opts.dedup, chainId: opts.chainId, clock: opts.clock };
    this.cbs = new Array<JobCallback | undefined>(opts.jobs.slots).fill(undefined);
    this.serving = new Array<Promise<void> | null>(this.threads).fill(null);
    const workerData: WorkerData = {
      ...opts.worker?.data,
      slab: opts.slab.handle(),
      jobs: opts.jobs.handle(),
      dedup: opts.dedup.handle(),
      chainId: String(opts.chainId),
    };
    this.piscina =
      this.threads === 0
        ? null
        : new Piscina({
            filename: (opts.worker?.filename ?? new URL('./verify-worker.js', import.meta.url)).href,
            minThreads: this.threads,
            maxThreads: this.threads,
            idleTimeout: Infinity,
            // One long task per worker: queueing a second would wait for the first forever.
            concurrentTasksPerWorker: 1,
            workerData,
            recordTiming: false,
          });
  }

  /** Starts the workers' serve loops and the controller's sampling; resolves once every worker has loaded. */
  async start(): Promise<void> {
    const p = this.piscina;
    if (p) {
      // A no-op task per worker first: the relay listens only once the crypto libraries are loaded everywhere.
      await Promise.all(Array.from({ length: this.threads }, () => p.run({ index: -1 })));
      for (let i = 0; i < this.threads; i++) this.serve(i);
    }
    this.lagExpected = performance.now() + LAG_TICK_MS;
    this.lagTimer = setInterval(this.sample, LAG_TICK_MS);
    this.lagTimer.unref();
  }

  /** At the door, before a byte of the body is kept: whether this arrival must be shed. */
  admit(now: number): Shed {
    if (this.closed) return Shed.OverMax;
    return this.controller.decide(now, this.queueMs());
  }

  /**
   * Checks the job in held slot `s` (filled with `jobs.set`). `done(s)` runs
   * once the result is in the slot: synchronously when checked inline.
   */
  run(s: number, done: JobCallback): void {
    if (performance.now() - this.lastInlineAt > TURN_GAP_MS) this.turnMs = 0;
    if (this.inlineNow()) {
      this.turnMs += this.checkHere(s);
      this.lastInlineAt = performance.now();
      this.stats.inline++;
      this.finish(s, done);
      return;
    }
    this.cbs[s] = done;
    this.outstanding++;
    this.stats.offloaded++;
    if (this.jobs.submit(s, this.clock())) this.jobs.wakeOne();
    this.scheduleTick();
  }

  /** Jobs checked or being checked outside the current call stack. */
  get inflight(): number {
    return this.outstanding;
  }

  /** Estimated milliseconds before a job submitted now would start (for /healthz and metrics). */
  queueMs(): number {
    return (this.jobs.waiting() * this.serviceMs) / (this.threads > 0 ? this.threads : 1);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.lagTimer) clearInterval(this.lagTimer);
    this.jobs.stop();
    await Promise.all(this.serving.map((p) => p?.catch(() => {})));
    this.collect();
    // Whatever no worker took before stopping is checked here: no caller is left without an answer.
    for (let s = this.jobs.claim(-1, this.clock()); s >= 0; s = this.jobs.claim(-1, this.clock())) {
      this.checkHere(s);
      this.settle(s);
    }
    await this.piscina?.destroy();
  }

  // ---- inline or offload -----------------------------------------------------

  private inlineNow(): boolean {
    // Something already waits (deferred, or workers behind): keep arrival order.
    if (this.jobs.waiting() > 0 || this.turnMs >= INLINE_TURN_BUDGET_MS) return false;
    if (this.threads === 0 || this.serving.every((p) => p === null)) return true;
    if (!this.inlineAuto) return false;
    const now = performance.now();
    if (now - this.eluAt >= ELU_WINDOW_MS) {
      const e = performance.eventLoopUtilization();
      const d = performance.eventLoopUtilization(e, this.elu);
      this.elu = e;
      this.eluAt = now;
      this.busy = d.utilization > ELU_INLINE_MAX;
    }
    return !this.busy;
  }

  /** Runs a check on this thread and accounts for its time; returns the milliseconds it took. */
  private checkHere(s: number): number {
    const t0 = performance.now();
    runCheck(this.ctx, s);
    this.jobs.markDone(s);
    const ms = performance.now() - t0;
    this.checkMs += ms;
    this.noteService(ms);
    return ms;
  }

  private noteService(ms: number): void {
    this.serviceMs = this.serviceMs * 0.9 + Math.min(ms, MAX_SAMPLE_MS) * 0.1;
  }

  private finish(s: number, done: JobCallback): void {
    if (this.jobs.field(s, S_RESULT) === JobResult.Internal) this.stats.internal++;
    done(s);
  }

  // ---- collecting answers ----------------------------------------------------

  private scheduleTick(): void {
    if (this.tickScheduled) return;
    this.tickScheduled = true;
    setImmediate(this.tick);
  }

  /** End of a loop turn with jobs outstanding: collect answers, help busy workers, then wait for the rest. */
  private readonly tick = (): void => {
    this.tickScheduled = false;
    this.turnMs = 0;
    this.collect();
    // With no worker (threads 0, a crash loop, shutdown) the acceptor checks all that waits, a slice per turn.
    const alone = this.serving.every((p) => p === null);
    if (this.jobs.waiting() > 0) {
      const until = performance.now() + (alone ? ALONE_TICK_BUDGET_MS : HELP_BUDGET_MS);
      let s: number;
      while (performance.now() < until && (s = this.jobs.claim(-1, this.clock())) >= 0) {
        this.checkHere(s);
        this.stats.helped++;
        this.settle(s);
      }
      this.collect();
    }
    this.afterAnswers();
    // Jobs still wait: keep helping next turn (sockets are read in between) rather than sleep.
    if (this.jobs.waiting() > 0) return this.scheduleTick();
    if (this.outstanding > 0) this.arm();
  };

  /** Answers every job the workers have published. */
  private collect(): void {
    for (let s = this.jobs.nextDone(); s >= 0; s = this.jobs.nextDone()) {
      const t = this.jobs.time(s, T_END) - this.jobs.time(s, T_START);
      if (t >= 0) this.noteService(t);
      this.settle(s);
    }
  }

  private settle(s: number): void {
    const wait = this.jobs.time(s, T_START) - this.jobs.time(s, T_SUBMIT);
    if (wait > this.worstSojourn) this.worstSojourn = wait;
    this.outstanding--;
    const done = this.cbs[s]!;
    this.cbs[s] = undefined;
    this.finish(s, done);
  }

  /** Sleeps until a worker publishes an answer (the event loop stays free meanwhile). */
  private arm(): void {
    if (this.armed || this.closed) return;
    const seen = this.jobs.completedCount();
    // Answers published before `seen` was read are already in the done ring: collect them now.
    if (this.jobs.hasDone()) return this.scheduleTick();
    const w = waitAsync(this.jobs.ctrl, C_COMPLETED, seen);
    if (!w.async) return this.scheduleTick();
    this.armed = true;
    void (w.value as Promise<string>).then(this.wake);
  }

  private readonly wake = (): void => {
    this.armed = false;
    this.collect();
    this.afterAnswers();
    if (this.outstanding > 0) this.arm();
  };

  // ---- controller sampling ---------------------------------------------------

  private readonly sample = (): void => {
    const now = performance.now();
    const lag = Math.max(0, now - this.lagExpected);
    this.lagExpected = now + LAG_TICK_MS;
    const deep = this.jobs.waiting() >= (this.threads > 0 ? this.threads : 1);
    const ring = deep ? Math.max(this.jobs.oldestWaitingAge(this.clock()), this.worstSojourn) : 0;
    const worst = Math.max(Math.min(lag, this.checkMs), ring);
    this.worstSojourn = 0;
    this.checkMs = 0;
    this.controller.observe(worst, this.clock());
  };

  // ---- workers ---------------------------------------------------------------

  private serve(index: number): void {
    const p = this.piscina!.run({ index }).then(
      () => {
        this.serving[index] = null;
      },
      (err: unknown) => {
        this.serving[index] = null;
        if (this.closed) return;
        this.onWorkerError?.(index, err);
        this.recover(index);
        this.scheduleTick();
        const now = performance.now();
        this.restarts = this.restarts.filter((t) => now - t < 60_000);
        if (this.restarts.length < MAX_RESTARTS_PER_MINUTE) {
          this.restarts.push(now);
          this.stats.workerRestarts++;
          this.serve(index);
        }
      },
    );
    this.serving[index] = p;
  }

  /** A dead worker's claimed jobs: answered as internal failures (retry-safe), never left hanging. */
  private recover(index: number): void {
    const j = this.jobs;
    for (let s = 0; s < j.slots; s++) {
      if (j.state(s) === SlotState.Claimed && j.field(s, S_WORKER) === index && this.cbs[s] !== undefined) {
        j.setResult(s, JobResult.Internal, 'verification worker stopped');
        j.markDone(s);
        this.settle(s);
      }
    }
  }
}

export { Shed };
