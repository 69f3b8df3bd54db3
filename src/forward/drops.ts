/**
 * How an acknowledged item ends when no upstream accepted it
 * (docs/protocol.md#forwarding): counted under its reason, logged throttled,
 * and its status trace (docs/protocol.md#status) given its final state.
 */
import { Throttle, type LogLevel } from './log.js';
import { Verdict } from './ring.js';
import type { Trace } from '../status/tracker.js';

/**
 * Why an acknowledged item ended without any upstream accepting it.
 * `expired_after_restart`: written down at shutdown, and too old to send when
 * the node started again (docs/operations.md#graceful-shutdown).
 */
export type DropReason = 'rejected' | 'expired' | 'shutdown' | 'expired_after_restart';
export const DROP_REASONS: readonly DropReason[] = ['rejected', 'expired', 'shutdown', 'expired_after_restart'];

// Indexes into DROP_REASONS.
export const R_REJECTED = 0;
export const R_EXPIRED = 1;
export const R_SHUTDOWN = 2;
export const R_EXPIRED_AFTER_RESTART = 3;
/** Not a drop: taken out by the lane's `spill` to be written down; counted apart. */
export const R_SPILLED = 4;

type TraceEnd = ['forwarded' | 'upstream_rejected' | 'failed' | 'dropped', string | null];

/** How an item ended, for its status: accepted by some upstream, refused by all that answered, or given up. */
export function endOf(verdict: Verdict, reason: number, t: Trace): TraceEnd {
  if (verdict === Verdict.ACCEPTED) return ['forwarded', null];
  if (verdict === Verdict.REJECTED) return ['upstream_rejected', 'every upstream that answered refused it'];
  if (reason === R_SHUTDOWN) return ['dropped', 'the node shut down before an upstream accepted it'];
  if (reason === R_SPILLED) return ['dropped', 'the node shut down before an upstream accepted it: written to the data directory, to be resent when the node starts again'];
  // Expired: tried and failed everywhere it went, or never got out (breakers open, a backlog).
  return t.tried ? ['failed', 'no upstream accepted it before it expired'] : ['dropped', 'expired in the queue before any upstream took it'];
}

/** A lane's log line: level, message, fields (the lane adds its name). */
export type Say = (level: LogLevel, msg: string, fields: Record<string, unknown>) => void;

/** The drop counters of one lane, and their throttled log lines. */
export class Drops {
  readonly by = [0, 0, 0, 0];
  spilled = 0;
  private readonly log = [new Throttle(), new Throttle(), new Throttle(), new Throttle()];
  private readonly held = [0, 0, 0, 0];

  constructor(
    private readonly maxAgeMs: number,
    private readonly say: Say,
  ) {}

  /** The sum over every reason. */
  get total(): number {
    const by = this.by;
    return by[R_REJECTED]! + by[R_EXPIRED]! + by[R_SHUTDOWN]! + by[R_EXPIRED_AFTER_RESTART]!;
  }

  byReason(): Record<DropReason, number> {
    const by = this.by;
    return { rejected: by[R_REJECTED]!, expired: by[R_EXPIRED]!, shutdown: by[R_SHUTDOWN]!, expired_after_restart: by[R_EXPIRED_AFTER_RESTART]! };
  }

  /** An item ended unaccepted: counted, and logged at most once per interval per reason (shutdown drops are logged by the lane's close, in one line). */
  dropped(reason: number, now: number): void {
    if (reason === R_SPILLED) {
      this.spilled++;
      return;
    }
    this.by[reason]!++;
    if (reason === R_SHUTDOWN) return;
    this.held[reason]!++;
    if (this.log[reason]!.pass(now) < 0) return;
    const items = this.held[reason]!;
    this.held[reason] = 0;
    const why = reason === R_REJECTED ? 'every upstream that answered refused them' : `no upstream accepted them within ${this.maxAgeMs} ms`;
    this.say(reason === R_REJECTED ? 'info' : 'warn', `acknowledged transactions dropped: ${why}`, { reason: DROP_REASONS[reason], items });
  }

  /** An item's end, whatever it was: counts a drop, ends its trace. */
  ended(verdict: Verdict, reason: number, trace: Trace | undefined, now: number): void {
    if (verdict !== Verdict.ACCEPTED) this.dropped(verdict === Verdict.REJECTED && reason !== R_SPILLED ? R_REJECTED : reason, now);
    if (trace !== undefined) trace.final(...endOf(verdict, reason, trace), now);
  }
}
