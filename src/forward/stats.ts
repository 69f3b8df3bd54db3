/** A lane's statistics (docs/operations.md#metrics reads them): one consistent snapshot per call, built from the ring, the outlets and the drop counters. */
import type { BreakerState } from './outlet.js';
import type { DropReason, Drops } from './drops.js';
import type { LaneName } from './lane.js';
import type { Outlet } from './outlet.js';
import type { UpstreamStats } from './upstream.js';

interface LaneUpstreamStats extends UpstreamStats {
  breaker: BreakerState;
  /** Items never sent or to be resent. */
  backlog: number;
  inFlight: number;
  /** Items put back after a transport failure (a failed batch of 10 counts 10). */
  retried: number;
  /** Given up: this upstream fell `capacity` behind after another had answered them. */
  overrun: number;
  /** Given up: maximum age reached without this upstream's answer. */
  expired: number;
  batching: boolean;
}

export interface LaneStats {
  lane: LaneName;
  /** Items no upstream has answered yet; admission is refused at `capacity`. */
  depth: number;
  capacity: number;
  /** Items some upstream is not done with. */
  held: number;
  outstanding: number;
  admitted: number;
  forwarded: number;
  /** Dropped by a dry lane. */
  discarded: number;
  /** The sum of `droppedBy`. */
  dropped: number;
  droppedBy: Record<DropReason, number>;
  available: boolean;
  accepting: boolean;
  upstreams: LaneUpstreamStats[];
}

/** The ring's counters a snapshot reads. */
interface RingCounts {
  readonly head: number;
  readonly tail: number;
  readonly open: number;
  readonly settled: number;
  readonly accepted: number;
}

/** Counters kept by the lane itself. */
interface LaneCounts {
  lane: LaneName;
  capacity: number;
  admitted: number;
  discarded: number;
  available: boolean;
  accepting: boolean;
}

export function laneStats(l: LaneCounts, ring: RingCounts, drops: Drops, outlets: readonly Outlet[]): LaneStats {
  return {
    lane: l.lane,
    depth: ring.open,
    capacity: l.capacity,
    held: ring.tail - ring.head,
    outstanding: ring.tail - ring.settled,
    admitted: l.admitted,
    forwarded: ring.accepted,
    discarded: l.discarded,
    dropped: drops.total,
    droppedBy: drops.byReason(),
    available: l.available,
    accepting: l.accepting,
    upstreams: outlets.map((o) => ({
      ...o.client.stats(),
      breaker: o.breaker.state,
      backlog: o.backlog(ring.tail),
      inFlight: o.inFlightItems,
      retried: o.retried,
      overrun: o.overrun,
      expired: o.expired,
      batching: o.batching,
    })),
  };
}
