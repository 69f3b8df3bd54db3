/**
 * Follows forwarded Solana signatures on the chain (docs/protocol.md#status):
 * one `getSignatureStatuses` per 256 tracked signatures per poll, and
 * `isBlockhashValid` per distinct recent blockhash (never per transaction)
 * to end the ones that can no longer land. A failing or slow RPC only makes
 * the watcher fall behind (`lagMs`); it catches up on the next good poll.
 */
import type { Clock } from '../clock.js';
import type { ChainRpc } from './chain-rpc.js';
import { PollLoop } from './poll-loop.js';
import type { LandingEvent, LandingListener, SolanaCommitment } from './event.js';

/** getSignatureStatuses takes at most 256 signatures per call. */
export const STATUS_CHUNK = 256;

const LEVEL: Record<SolanaCommitment, number> = { processed: 1, confirmed: 2, finalized: 3 };

interface Tracked {
  readonly blockhash: string;
  readonly since: number;
  /** 0 until the chain first reports it, then the LEVEL it was last seen at. */
  level: number;
  /** What the chain said at that level. */
  last?: LandingEvent;
}

interface HashCheck {
  /** When it was last asked about; 0: never. */
  checkedAt: number;
  valid: boolean;
}

interface SignatureStatus {
  slot: number;
  err: unknown;
  confirmationStatus?: SolanaCommitment | null;
}

interface SolanaWatchOptions {
  /** The level at which a signature stops being followed. */
  commitment: SolanaCommitment;
  onLanding: LandingListener;
  clock: Clock;
  /** How often a blockhash still seen valid is asked about again. */
  blockhashCheckMs?: number;
  /** A signature the chain never reports is ended `timeout` after this long, whatever its blockhash says. */
  maxAgeMs?: number;
}

export class SolanaLandingWatch extends PollLoop {
  private readonly pending = new Map<string, Tracked>();
  private readonly hashes = new Map<string, HashCheck>();
  private readonly target: number;
  private readonly blockhashCheckMs: number;
  private readonly maxAgeMs: number;

  constructor(
    private readonly rpc: ChainRpc,
    private readonly o: SolanaWatchOptions,
  ) {
    super(o.clock);
    this.target = LEVEL[o.commitment];
    this.blockhashCheckMs = o.blockhashCheckMs ?? 2_000;
    this.maxAgeMs = o.maxAgeMs ?? 180_000;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Follows a forwarded signature (base58) sent with the given recent blockhash (base58). */
  track(signature: string, blockhash: string): void {
    if (this.pending.has(signature)) return;
    this.pending.set(signature, { blockhash, since: this.o.clock(), level: 0 });
    if (!this.hashes.has(blockhash)) this.hashes.set(blockhash, { checkedAt: 0, valid: true });
  }

  protected async round(): Promise<void> {
    if (this.pending.size === 0) return;
    await this.readStatuses([...this.pending.keys()]);
    await this.endExpired();
    this.endOverdue();
  }

  private async readStatuses(signatures: string[]): Promise<void> {
    for (let i = 0; i < signatures.length; i += STATUS_CHUNK) {
      const chunk = signatures.slice(i, i + STATUS_CHUNK);
      const res = await this.rpc.call<{ value: (SignatureStatus | null)[] }>('getSignatureStatuses', [chunk, { searchTransactionHistory: false }]);
      const now = this.o.clock();
      for (let j = 0; j < chunk.length; j++) {
        const s = res.value[j];
        if (s) this.seen(chunk[j]!, s, now);
      }
    }
  }

  private seen(signature: string, s: SignatureStatus, now: number): void {
    const t = this.pending.get(signature);
    if (!t) return;
    // An old node leaves confirmationStatus out; its `confirmations: null` meant rooted.
    const confirmation = s.confirmationStatus ?? 'finalized';
    const level = LEVEL[confirmation];
    if (level <= t.level) return;
    t.level = level;
    const final = level >= this.target;
    if (final) this.pending.delete(signature);
    t.last = {
      id: signature,
      state: s.err == null ? 'landed' : 'landed_failed',
      chain: { slot: s.slot, confirmation, err: s.err ?? null },
      final,
      at: now,
    };
    this.o.onLanding(t.last);
  }

  /** Ends the unseen signatures whose blockhash the chain no longer accepts, after one last look at their statuses. */
  private async endExpired(): Promise<void> {
    const now = this.o.clock();
    const waiting = new Map<string, string[]>();
    for (const [sig, t] of this.pending) {
      if (t.level !== 0) continue;
      let list = waiting.get(t.blockhash);
      if (!list) waiting.set(t.blockhash, (list = []));
      list.push(sig);
    }
    // Forget the blockhashes nothing unseen uses any more.
    for (const h of this.hashes.keys()) if (!waiting.has(h)) this.hashes.delete(h);
    const expired: string[] = [];
    for (const [hash, sigs] of waiting) {
      const c = this.hashes.get(hash) ?? { checkedAt: 0, valid: true };
      this.hashes.set(hash, c);
      if (c.valid && now - c.checkedAt >= this.blockhashCheckMs) {
        const r = await this.rpc.call<{ value: boolean }>('isBlockhashValid', [hash, { commitment: 'processed' }]);
        c.checkedAt = this.o.clock();
        c.valid = r.value === true;
      }
      if (!c.valid) expired.push(...sigs);
    }
    if (expired.length === 0) return;
    // It may have landed in the blockhash's last slots, after this round's status read.
    await this.readStatuses(expired);
    const at = this.o.clock();
    for (const sig of expired) {
      const t = this.pending.get(sig);
      if (!t || t.level !== 0) continue;
      this.pending.delete(sig);
      this.o.onLanding({ id: sig, state: 'not_landed', chain: { reason: 'blockhash_expired' }, final: true, at });
    }
  }

  private endOverdue(): void {
    const now = this.o.clock();
    for (const [sig, t] of this.pending) {
      if (now - t.since < this.maxAgeMs) continue;
      this.pending.delete(sig);
      // Seen below the target level: it landed, and the relay stops following it where it was.
      this.o.onLanding(t.last ? { ...t.last, final: true, at: now } : { id: sig, state: 'not_landed', chain: { reason: 'timeout' }, final: true, at: now });
    }
  }
}
