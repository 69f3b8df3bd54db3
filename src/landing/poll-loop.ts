/**
 * What both families' watchers share: a poll on a timer that never runs two
 * rounds at once, and how far behind the last round that reached the chain
 * is. A failed round leaves `lagMs` growing until one succeeds.
 */
import type { Clock } from '../clock.js';

export abstract class PollLoop {
  /** When the last round that reached the RPC ended. */
  private lastGood: number;
  private polling = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(protected readonly clock: Clock) {
    this.lastGood = clock();
  }

  /** Transactions followed and not ended. */
  abstract get size(): number;

  /** One round against the chain; throws the RPC's error when it could not finish. */
  protected abstract round(): Promise<void>;

  /** How far behind tracking is: 0 when the last round reached the chain or nothing is followed. */
  lagMs(now = this.clock()): number {
    return this.size === 0 ? 0 : Math.max(0, now - this.lastGood);
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.poll().catch(() => {}), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round; a round still running when the next is due is not doubled. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      await this.round();
      this.lastGood = this.clock();
    } finally {
      this.polling = false;
    }
  }
}
