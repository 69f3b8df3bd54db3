/**
 * The connections to the upcoming leaders (docs/protocol.md#forwarding): on
 * each new slot, one is opened to every leader of the window (the current one
 * and `leaders_ahead` after it, one more than a send uses, so the next
 * leader's handshake is done before its first slot) and the ones no longer in
 * it are closed. A send for a leader without one opens it on the spot (a cold
 * send, counted). A failed handshake is not retried for a second, so a dead
 * leader costs one handshake time-out per second, not one per transaction.
 */
import { LeaderConn, type QuicLib, type SendDone } from './conn.js';
import type { TpuIdentity } from './identity.js';
import type { Leader } from './leaders.js';
import { TpuStats } from './stats.js';

const RETRY_AFTER_FAIL_MS = 1_000;

/** What the route and the metrics use of a pool: this one, or the same on a thread of its own (pool-thread.ts). */
export interface LeaderPool {
  readonly stats: TpuStats;
  readonly open: number;
  window(leaders: readonly Leader[]): void;
  send(l: Leader, bytes: Uint8Array, done: SendDone): void;
  close(): Promise<void>;
}

export class TpuPool implements LeaderPool {
  private readonly conns = new Map<string, LeaderConn>();
  readonly stats = new TpuStats();
  private closed = false;

  constructor(
    private readonly lib: QuicLib,
    private readonly me: TpuIdentity,
    private readonly handshakeTimeoutMs?: number,
  ) {}

  get open(): number {
    let n = 0;
    for (const c of this.conns.values()) if (c.state === 'open') n++;
    return n;
  }

  /** The window moved: open what it holds, close what left it. */
  window(leaders: readonly Leader[]): void {
    if (this.closed) return;
    const keep = new Set<string>();
    for (const l of leaders) {
      if (l.address === null) continue;
      keep.add(l.identity);
      this.conn(l.identity, l.address);
    }
    for (const [id, c] of this.conns) {
      if (!keep.has(id)) {
        this.conns.delete(id);
        void c.close();
      }
    }
  }

  /** One transaction to one leader; `done` once, maybe at once. */
  send(l: Leader, bytes: Uint8Array, done: SendDone): void {
    if (this.closed) return done('skipped', 'shutting down');
    if (l.address === null) return done('skipped', 'no TPU QUIC address for this leader in getClusterNodes');
    const c = this.conn(l.identity, l.address);
    this.stats.sendsAt(c.state === 'open');
    c.send(bytes, (r, why) => {
      this.stats.result(r);
      done(r, why);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(all.map((c) => c.close()));
  }

  /** The leader's connection: the one there is, or a new one when there is none, it closed, it moved, or it failed over a second ago. */
  private conn(identity: string, address: string): LeaderConn {
    const c = this.conns.get(identity);
    const stale = c !== undefined && (c.state === 'closed' || c.address !== address || (c.state === 'failed' && performance.now() - c.failedAt > RETRY_AFTER_FAIL_MS));
    if (c !== undefined && !stale) return c;
    if (c !== undefined) void c.close();
    this.stats.handshakes++;
    const n = new LeaderConn(
      identity,
      address,
      this.lib,
      this.me,
      (x) => this.stats.opened(x.handshakeMs),
      () => this.stats.handshakeFailures++,
      this.handshakeTimeoutMs,
    );
    this.conns.set(identity, n);
    return n;
  }
}
