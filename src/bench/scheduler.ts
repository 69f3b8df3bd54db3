/**
 * The two load loops, independent of what a request is (tests inject a clock
 * and a fake `send`).
 *
 * Open loop (no coordinated omission): request i is intended at t0 + i/rate
 * whatever came before. At most `connections` are in flight; a request that
 * cannot start on time waits in a FIFO backlog and its latency still counts
 * from its intended start, so a server stall shows in the percentiles instead
 * of slowing the generator. Starts more than LATE_MS behind are counted: many
 * mean the generator or the connection bound set the pace.
 *
 * Closed loop: `connections` workers sending back to back; latency counts from
 * each request's actual start.
 */

export interface Clock {
  /** Milliseconds, monotonic, sub-millisecond resolution. */
  now(): number;
  /** Resolves at (or soon after) `t`. */
  sleepUntil(t: number): Promise<void>;
}

/** Plain timers: no spinning, so the generator's CPU stays small (see SLACK_MS for what that costs in precision). */
export const realClock: Clock = {
  now: () => performance.now(),
  sleepUntil(t: number): Promise<void> {
    const left = t - performance.now();
    return left <= 0 ? new Promise<void>((resolve) => setImmediate(resolve)) : new Promise<void>((resolve) => setTimeout(resolve, left));
  },
};

/**
 * Node timers fire on a 1 ms grid, up to ~1 ms late: a request leaving within
 * SLACK_MS of its intended time counts latency from when it left (timer
 * jitter, not the server; the mean rate is unchanged). A later one counts from
 * its intended time and is "late". Spinning on setImmediate would pace to the
 * µs but burn a core the relay needs.
 */
export const SLACK_MS = 2;
/** Late means more than SLACK_MS behind schedule. */
export const LATE_MS = SLACK_MS;

interface LoopHooks<O> {
  /** Never rejects: failures are outcomes. */
  send(i: number): Promise<O>;
  /** `intended`: the latency origin (see SLACK_MS); equals `started` in a closed loop. Times from the clock, in ms. */
  onResult(i: number, intended: number, started: number, ended: number, outcome: O): void;
  stopped?(): boolean;
}

interface OpenLoopOptions<O> extends LoopHooks<O> {
  rate: number;
  /** Requests to schedule. */
  total: number;
  connections: number;
  clock: Clock;
  /** Called once, with the time of request 0's intended start. */
  onStart?(t0: number): void;
}

interface OpenLoopStats {
  t0: number;
  scheduled: number;
  late: number;
  maxSlipMs: number;
  /** Largest number of requests waiting for a free connection at once. */
  maxBacklog: number;
}

export async function runOpenLoop<O>(o: OpenLoopOptions<O>): Promise<OpenLoopStats> {
  const { clock, connections } = o;
  const interval = 1000 / o.rate;
  const t0 = clock.now();
  o.onStart?.(t0);
  const stats: OpenLoopStats = { t0, scheduled: 0, late: 0, maxSlipMs: 0, maxBacklog: 0 };
  const backlog: number[] = [];
  const backlogFrom: number[] = []; // latency origin of each waiting request
  let head = 0;
  let inFlight = 0;
  let scheduling = true;
  let drained: (() => void) | null = null;

  const start = (i: number, from: number): void => {
    inFlight++;
    const started = clock.now();
    const slip = started - (t0 + i * interval);
    if (slip > LATE_MS) stats.late++;
    if (slip > stats.maxSlipMs) stats.maxSlipMs = slip;
    o.send(i).then((outcome) => {
      inFlight--;
      o.onResult(i, from, started, clock.now(), outcome);
      if (head < backlog.length) {
        const j = head++;
        start(backlog[j]!, backlogFrom[j]!);
        if (head === backlog.length) {
          backlog.length = 0;
          backlogFrom.length = 0;
          head = 0;
        }
      } else if (!scheduling && inFlight === 0) drained?.();
    });
  };

  let next = 0;
  while (next < o.total && !o.stopped?.()) {
    const now = clock.now();
    while (next < o.total && t0 + next * interval <= now) {
      const intended = t0 + next * interval;
      // Within SLACK_MS: timer jitter, latency from now. Beyond: from the intended time.
      const from = now - intended <= SLACK_MS ? now : intended;
      if (inFlight < connections) start(next, from);
      else {
        backlog.push(next);
        backlogFrom.push(from);
        if (backlog.length - head > stats.maxBacklog) stats.maxBacklog = backlog.length - head;
      }
      next++;
    }
    if (next < o.total) await clock.sleepUntil(t0 + next * interval);
  }
  stats.scheduled = next;
  if (o.stopped?.()) {
    // Interrupted: what never started is dropped, not reported as sent.
    stats.scheduled -= backlog.length - head;
    backlog.length = 0;
    backlogFrom.length = 0;
    head = 0;
  }
  scheduling = false;
  if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
  return stats;
}

interface ClosedLoopOptions<O> extends LoopHooks<O> {
  connections: number;
  /** Requests available; the run ends early when they run out. */
  total: number;
  /** No request starts at or after this time. */
  endAt: number;
  clock: Clock;
}

export async function runClosedLoop<O>(o: ClosedLoopOptions<O>): Promise<{ started: number; exhausted: boolean }> {
  let next = 0;
  let exhausted = false;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (o.stopped?.() || o.clock.now() >= o.endAt) return;
      if (next >= o.total) {
        exhausted = true;
        return;
      }
      const i = next++;
      const started = o.clock.now();
      const outcome = await o.send(i);
      o.onResult(i, started, started, o.clock.now(), outcome);
    }
  };
  await Promise.all(Array.from({ length: o.connections }, worker));
  return { started: next, exhausted };
}
