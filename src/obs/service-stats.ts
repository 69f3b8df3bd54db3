/**
 * What one HTTP service (the main thread's, or an acceptor thread's) has
 * counted, as plain data: it crosses threads by message, and the node's
 * metrics are the sum of every service's (docs/operations.md#metrics).
 */
import type { LaneStats } from '../forward/lane.js';
import { mergeSeries, type SeriesData } from './metrics.js';

export interface ServiceStats {
  /** `main`, or an acceptor thread's index; `node` once merged. */
  name: string;
  admitted: Record<string, number>;
  duplicates: Record<string, number>;
  rejected: Record<string, number>;
  /** Keyed by door and code, joined by LABEL_SEPARATOR. */
  rejectedByDoor: Record<string, number>;
  verify: { acceptor: number; workers: number; internal: number; expired: number; restarts: number; workerBusyMs: number };
  shed: { standing: number; overMax: number };
  /** The longest estimated verification wait among the services. */
  queueMs: number;
  slabUsed: number;
  refusedRecords: number;
  /** Open WebSockets. */
  sockets: number;
  /** Request body bytes held while bodies are read. */
  bodyBytes: number;
  lanes: LaneStats[];
  accept: [string, SeriesData][];
}

/** The node's figures: every service's summed (the longest queue wait, the worst breaker). */
export function mergeStats(all: readonly ServiceStats[]): ServiceStats {
  const out: ServiceStats = {
    name: 'node',
    admitted: {},
    duplicates: {},
    rejected: {},
    rejectedByDoor: {},
    verify: { acceptor: 0, workers: 0, internal: 0, expired: 0, restarts: 0, workerBusyMs: 0 },
    shed: { standing: 0, overMax: 0 },
    queueMs: 0,
    slabUsed: 0,
    refusedRecords: 0,
    sockets: 0,
    bodyBytes: 0,
    lanes: [],
    accept: [],
  };
  const lanes = new Map<string, LaneStats>();
  for (const s of all) {
    addCounts(out.admitted, s.admitted);
    addCounts(out.duplicates, s.duplicates);
    addCounts(out.rejected, s.rejected);
    addCounts(out.rejectedByDoor, s.rejectedByDoor);
    addCounts(out.verify, s.verify);
    addCounts(out.shed, s.shed);
    out.queueMs = Math.max(out.queueMs, s.queueMs);
    out.slabUsed += s.slabUsed;
    out.refusedRecords += s.refusedRecords;
    out.sockets += s.sockets;
    out.bodyBytes += s.bodyBytes;
    out.accept.push(...s.accept);
    for (const l of s.lanes) {
      const m = lanes.get(l.lane);
      lanes.set(l.lane, m === undefined ? structuredClone(l) : mergeLane(m, l));
    }
  }
  out.lanes = [...lanes.values()];
  return out;
}

function addCounts<T extends object>(into: T, from: T): void {
  const a = into as Record<string, number>;
  for (const [k, v] of Object.entries(from as Record<string, number>)) a[k] = (a[k] ?? 0) + v;
}

const BREAKER_ORDER = { closed: 0, 'half-open': 1, open: 2 } as const;

/** One lane's figures from two services: counts add up; a lane is available if either can forward. */
function mergeLane(a: LaneStats, b: LaneStats): LaneStats {
  for (const k of ['depth', 'held', 'outstanding', 'admitted', 'forwarded', 'discarded', 'dropped'] as const) a[k] += b[k];
  addCounts(a.droppedBy, b.droppedBy);
  a.available ||= b.available;
  a.accepting ||= b.accepting;
  a.upstreams.forEach((u, i) => {
    const v = b.upstreams[i]!;
    for (const k of ['requests', 'sent', 'ok', 'rpcErrors', 'httpErrors', 'timeouts', 'connErrors', 'aborted', 'backlog', 'inFlight', 'retried', 'overrun', 'expired'] as const) u[k] += v[k];
    u.lastLatencyMs = Math.max(u.lastLatencyMs, v.lastLatencyMs);
    u.latency = mergeSeries([['', u.latency], ['', v.latency]]).get('')!;
    if (BREAKER_ORDER[v.breaker] > BREAKER_ORDER[u.breaker]) u.breaker = v.breaker;
    u.batching &&= v.batching;
  });
  return a;
}
