/**
 * Pushed status changes (docs/protocol.md#websocket): the WebSocket door's
 * subscribers, by account, on this thread. A change is rendered once, as
 * JSON, and handed to each subscriber at the end of the turn, after the
 * acknowledgement it follows. With acceptor threads a subscriber's socket
 * lives on one thread while the account's transactions may pass through any:
 * `remote` says which accounts other threads watch, and `elsewhere` carries a
 * change to them through the main thread.
 */
import type { StatusView } from './tracker.js';

export interface Subscriber {
  /** `json` is one status object; the subscriber wraps it per subscription. */
  push(json: string): void;
}

export interface FeedLink {
  /** This thread's subscribers of `accountId` came (true) or all went (false). */
  watch(accountId: number, on: boolean): void;
  /** A change other threads' subscribers want. */
  publish(accountId: number, json: string): void;
}

export class StatusFeed {
  private readonly local = new Map<number, Set<Subscriber>>();
  private readonly remote = new Set<number>();
  private pending: { accountId: number; json: string }[] = [];
  private scheduled = false;

  constructor(private readonly link: FeedLink | null = null) {}

  /** Whether anyone, on any thread, wants `accountId`'s changes: the hot path's only question. */
  watched(accountId: number): boolean {
    return this.local.size + this.remote.size > 0 && (this.local.has(accountId) || this.remote.has(accountId));
  }

  add(accountId: number, s: Subscriber): void {
    let set = this.local.get(accountId);
    if (set === undefined) {
      this.local.set(accountId, (set = new Set()));
      this.link?.watch(accountId, true);
    }
    set.add(s);
  }

  remove(accountId: number, s: Subscriber): void {
    const set = this.local.get(accountId);
    if (set === undefined || !set.delete(s) || set.size > 0) return;
    this.local.delete(accountId);
    this.link?.watch(accountId, false);
  }

  /** Other threads watch `accountId` (or stopped). */
  setRemote(accountId: number, on: boolean): void {
    if (on) this.remote.add(accountId);
    else this.remote.delete(accountId);
  }

  /** A change of one of `accountId`'s transactions, traced here. */
  publish(accountId: number, view: StatusView): void {
    const json = JSON.stringify(view);
    if (this.local.has(accountId)) this.queue(accountId, json);
    if (this.remote.has(accountId)) this.link?.publish(accountId, json);
  }

  /** A change traced on another thread, for this thread's subscribers. */
  deliver(accountId: number, json: string): void {
    if (this.local.has(accountId)) this.queue(accountId, json);
  }

  private queue(accountId: number, json: string): void {
    this.pending.push({ accountId, json });
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const out = this.pending;
    this.pending = [];
    for (const { accountId, json } of out) {
      const set = this.local.get(accountId);
      if (set !== undefined) for (const s of set) s.push(json);
    }
  };
}
