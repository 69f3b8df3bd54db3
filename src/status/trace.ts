/**
 * One admitted transaction's trace on this node (docs/protocol.md#status):
 * its state, each upstream attempt and its answer, and its end. The tracker
 * (tracker.ts) holds and finds traces; view.ts turns one into the status
 * object a reader gets.
 */
import { requestSeq } from './request-id.js';
import type { ChainFacts, LandingState, StatusState } from '../shared/status.js';

/** What a trace can say before the chain does; `unknown` and `expired` are what an id without one reads. */
type TrackedState = Exclude<StatusState, 'unknown' | 'expired' | LandingState>;

/** What the chain said about a forwarded transaction (docs/protocol.md#status). */
export interface Landed {
  state: LandingState;
  chain: ChainFacts;
  /** When the relay saw it. */
  at: number;
  ackToLandedMs: number | null;
  /** Still followed (a higher confirmation level may come). */
  following: boolean;
  /** A bundle's members, in order. */
  transactions?: readonly { id: string; state: LandingState; chain: ChainFacts }[];
}

/** What landing needs to follow a transaction once it is forwarded: its recent blockhash (Solana) or sender and nonce (EVM). */
type LandingRef =
  | { lane: string; blockhash: string; members?: readonly { signature: string; blockhash: string }[] }
  | { lane: string; from: string; nonce: bigint };

/** One request to one upstream carrying the transaction. */
interface Attempt {
  upstream: string;
  /** 1 for the first request to this upstream, then each resend. */
  attempt: number;
  sentAt: number;
  /** 0 until answered. */
  answeredAt: number;
  /** `ok`: the upstream took it; `rejected`: it answered with an error; `failed`: no usable answer (resent if time allows). */
  outcome: 'ok' | 'rejected' | 'failed' | null;
  httpStatus: number | null;
  error: string | null;
}

/** One send straight to a leader's TPU (src/tpu/route.ts), filled in when the connection says what became of it. */
export interface LeaderSend {
  /** `tpu:<leader identity>`. */
  upstream: string;
  /** The slot it was sent for: the first of the leader's that the send covers. */
  slot: number;
  /** The leader's QUIC TPU `host:port`; null when the cluster lists none. */
  address: string | null;
  sentAt: number;
  /** 0 until the connection said. */
  doneAt: number;
  result: 'written' | 'connect_failed' | 'skipped' | null;
  error: string | null;
}

/**
 * One admitted transaction's trace. The first upstream attempt lives in the
 * trace's own fields (the usual case: one upstream, one request), later ones
 * in a list: one object per transaction, which matters for the garbage
 * collector with a couple of hundred thousand of them held.
 */
export class Trace {
  state: TrackedState = 'queued';
  reason: string | null = null;
  /** When it ended (0: not yet). With `receivedAt` these are its events. */
  endedAt = 0;
  /** The first attempt (`up0` null: none yet). */
  private up0: string | null = null;
  private sent0 = 0;
  private answered0 = 0;
  private outcome0: Attempt['outcome'] = null;
  private http0: number | null = null;
  private error0: string | null = null;
  /** Attempts after the first. */
  private more: Attempt[] | null = null;
  /** Sends to leaders' TPU ports, where that route is on (null: none). */
  leaderSends: LeaderSend[] | null = null;
  /** An EVM batch's items, by id (their traces live on their own). */
  items: readonly string[] | null = null;
  /** Findable by its transaction id (a duplicate of a trace still held is not). */
  indexed = false;
  /** A second id it is findable by: a bundle's Jito bundle id (its own id is its first signature). */
  alias: string | null = null;
  /** In the tracker (not evicted nor forgotten). */
  held = false;
  /** Its request's counter (`requestSeq`): where the request ring holds it; -1 for none. */
  readonly seq: number;
  /** Set where the relay follows its family on chain, from its decode. */
  landingRef: LandingRef | null = null;
  /** What the chain said (null: nothing yet, or not followed). */
  landed: Landed | null = null;
  /** Told of the end, for subscribers (null: no feed). */
  owner: { changed(t: Trace): void; forwarded?(t: Trace): void } | null = null;
  /** When it was kept past retention in its compact form (0: not): its end and what the chain said, no attempts. */
  keptAt = 0;

  constructor(
    /** Hash (EVM), first signature (Solana, bundles) or batch_id. */
    readonly id: string,
    readonly requestId: string,
    readonly accountId: number,
    readonly chain: 'evm' | 'solana',
    readonly door: string,
    readonly receivedAt: number,
  ) {
    this.seq = requestSeq(requestId);
  }

  /** Whether any request carried it. */
  get tried(): boolean {
    return this.up0 !== null;
  }

  /** Every attempt, in order (for reads). */
  attempts(): Attempt[] {
    if (this.up0 === null) return [];
    const first: Attempt = { upstream: this.up0, attempt: 1, sentAt: this.sent0, answeredAt: this.answered0, outcome: this.outcome0, httpStatus: this.http0, error: this.error0 };
    return this.more === null ? [first] : [first, ...this.more];
  }

  /** A request carrying it went to `upstream`. */
  sent(upstream: string, now: number): void {
    if (this.state !== 'queued') return;
    if (this.up0 === null) {
      this.up0 = upstream;
      this.sent0 = now;
      return;
    }
    let n = this.up0 === upstream ? 1 : 0;
    const all = (this.more ??= []);
    for (const a of all) if (a.upstream === upstream) n++;
    all.push({ upstream, attempt: n + 1, sentAt: now, answeredAt: 0, outcome: null, httpStatus: null, error: null });
  }

  /** `upstream` answered its latest request for it. */
  answered(upstream: string, now: number, outcome: 'ok' | 'rejected' | 'failed', httpStatus: number | null, error: string | null): void {
    const all = this.more;
    if (all !== null) {
      for (let i = all.length - 1; i >= 0; i--) {
        const a = all[i]!;
        if (a.upstream !== upstream || a.answeredAt !== 0) continue;
        a.answeredAt = now;
        a.outcome = outcome;
        a.httpStatus = httpStatus;
        a.error = error;
        return;
      }
    }
    if (this.up0 === upstream && this.answered0 === 0) {
      this.answered0 = now;
      this.outcome0 = outcome;
      this.http0 = httpStatus;
      this.error0 = error;
    }
  }

  /** The end: every upstream is done with it. */
  final(state: TrackedState, reason: string | null, now: number): void {
    if (this.state !== 'queued') return;
    this.state = state;
    this.reason = reason;
    this.endedAt = now;
    this.owner?.changed(this);
    if (state === 'forwarded') this.owner?.forwarded?.(this);
  }

  /** Past retention, ended: only what a late reader needs stays (state, reason, chain facts), the attempts go. */
  compact(now: number): void {
    this.up0 = null;
    this.more = null;
    this.leaderSends = null;
    this.owner = null;
    this.keptAt = now;
  }

  /** The chain's word on it, once it was forwarded. */
  land(l: Landed): void {
    if (this.state !== 'forwarded') return;
    this.landed = l;
    this.owner?.changed(this);
  }
}
