/**
 * `txrelay_tpu_*` (docs/operations.md#sending-to-leaders-over-quic): the TPU
 * route's sends by result, its connections and handshakes, the warm-up hit
 * rate's two halves, and how far behind its slot is. No label names a leader:
 * leaders change every 1.6 s, a label per identity would be a series each.
 */
import type { Metrics } from './metrics.js';
import { HANDSHAKE_BUCKETS, type TpuStats } from '../tpu/stats.js';

interface TpuParts {
  stats: TpuStats;
  open: () => number;
  /** Seconds since the tracker last heard of a slot (Infinity before the first). */
  slotAgeSeconds: () => number;
  slot: () => number;
}

export function registerTpuMetrics(m: Metrics, p: TpuParts): void {
  const s = p.stats;
  m.counter('txrelay_tpu_sends_total', 'Transactions handed to a leader\'s TPU connection, by result: written (a stream written and finished), connect_failed (no handshake), skipped (queue full, no address, connection lost).', ['result'], () =>
    Object.entries(s.results).map(([result, n]) => [{ result }, n]),
  );
  m.counter('txrelay_tpu_sends_by_warmth_total', 'TPU sends by whether their leader\'s connection was already open (warm) or not (cold): warm / (warm + cold) is the warm-up hit rate.', ['connection'], () => [
    [{ connection: 'warm' }, s.warm],
    [{ connection: 'cold' }, s.cold],
  ]);
  m.counter('txrelay_tpu_oversize_total', 'Transactions over 1232 bytes, not sent over TPU (the RPC upstreams still get them in mode "also").', [], () => [[{}, s.oversize]]);
  m.counter('txrelay_tpu_no_leader_total', 'Transactions sent while no leader was known for the slot (schedule or slot not read yet): not sent over TPU.', [], () => [[{}, s.noLeader]]);
  m.counter('txrelay_tpu_handshakes_total', 'QUIC handshakes started with leaders.', [], () => [[{}, s.handshakes]]);
  m.counter('txrelay_tpu_handshake_failures_total', 'QUIC handshakes with leaders that failed or timed out.', [], () => [[{}, s.handshakeFailures]]);
  m.histogram('txrelay_tpu_handshake_seconds', 'Time to open a QUIC connection to a leader.', [], HANDSHAKE_BUCKETS, () => [['', { counts: [...s.handshakeSeconds.counts], sum: s.handshakeSeconds.sum, count: s.handshakeSeconds.count }]]);
  m.gauge('txrelay_tpu_connections', 'Open QUIC connections to leaders.', [], () => [[{}, p.open()]]);
  m.gauge('txrelay_tpu_slot', 'The last slot the leader tracker heard of (-1: none yet).', [], () => [[{}, p.slot()]]);
  m.gauge('txrelay_tpu_slot_age_seconds', 'Seconds since the leader tracker last heard of a new slot (-1: never); over a second or two, sends go to stale leaders.', [], () => {
    const a = p.slotAgeSeconds();
    return [[{}, Number.isFinite(a) ? a : -1]];
  });
}
