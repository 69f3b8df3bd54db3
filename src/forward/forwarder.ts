/**
 * The forwarding layer: the four lanes (docs/protocol.md#forwarding), with one
 * place for start-up warnings, statistics and graceful shutdown.
 */
import type { Clock } from '../clock.js';
import type { BreakerOptions } from './outlet.js';
import { LANE_NAMES, Lane, QUEUE_CAPACITY, type LaneName, type LaneStats, type SpillEntry } from './lane.js';
import type { LogSink } from './log.js';
import type { LaneTap } from './tap.js';

/** Two upstream time-outs plus margin, well inside a service manager's stop timeout. */
const DRAIN_TIMEOUT_MS = 5_000;

interface ForwarderOptions {
  /** Upstream URLs per lane; a missing or empty list runs that lane dry. */
  lanes: Partial<Record<LaneName, readonly string[]>>;
  /** Per lane. */
  queueCapacity?: number;
  log?: LogSink;
  now?: Clock;
  batching?: Partial<Record<LaneName, boolean>>;
  breaker?: BreakerOptions;
  timeoutMs?: number;
  connections?: number;
  maxAgeMs?: number;
  schedule?: (fn: () => void) => void;
  /** The TPU route of solana-single (src/tpu/route.ts); closed with the lane. */
  tap?: LaneTap | null;
  /** Warn at start-up about each lane with no upstream (default true; an acceptor thread leaves it to the main thread). */
  warnDry?: boolean;
}

interface DrainResult {
  /** Items final at every upstream during the drain. */
  sent: number;
  /** Acknowledged items dropped as `shutdown` (none since they are spilled; kept for the count). */
  abandoned: number;
  /** Acknowledged items no upstream had accepted when time ran out: the node writes them down (src/forward/spill.ts). */
  spill: SpillEntry[];
}

interface ForwarderStats {
  draining: boolean;
  lanes: Record<LaneName, LaneStats>;
}

type Lanes = { readonly [K in LaneName]: Lane<K> };

export class Forwarder {
  private readonly lanes: Lanes;
  private readonly all: readonly Lane[];
  private drainingFlag = false;

  constructor(opts: ForwarderOptions) {
    const make = <K extends LaneName>(name: K): Lane<K> =>
      new Lane(name, {
        upstreams: opts.lanes[name] ?? [],
        capacity: opts.queueCapacity ?? QUEUE_CAPACITY,
        batching: opts.batching?.[name],
        log: opts.log,
        now: opts.now,
        breaker: opts.breaker,
        timeoutMs: opts.timeoutMs,
        connections: opts.connections,
        maxAgeMs: opts.maxAgeMs,
        schedule: opts.schedule,
        tap: name === 'solana-single' ? opts.tap : null,
      });
    const built: Lane[] = [];
    try {
      for (const name of LANE_NAMES) built.push(make(name));
    } catch (err) {
      // A bad URL in a later lane must not leave the earlier lanes' pools open.
      for (const l of built) void l.close();
      throw err;
    }
    const [evmPaid, evmFree, solanaSingle, solanaBundle] = built as [Lane<'evm-paid'>, Lane<'evm-free'>, Lane<'solana-single'>, Lane<'solana-bundle'>];
    this.lanes = { 'evm-paid': evmPaid, 'evm-free': evmFree, 'solana-single': solanaSingle, 'solana-bundle': solanaBundle };
    this.all = built;
    for (const l of built) {
      if (l.dry && opts.log && opts.warnDry !== false) {
        try {
          opts.log('warn', `lane ${l.name} has no upstream configured: admitted transactions are counted and dropped`, { lane: l.name });
        } catch {
          // A broken log sink must not stop start-up.
        }
      }
    }
  }

  lane<N extends LaneName>(name: N): Lane<N> {
    return this.lanes[name] as Lane<N>;
  }

  /** True from the start of `drain`: the node answers DRAINING, not capacity. */
  get draining(): boolean {
    return this.drainingFlag;
  }

  /** One consistent snapshot per lane. */
  stats(): ForwarderStats {
    return {
      draining: this.drainingFlag,
      lanes: {
        'evm-paid': this.lanes['evm-paid'].stats(),
        'evm-free': this.lanes['evm-free'].stats(),
        'solana-single': this.lanes['solana-single'].stats(),
        'solana-bundle': this.lanes['solana-bundle'].stats(),
      },
    };
  }

  /**
   * Graceful shutdown: stops admitting, waits until every item is final or
   * `timeoutMs`, takes out what no upstream accepted (to be written down and
   * resent on the next start), then closes (aborting what is in flight).
   */
  async drain(timeoutMs = DRAIN_TIMEOUT_MS): Promise<DrainResult> {
    this.drainingFlag = true;
    for (const l of this.all) l.stop();
    const before = this.outstanding();
    if (before > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([Promise.all(this.all.map((l) => l.whenIdle())), deadline]);
      clearTimeout(timer);
    }
    const left = this.outstanding();
    const shutdown0 = this.shutdownDrops();
    const spill = left > 0 ? this.all.flatMap((l) => l.spill()) : [];
    await Promise.all(this.all.map((l) => l.close()));
    return { sent: before - left, abandoned: this.shutdownDrops() - shutdown0, spill };
  }

  /** Immediate shutdown: nothing more is sent, in-flight requests are aborted. */
  async close(): Promise<void> {
    this.drainingFlag = true;
    await Promise.all(this.all.map((l) => l.close()));
  }

  private shutdownDrops(): number {
    let n = 0;
    for (const l of this.all) n += l.stats().droppedBy.shutdown;
    return n;
  }

  private outstanding(): number {
    let n = 0;
    for (const l of this.all) n += l.outstanding;
    return n;
  }
}
