/**
 * `txrelay bench --landed`: after the run, follows every acknowledged
 * transaction's status (docs/protocol.md#status) until the chain's word on it
 * or an end short of the chain, and tells how many landed, failed on chain,
 * did not land (by reason) or had no end in time, and how long from
 * acknowledgement to landing (the node's own `onchain.ack_to_landed_ms`, so
 * the bench's poll interval adds nothing to it). Reads go 100 ids to a
 * `POST /v1/status`, paced under the account's status read rate.
 */
import bs58 from 'bs58';
import { HttpTransport, sleep } from '../client/http.js';
import { fetchStatuses, landedEnd, type StatusObject } from '../client/status.js';
import { initKeccak, keccak256 } from '../chains/evm/hash.js';
import type { Door } from './targets.js';

/** Ids per `POST /v1/status` (its limit). */
const IDS_PER_READ = 100;
/** A round reads every id not ended, then waits at least this long from its start. */
const ROUND_MS = 500;

export interface LandingResult {
  /** Acknowledged transactions followed (a bundle counts once: its status is the bundle's). */
  tracked: number;
  landed: number;
  landedFailed: number;
  /** not_landed, by reason. */
  notLanded: Record<string, number>;
  /** Ends short of the chain (upstream_rejected, failed, dropped, ...), by state. */
  notOnChain: Record<string, number>;
  /** No end within the wait: by the last state read (`unknown` too). */
  unknown: Record<string, number>;
  /** `forwarded` with `landing: "not_tracked"`: the relay follows no chain for this family. */
  notTracked: number;
  /** ms from the relay's acknowledgement to the status that said landed (or landed_failed). */
  ackToLandedMs: { count: number; p50: number; p90: number; p99: number; max: number } | null;
  reads: number;
  readsPerS: number;
  waitedS: number;
  timeoutS: number;
}

/** The status ids of one acknowledged request's transactions: a Solana first signature (one per bundle), an EVM hash. */
export function statusIds(door: Door, txs: readonly Buffer[]): string[] {
  if (door.startsWith('evm-')) return txs.map((t) => '0x' + Buffer.from(keccak256(t)).toString('hex'));
  const sig = (t: Buffer): string => bs58.encode(t.subarray(1, 65)); // after the compact-u16 count 1
  return door === 'solana-bundle' ? [sig(txs[0]!)] : txs.map(sig);
}

interface FollowOptions {
  url: string;
  key: string;
  door: Door;
  ids: readonly string[];
  readsPerS: number;
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (line: string) => void;
}

/** Reads every id until it ends or `timeoutMs` passes. */
export async function followLanding(o: FollowOptions): Promise<LandingResult> {
  if (o.door.startsWith('evm-')) await initKeccak();
  const http = new HttpTransport(o.url, 0);
  const creds: Record<string, string> = o.door.startsWith('evm-') ? { authorization: `Bearer ${o.key}` } : { 'api-key': o.key };
  const gapMs = 1000 / o.readsPerS;
  const t0 = Date.now();
  const deadline = t0 + o.timeoutMs;
  const ended: StatusObject[] = [];
  const last = new Map<string, StatusObject>();
  let pending = [...o.ids];
  let reads = 0;
  let nextRead = t0;
  // A datagram has no acknowledgement: the relay may not have read it yet when first asked.
  const waitWhileUnknown = o.door === 'solana-udp';
  try {
    while (pending.length > 0 && Date.now() < deadline && !o.signal?.aborted) {
      const roundStart = Date.now();
      const still: string[] = [];
      for (let i = 0; i < pending.length; i += IDS_PER_READ) {
        await sleep(Math.max(0, nextRead - Date.now()));
        nextRead = Date.now() + gapMs;
        const chunk = pending.slice(i, i + IDS_PER_READ);
        // 429 and 503 are waited out as the relay advises, a few times over, before the run fails.
        const got = await fetchStatuses(http, o.url, creds, chunk, { budget: { maxRetries: 8, maxWaitMs: 30_000 } });
        reads++;
        got.forEach((s, k) => {
          if (landedEnd(s, { waitWhileUnknown })) ended.push(s);
          else {
            still.push(chunk[k]!);
            last.set(chunk[k]!, s);
          }
        });
      }
      pending = still;
      o.onProgress?.(`landing: ${ended.length}/${o.ids.length} ended, ${reads} status reads, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      if (pending.length > 0) await sleep(Math.max(0, Math.min(ROUND_MS - (Date.now() - roundStart), deadline - Date.now())));
    }
  } finally {
    await http.close();
  }
  return summarize(ended, pending.map((id) => last.get(id)?.state ?? 'unknown'), { reads, readsPerS: o.readsPerS, waitedS: (Date.now() - t0) / 1000, timeoutS: o.timeoutMs / 1000 });
}

/** Counts ended statuses by result, and the ids that never ended by their last state. */
function summarize(ended: readonly StatusObject[], unended: readonly string[], run: Pick<LandingResult, 'reads' | 'readsPerS' | 'waitedS' | 'timeoutS'>): LandingResult {
  const r: LandingResult = { tracked: ended.length + unended.length, landed: 0, landedFailed: 0, notLanded: {}, notOnChain: {}, unknown: {}, notTracked: 0, ackToLandedMs: null, ...run };
  const inc = (m: Record<string, number>, k: string): void => {
    m[k] = (m[k] ?? 0) + 1;
  };
  const ms: number[] = [];
  for (const s of ended) {
    if (s.state === 'landed' || s.state === 'landed_failed') {
      if (s.state === 'landed') r.landed++;
      else r.landedFailed++;
      if (typeof s.onchain?.ack_to_landed_ms === 'number') ms.push(s.onchain.ack_to_landed_ms);
    } else if (s.state === 'not_landed') inc(r.notLanded, s.onchain?.reason ?? s.reason ?? 'unknown');
    else if (s.state === 'forwarded') r.notTracked++;
    else if (s.state === 'unknown') inc(r.unknown, 'unknown');
    else inc(r.notOnChain, s.state);
  }
  for (const st of unended) inc(r.unknown, st);
  if (ms.length > 0) {
    ms.sort((a, b) => a - b);
    // Nearest rank: the smallest value with at least q of the samples at or below it.
    const at = (q: number): number => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil(q * ms.length) - 1))]!;
    r.ackToLandedMs = { count: ms.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: ms[ms.length - 1]! };
  }
  return r;
}

const sum = (m: Record<string, number>): number => Object.values(m).reduce((a, b) => a + b, 0);

/** The landing figures as rows [what, count, % of tracked], for the text and HTML reports. */
export function landingRows(l: LandingResult): [string, number, string][] {
  const pct = (n: number): string => (l.tracked > 0 ? ((100 * n) / l.tracked).toFixed(1) : '-');
  const rows: [string, number][] = [
    ['landed', l.landed],
    ['landed_failed (executed with an error)', l.landedFailed],
    ...Object.entries(l.notLanded).sort().map(([k, v]): [string, number] => [`not_landed: ${k}`, v]),
    ...Object.entries(l.notOnChain).sort().map(([k, v]): [string, number] => [`ended short of the chain: ${k}`, v]),
    ...(l.notTracked > 0 ? [['forwarded, not followed on chain by the relay', l.notTracked] as [string, number]] : []),
    ...Object.entries(l.unknown).sort().map(([k, v]): [string, number] => [`unknown (no end in ${l.timeoutS} s; last read ${k})`, v]),
  ];
  return rows.map(([k, v]) => [k, v, pct(v)]);
}

/** One line of the follow: how many ids, reads, time. */
export function landingHeadline(l: LandingResult): string {
  const unknown = sum(l.unknown);
  return `landing: ${l.tracked.toLocaleString('en-US')} acknowledged transactions followed (warm-up included) for ${l.waitedS.toFixed(1)} s, ${l.reads} status reads at up to ${l.readsPerS}/s${unknown > 0 ? `; ${unknown} without an end` : ''}`;
}
