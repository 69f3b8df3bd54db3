/**
 * Landing: follows forwarded transactions on each family's chain through the
 * operator's read RPC (`solana.chain_rpc`, `evm.chain_rpc`) and tells the
 * status tracker what became of them (docs/protocol.md#status). Off the
 * request path entirely: admission and forwarding never wait on it, and a
 * slow or failed chain RPC only makes tracking fall behind.
 */
import type { Clock } from '../clock.js';
import type { LandingHost } from '../status/tracker.js';
import type { Trace } from '../status/trace.js';
import { BundleJoin } from './bundle-join.js';
import { ChainRpc } from './chain-rpc.js';
import type { LandingEvent, NotLandedReason, SolanaCommitment } from './event.js';
import { EvmLandingWatch } from './evm-watch.js';
import { SolanaLandingWatch } from './solana-watch.js';

interface LandingOptions {
  solana?: { rpc: string; pollMs: number; commitment: SolanaCommitment; timeoutMs: number };
  evm?: { rpc: string; pollMs: number; timeoutMs: number };
  clock: Clock;
  /** Every landing transition, of a transaction or a whole bundle. */
  onLanding: (e: LandingEvent, extra: { lane: string; ackToLandedMs: number | null; transactions?: readonly LandingEvent[] }) => void;
}

export type Family = 'solana' | 'evm';

interface Followed {
  readonly lane: string;
  readonly ackAt: number;
  /** A bundle member: the bundle's id, which gets the joined status instead. */
  readonly bundle?: string;
}

/** Upper bounds of the ack-to-landed histogram, in seconds: a slot is ~0.4 s, an EVM block 2-12 s. */
export const ACK_TO_LANDED_BUCKETS = [0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4];

/** Counters read at each scrape (docs/operations.md#metrics). */
interface LandingStats {
  /** `lane/result` -> count; result is landed, landed_failed or not_landed_<reason>. */
  readonly results: Map<string, number>;
  /** lane -> histogram counts per bucket (last one +Inf), sum in seconds. */
  readonly ackToLanded: Map<string, { counts: number[]; sum: number }>;
}

export class Landing implements LandingStats, LandingHost {
  readonly results = new Map<string, number>();
  readonly ackToLanded = new Map<string, { counts: number[]; sum: number }>();
  readonly rpc: Partial<Record<Family, ChainRpc>> = {};
  private readonly solana?: SolanaLandingWatch;
  private readonly evm?: EvmLandingWatch;
  private readonly followed = new Map<string, Followed>();
  private readonly bundles = new BundleJoin();

  constructor(private readonly o: LandingOptions) {
    if (o.solana) {
      const rpc = (this.rpc.solana = new ChainRpc(o.solana.rpc));
      this.solana = new SolanaLandingWatch(rpc, { commitment: o.solana.commitment, clock: o.clock, maxAgeMs: o.solana.timeoutMs, onLanding: (e) => this.landed(e) });
    }
    if (o.evm) {
      const rpc = (this.rpc.evm = new ChainRpc(o.evm.rpc));
      this.evm = new EvmLandingWatch(rpc, { clock: o.clock, timeoutMs: o.evm.timeoutMs, onLanding: (e) => this.landed(e) });
    }
  }

  /** Whether a family is followed past `forwarded` (statuses say `landing: "not_tracked"` otherwise). */
  tracks(family: Family): boolean {
    return family === 'solana' ? this.solana !== undefined : this.evm !== undefined;
  }

  /** How far behind the family's tracking is, in ms (0: current). */
  lagMs(family: Family): number {
    return (family === 'solana' ? this.solana?.lagMs() : this.evm?.lagMs()) ?? 0;
  }

  /** Behind when the last poll that reached the chain is older than three poll intervals and the RPC's deadline. */
  behind(family: Family): boolean {
    const o = family === 'solana' ? this.o.solana : this.o.evm;
    return o !== undefined && this.lagMs(family) > 3 * o.pollMs + 2_000;
  }

  /**
   * A forwarded trace whose decode told how to follow it. Time to landing
   * counts from its receipt: its acknowledgement left within that request's
   * own latency.
   */
  follow(t: Pick<Trace, 'id' | 'landingRef' | 'receivedAt'>): void {
    const r = t.landingRef;
    if (r === null) return;
    if ('from' in r) this.followEvm(t.id, r.from, r.nonce, r.lane, t.receivedAt);
    else if (r.members) this.followBundle(t.id, r.members, r.lane, t.receivedAt);
    else this.followSolana(t.id, r.blockhash, r.lane, t.receivedAt);
  }

  /** Tracked and not ended. */
  get size(): number {
    return (this.solana?.size ?? 0) + (this.evm?.size ?? 0);
  }

  followSolana(signature: string, blockhash: string, lane: string, ackAt: number): void {
    if (!this.solana) return;
    this.followed.set(signature, { lane, ackAt });
    this.solana.track(signature, blockhash);
  }

  /** A bundle's members, in order; its id gets the joined status (members have none of their own). */
  followBundle(id: string, members: readonly { signature: string; blockhash: string }[], lane: string, ackAt: number): void {
    if (!this.solana) return;
    this.bundles.add(id, members.map((m) => m.signature));
    for (const m of members) {
      this.followed.set(m.signature, { lane, ackAt, bundle: id });
      this.solana.track(m.signature, m.blockhash);
    }
  }

  followEvm(hash: string, from: string, nonce: bigint, lane: string, ackAt: number): void {
    if (!this.evm) return;
    this.followed.set(hash.toLowerCase(), { lane, ackAt });
    this.evm.track(hash, from, nonce);
  }

  start(): void {
    if (this.o.solana) this.solana!.start(this.o.solana.pollMs);
    if (this.o.evm) this.evm!.start(this.o.evm.pollMs);
  }

  /** One round of each family's watcher now, outside the timers (a round already running is not doubled). */
  async poll(): Promise<void> {
    await Promise.all([this.solana?.poll(), this.evm?.poll()]);
  }

  stop(): void {
    this.solana?.stop();
    this.evm?.stop();
    // Its connections' sockets would keep the process alive.
    for (const rpc of Object.values(this.rpc)) void rpc.close().catch(() => {});
  }

  private landed(e: LandingEvent): void {
    const f = this.followed.get(e.id);
    if (!f) return;
    if (e.final) this.followed.delete(e.id);
    const ackToLandedMs = e.state === 'not_landed' ? null : Math.max(0, Math.round(e.at - f.ackAt));
    // Metrics count transactions (a bundle's members too), once each: at the first report.
    if (!this.counted.has(e.id)) {
      this.count(f.lane, e, ackToLandedMs);
      if (!e.final) this.counted.add(e.id);
    } else if (e.final) this.counted.delete(e.id);
    if (f.bundle === undefined) {
      this.o.onLanding(e, { lane: f.lane, ackToLandedMs });
      return;
    }
    const b = this.bundles.offer(e);
    if (b) this.o.onLanding(b.event, { lane: f.lane, ackToLandedMs: b.event.state === 'not_landed' ? null : Math.max(0, Math.round(b.event.at - f.ackAt)), transactions: b.transactions });
  }

  /** Reported at least once, not ended yet. */
  private readonly counted = new Set<string>();

  private count(lane: string, e: LandingEvent, ackToLandedMs: number | null): void {
    const result = e.state === 'not_landed' ? `not_landed_${e.chain.reason as NotLandedReason}` : e.state;
    const k = `${lane}/${result}`;
    this.results.set(k, (this.results.get(k) ?? 0) + 1);
    if (ackToLandedMs === null) return;
    let h = this.ackToLanded.get(lane);
    if (!h) this.ackToLanded.set(lane, (h = { counts: new Array<number>(ACK_TO_LANDED_BUCKETS.length + 1).fill(0), sum: 0 }));
    const s = ackToLandedMs / 1000;
    let i = 0;
    while (i < ACK_TO_LANDED_BUCKETS.length && s > ACK_TO_LANDED_BUCKETS[i]!) i++;
    h.counts[i]!++;
    h.sum += s;
  }
}
