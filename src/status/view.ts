/**
 * The status object of docs/protocol.md#status: how a trace reads, what an
 * id with nothing to show reads, and one answer from several trackers.
 */
import type { Forward, StatusObject, StatusState } from '../shared/status.js';
import type { Trace } from './trace.js';

/** Whether the trace's family is followed on chain, and whether that has fallen behind. */
interface LandingInfo {
  tracks: boolean;
  behind: boolean;
}

/** The status object (src/shared/status.ts, shared with the client) as this node fills it in. */
export interface StatusView extends StatusObject {
  chain: 'evm' | 'solana' | null;
  forwards: (Forward & { upstream_result?: 'accepted' | 'written' | 'connect_failed' | 'skipped' })[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The upstream's JSON-RPC error as answer.ts words it (`rpc CODE: message`), else a transport failure's own words. */
function errorOf(text: string): { code: number | null; message: string } {
  const m = /^rpc (-?\d+|\?)(?:: (.*))?$/s.exec(text);
  if (m === null) return { code: null, message: text };
  return { code: m[1] === '?' ? null : Number(m[1]), message: m[2] ?? 'rpc error' };
}

/** An id with nothing to show: never seen here (or another account's, or tracing is off), or past retention. */
export function unknownStatus(id: string, node: string, state: 'unknown' | 'expired' = 'unknown'): StatusView {
  return { id, request_id: null, chain: null, door: null, node, received_at: null, state, reason: null, events: [], forwards: [] };
}

/**
 * One answer per id from several trackers (acceptor threads, each with its
 * own): the one that saw its first submission, else a duplicate's, else
 * `expired` if one did, else `unknown`.
 */
export function mergeStatuses(lists: readonly (readonly StatusView[])[]): StatusView[] {
  // A duplicate's trace stands for the transaction only where no tracker holds its first submission.
  const rank = (v: StatusView): number => (v.state === 'unknown' ? 0 : v.state === 'expired' ? 1 : v.state === 'duplicate' ? 2 : 3);
  return lists[0]!.map((first, i) => {
    let best = first;
    for (const l of lists) if (rank(l[i]!) > rank(best)) best = l[i]!;
    return best;
  });
}

/**
 * The status object of one trace. A batch reads its items' traces through
 * `find`, so it is as far as they are.
 */
export function statusView(t: Trace, node: string, find: (id: string, accountId: number) => Trace | undefined, landing: LandingInfo | null = null): StatusView {
  let state: StatusState = t.state;
  let reason = t.reason;
  const landed = t.landed;
  if (landed !== null) {
    state = landed.state;
    reason = landed.chain.reason ?? null;
  }
  if (t.items !== null) {
    // A batch is as far as its items: queued while any is, else forwarded if all were, else its first other end.
    const items = t.items.map((x) => find(x, t.accountId));
    const ends = items.map((x) => x?.state ?? 'expired');
    if (ends.includes('queued')) state = 'queued';
    else if (ends.every((s) => s === 'forwarded' || s === 'duplicate')) state = 'forwarded';
    else {
      const k = ends.findIndex((s) => s !== 'forwarded' && s !== 'duplicate');
      state = ends[k] as StatusState;
      reason = `item ${k}: ${items[k]?.reason ?? state}`;
    }
  }
  return {
    id: t.id,
    request_id: t.requestId,
    chain: t.chain,
    door: t.door,
    node,
    received_at: iso(t.receivedAt),
    state,
    reason,
    events: [
      { stage: 'received', at: iso(t.receivedAt) },
      ...(t.endedAt === 0 ? [] : [{ stage: t.state, at: iso(t.endedAt) }]),
      ...(landed === null ? [] : [{ stage: landed.state, at: iso(landed.at) }]),
    ],
    forwards: [
      ...t.attempts().map((a) => ({
        upstream: a.upstream,
        attempt: a.attempt,
        sent_at: iso(a.sentAt),
        latency_ms: a.answeredAt === 0 ? null : hundredths(a.answeredAt - a.sentAt),
        http_status: a.httpStatus,
        ...(a.outcome === 'ok' ? { upstream_result: 'accepted' as const } : {}),
        ...(a.outcome === 'rejected' || a.outcome === 'failed' ? { upstream_error: errorOf(a.error ?? a.outcome) } : {}),
      })),
      ...(t.leaderSends ?? []).map((l) => ({
        upstream: l.upstream,
        attempt: 1,
        sent_at: iso(l.sentAt),
        latency_ms: l.doneAt === 0 ? null : hundredths(l.doneAt - l.sentAt),
        http_status: null,
        slot: l.slot,
        address: l.address,
        ...(l.result !== null ? { upstream_result: l.result } : {}),
        ...(l.result !== null && l.result !== 'written' ? { upstream_error: { code: null, message: l.error ?? l.result } } : {}),
      })),
    ],
    ...(t.keptAt > 0 ? { compact: true as const } : {}),
    ...(t.items !== null ? { items: t.items } : {}),
    ...(landing !== null && t.state === 'forwarded' && t.items === null ? { landing: landingOf(t, landing) } : {}),
    ...(landed === null
      ? {}
      : {
          onchain: {
            ...landed.chain,
            landed_at: iso(landed.at),
            ack_to_landed_ms: landed.ackToLandedMs,
            ...(landed.transactions ? { transactions: landed.transactions.map((x) => ({ id: x.id, state: x.state, chain: x.chain })) } : {}),
          },
        }),
  };
}

function landingOf(t: Trace, l: LandingInfo): NonNullable<StatusView['landing']> {
  if (!l.tracks || (t.landingRef === null && t.landed === null)) return 'not_tracked';
  if (t.landed !== null && !t.landed.following) return 'done';
  return l.behind ? 'behind' : 'following';
}

/** Milliseconds to 0.01 ms (docs/protocol.md#status): the clock's further digits are noise, not precision. */
function hundredths(ms: number): number {
  return Math.round(ms * 100) / 100;
}
