/**
 * Follows forwarded EVM transactions on the chain (docs/protocol.md#status):
 * one block read per new block, matched against every tracked hash, and a
 * receipt read only for the matches, RECEIPT_CHUNK to a JSON-RPC array, so
 * the requests grow with blocks, not with tracked transactions. The block is read with its transactions' bodies so
 * the same read also finds a tracked sender's nonce taken by another
 * transaction (`replaced`) without a nonce poll per sender.
 */
import type { Clock } from '../clock.js';
import type { ChainRpc } from './chain-rpc.js';
import { PollLoop } from './poll-loop.js';
import type { LandingListener } from './event.js';

interface Tracked {
  /** Its sender and nonce (nonceKey). */
  readonly key: string;
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
/** Receipts asked for in one request (a JSON-RPC array). */
const RECEIPT_CHUNK = 100;

interface Where {
  block: number;
  blockHash: string;
}

/**
 * `from:nonce`, the nonce in hex as JSON-RPC writes quantities (lower case, no
 * leading zeros): a block's transactions are keyed without a BigInt each.
 */
const nonceKey = (from: string, nonceHex: string): string => from.toLowerCase() + ':' + nonceHex;

export class EvmLandingWatch extends PollLoop {
  private readonly pending = new Map<string, Tracked>();
  /** `from:nonce` (nonceKey) -> the tracked hashes using that nonce. */
  private readonly nonces = new Map<string, Set<string>>();
  /** Matched in a block whose receipt the node did not have yet: asked again next poll. */
  private readonly awaiting = new Map<string, Where>();
  private lastBlock = -1;
  /** The last LOOKBACK + 1 blocks read, newest last: a newly tracked transaction is matched against them. */
  private recent: Block[] = [];
  /** The transactions of `recent` by lower-case hash: a newly tracked one is found without a scan. */
  private readonly recentTxs = new Map<string, Where>();
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
    const k = nonceKey(from, '0x' + nonce.toString(16));
    const t: Tracked = { key: k, since: this.o.clock() };
    this.pending.set(h, t);
    let set = this.nonces.get(k);
    if (!set) this.nonces.set(k, (set = new Set()));
    set.add(h);
    // Already in a block read: its receipt is asked for next round (a replacement shows on the rescan below).
    const seen = this.recentTxs.get(h);
    if (seen !== undefined) this.awaiting.set(h, seen);
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
      this.recentTxs.clear();
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
    // Lower-cased once, here: matching, the kept blocks and the rescan read them as they are.
    for (const tx of block.transactions) tx.hash = tx.hash.toLowerCase();
    this.recent.push(block);
    if (this.recent.length > LOOKBACK + 1) for (const tx of this.recent.shift()!.transactions) this.recentTxs.delete(tx.hash);
    const where: Where = { block: n, blockHash: block.hash };
    for (const tx of block.transactions) {
      this.recentTxs.set(tx.hash, where);
      if (this.pending.has(tx.hash)) this.awaiting.set(tx.hash, where);
    }
    this.matchReplacements(block);
    await this.readReceipts(head);
  }

  /** Tracked transactions whose sender's nonce a transaction of `block` took. */
  private matchReplacements(block: Block): void {
    const n = Number(BigInt(block.number));
    const at = this.o.clock();
    for (const tx of block.transactions) {
      const hash = tx.hash;
      if (this.pending.has(hash)) continue;
      const taken = this.nonces.get(nonceKey(tx.from, tx.nonce));
      if (!taken) continue;
      for (const h of taken) {
        this.forget(h);
        this.o.onLanding({ id: h, state: 'not_landed', chain: { reason: 'replaced', replaced_by: hash, block: n, block_hash: block.hash }, final: true, at });
      }
    }
  }

  private async readReceipts(head: number): Promise<void> {
    const asked = [...this.awaiting.keys()];
    for (let i = 0; i < asked.length; i += RECEIPT_CHUNK) {
      const chunk = asked.slice(i, i + RECEIPT_CHUNK);
      const receipts = await this.rpc.batch<Receipt | null>('eth_getTransactionReceipt', chunk.map((h) => [h]));
      for (let j = 0; j < chunk.length; j++) this.receipt(chunk[j]!, receipts[j] ?? null, head);
    }
  }

  /** A matched transaction's receipt, or null while the node has none for it yet (asked again next poll). */
  private receipt(hash: string, r: Receipt | null, head: number): void {
    const where = this.awaiting.get(hash);
    if (!r || where === undefined) return;
    this.awaiting.delete(hash);
    if (!this.pending.has(hash)) return;
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
    const k = t.key;
    const set = this.nonces.get(k);
    set?.delete(hash);
    if (set?.size === 0) this.nonces.delete(k);
  }
}
