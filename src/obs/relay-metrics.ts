/**
 * The relay's metrics (docs/operations.md): counters and gauges read from
 * the parts when /metrics is scraped, so the hot path only bumps plain
 * numbers. Labels are lanes, doors, codes and upstream origins: never an
 * account, a key or a URL path (where upstream API keys live).
 */
import type { Metrics } from './metrics.js';
import { LABEL_SEPARATOR, labelled, type SeriesData } from './metrics.js';
import { FORWARD_BUCKETS } from '../forward/upstream.js';
import type { ServiceStats } from './service-stats.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { UdpIngress } from '../ingress/udp.js';
import type { BatchStore } from '../store/batches.js';
import type { PgRegistry } from '../store/pg-registry.js';

interface RelayParts {
  /** Every HTTP service's figures, added up (the main thread's and the acceptor threads'). */
  stats: () => ServiceStats;
  /** The same, one per service. */
  services: () => ServiceStats[];
  dedup: DedupFilter;
  udp: UdpIngress | null;
  batches: BatchStore;
  /** `node.name`: the one label of txrelay_node_info. */
  node: string;
  /** Postgres registry mode only. */
  registry: PgRegistry | null;
}

type Sample = [Record<string, string>, number];

export function registerRelayMetrics(m: Metrics, p: RelayParts): void {
  const by = (r: Record<string, number>, label: string): Sample[] => Object.entries(r).map(([k, n]): Sample => [{ [label]: k }, n]);
  m.gauge('txrelay_node_info', 'Always 1; the node label is node.name.', ['node'], () => [[{ node: p.node }, 1]]);
  const reg = p.registry;
  if (reg !== null) {
    const feed = reg.feed;
    // -1 until the replica has ever synced (a node that never synced does not start, so only at start-up).
    m.gauge('txrelay_registry_staleness_seconds', 'Seconds since this node\'s account replica was last known current with PostgreSQL.', [], () => {
      const s = feed.staleness();
      return [[{}, Number.isFinite(s) ? s : -1]];
    });
    m.gauge('txrelay_registry_connected', '1 while the change feed\'s PostgreSQL connection is up.', [], () => [[{}, feed.connected ? 1 : 0]]);
    m.gauge('txrelay_registry_change', 'The last account change applied to the replica (its seq in the change log).', [], () => [[{}, feed.seq]]);
    m.counter('txrelay_registry_changes_applied_total', 'Account changes applied from the change log.', [], () => [[{}, feed.applied]]);
    m.counter('txrelay_registry_resyncs_total', 'Full resyncs of the replica from a snapshot (first sync, or a position past the change log\'s retention).', [], () => [[{}, feed.resyncs]]);
    m.gauge('txrelay_registry_accounts', 'Live accounts in the replica.', [], () => [[{}, reg.live]]);
  }
  // Every lane from the start, at 0: a series that first appears above 0 hides that increase from rate().
  const perLane = (r: Record<string, number>): Sample[] => by({ ...Object.fromEntries(p.stats().lanes.map((s) => [s.lane, 0])), ...r }, 'lane');
  m.counter('txrelay_admitted_total', 'Transactions admitted and queued for forwarding, by lane.', ['lane'], () => perLane(p.stats().admitted));
  m.counter('txrelay_duplicates_total', 'Submissions recognised as duplicates on this node, by lane.', ['lane'], () => perLane(p.stats().duplicates));
  m.counter('txrelay_rejected_total', 'Submissions rejected, by door and error code.', ['door', 'code'], () =>
    Object.entries(p.stats().rejectedByDoor).map(([key, n]): Sample => {
      const [door, code] = key.split(LABEL_SEPARATOR);
      return [{ door: door!, code: code! }, n];
    }),
  );
  m.counter('txrelay_udp_datagrams_total', 'UDP datagrams by outcome (everything but admitted/duplicate was dropped).', ['outcome'], () =>
    p.udp ? labelled(p.udp.outcomes, 'outcome') : [],
  );
  m.gauge('txrelay_udp_sockets', 'UDP sockets bound to the UDP port (more than one only where the runtime has SO_REUSEPORT).', [], () => [[{}, p.udp ? p.udp.received.length : 0]]);
  m.counter('txrelay_udp_socket_datagrams_total', 'UDP datagrams received by each socket of the SO_REUSEPORT pool.', ['socket'], () =>
    p.udp ? p.udp.received.map((n, i): Sample => [{ socket: String(i) }, n]) : [],
  );
  m.counter('txrelay_acceptor_requests_total', 'Requests answered by each HTTP service: `main`, or an acceptor thread by index (http.acceptors).', ['acceptor'], () =>
    p.services().map((s): Sample => [{ acceptor: s.name }, s.accept.reduce((n, [, series]) => n + series.count, 0)]),
  );
  const v = () => p.stats().verify;
  m.counter('txrelay_verify_jobs_total', 'Transaction checks by the thread that ran them: an acceptor (inline, or at the end of its event-loop turn) or a verification worker.', ['where'], () => [
    [{ where: 'acceptor' }, v().acceptor],
    [{ where: 'worker' }, v().workers],
  ]);
  m.counter('txrelay_verify_worker_busy_seconds_total', 'Time verification workers spent checking, claim to completion, summed over workers: its rate is how many cores of checking they did (at most workers.threads).', [], () => [
    [{}, v().workerBusyMs / 1000],
  ]);
  m.counter('txrelay_verify_failed_total', 'Checks that failed on this node rather than on the transaction (answered 503 retry-safe).', [], () => [[{}, v().internal]]);
  m.counter('txrelay_verify_worker_restarts_total', 'Verification workers restarted after dying.', [], () => [[{}, v().restarts]]);
  m.counter('txrelay_shed_total', 'Arrivals shed by the queue controller, by reason (standing queue: CoDel control law; over_max: estimated wait over limits.queue_max_ms; expired: admitted, then waited past it before its check).', ['reason'], () => {
    const s = p.stats();
    return [
      [{ reason: 'standing' }, s.shed.standing],
      [{ reason: 'over_max' }, s.shed.overMax],
      [{ reason: 'expired' }, s.verify.expired],
    ];
  });
  m.gauge('txrelay_verify_queue_seconds', 'Estimated time a check submitted now would wait for a verifier, in seconds (the longest among the acceptors).', [], () => [[{}, p.stats().queueMs / 1000]]);
  m.gauge('txrelay_slab_used_bytes', 'Bytes of in-flight transactions in the slabs.', [], () => [[{}, p.stats().slabUsed]]);
  m.gauge('txrelay_body_buffered_bytes', 'Request body bytes held while their bodies are read (bound: http.max_buffered_body_bytes per HTTP thread).', [], () => [[{}, p.stats().bodyBytes]]);
  m.gauge('txrelay_websockets_open', 'WebSockets open on the /ws door.', [], () => [[{}, p.stats().sockets]]);
  m.counter('txrelay_batch_records_refused_total', "EVM batches refused with 429 before a receive record was written: the account's record budget was spent.", [], () => [
    [{}, p.stats().refusedRecords],
  ]);
  m.counter('txrelay_batch_outcome_failures_total', 'Batch outcomes that could not be made durable (the record keeps its hashes; the answer was sent).', [], () => [
    [{}, p.batches.outcomeWriteFailures],
  ]);
  m.gauge('txrelay_batch_upload_backlog', 'Batch records not yet uploaded to PostgreSQL.', [], () => [[{}, p.batches.backlog()]]);
  m.gauge('txrelay_dedup_capacity', 'Transactions the duplicate table holds at once (dedup.capacity).', [], () => [[{}, p.dedup.capacity]]);
  m.counter('txrelay_dedup_fresh_evictions_total', 'Dedup entries evicted while still inside the window (table overflow).', [], () => [[{}, p.dedup.freshEvictions]]);
  const lanes = () => p.stats().lanes;
  m.gauge('txrelay_lane_depth', 'Transactions waiting in each forwarding lane.', ['lane'], () => lanes().map((s): Sample => [{ lane: s.lane }, s.depth]));
  m.counter('txrelay_lane_forwarded_total', 'Transactions forwarded, by lane.', ['lane'], () => lanes().map((s): Sample => [{ lane: s.lane }, s.forwarded]));
  m.counter(
    'txrelay_lane_dropped_total',
    'Admitted transactions that ended with no upstream accepting them, by reason (rejected: refused by every upstream that answered; expired: maximum age reached; shutdown: lanes closed without a drain, nothing written down; expired_after_restart: written down at a stop, older than solana.spill_max_age_s at the next start).',
    ['lane', 'reason'],
    () => lanes().flatMap((s) => Object.entries(s.droppedBy).map(([reason, n]): Sample => [{ lane: s.lane, reason }, n])),
  );
  // Per upstream, labelled by origin only: a path or query may carry an API key.
  const upstreamItems = () =>
    lanes().flatMap((s) =>
      s.upstreams.flatMap((u) =>
        (
          [
            ['ok', u.ok],
            ['rpc_error', u.rpcErrors],
            ['http_error', u.httpErrors],
            ['timeout', u.timeouts],
            ['connection_error', u.connErrors],
            ['retried', u.retried],
            ['overrun', u.overrun],
            ['expired', u.expired],
          ] as const
        ).map(([outcome, n]): Sample => [{ lane: s.lane, upstream: u.upstream, outcome }, n]),
      ),
    );
  m.counter('txrelay_upstream_items_total', 'Forwarded items per upstream by outcome (retried: put back for a resend after a transport failure; overrun: given up after falling a whole queue behind another upstream; expired: given up at the maximum age).', ['lane', 'upstream', 'outcome'], upstreamItems);
  m.histogram(
    'txrelay_upstream_request_seconds',
    'Time from writing a request to an upstream to its whole answer, per upstream (answered requests only; time-outs and connection failures are counted in txrelay_upstream_items_total).',
    ['lane', 'upstream'],
    FORWARD_BUCKETS,
    () => lanes().flatMap((s) => s.upstreams.map((u): [string, SeriesData] => [s.lane + LABEL_SEPARATOR + u.upstream, u.latency])),
  );
  m.gauge("txrelay_upstream_breaker_open", "Whether an upstream's circuit breaker is open (1) or not (0).", ['lane', 'upstream'], () =>
    lanes().flatMap((s) => s.upstreams.map((u): Sample => [{ lane: s.lane, upstream: u.upstream }, u.breaker === 'closed' ? 0 : 1])),
  );
  m.counter('txrelay_lane_discarded_total', 'Admitted transactions dropped because the lane has no upstream (dry run).', ['lane'], () => lanes().map((s): Sample => [{ lane: s.lane }, s.discarded]));
}
