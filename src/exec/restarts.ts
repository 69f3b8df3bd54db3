/**
 * The restart policy of every thread the relay starts (verification workers,
 * acceptor threads): a dead thread is started again at most
 * MAX_RESTARTS_PER_MINUTE times in any minute, so a crash loop cannot spin.
 */

/** Restarts tolerated per minute; past it the thread stays down (its work goes to the others, or the main thread). */
const MAX_RESTARTS_PER_MINUTE = 5;

export class RestartBudget {
  private recent: number[] = [];

  /** Whether a thread that died now may be started again; counts the restart if so. */
  take(now: number = performance.now()): boolean {
    this.recent = this.recent.filter((t) => now - t < 60_000);
    if (this.recent.length >= MAX_RESTARTS_PER_MINUTE) return false;
    this.recent.push(now);
    return true;
  }
}
