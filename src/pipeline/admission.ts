/**
 * The admission pipeline: the one ordered sequence every door goes through.
 *
 *   gate     (headers only, before a body byte is kept)
 *     1. node draining?                      -> DRAINING      503
 *     2. authenticate the account            -> AUTH_*        401
 *     3. lane able to forward?               -> UNAVAILABLE   503 (before any quota is spent)
 *     4. per-IP token bucket                 -> RATE_IP       429
 *     5. per-account token bucket            -> RATE_ACCOUNT  429 (quota spent from here on, DECISIONS 5)
 *   admit    (body in the shared slab)
 *     6. strict decode and stateless checks  -> *_DECODE/TX_INVALID 400/605, TIP_* 606/607
 *     7. dedup claim                         -> duplicate: success, not forwarded again
 *     8. room in the lane and the verifier   -> CAPACITY      503
 *     9. signature verification (workers)    -> *_DECODE      400/605 (claim released)
 *    10. enqueue for forwarding              -> CAPACITY      503 (claim released)
 *
 * Doors translate wire formats into these calls and outcomes back into
 * responses; no door re-implements a step. Cheap rejections (1-8) run inline
 * on the main thread, so malformed, unauthorised, over-limit and duplicate
 * traffic never costs a signature check.
 */
import { E, RelayError } from '../errors.js';
import type { Clock } from '../shared/clock.js';
import type { TokenBucketTable } from '../shared/token-bucket.js';
import type { IpLimiter } from '../shared/ip-limiter.js';
import type { DedupFilter } from '../shared/dedup.js';
import type { Slab } from '../shared/slab.js';
import type { Forwarder } from '../forward/forwarder.js';
import type { AccountRecord } from '../store/accounts.js';
import { JobKind, JobResult, type VerifyPool } from '../workers/pool.js';
import { AccountRegistry, slotOf, type Family } from './accounts.js';
import { CounterSet } from '../obs/metrics.js';
import { decodeSolanaTransaction, firstSignatureBase58, maxSizeFor, type SolanaTxView } from '../chains/solana/decode.js';
import { sumBundleTips, type TipAccounts } from '../chains/solana/tip.js';
import { decodeEvmTransaction } from '../chains/evm/decode.js';
import { validateEvmTransaction } from '../chains/evm/validate.js';
import { txHash, txHashOfRaw } from '../chains/evm/hash.js';
import { toHex } from '../chains/evm/hex.js';
import { DecodeError } from '../errors.js';

export type LaneName = 'evm-paid' | 'evm-free' | 'solana-single' | 'solana-bundle';

/** A transaction's bytes in the shared slab. */
export interface Block {
  offset: number;
  length: number;
}

export type SolanaOutcome =
  | { ok: true; signatures: string[]; duplicate: boolean }
  | { ok: false; error: RelayError };

export type EvmOutcome = { ok: true; hash: string; duplicate: boolean } | { ok: false; error: RelayError };

export interface AdmissionDeps {
  clock: Clock;
  accounts: AccountRegistry;
  buckets: TokenBucketTable;
  ipLimiter: IpLimiter;
  ipRps: number;
  dedup: DedupFilter;
  slab: Slab;
  verifier: VerifyPool;
  forwarder: Forwarder;
  tips: TipAccounts | null;
  evmChainId: bigint;
  enabled: { evm: boolean; solana: boolean };
}

// Dedup keys are domain-separated so a transaction sent alone and inside a
// bundle are different submissions (DECISIONS 6), and families never collide.
const KEY_SOLANA_SINGLE = 1;
const KEY_SOLANA_BUNDLE = 2;
const KEY_EVM = 3;

export class Admission {
  draining = false;
  /** Rejections by catalogue code; admissions and duplicates by lane. */
  readonly rejected = new CounterSet<string>();
  readonly admitted = new CounterSet<LaneName>();
  readonly duplicates = new CounterSet<LaneName>();
  /** Solana dedup keys claimed but not yet verified, with the submissions waiting on each (main thread only). */
  private readonly pending = new Map<string, (() => void)[]>();

  constructor(private readonly d: AdmissionDeps) {}

  laneFor(family: Family, rec: AccountRecord | null, bundle = false): LaneName {
    if (family === 'solana') return bundle ? 'solana-bundle' : 'solana-single';
    return rec?.plan === 'paid' ? 'evm-paid' : 'evm-free';
  }

  // ---- gate: steps 1-5 -------------------------------------------------------

  /**
   * Steps 1-5 for a credential given as text (`null` when absent). `lane`
   * is derived from the account when not given (family A routes by plan).
   * Throws RelayError; returns the account.
   */
  gate(family: Family, credential: string | null, ip: string, credits: number, bundle = false): AccountRecord {
    this.checkOpen(family);
    if (credential === null || credential === '') throw this.reject(E.AUTH_MISSING);
    return this.gateAccount(family, this.d.accounts.byText(credential), ip, credits, bundle);
  }

  /** Steps 1-5 for 16 raw UUID bytes (UDP). */
  gateBytes(family: Family, buf: Uint8Array, offset: number, ip: string, credits: number): AccountRecord {
    this.checkOpen(family);
    return this.gateAccount(family, this.d.accounts.byBytes(buf, offset), ip, credits, false);
  }

  private checkOpen(family: Family): void {
    if (this.draining) throw this.reject(E.DRAINING);
    if (!this.d.enabled[family]) throw this.reject(E.NOT_FOUND);
  }

  private gateAccount(family: Family, rec: AccountRecord | undefined, ip: string, credits: number, bundle: boolean): AccountRecord {
    this.checkAccount(family, rec, bundle);
    this.limitIp(ip, credits);
    this.limitAccount(rec!, family, credits);
    return rec!;
  }

  /** Steps 1-3 only (family A batches persist their record between 3 and 4). */
  authenticate(family: Family, credential: string | null): AccountRecord {
    this.checkOpen(family);
    if (credential === null || credential === '') throw this.reject(E.AUTH_MISSING);
    const rec = this.d.accounts.byText(credential);
    this.checkAccount(family, rec, false);
    return rec!;
  }

  private checkAccount(family: Family, rec: AccountRecord | undefined, bundle: boolean): void {
    if (rec === undefined || !rec[family].enabled) throw this.reject(E.AUTH_INVALID);
    const lane = this.laneFor(family, rec, bundle);
    if (!this.d.forwarder.lane(lane).available()) throw this.reject(E.UNAVAILABLE, 'every upstream of this lane is failing');
  }

  /** Step 4. Throws RATE_IP. */
  limitIp(ip: string, credits: number): void {
    const wait = this.d.ipLimiter.tryTake(ip, credits, this.d.clock());
    if (wait > 0) throw this.reject(E.RATE_IP, String(this.d.ipRps), wait);
  }

  /** Step 5. Throws RATE_ACCOUNT. */
  limitAccount(rec: AccountRecord, family: Family, credits: number): void {
    const wait = this.d.buckets.tryTake(slotOf(rec, family), credits, this.d.clock());
    if (wait > 0) throw this.reject(E.RATE_ACCOUNT, String(rec[family].tps), wait);
  }

  private reject(spec: (typeof E)[keyof typeof E], detail = '', retryAfterMs = 0): RelayError {
    this.rejected.inc(spec.code);
    return new RelayError(spec, detail, retryAfterMs);
  }

  // ---- slab ------------------------------------------------------------------

  /** Reserves slab space for a body of `length` bytes; null when in-flight work is at its bound. */
  reserve(length: number): Block | null {
    const offset = this.d.slab.alloc(length);
    // The caller answers (and counts) the refusal through capacityError().
    return offset < 0 ? null : { offset, length };
  }

  /** Copies `bytes` into the slab (doors whose payload is not a raw body: base64, hex, UDP). */
  copyIn(bytes: Uint8Array): Block | null {
    const b = this.reserve(bytes.length);
    if (b) this.d.slab.bytes.set(bytes, b.offset);
    return b;
  }

  view(b: Block): Uint8Array {
    return this.d.slab.bytes.subarray(b.offset, b.offset + b.length);
  }

  release(b: Block): void {
    this.d.slab.free(b.offset);
  }

  capacityError(detail: string): RelayError {
    return this.reject(E.CAPACITY, detail);
  }

  // ---- admit: steps 6-10, family B ----------------------------------------------

  /**
   * Admits one Solana transaction (JSON-RPC, /v2, UDP). Takes ownership of
   * `block`. `done` runs exactly once, possibly synchronously.
   */
  solanaSingle(block: Block, overUdp: boolean, done: (o: SolanaOutcome) => void): void {
    const bytes = this.view(block);
    let view: SolanaTxView;
    try {
      view = decodeSolanaTransaction(bytes, maxSizeFor(bytes, overUdp));
    } catch (e) {
      this.release(block);
      return done({ ok: false, error: this.reject(E.SOL_DECODE, msg(e)) });
    }
    const sig = firstSignatureBase58(bytes, view);
    this.admitSolana([block], [view], [sig], false, done);
  }

  /**
   * Admits a bundle of 1-4 transactions already split by the door (SPEC 2.5).
   * `minTip` is the account's minimum in lamports. Takes ownership of `blocks`.
   */
  solanaBundle(blocks: Block[], minTip: number, done: (o: SolanaOutcome) => void): void {
    const views: SolanaTxView[] = [];
    const sigs: string[] = [];
    for (let i = 0; i < blocks.length; i++) {
      const bytes = this.view(blocks[i]!);
      try {
        views.push(decodeSolanaTransaction(bytes, maxSizeFor(bytes, false)));
      } catch (e) {
        this.releaseAll(blocks);
        return done({ ok: false, error: this.reject(E.BATCH_DECODE, `transaction ${i}: ${msg(e)}`) });
      }
      sigs.push(firstSignatureBase58(bytes, views[i]!));
    }
    if (this.d.tips) {
      const tip = sumBundleTips(
        blocks.map((b, i) => ({ bytes: this.view(b), view: views[i]! })),
        this.d.tips,
      );
      if (!tip.found) {
        this.releaseAll(blocks);
        return done({ ok: false, error: this.reject(E.TIP_NOT_FOUND) });
      }
      if (tip.lamports < BigInt(minTip)) {
        this.releaseAll(blocks);
        return done({ ok: false, error: this.reject(E.TIP_TOO_LOW, String(minTip)) });
      }
    }
    this.admitSolana(blocks, views, sigs, true, done);
  }

  private admitSolana(blocks: Block[], views: SolanaTxView[], sigs: string[], bundle: boolean, done: (o: SolanaOutcome) => void): void {
    const lane = bundle ? 'solana-bundle' : 'solana-single';
    const key = new Uint8Array(1 + 64 * blocks.length);
    key[0] = bundle ? KEY_SOLANA_BUNDLE : KEY_SOLANA_SINGLE;
    for (let i = 0; i < blocks.length; i++) {
      const off = blocks[i]!.offset + views[i]!.signaturesOffset;
      key.set(this.d.slab.bytes.subarray(off, off + 64), 1 + 64 * i);
    }
    const now = this.d.clock();
    // A Solana key is only a signature, not a hash of the whole transaction:
    // a forged copy can carry a real signature. While a claim is unverified,
    // a second submission of the same key waits for it instead of being
    // answered "duplicate", and is admitted on its own if the first fails.
    const pendingKey = Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1');
    if (!this.d.dedup.claim(key, now)) {
      const waiters = this.pending.get(pendingKey);
      if (waiters) {
        waiters.push(() => this.admitSolana(blocks, views, sigs, bundle, done));
        return;
      }
      this.releaseAll(blocks);
      this.duplicates.inc(lane);
      return done({ ok: true, signatures: sigs, duplicate: true });
    }
    const fwd = this.d.forwarder.lane(lane);
    if (fwd.depth >= fwd.capacity || !this.d.verifier.admit(blocks.length)) {
      this.d.dedup.release(key, now);
      this.releaseAll(blocks);
      return done({ ok: false, error: this.reject(E.CAPACITY, 'verification or forwarding queue full') });
    }
    this.pending.set(pendingKey, []);
    /** Ends the claim's pending phase; `keep` false withdraws it. Waiters then run the dedup step again. */
    const settle = (keep: boolean): void => {
      if (!keep) this.d.dedup.release(key, this.d.clock());
      const waiters = this.pending.get(pendingKey)!;
      this.pending.delete(pendingKey);
      for (const w of waiters) w();
    };
    let remaining = blocks.length;
    let badIndex = -1;
    const finish = (): void => {
      if (badIndex >= 0) {
        this.releaseAll(blocks);
        const error = bundle
          ? this.reject(E.BATCH_DECODE, `transaction ${badIndex}: signature verification failed`)
          : this.reject(E.SOL_DECODE, 'signature verification failed');
        done({ ok: false, error });
        return settle(false);
      }
      const payload = blocks.map((b) => Buffer.from(this.d.slab.bytes.buffer, this.d.slab.bytes.byteOffset + b.offset, b.length).toString('base64'));
      this.releaseAll(blocks);
      if (!fwd.offer(bundle ? payload : payload[0]!)) {
        done({ ok: false, error: this.reject(E.CAPACITY, 'forwarding queue full') });
        return settle(false);
      }
      this.admitted.inc(lane);
      done({ ok: true, signatures: sigs, duplicate: false });
      settle(true);
    };
    for (let i = 0; i < blocks.length; i++) {
      const idx = i;
      this.d.verifier.submit(JobKind.Solana, blocks[i]!.offset, blocks[i]!.length, (r) => {
        if (r !== JobResult.Ok && (badIndex < 0 || idx < badIndex)) badIndex = idx;
        if (--remaining === 0) finish();
      });
    }
  }

  private releaseAll(blocks: Block[]): void {
    for (const b of blocks) this.release(b);
  }

  // ---- admit: steps 6-10, family A ----------------------------------------------

  /**
   * Admits one EVM transaction. `hex` is the client's `0x…` text when the
   * door has it (forwarded as is, saving a re-encode). Takes ownership of `block`.
   */
  evmSingle(block: Block, hex: string | null, lane: LaneName, done: (o: EvmOutcome) => void): void {
    const hash = this.evmCheck(block);
    if (hash instanceof RelayError) {
      this.release(block);
      return done({ ok: false, error: hash });
    }
    this.evmAdmitChecked(block, hex, hash, lane, done);
  }

  /** Step 6 for family A: strict decode and go-ethereum's stateless checks; returns the tx hash. */
  evmCheck(block: Block): string | RelayError {
    const bytes = this.view(block);
    try {
      const tx = decodeEvmTransaction(bytes);
      validateEvmTransaction(tx, { chainId: this.d.evmChainId });
      return toHex(txHash(bytes, tx));
    } catch (e) {
      return this.reject(E.TX_INVALID, msg(e));
    }
  }

  /**
   * Step 6 for a family A batch item, before the record is persisted: parses
   * nothing twice and keeps a hash for every item that has bytes.
   */
  evmPrepare(block: Block | null, hex: string, parseError: RelayError | null): BatchInput {
    if (block === null) return { block: null, hex, hash: null, error: parseError ?? this.reject(E.TX_INVALID, 'not a transaction') };
    const hash = this.evmCheck(block);
    if (hash instanceof RelayError) {
      const raw = toHex(txHashOfRaw(this.view(block)));
      this.release(block);
      return { block: null, hex, hash: raw, error: hash };
    }
    return { block, hex, hash, error: null };
  }

  /**
   * Steps 4-10 for a family A batch whose receive record is already durable
   * (DECISIONS 6): one IP credit for the request, then per item in order one
   * account credit (invalid and duplicate items included), dedup, capacity,
   * verification, enqueue. `done` gets every item's outcome and the HTTP status.
   */
  evmBatch(rec: AccountRecord, items: BatchInput[], ip: string, done: (items: BatchItem[], status: number, retryAfterMs: number) => void): void {
    const out: BatchItem[] = new Array(items.length);
    // The longest rate-limit wait among not-sent items, for Retry-After on an all-limited batch.
    let retryAfterMs = 0;
    const notSent = (i: number, err: RelayError): BatchItem => {
      if (err.retryAfterMs > retryAfterMs) retryAfterMs = err.retryAfterMs;
      return {
      tx_index: i,
      tx_hash: items[i]!.hash,
      status: 'not-sent',
      duplicate: false,
      retry: err.spec.retry === 'retry_safe' ? 'retry_safe' : 'do_not_retry_automatically',
      error: { code: err.spec.rpc, message: err.message },
      };
    };
    const finish = () => done(out, batchStatus(out), retryAfterMs);
    try {
      this.limitIp(ip, 1);
    } catch (e) {
      items.forEach((it, i) => {
        if (it.block) this.release(it.block);
        out[i] = notSent(i, e as RelayError);
      });
      return finish();
    }
    const lane = this.laneFor('evm', rec);
    let pending = items.length;
    const settle = (i: number, item: BatchItem) => {
      out[i] = item;
      if (--pending === 0) finish();
    };
    items.forEach((it, i) => {
      try {
        this.limitAccount(rec, 'evm', 1);
      } catch (e) {
        if (it.block) this.release(it.block);
        return settle(i, notSent(i, e as RelayError));
      }
      if (it.error || !it.block || !it.hash) return settle(i, notSent(i, it.error ?? this.reject(E.TX_INVALID, 'not a transaction')));
      this.evmAdmitChecked(it.block, it.hex, it.hash, lane, (o) => {
        if (!o.ok) return settle(i, notSent(i, o.error));
        settle(
          i,
          o.duplicate
            ? { tx_index: i, tx_hash: o.hash, status: 'duplicate', duplicate: true, retry: 'do_not_retry_automatically' }
            : { tx_index: i, tx_hash: o.hash, status: 'queued', duplicate: false, retry: 'do_not_retry_automatically', message: FORWARDED_MESSAGE },
        );
      });
    });
  }

  /** Steps 7-10 for a family A transaction that passed `evmCheck`. Takes ownership of `block`. */
  evmAdmitChecked(block: Block, hex: string | null, hash: string, lane: LaneName, done: (o: EvmOutcome) => void): void {
    const key = evmKey(hash);
    const now = this.d.clock();
    if (!this.d.dedup.claim(key, now)) {
      this.release(block);
      this.duplicates.inc(lane);
      return done({ ok: true, hash, duplicate: true });
    }
    const fwd = this.d.forwarder.lane(lane);
    if (fwd.depth >= fwd.capacity || !this.d.verifier.admit(1)) {
      this.d.dedup.release(key, now);
      this.release(block);
      return done({ ok: false, error: this.reject(E.CAPACITY, 'verification or forwarding queue full') });
    }
    this.d.verifier.submit(JobKind.Evm, block.offset, block.length, (r) => {
      if (r !== JobResult.Ok) {
        this.d.dedup.release(key, this.d.clock());
        this.release(block);
        return done({ ok: false, error: this.reject(E.TX_INVALID, 'signature does not recover a sender') });
      }
      const payload = hex ?? toHex(this.view(block));
      this.release(block);
      if (!fwd.offer(payload)) {
        this.d.dedup.release(key, this.d.clock());
        return done({ ok: false, error: this.reject(E.CAPACITY, 'forwarding queue full') });
      }
      this.admitted.inc(lane);
      done({ ok: true, hash, duplicate: false });
    });
  }
}

/** One family A batch item's outcome (SPEC 2.3, DECISIONS 6). */
export interface BatchItem {
  tx_index: number;
  tx_hash: string | null;
  status: 'queued' | 'duplicate' | 'not-sent';
  duplicate: boolean;
  retry: 'do_not_retry_automatically' | 'retry_safe';
  message?: string;
  error?: { code: number; message: string };
}

/** A batch item as the door parsed it: its bytes in the slab, or why it has none. */
export interface BatchInput {
  block: Block | null;
  hex: string;
  hash: string | null;
  error: RelayError | null;
}

export const FORWARDED_MESSAGE = 'Successfully forwarded';

/** DECISIONS 6: 202 when anything was accepted, else 400 if any item was invalid, else 503 on capacity, else 429. */
export function batchStatus(items: BatchItem[]): number {
  if (items.some((x) => x.status !== 'not-sent')) return 202;
  if (items.some((x) => x.error?.code === E.TX_INVALID.rpc)) return 400;
  if (items.some((x) => x.error?.code === E.CAPACITY.rpc || x.error?.code === E.UNAVAILABLE.rpc)) return 503;
  return 429;
}

function evmKey(hash: string): Uint8Array {
  const key = Buffer.allocUnsafe(33);
  key[0] = KEY_EVM;
  key.write(hash.slice(2), 1, 'hex');
  return key;
}

function msg(e: unknown): string {
  if (e instanceof DecodeError) return e.message;
  return e instanceof Error ? e.message : String(e);
}
