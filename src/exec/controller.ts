/**
 * Admission control for transaction checks: shed only when the delay is a
 * standing queue, not a burst that drains by itself.
 *
 * CoDel (RFC 8289) with the drop moved to the door: samples are how long
 * transactions waited before their check started (claim minus submission, or
 * the event loop's lag for inline checks); decisions are taken on arrival,
 * before the body is read, so a shed costs no more than a bare request.
 *
 *   - no standing queue (a sample under `target` within `interval`): admit;
 *     a burst may queue up to `maxMs`.
 *   - standing queue: shed, then the n-th next after interval/sqrt(n), until
 *     the queue falls below target. Closed-loop clients keep goodput at capacity.
 *   - `maxMs`: hard bound for open-loop overload, where the control law ramps
 *     too slowly.
 *
 * Pure: time comes in as arguments, so every transition is unit-testable.
 */

/** RFC 8289 defaults; the target is also the relay's queueing-latency goal. */
const DEFAULT_TARGET_MS = 5;
const DEFAULT_INTERVAL_MS = 100;
/** A Solana slot (400 ms) of queueing is far too late; 100 ms leaves room to land. */
const DEFAULT_MAX_MS = 100;

export interface ControllerOptions {
  targetMs?: number;
  intervalMs?: number;
  maxMs?: number;
}

export const enum Shed {
  No = 0,
  Standing = 1,
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

  get isStanding(): boolean {
    return this.standing;
  }

  /** How long a transaction waited before its check started. */
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

/** How long the queue must stay non-empty before its drain rate is trusted: a burst's first turns read much and check little. */
export const BACKLOG_TRUST_MS = 50;

/** A standing queue's real drain pace: checks that left it (claimed, not expired) per ms while non-empty (Verifier.queueMs). */
export class DrainMeter {
  /** Checks per ms, smoothed; 0 until measured. */
  private perMs = 0;
  private backloggedMs = 0;
  private backlogged = false;
  private lastLeft = 0;
  private lastAt = 0;

  /** `left`: checks that have left the queue so far (claimed minus expired); `waiting`: in it now. */
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

  /** Ms `n` checks take at the measured pace; 0 until trusted. */
  ms(n: number): number {
    return this.backloggedMs >= BACKLOG_TRUST_MS && this.perMs > 0 ? n / this.perMs : 0;
  }
}
