/**
 * Where transaction checks run (docs/architecture.md):
 *
 *   inline      in the handler, while turns carry one request each (a serial
 *               client, light load): a worker hop would add ~50 µs of latency
 *               to a ~40 µs check;
 *   turn's end  through the shared ring (jobs.ts), checked back to back after
 *               the turn's sockets are read, so the turn's forwards and answers
 *               go out together (bench:ab, 16 connections: 53 vs 60 µs of relay
 *               CPU per transaction);
 *   workers     when there are any and the acceptor is busy (ELU_BUSY while
 *               requests overlap); the acceptor keeps its share (SHARE_STEP).
 *
 * The controller (controller.ts) is fed every LAG_TICK_MS the worst of the
 * oldest waiting job's age, the longest wait since the last sample, and the
 * loop's lag as far as the acceptor's own checks explain it (a GC pause is no
 * queue). `limits.queue_max_ms` is kept twice: shed at the door, and a job
 * claimed later is answered Expired unchecked (503 retry-safe, dedup untouched).
 */
import { performance } from 'node:perf_hooks';
import type { Clock } from '../clock.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { SlabHandle } from '../tables/slab.js';
import { batchesSignatures, claimingKey, runCheck, runClaimed, runClaimedBatch, type CheckContext } from './check.js';
import { DrainMeter, QueueController, Shed, type ControllerOptions } from './controller.js';
import { C_COMPLETED, JobResult, S_RESULT, S_WORKER, SlotState, T_END, T_START, type JobTable } from './jobs.js';
import { VerifyWorkers } from './workers.js';

/** Over this event-loop utilisation the acceptor is busy: deferred jobs wake workers, and it keeps only its share. */
const ELU_BUSY = 0.75;
/** Short enough to follow a load step, long enough for a stable ratio. */
const ELU_WINDOW_MS = 5;
/** How long after requests last overlapped a busy loop still defers a lone request: the ELU window, so both signals cover the same time. */
const OVERLAP_MEMORY_MS = ELU_WINDOW_MS;
/** Controller sampling period; also bounds how stale its view of the queue gets. */
const LAG_TICK_MS = 5;
/**
 * Most the acceptor spends checking per turn. Checking every readable request
 * in one turn made ~100 ms turns at 1024 connections, and forwarding fell
 * behind admission. Past it, jobs wait for workers or the next turn. Also the
 * longest a busy turn's admitted transactions wait for the lanes.
 */
const TURN_BUDGET_MS = 1;
/**
 * While checks wait from turn to turn, the slice grows to the time the turn
 * spent on other work, up to this, so under overload without workers checks
 * get about half the acceptor. The cap keeps a turn's admissions within what
 * forwarding carries per turn (UPSTREAM_CONNECTIONS x MAX_BATCH = 256 items).
 */
const MAX_SLICE_MS = 5;
/** Starting per-check estimate (sodium-native ed25519 ~42 µs here) until checks are timed. */
const INITIAL_SERVICE_MS = 0.05;
/** A single sample is clamped so one stall cannot dominate the average. */
const MAX_SAMPLE_MS = 2;
/** Per-tick step of the busy acceptor's share of a turn's waiting checks (nextShare). */
const SHARE_STEP = 0.02;
type JobCallback = (slot: number) => void;
/** `run` without a callback: the answer goes to the owner's `settled` list. */
const TO_OWNER: JobCallback = () => {};
/** Jobs the turn-end sweep takes at once: their Solana signatures in one native batch call (check.ts), as a busy worker's. */
const SWEEP_BATCH = 16;

/**
 * The share follows the workers' spare capacity: up when checks from an
 * earlier turn still wait (workers behind), else down when a worker had
 * parked before the turn's checks came (it could have taken more).
 */
function nextShare(share: number, workersBehind: boolean, workerAsleep: boolean): number {
  if (workersBehind) return Math.min(1, share + SHARE_STEP);
  if (workerAsleep) return Math.max(0, share - SHARE_STEP);
  return share;
}

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
  /** `auto` (default): as in the header; `never`: every submission wakes a worker, if any (the acceptor still takes what waits at its turn's end). */
  inline?: 'auto' | 'never';
  /** The worker module and extra workerData (tests use a worker that dies). */
  worker?: { filename: URL; data?: Record<string, unknown> };
  onWorkerError?: (index: number, error: unknown) => void;
  /**
   * The relay's scheduler: where the answers of jobs run without a callback
   * go (their slots, in order), and what runs a turn's end and a worker's
   * wake-up instead of `tick`/`wake` (it calls them, holding answers around).
   */
  owner?: { settled: number[]; turn: () => void; wake: () => void };
  /** Checking slice per turn in ms (default TURN_BUDGET_MS; order tests widen it). */
  sliceMs?: number;
}

interface VerifierStats {
  acceptor: number;
  workers: number;
  /** Check failed internally (a bug, or the worker died): retry-safe 503. */
  internal: number;
  /** Waited past `limits.queue_max_ms`, not checked: retry-safe 503. */
  expired: number;
  /** Milliseconds workers spent checking this thread's jobs, claim to completion: their utilisation over time. */
  workerBusyMs: number;
}

export class Verifier {
  readonly threads: number;
  readonly controller: QueueController;
  readonly stats: VerifierStats = { acceptor: 0, workers: 0, internal: 0, expired: 0, workerBusyMs: 0 };
  private readonly jobs: JobTable;
  private readonly ctx: CheckContext;
  private readonly clock: Clock;
  private readonly workers: VerifyWorkers;
  private readonly cbs: (JobCallback | undefined)[];
  private readonly onWorkerError: ((index: number, error: unknown) => void) | undefined;
  /** Slots answered without a callback, for the owner to take (`VerifierOptions.owner`). */
  private readonly settled: number[];
  private readonly onTurn: () => void;
  private readonly onWake: () => void;
  private readonly inlineAuto: boolean;
  /** Jobs submitted to the ring whose answer has not been collected. */
  private outstanding = 0;
  private armed = false;
  private tickScheduled = false;
  /** The jobs the turn-end sweep claimed together (claimSweep). */
  private readonly sweep: number[] = [];
  private closed = false;
  private serviceMs = INITIAL_SERVICE_MS;
  private elu = performance.eventLoopUtilization();
  private eluAt = 0;
  private busy = false;
  /** Longest wait of a job started since the last controller sample. */
  private worstSojourn = 0;
  /** The ring's measured drain pace while it stays non-empty. */
  private readonly drain = new DrainMeter();
  /** Milliseconds the acceptor spent checking since the last controller sample. */
  private checkMs = 0;
  /** Jobs run in this turn and the one before (`tick` ends a turn). */
  private turnJobs = 0;
  private prevTurnJobs = 0;
  /** Of `turnJobs`, those handed to the ring. */
  private turnDeferred = 0;
  private share = 1;
  /** When a check last arrived while another was in flight (OVERLAP_MEMORY_MS). */
  private overlapAt = -Infinity;
  /** Whether a worker was parked when this turn's first check went to the ring. */
  private idleAtTurnStart = false;
  private lagTimer: NodeJS.Timeout | null = null;
  private lagExpected = 0;
  /** When the last turn ended with checks still waiting (0: it did not): the time since is this turn's other work. */
  private backlogSince = 0;
  private readonly sliceMs: number;

  constructor(opts: VerifierOptions) {
    this.threads = opts.threads;
    this.sliceMs = opts.sliceMs ?? TURN_BUDGET_MS;
    this.jobs = opts.jobs;
    this.clock = opts.clock;
    this.onWorkerError = opts.onWorkerError;
    this.settled = opts.owner?.settled ?? [];
    this.onTurn = opts.owner?.turn ?? this.tick;
    this.onWake = opts.owner?.wake ?? this.wake;
    this.inlineAuto = (opts.inline ?? 'auto') === 'auto';
    this.controller = new QueueController(opts.controller);
    this.ctx = { jobs: opts.jobs, slab: opts.slab.bytes, dedup: opts.dedup, chainId: opts.chainId, clock: opts.clock, maxWaitMs: this.controller.maxMs };
    this.cbs = new Array<JobCallback | undefined>(opts.jobs.slots).fill(undefined);
    this.workers = new VerifyWorkers({
      threads: this.threads,
      filename: opts.worker?.filename,
      data: {
        ...opts.worker?.data,
        slab: opts.slab.handle(),
        jobs: opts.jobs.handle(),
        dedup: opts.dedup.handle(),
        chainId: String(opts.chainId),
        maxWaitMs: this.controller.maxMs,
      },
      onDeath: (index, err) => {
        this.onWorkerError?.(index, err);
        this.recover(index);
        this.scheduleTick();
      },
    });
  }

  private get live(): number {
    return this.workers.live;
  }

  get workerRestarts(): number {
    return this.workers.restarts;
  }

  /** Resolves once every worker has loaded its crypto libraries: the relay listens only then. */
  async start(): Promise<void> {
    await this.workers.start();
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
   * Checks the job in held slot `s` (filled with `jobs.set`). True: checked
   * inline, the result is in the slot (`done` ran). Else `done(s)` runs once
   * it is, at the turn's end or when a worker finishes; without `done` the
   * slot joins the owner's `settled` list instead.
   */
  run(s: number, done: JobCallback = TO_OWNER): boolean {
    const inline = this.inlineNow();
    this.turnJobs++;
    // The tick also ends the turn's count, inline or not.
    this.scheduleTick();
    if (inline) {
      this.checkHere(s, false);
      this.stats.acceptor++;
      this.count(s);
      if (done !== TO_OWNER) done(s);
      return true;
    }
    this.cbs[s] = done;
    this.outstanding++;
    // A worker parked when the turn's first check arrives had run out of work since the last tick.
    if (this.turnDeferred++ === 0) this.idleAtTurnStart = this.live > 0 && this.jobs.hasSleeper();
    if (this.jobs.submit(s, this.clock()) && this.live > 0 && (this.busy || !this.inlineAuto)) this.jobs.wake(1);
    return false;
  }

  /** Jobs checked or being checked outside the current call stack. */
  get inflight(): number {
    return this.outstanding;
  }

  /**
   * Estimated ms before a job submitted now would start (door, /healthz,
   * metrics): the largest of the waiting jobs at the mean check time over the
   * verifiers, the oldest waiting job's age, and the backlog's measured drain
   * pace (slower than the checks', as the acceptor also reads and answers;
   * by the checks' pace alone a third of admissions later expired). Measured,
   * not predicted from overload turns, which shed when the queue was not full
   * (bench:e2e, 1024 connections: 0.96 vs 0.35-0.68 of capacity kept).
   */
  queueMs(): number {
    const w = this.jobs.waiting();
    if (w === 0) return 0;
    const est = Math.max((w * this.serviceMs) / (this.threads > 0 ? this.threads : 1), this.jobs.oldestWaitingAge(this.clock()));
    return Math.max(est, this.drainMs(w));
  }

  /** Ms to drain `n` more checks at the backlog's measured pace; 0 until measured. */
  drainMs(n: number): number {
    return this.drain.ms(n);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.lagTimer) clearInterval(this.lagTimer);
    this.jobs.stop();
    await this.workers.stop();
    this.collect();
    // Whatever no worker took before stopping is checked here: no caller is left without an answer.
    for (let s = this.jobs.claim(-1, this.clock()); s >= 0; s = this.jobs.claim(-1, this.clock())) {
      this.checkHere(s, true);
      this.stats.acceptor++;
      this.settle(s);
    }
  }

  // ---- acceptor or workers ----------------------------------------------------

  /**
   * Whether to check this job in the handler: it is the turn's first, the
   * turn before had at most one, nothing waits, and with workers the loop is
   * not busy with overlapping requests. Also refreshes `busy`.
   */
  private inlineNow(): boolean {
    const now = performance.now();
    if (now - this.eluAt >= ELU_WINDOW_MS) {
      const e = performance.eventLoopUtilization();
      const d = performance.eventLoopUtilization(e, this.elu);
      this.elu = e;
      this.eluAt = now;
      this.busy = d.utilization > ELU_BUSY;
    }
    const lone = this.turnJobs === 0 && this.prevTurnJobs <= 1 && this.jobs.waiting() === 0;
    if (!lone || this.outstanding > 0) this.overlapAt = now;
    if (!lone) return false;
    if (this.live === 0) return true;
    if (!this.inlineAuto) return false;
    // Busy with no recent overlap means busy with one client's own checks: stay inline.
    return !(this.busy && now - this.overlapAt < OVERLAP_MEMORY_MS);
  }

  /** Runs a check on this thread and accounts for its time; `claimed`: taken from the ring (it may have expired there). */
  private checkHere(s: number, claimed: boolean): void {
    const t0 = performance.now();
    if (claimed) runClaimed(this.ctx, s);
    else runCheck(this.ctx, s);
    this.jobs.markDone(s);
    const ms = performance.now() - t0;
    this.checkMs += ms;
    if (this.jobs.field(s, S_RESULT) !== JobResult.Expired) this.noteService(ms);
  }

  /** Claims the sweep's next jobs into `sweep` (how many: up to SWEEP_BATCH and `max`; with workers, no more than it leaves them). */
  private claimSweep(max: number): number {
    const b = this.sweep;
    b.length = 0;
    const s = this.jobs.claim(-1, this.clock());
    if (s < 0) return 0;
    b.push(s);
    const limit = Math.min(batchesSignatures ? SWEEP_BATCH : 1, max);
    while (b.length < limit && (this.live === 0 ? this.jobs.waiting() > 0 : this.jobs.waiting() > b.length)) {
      const more = this.jobs.claim(-1, this.clock());
      if (more < 0) break;
      b.push(more);
    }
    return b.length;
  }

  /** Claimed jobs checked together (runClaimedBatch); each is accounted an equal share of the time. */
  private checkBatchHere(slots: readonly number[]): void {
    const t0 = performance.now();
    runClaimedBatch(this.ctx, slots);
    const ms = (performance.now() - t0) / slots.length;
    for (const s of slots) {
      this.jobs.markDone(s);
      this.checkMs += ms;
      if (this.jobs.field(s, S_RESULT) !== JobResult.Expired) this.noteService(ms);
    }
  }

  private noteService(ms: number): void {
    this.serviceMs = this.serviceMs * 0.9 + Math.min(ms, MAX_SAMPLE_MS) * 0.1;
  }

  // ---- collecting answers ----------------------------------------------------

  private scheduleTick(): void {
    if (this.tickScheduled) return;
    this.tickScheduled = true;
    setImmediate(this.onTurn);
  }

  /** End of a turn: collect workers' answers, check within the slice, wake workers for the rest (the owner flushes answers). */
  readonly tick = (): void => {
    this.tickScheduled = false;
    this.prevTurnJobs = this.turnJobs;
    const deferred = this.turnDeferred;
    this.turnJobs = 0;
    this.turnDeferred = 0;
    this.collect();
    let left = false;
    const waiting = this.jobs.waiting();
    if (waiting > 0) {
      const quota = this.acceptorQuota(waiting, deferred);
      const now = performance.now();
      const slice = this.backlogSince > 0 ? Math.min(MAX_SLICE_MS, Math.max(this.sliceMs, now - this.backlogSince)) : this.sliceMs;
      const until = now + slice;
      let n = 0;
      do {
        if (n >= quota) {
          left = true;
          break;
        }
        const k = this.claimSweep(quota - n);
        if (k === 0) break;
        if (k === 1) this.checkHere(this.sweep[0]!, true);
        else this.checkBatchHere(this.sweep);
        for (let i = 0; i < k; i++) {
          this.stats.acceptor++;
          this.settle(this.sweep[i]!);
        }
        n += k;
      } while (performance.now() < until);
      this.collect();
      // Left past the slice or the share: wake workers now, not after the next turn.
      const rest = this.jobs.waiting();
      if (rest > 0 && this.live > 0 && this.jobs.hasSleeper()) this.jobs.wake(Math.min(rest, this.live));
    }
    if (this.jobs.waiting() === 0) this.drain.emptied();
    // Past the slice: check more next turn (sockets are read in between); what the share left is the workers'.
    if (!left && this.jobs.waiting() > 0) {
      this.backlogSince = performance.now();
      return this.scheduleTick();
    }
    this.backlogSince = 0;
    if (this.outstanding > 0) this.arm();
  };

  /** All the waiting checks when idle or without workers (soonest answer); when busy it limits throughput: its share. */
  private acceptorQuota(waiting: number, deferredThisTurn: number): number {
    if (this.live === 0 || !this.busy) return Infinity;
    this.share = nextShare(this.share, waiting > deferredThisTurn, this.idleAtTurnStart);
    return Math.ceil(this.share * waiting);
  }

  private collect(): void {
    for (let s = this.jobs.nextDone(); s >= 0; s = this.jobs.nextDone()) {
      // An expired job was not checked: no sample.
      const t = this.jobs.time(s, T_END) - this.jobs.time(s, T_START);
      if (t >= 0 && this.jobs.field(s, S_RESULT) !== JobResult.Expired) {
        this.noteService(t);
        this.stats.workerBusyMs += t;
      }
      this.stats.workers++;
      this.settle(s);
    }
  }

  private settle(s: number): void {
    const wait = this.jobs.waited(s);
    if (wait > this.worstSojourn) this.worstSojourn = wait;
    this.outstanding--;
    const done = this.cbs[s]!;
    this.cbs[s] = undefined;
    this.answer(s, done);
  }

  private answer(s: number, done: JobCallback): void {
    this.count(s);
    if (done === TO_OWNER) this.settled.push(s);
    else done(s);
  }

  private count(s: number): void {
    const r = this.jobs.field(s, S_RESULT);
    if (r === JobResult.Internal) this.stats.internal++;
    else if (r === JobResult.Expired) this.stats.expired++;
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
    void (w.value as Promise<string>).then(this.onWake);
  }

  /** A worker published an answer: collect (the owner holds and flushes answers around it). */
  readonly wake = (): void => {
    this.armed = false;
    this.collect();
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
    this.drain.sample(now, this.jobs.claimedCount() - this.stats.expired, this.jobs.waiting());
  };

  // ---- workers ---------------------------------------------------------------

  /** A dead worker's claimed jobs: answered as internal failures (retry-safe), never left hanging, their dedup claims withdrawn. */
  private recover(index: number): void {
    const j = this.jobs;
    for (let s = 0; s < j.slots; s++) {
      if (j.state(s) === SlotState.Claimed && j.field(s, S_WORKER) === index && this.cbs[s] !== undefined) {
        // Answered retry-safe, so a dedup claim it made must not outlive it.
        const key = claimingKey(this.ctx, s);
        if (key !== null) this.ctx.dedup.release(key, this.clock());
        j.setResult(s, JobResult.Internal, 'verification worker stopped');
        j.markDone(s);
        this.settle(s);
      }
    }
  }
}

