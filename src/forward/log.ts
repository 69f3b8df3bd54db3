/** How forwarding reports trouble: one sink, and a throttle so trouble is one line per interval, not one per transaction. */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** Where forwarding reports trouble. Fields never hold transaction bytes, UUIDs or upstream URL paths (API keys live there). */
export type LogSink = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

/** One log line per upstream and kind of trouble per 10 s, not one per transaction. */
export const LOG_INTERVAL_MS = 10_000;

/** At most one log line per interval; the next one says how many were held back. */
export class Throttle {
  private at = -Infinity;
  private held = 0;

  /** -1 to stay quiet, else the lines suppressed since the last one. */
  pass(now: number): number {
    if (now - this.at < LOG_INTERVAL_MS) {
      this.held++;
      return -1;
    }
    this.at = now;
    const h = this.held;
    this.held = 0;
    return h;
  }
}
