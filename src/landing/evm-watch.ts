/**
 * Follows forwarded EVM transactions on the chain (docs/protocol.md#status):
 * one block read per new block, matched against every tracked hash, and a
 * receipt read only for the matches, so the calls grow with blocks, not with
 * tracked transactions. The block is read with its transactions' bodies so
 * the same read also finds a tracked sender's nonce taken by another
 * transaction (`replaced`) without a nonce poll per sender.
 */
import type { Clock } from '../clock.js';
import type { ChainRpc } from './chain-rpc.js';
import { PollLoop } from './poll-loop.js';
import type { LandingListener } from './event.js';

interface Tracked {
  readonly from: string;
  readonly nonce: bigint;
  readonly since: number;
}

interface BlockTx {
  hash: string;
  from: string;
  nonce: string;
}

interface Block {
  number: string;
  hash: string;
  transactions: BlockTx[];
}

interface Receipt {
  status?: string;
  blockNumber: string;
  blockHash: string;
}

interface EvmWatchOptions {
  onLanding: LandingListener;
  clock: Clock;
  /** A transaction not seen in a block within this long ends `not_landed`, reason `timeout` (it may still land). */
  timeoutMs: number;
  /** Blocks read per poll at most, so a watcher far behind catches up in steps. */
  maxBlocksPerPoll?: number;
}

/**
 * Blocks before the head read on the first round with something tracked, and
 * blocks kept read: a transaction can be mined (instantly, on a dev chain)
 * before its upstream's answer makes it tracked, in a block a round already read.
 */
const LOOKBACK = 2;

export class EvmLandingWatch extends PollLoop {
  private readonly pending = new Map<string, Tracked>();
  /** `from:nonce` -> the tracked hashes using that nonce. */
  private readonly nonces = new Map<string, Set<string>>();
  /** Matched in a block whose receipt the node did not have yet: asked again next poll. */
  private readonly awaiting = new Map<string, { block: number; blockHash: string }>();
  private lastBlock = -1;
  /** The last LOOKBACK + 1 blocks read, newest last: a newly tracked transaction is matched against them. */
  private recent: Block[] = [];
  private readonly maxBlocks: number;

  constructor(
    private readonly rpc: ChainRpc,
    private readonly o: EvmWatchOptions,
  ) {
    super(o.clock);
    this.maxBlocks = o.maxBlocksPerPoll ?? 32;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Follows a forwarded transaction by its 0x hash, with its sender and nonce (from the relay's decode). */
  track(hash: string, from: string, nonce: bigint): void {
    const h = hash.toLowerCase();
    if (this.pending.has(h)) return;
    const t: Tracked = { from: from.toLowerCase(), nonce, since: this.o.clock() };
    this.pending.set(h, t);
    const k = `${t.from}:${t.nonce}`;
    let set = this.nonces.get(k);
    if (!set) this.nonces.set(k, (set = new Set()));
    set.add(h);
    // Already in a block read: its receipt is asked for next round (a replacement shows on the rescan below).
    for (const b of this.recent) if (b.transactions.some((x) => x.hash.toLowerCase() === h)) this.awaiting.set(h, { block: Number(BigInt(b.number)), blockHash: b.hash });
    this.rescan = this.recent.length > 0;
  }

  /** A transaction was tracked since the last round: the blocks kept are matched again for replacements. */
  private rescan = false;

  protected async round(): Promise<void> {
    const head = Number(BigInt(await this.rpc.call<string>('eth_blockNumber', [])));
    if (this.pending.size === 0) {
      // Nothing to match: no block reads; the next tracked transaction starts LOOKBACK blocks back.
      this.lastBlock = -1;
      this.recent = [];
      return;
    }
    if (this.rescan) {
      this.rescan = false;
      for (const b of this.recent) this.matchReplacements(b);
    }
    if (this.lastBlock < 0) this.lastBlock = Math.max(-1, head - 1 - LOOKBACK);
    await this.readReceipts(head);
    const to = Math.min(head, this.lastBlock + this.maxBlocks);
    for (let n = this.lastBlock + 1; n <= to; n++) {
      await this.readBlock(n, head);
      this.lastBlock = n;
    }
    this.endOverdue();
  }

  private async readBlock(n: number, head: number): Promise<void> {
    const block = await this.rpc.call<Block | null>('eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
    if (!block) return;
    this.recent.push(block);
    if (this.recent.length > LOOKBACK + 1) this.recent.shift();
    for (const tx of block.transactions) {
      const hash = tx.hash.toLowerCase();
      if (this.pending.has(hash)) this.awaiting.set(hash, { block: n, blockHash: block.hash });
    }
    this.matchReplacements(block);
    await this.readReceipts(head);
  }

  /** Tracked transactions whose sender's nonce a transaction of `block` took. */
  private matchReplacements(block: Block): void {
    const n = Number(BigInt(block.number));
    const at = this.o.clock();
    for (const tx of block.transactions) {
      const hash = tx.hash.toLowerCase();
      if (this.pending.has(hash)) continue;
      const k = `${tx.from.toLowerCase()}:${BigInt(tx.nonce)}`;
      const taken = this.nonces.get(k);
      if (!taken) continue;
      for (const h of taken) {
        this.forget(h);
        this.o.onLanding({ id: h, state: 'not_landed', chain: { reason: 'replaced', replaced_by: hash, block: n, block_hash: block.hash }, final: true, at });
      }
    }
  }

  private async readReceipts(head: number): Promise<void> {
    for (const [hash, where] of this.awaiting) {
      const r = await this.rpc.call<Receipt | null>('eth_getTransactionReceipt', [hash]);
      if (!r) continue;
      this.awaiting.delete(hash);
      if (!this.pending.has(hash)) continue;
      this.forget(hash);
      const block = Number(BigInt(r.blockNumber));
      // Pre-Byzantium receipts carry no status; those blocks are long final and not this relay's concern.
      const ok = r.status === undefined || BigInt(r.status) === 1n;
      this.o.onLanding({
        id: hash,
        state: ok ? 'landed' : 'landed_failed',
        chain: { block, block_hash: r.blockHash ?? where.blockHash, confirmations: Math.max(1, head - block + 1), err: ok ? null : 'reverted' },
        final: true,
        at: this.o.clock(),
      });
    }
  }

  private endOverdue(): void {
    const now = this.o.clock();
    for (const [hash, t] of this.pending) {
      if (now - t.since < this.o.timeoutMs || this.awaiting.has(hash)) continue;
      this.forget(hash);
      this.o.onLanding({ id: hash, state: 'not_landed', chain: { reason: 'timeout' }, final: true, at: now });
    }
  }

  private forget(hash: string): void {
    const t = this.pending.get(hash);
    if (!t) return;
    this.pending.delete(hash);
    const k = `${t.from}:${t.nonce}`;
    const set = this.nonces.get(k);
    set?.delete(hash);
    if (set?.size === 0) this.nonces.delete(k);
  }
}
