/**
 * What happened to each admitted transaction on this node after its
 * acknowledgement (docs/protocol.md#status): queued, each upstream attempt
 * and its answer, and the end (forwarded, upstream_rejected, failed, dropped),
 * or a duplicate naming the first request; then, where the node follows the
 * family on chain (src/landing/), what the chain said: landed, landed_failed
 * or not_landed.
 *
 * Per account: traces are found by (account, id), so another account sending
 * the same public transaction never changes what its sender reads.
 *
 * Bounded: entries leave after `retentionMs`, oldest first; when `maxEntries`
 * are held, the account holding the most loses its oldest, so a busy account
 * cannot push out another's (each keeps up to an equal share). An id that
 * left is remembered (by account, within the same bounds) so it answers
 * `expired` rather than `unknown`. The hot path pays one object per admitted
 * transaction and one per upstream attempt; everything else happens when
 * someone reads a status.
 */
import { requestSeq } from './request-id.js';
import type { StatusFeed } from './feed.js';
import { Trace, type Landed } from './trace.js';
import { statusView, unknownStatus, type StatusView } from './view.js';

// What the pipeline, the lanes and the doors take from here, beside the tracker.
export { Trace } from './trace.js';
export { mergeStatuses, unknownStatus, type StatusView } from './view.js';

/** Landing as the tracker sees it (src/landing/): whether a family is followed on chain, how far behind, and where a forwarded trace goes to be followed. */
export interface LandingHost {
  tracks(chain: 'evm' | 'solana'): boolean;
  /** Tracking has fallen behind (the chain RPC slow or down). */
  behind(chain: 'evm' | 'solana'): boolean;
  follow(t: Trace): void;
}

interface TrackerOptions {
  retentionMs: number;
  maxEntries: number;
  node: string;
  now?: () => number;
  /** Where state changes go for the WebSocket door's subscribers. */
  feed?: StatusFeed | null;
  /** Null or absent: no family is followed past `forwarded`. */
  landing?: LandingHost | null;
  /** How long an ended status outlives retention in its compact form (0 or absent: it reads `expired` at once). */
  finalRetentionMs?: number;
}

/** One account's traces held, oldest first (from `head`). */
class Share {
  q: Trace[] = [];
  head = 0;
  constructor(readonly accountId: number) {}
  get count(): number {
    return this.q.length - this.head;
  }
}

/**
 * What the id map holds for one id: the trace or tombstone (an account id) of
 * the one account that sent it, or, once several accounts did, each one's by
 * account. The common case costs no key or map of its own.
 */
type Entry = Trace | number | Map<number, Trace | number>;
const accountOf = (v: Trace | number): number => (typeof v === 'number' ? v : v.accountId);

export class Tracker {
  /**
   * Transaction id -> per account, its trace while held, then the account id
   * (a tombstone: the id reads `expired` to that account) until as many newer
   * ids have left (docs/protocol.md#status: ids are per account).
   */
  private readonly byId = new Map<string, Entry>();
  /** Every trace held, oldest first (from `head`), and some evicted ones (`dead`): what retention walks. */
  private queue: Trace[] = [];
  private head = 0;
  private dead = 0;
  private live = 0;
  /** Each account's traces held. */
  private readonly shares = new Map<number, Share>();
  /** The account last found holding the most: it loses its oldest while over an equal share. */
  private victim: Share | null = null;
  /** Tombstoned ids and their accounts, oldest first (from `goneHead`). */
  private gone: string[] = [];
  private goneBy: number[] = [];
  private goneHead = 0;
  /** Request counter -> the request's trace (its first, or its batch), a ring the size of the cap. */
  private readonly byRequest: (Trace | undefined)[];
  /** Request id -> trace of a request whose ring slot a newer request took while it was still held. */
  private readonly displaced = new Map<string, Trace>();
  private readonly now: () => number;
  private readonly keepMs: number;

  constructor(private readonly o: TrackerOptions) {
    this.now = o.now ?? Date.now;
    this.keepMs = o.finalRetentionMs ?? 0;
    this.byRequest = new Array<Trace | undefined>(o.maxEntries).fill(undefined);
  }

  /** Traces held. */
  get size(): number {
    return this.live;
  }

  /** Traces held for one account. */
  heldBy(accountId: number): number {
    return this.shares.get(accountId)?.count ?? 0;
  }

  /** A new trace, findable by its id and its request id; the oldest leave to keep the bounds. */
  open(id: string, requestId: string, accountId: number, chain: 'evm' | 'solana', door: string): Trace {
    const t = new Trace(id, requestId, accountId, chain, door, this.now());
    this.add(t, true, false);
    if (this.o.feed || this.o.landing) t.owner = this;
    if (this.o.feed) this.changed(t);
    return t;
  }

  /** An EVM batch: its items' traces exist; the batch answers for its batch_id and for the request id. */
  batch(batchId: string, requestId: string, accountId: number, door: string, items: readonly string[]): Trace {
    const t = new Trace(batchId, requestId, accountId, 'evm', door, this.now());
    t.items = items;
    this.add(t, true, true);
    return t;
  }

  /**
   * A duplicate: final at once, naming the request that first brought the
   * transaction when this node still traces it for the same account.
   * Findable by its request id; by the transaction's id only when no earlier
   * trace of the same account holds it. Another account's trace of the same
   * transaction is neither named nor touched.
   */
  duplicate(id: string, requestId: string, accountId: number, chain: 'evm' | 'solana', door: string): Trace {
    const t = new Trace(id, requestId, accountId, chain, door, this.now());
    const first = this.idFor(id, accountId);
    const mine = typeof first === 'object' && first.held;
    t.final('duplicate', mine ? `duplicate of request ${first.requestId}` : 'a duplicate of a transaction this node saw within its duplicate window', t.receivedAt);
    this.add(t, !mine, false);
    this.changed(t);
    return t;
  }

  /** A trace opened, ended or landed: its view to the subscribers of its account, if any. */
  changed(t: Trace): void {
    const feed = this.o.feed;
    if (feed && feed.watched(t.accountId)) feed.publish(t.accountId, this.view(t));
  }

  /** Whether forwarded traces of this family are followed on chain: only then does the pipeline record what landing needs. */
  follows(chain: 'evm' | 'solana'): boolean {
    return this.o.landing?.tracks(chain) ?? false;
  }

  /**
   * A bundle's trace is findable by the id `sendBundle` answered too (Jito's
   * bundle id, docs/protocol.md#status), while it is held; like its first
   * signature, another account's bundle id reads `unknown`.
   */
  alias(t: Trace, id: string): void {
    if (!t.held || !t.indexed || this.idFor(id, t.accountId) !== undefined) return;
    t.alias = id;
    this.setId(id, t.accountId, t);
  }

  /** A trace forwarded: followed on chain where its family is and its decode told how. */
  forwarded(t: Trace): void {
    const l = this.o.landing;
    if (l && t.landingRef !== null && l.tracks(t.chain)) l.follow(t);
  }

  /** The chain's word on transaction `id`, for every account's trace of it still held. */
  landed(id: string, l: Landed): void {
    const e = this.byId.get(id);
    if (e === undefined) return;
    if (e instanceof Map) {
      for (const v of e.values()) if (typeof v === 'object') v.land(l);
    } else if (typeof e === 'object') e.land(l);
  }

  private view(t: Trace): StatusView {
    const l = this.o.landing;
    return statusView(t, this.o.node, (x, a) => this.find(x, a), l ? { tracks: l.tracks(t.chain), behind: l.behind(t.chain) } : null);
  }

  /** The trace of `id` (a transaction's, or a request's) as account `accountId` may see it. */
  find(id: string, accountId: number): Trace | undefined {
    const seq = requestSeq(id);
    let t: Trace | number | undefined;
    if (seq > 0) {
      t = this.byRequest[seq % this.byRequest.length];
      if (t === undefined || t.requestId !== id) t = this.displaced.get(id);
    } else t = this.idFor(id, accountId);
    return typeof t === 'object' && t.accountId === accountId && (t.held || this.now() - t.keptAt < this.keepMs) ? t : undefined;
  }

  /** A trace whose transaction was not queued after all: it leaves at once, as if never made. */
  forget(t: Trace): void {
    if (!t.held) return;
    const i = this.queue.lastIndexOf(t);
    if (i >= this.head) this.queue.splice(i, 1);
    this.drop(t, false);
  }

  /** The status of `id` as account `accountId` may see it: another account's id is `unknown`, exactly as one never sent. */
  status(id: string, accountId: number): StatusView {
    this.evict(this.now());
    const t = this.find(id, accountId);
    if (t !== undefined) return this.view(t);
    const gone = this.idFor(id, accountId);
    // A tombstone, or a compact status past its own retention: the id was this account's.
    return unknownStatus(id, this.o.node, gone === accountId || (typeof gone === 'object' && gone.accountId === accountId) ? 'expired' : 'unknown');
  }

  /**
   * Drops what is past retention, then, to keep `room` free under the count,
   * the oldest of the account holding the most (also called on reads).
   */
  evict(now: number, room = 0, adder = -1): void {
    const limit = now - this.o.retentionMs;
    const q = this.queue;
    while (this.head < q.length) {
      const t = q[this.head]!;
      if (t.held && t.receivedAt > limit) break;
      q[this.head++] = undefined as unknown as Trace;
      if (t.held) this.drop(t, true);
      else this.dead--;
    }
    while (this.live > 0 && this.live + room > this.o.maxEntries) {
      const s = this.loser(adder);
      this.drop(s.q[s.head]!, true);
      this.dead++;
    }
    if ((this.head > 1024 && this.head * 2 > q.length) || (this.dead > 1024 && this.dead * 2 > q.length - this.head)) {
      this.queue = q.slice(this.head).filter((t) => t.held);
      this.head = 0;
      this.dead = 0;
    }
    // Tombstones are kept within the same count.
    const g = this.gone;
    while (g.length - this.goneHead > this.o.maxEntries) {
      const id = g[this.goneHead]!;
      const by = this.goneBy[this.goneHead]!;
      g[this.goneHead++] = undefined as unknown as string;
      const v = this.idFor(id, by);
      if (typeof v === 'number' || (v !== undefined && !v.held)) this.unsetId(id, by);
    }
    if (this.goneHead > 1024 && this.goneHead * 2 > g.length) {
      this.gone = g.slice(this.goneHead);
      this.goneBy = this.goneBy.slice(this.goneHead);
      this.goneHead = 0;
    }
  }

  /**
   * Whose oldest trace leaves for the count: the account found holding the
   * most, or the adding account when it holds as many. An account under an
   * equal share (the cap over the accounts holding statuses) so never loses
   * one to another's admission. The scan for the most is repeated only once
   * the last one found has come down to an equal share.
   */
  private loser(adder: number): Share {
    const n = this.shares.size;
    let v = this.victim;
    if (v === null || v.count === 0 || v.count * n < this.live) {
      for (const s of this.shares.values()) if (v === null || v.count === 0 || s.count > v.count) v = s;
      this.victim = v;
    }
    const mine = adder >= 0 ? this.shares.get(adder) : undefined;
    return mine !== undefined && mine.count >= v!.count ? mine : v!;
  }

  /** `t` leaves its account's share, its ids and the request ring; `expire`: its id reads expired from now on. */
  private drop(t: Trace, expire: boolean): void {
    t.held = false;
    this.live--;
    const s = this.shares.get(t.accountId)!;
    if (s.q[s.head] === t) s.q[s.head++] = undefined as unknown as Trace;
    else s.q.splice(s.q.lastIndexOf(t), 1);
    if (s.count === 0) {
      this.shares.delete(t.accountId);
      if (this.victim === s) this.victim = null;
    } else if (s.head > 256 && s.head * 2 > s.q.length) {
      s.q = s.q.slice(s.head);
      s.head = 0;
    }
    // Kept in its compact form: ended, no batch (a batch reads its items), kept within the tombstones' count.
    const keep = expire && t.indexed && this.keepMs > 0 && t.state !== 'queued' && t.items === null;
    if (keep) {
      t.compact(this.now());
      this.gone.push(t.id);
      this.goneBy.push(t.accountId);
      if (t.alias !== null && this.idFor(t.alias, t.accountId) === t) {
        this.gone.push(t.alias);
        this.goneBy.push(t.accountId);
      }
    } else if (t.alias !== null && this.idFor(t.alias, t.accountId) === t) this.unsetId(t.alias, t.accountId);
    if (t.indexed && !keep) {
      if (!expire) {
        if (this.idFor(t.id, t.accountId) === t) this.unsetId(t.id, t.accountId);
      } else {
        // Overwritten in place: one map operation, and the id reads expired from now on.
        this.setId(t.id, t.accountId, t.accountId);
        this.gone.push(t.id);
        this.goneBy.push(t.accountId);
      }
    }
    const seq = t.seq;
    if (seq <= 0) return;
    const slot = seq % this.byRequest.length;
    if (this.byRequest[slot] === t) this.byRequest[slot] = undefined;
    else if (this.displaced.get(t.requestId) === t) this.displaced.delete(t.requestId);
  }

  /** What the id map holds for `id` and this account (trace, tombstone or nothing). */
  private idFor(id: string, accountId: number): Trace | number | undefined {
    const v = this.byId.get(id);
    if (v === undefined || v instanceof Map) return v?.get(accountId);
    return accountOf(v) === accountId ? v : undefined;
  }

  private setId(id: string, accountId: number, x: Trace | number): void {
    const v = this.byId.get(id);
    if (v instanceof Map) v.set(accountId, x);
    else if (v === undefined || accountOf(v) === accountId) this.byId.set(id, x);
    else this.byId.set(id, new Map([[accountOf(v), v], [accountId, x]]));
  }

  private unsetId(id: string, accountId: number): void {
    const v = this.byId.get(id);
    if (v instanceof Map) {
      v.delete(accountId);
      if (v.size === 1) for (const one of v.values()) this.byId.set(id, one);
    } else if (v !== undefined && accountOf(v) === accountId) this.byId.delete(id);
  }

  private add(t: Trace, byTxId: boolean, ownsRequest: boolean): void {
    this.evict(t.receivedAt, 1, t.accountId);
    this.queue.push(t);
    t.held = true;
    this.live++;
    let s = this.shares.get(t.accountId);
    if (s === undefined) this.shares.set(t.accountId, (s = new Share(t.accountId)));
    s.q.push(t);
    if (byTxId) {
      this.setId(t.id, t.accountId, t);
      t.indexed = true;
    }
    // A request's first trace answers for its request id (a JSON-RPC array has several), a batch for its own.
    const seq = t.seq;
    if (seq <= 0) return;
    const slot = seq % this.byRequest.length;
    const held = this.byRequest[slot];
    if (held === undefined || held.requestId === t.requestId) {
      if (ownsRequest || held === undefined) this.byRequest[slot] = t;
      return;
    }
    // Another request still held has the slot (an account's share outlives the ring): the older of the two waits aside.
    if (held.seq < seq) {
      this.displaced.set(held.requestId, held);
      this.byRequest[slot] = t;
    } else if (ownsRequest || !this.displaced.has(t.requestId)) this.displaced.set(t.requestId, t);
  }
}
