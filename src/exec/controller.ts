/**
 * Admission control for transaction checks: shed only what cannot be served
 * within the latency target, and only when the delay is a standing queue,
 * not a burst that drains by itself.
 *
 * It is CoDel (RFC 8289, "Controlled Delay") with the drop moved to the door:
 * the sojourn samples are the time transactions really waited before their
 * check started (a worker's claim time minus submission, and the event loop's
 * lag for checks run inline, which waited in the kernel meanwhile); the
 * decisions are taken when a request arrives, before a byte of its body is
 * read, so a shed answer costs no more than a bare request.
 *
 *   - no standing queue (some sample under `target` within the last
 *     `interval`): admit. A burst may queue up to `maxMs`.
 *   - standing queue: shed one arrival, then the next after interval/sqrt(n)
 *     for the n-th shed (CoDel's control law), so the shed rate rises slowly
 *     until the queue falls below target. With closed-loop clients (each shed
 *     comes straight back) this keeps goodput at capacity; latency is then the
 *     clients' own concurrency divided by throughput, which no server avoids.
 *   - `maxMs` is the hard bound for open-loop overload, where the control law
 *     would ramp too slowly: an arrival whose estimated wait exceeds it is shed.
 *
 * Pure: time comes in as arguments, so every transition is unit-testable.
 */

/** RFC 8289 defaults: 5 ms target, 100 ms interval. The target is also the relay's queueing-latency goal. */
const DEFAULT_TARGET_MS = 5;
const DEFAULT_INTERVAL_MS = 100;
/** Open-loop overload bound: about one Solana slot's worth of queueing (400 ms) is far too late; 100 ms leaves room to land. */
const DEFAULT_MAX_MS = 100;

export interface ControllerOptions {
  targetMs?: number;
  intervalMs?: number;
  maxMs?: number;
}

export const enum Shed {
  No = 0,
  /** CoDel control law (standing queue). */
  Standing = 1,
  /** Estimated wait over the hard bound. */
  OverMax = 2,
}

export class QueueController {
  readonly targetMs: number;
  readonly intervalMs: number;
  readonly maxMs: number;
  /** When the queue first stayed above target; 0 while it is below. */
  private firstAbove = 0;
  private standing = false;
  private dropping = false;
  private count = 0;
  private lastCount = 0;
  private dropNext = 0;
  /** Sheds by reason, for metrics. */
  shedStanding = 0;
  shedOverMax = 0;

  constructor(opts: ControllerOptions = {}) {
    this.targetMs = opts.targetMs ?? DEFAULT_TARGET_MS;
    this.intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.maxMs = opts.maxMs ?? DEFAULT_MAX_MS;
    if (!(this.targetMs > 0 && this.intervalMs > 0 && this.maxMs >= this.targetMs)) {
      throw new RangeError('queue controller: need target > 0, interval > 0, max >= target');
    }
  }

  /** Whether a standing queue has been detected (for metrics and tests). */
  get isStanding(): boolean {
    return this.standing;
  }

  /** One sojourn sample: how long a transaction waited before its check started. */
  observe(sojournMs: number, now: number): void {
    if (sojournMs < this.targetMs) {
      this.firstAbove = 0;
      this.standing = false;
      return;
    }
    if (this.firstAbove === 0) this.firstAbove = now + this.intervalMs;
    else if (now >= this.firstAbove) this.standing = true;
  }

  /** At the door: whether to shed an arrival whose check would wait about `waitMs`. */
  decide(now: number, waitMs: number): Shed {
    if (waitMs > this.maxMs) {
      this.shedOverMax++;
      return Shed.OverMax;
    }
    if (!this.standing) {
      this.dropping = false;
      return Shed.No;
    }
    if (!this.dropping) {
      this.dropping = true;
      // RFC 8289 section 5.4: resume near the previous rate if the last dropping period was recent.
      const delta = this.count - this.lastCount;
      this.count = delta > 1 && now - this.dropNext < 16 * this.intervalMs ? delta : 1;
      this.lastCount = this.count;
      this.dropNext = now + this.intervalMs / Math.sqrt(this.count);
      this.shedStanding++;
      return Shed.Standing;
    }
    if (now < this.dropNext) return Shed.No;
    this.count++;
    this.dropNext += this.intervalMs / Math.sqrt(this.count);
    // A long pause between arrivals must not leave a backlog of due sheds.
    if (this.dropNext < now) this.dropNext = now + this.intervalMs / Math.sqrt(this.count);
    this.shedStanding++;
    return Shed.Standing;
  }
}

/**
 * How long the queue must have stayed non-empty before its measured drain
 * rate is trusted for the door's wait estimate. The first turns of a burst
 * read much and check little: their drain rate is no forecast.
 */
export const BACKLOG_TRUST_MS = 50;

/**
 * The pace a standing queue really drains at: checks that left it per
 * millisecond (claimed, not expired) over sample periods through which it
 * stayed non-empty. An overloaded acceptor also reads, refuses and answers,
 * so this is slower than the checks' own pace; admitting by the checks' pace
 * kept the queue at the bound, and about a third of what the door admitted
 * then expired after being read and queued. Pure, like QueueController.
 */
export class DrainMeter {
  /** Checks per millisecond, smoothed; 0 until measured. */
  private perMs = 0;
  /** Milliseconds the queue has been non-empty at every observation. */
  private backloggedMs = 0;
  private backlogged = false;
  private lastLeft = 0;
  private lastAt = 0;

  /** A sample: `left` counts every check that has left the queue so far (claimed minus expired), `waiting` what is in it now. */
  sample(now: number, left: number, waiting: number): void {
    const dt = now - this.lastAt;
    if (this.backlogged && waiting > 0 && dt > 0) {
      const rate = (left - this.lastLeft) / dt;
      this.perMs = this.perMs === 0 ? rate : this.perMs * 0.8 + rate * 0.2;
      this.backloggedMs += dt;
    } else {
      this.backloggedMs = 0;
    }
    this.backlogged = waiting > 0;
    this.lastLeft = left;
    this.lastAt = now;
  }

  /** The queue was seen empty between samples: the next period is no backlog. */
  emptied(): void {
    this.backlogged = false;
  }

  /** Milliseconds `n` checks take at the measured pace; 0 while there is no trusted measurement. */
  ms(n: number): number {
    return this.backloggedMs >= BACKLOG_TRUST_MS && this.perMs > 0 ? n / this.perMs : 0;
  }
}
