/**
 * Acknowledged items that ended without any upstream accepting them
 * (docs/protocol.md#forwarding): counted under their reason and logged,
 * throttled. Their status traces are ended by the ring (ring.ts).
 */
import { Throttle, type LogLevel } from './log.js';

/**
 * Why an acknowledged item ended without any upstream accepting it.
 * `expired_after_restart`: written down at shutdown, and too old to send when
 * the node started again (docs/operations.md#graceful-shutdown).
 */
export type DropReason = 'rejected' | 'expired' | 'shutdown' | 'expired_after_restart';
const DROP_REASONS: readonly DropReason[] = ['rejected', 'expired', 'shutdown', 'expired_after_restart'];

// Indexes into DROP_REASONS.
export const R_REJECTED = 0;
export const R_EXPIRED = 1;
export const R_SHUTDOWN = 2;
export const R_EXPIRED_AFTER_RESTART = 3;
/** Not a drop: taken out by the lane's `spill` to be written down; counted apart. */
export const R_SPILLED = 4;

/** A lane's log line: level, message, fields (the lane adds its name). */
type Say = (level: LogLevel, msg: string, fields: Record<string, unknown>) => void;

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
}
