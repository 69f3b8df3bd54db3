/**
 * Landing's metrics (docs/operations.md#metrics): what became of forwarded
 * transactions on chain per lane, how long from acknowledgement to landing,
 * how far tracking is behind, and the chain RPC's calls and errors. Labels
 * are lanes, results, families and RPC method names: never a URL (a
 * provider's key may live in it).
 */
import type { Metrics } from './metrics.js';
import { ACK_TO_LANDED_BUCKETS, type Family, type Landing } from '../landing/landing.js';

type Sample = [Record<string, string>, number];

const FAMILIES: readonly Family[] = ['solana', 'evm'];

export function registerLandingMetrics(m: Metrics, landing: Landing, lanes: () => readonly string[]): void {
  m.counter('txrelay_landed_total', 'Forwarded transactions by what the chain said, per lane: landed, landed_failed (on chain, execution failed), not_landed_<reason> (blockhash_expired, replaced, timeout).', ['lane', 'result'], () => {
    const out: Sample[] = [];
    // Every lane's three common results from the start, at 0, so rate() sees the first increase.
    for (const lane of lanes()) for (const r of ['landed', 'landed_failed']) if (!landing.results.has(`${lane}/${r}`)) out.push([{ lane, result: r }, 0]);
    for (const [k, n] of landing.results) {
      const i = k.lastIndexOf('/');
      out.push([{ lane: k.slice(0, i), result: k.slice(i + 1) }, n]);
    }
    return out;
  });
  m.histogram('txrelay_ack_to_landed_seconds', 'From the acknowledgement to the chain first reporting the transaction, per lane.', 'lane', ACK_TO_LANDED_BUCKETS, () =>
    [...landing.ackToLanded].map(([lane, h]) => [lane, { counts: h.counts, sum: h.sum, count: h.counts.reduce((a, b) => a + b, 0) }] as const),
  );
  m.gauge('txrelay_landing_lag_seconds', 'How far landing tracking is behind, per family (0: current; grows while the chain RPC is slow or down).', ['family'], () =>
    FAMILIES.filter((f) => landing.tracks(f)).map((f): Sample => [{ family: f }, landing.lagMs(f) / 1000]),
  );
  m.gauge('txrelay_landing_tracked', 'Forwarded transactions being followed on chain, not ended yet.', [], () => [[{}, landing.size]]);
  const perMethod = (pick: 'calls' | 'errors') => (): Sample[] =>
    FAMILIES.flatMap((family) => [...(landing.rpc[family]?.[pick] ?? [])].map(([method, n]): Sample => [{ family, method }, n]));
  m.counter('txrelay_chain_rpc_calls_total', 'Calls to the chain read RPC (solana.chain_rpc, evm.chain_rpc), by family and method.', ['family', 'method'], perMethod('calls'));
  m.counter('txrelay_chain_rpc_errors_total', 'Chain read RPC calls that failed (transport, time-out or a JSON-RPC error), by family and method.', ['family', 'method'], perMethod('errors'));
}
