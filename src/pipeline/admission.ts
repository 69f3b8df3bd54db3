/**
 * The admission pipeline: the one ordered sequence every door goes through.
 *
 *   arrive   (nothing read yet: not even the peer address)
 *     1. node draining?                        -> DRAINING      503
 *     2. queue controller: standing queue?     -> CAPACITY      503 (shed; no IP or account credit spent)
 *   gate     (headers only, before a body byte is kept)
 *     3. per-IP token bucket                   -> RATE_IP       429 (before any per-request work,
 *                                                  authentication included: issue 8)
 *     4. authenticate the account              -> AUTH_*        401
 *     5. lane able to forward?                 -> UNAVAILABLE   503 (before any quota is spent)
 *     6. per-account token bucket              -> RATE_ACCOUNT  429 (quota spent from here on, DECISIONS 5)
 *   admit    (body copied once into the shared slab, a job slot held)
 *     7. room in the lane and the job table    -> CAPACITY      503
 *     8. the check (exec/check.ts), inline or on a worker:
 *          strict decode and stateless checks  -> *_DECODE/TX_INVALID 400/605
 *          dedup peek                          -> duplicate: success, not forwarded again
 *          signature                           -> *_DECODE/TX_INVALID 400/605
 *          dedup claim                         -> duplicate (lost a race with an identical submission)
 *          a failure of the check itself       -> CHECK_FAILED  503 retry-safe
 *     9. enqueue for forwarding                -> CAPACITY      503 (claim released)
 *
 * Bundles add the tip rule (606/607) and their own dedup key on the main
 * thread between 7 and 8. Family A batches persist their receive record
 * after 5 (DECISIONS 6, the door does it), once the account's record budget
 * allowed it; per-item account credits follow the record. POST / asks the
 * controller (step 2) and charges the IP bucket once per JSON-RPC call
 * before reading its body, and its handlers then pass `ip` null. Doors translate wire
 * formats into these calls and outcomes back into responses; no door
 * re-implements a step. Steps 1-7 run on the main thread before any
 * signature is checked, so unauthorised, over-limit and shed traffic never
 * costs one.
 */
import { E, RelayError, DecodeError, type ErrorSpec } from '../errors.js';
import type { Clock } from '../clock.js';
import type { IpLimiter } from '../tables/ip-limiter.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { Slab } from '../tables/slab.js';
import type { Forwarder } from '../forward/forwarder.js';
import type { AccountRecord } from '../store/accounts.js';
import type { Verifier } from '../exec/verifier.js';
import { Shed } from '../exec/controller.js';
import { F_OVER_UDP, JobKind, JobResult, KEY_BYTES, S_AUX0, S_RESULT, type JobTable } from '../exec/jobs.js';
import { KEY_EVM, KEY_SOLANA_BUNDLE, KEY_SOLANA_SINGLE } from '../exec/check.js';
import type { AccountRegistry, Family } from './accounts.js';
import { CounterSet } from '../obs/metrics.js';
import { base58EncodeAt } from '../native/base58.js';
import { decodeSolanaTransaction, maxSizeFor, type SolanaTxView } from '../chains/solana/decode.js';
import { sumBundleTips, type TipAccounts } from '../chains/solana/tip.js';
import { decodeEvmTransaction } from '../chains/evm/decode.js';
import { validateEvmTransaction } from '../chains/evm/validate.js';
import { txHash, txHashOfRaw } from '../chains/evm/hash.js';
import { toHex } from '../chains/evm/hex.js';

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
  /** Per-IP buckets of the HTTP doors. */
  ipLimiter: IpLimiter;
  ipRps: number;
  /** Per-IP buckets of UDP: a spoofed source address must not drain an HTTP client's bucket (issue 8). */
  udpIpLimiter: IpLimiter;
  udpIpRps: number;
  dedup: DedupFilter;
  slab: Slab;
  jobs: JobTable;
  verifier: Verifier;
  forwarder: Forwarder;
  tips: TipAccounts | null;
  evmChainId: bigint;
  enabled: { evm: boolean; solana: boolean };
  /** `limits.shed_hold_ms`: the longest a door shed's answer is held (0: written at once). */
  shedHoldMs?: number;
  /** Door sheds held and not yet answered (src/ingress/http.ts). */
  heldRefusals?: () => number;
}

const SIGNATURE_BYTES = 64;
/** Why a transaction is refused for the queue's hard bound, at the door or after waiting past it. */
const OVER_BOUND = 'verification queue over its bound';

/**
 * Which of a bundle's checks decides its answer: the first transaction at
 * fault (invalid, bad signature), else the first this node could not check
 * (expired in the queue, an internal failure); -1 when all passed. A bundle
 * with an invalid transaction is invalid whatever happened to its siblings:
 * answering it retry-safe would have the client resend a bundle that can
 * never pass.
 */
export function bundleVerdict(n: number, result: (i: number) => JobResult): number {
  let bad = -1;
  for (let i = 0; i < n; i++) {
    const r = result(i);
    if (r === JobResult.Ok) continue;
    if (r !== JobResult.Expired && r !== JobResult.Internal) return i;
    if (bad < 0) bad = i;
  }
  return bad;
}

export class Admission {
  draining = false;
  /** Rejections by catalogue code; admissions and duplicates by lane. */
  readonly rejected = new CounterSet<string>();
  readonly admitted = new CounterSet<LaneName>();
  readonly duplicates = new CounterSet<LaneName>();
  private readonly jobs: JobTable;
  private readonly slab: Uint8Array;
  /** The whole slab as a Buffer: encodes a transaction with toString(enc, start, end), no view per call. */
  private readonly slabBuf: Buffer;
  /** The job table's bytes as a Buffer, to write a batch item's hash from its hex. */
  private readonly jobsBuf: Buffer;
  /** Dedup key scratch for releasing a claim on the main thread. */
  private readonly keyScratch = new Uint8Array(1 + 4 * SIGNATURE_BYTES);
  /**
   * What answering a single transaction needs, by job slot, while its check
   * runs: parallel arrays and one callback for every slot, where a
   * closure per transaction (and its context) was ~100-140 B of the heap each
   * transaction allocated (scripts/heap-sample.mjs). A slot belongs to one
   * job at a time, so the two families share the block and text columns.
   */
  private readonly singleBlock: (Block | undefined)[];
  private readonly singleDone: (((o: SolanaOutcome) => void) | undefined)[];
  private readonly singleEvmDone: (((o: EvmOutcome) => void) | undefined)[];
  /** The client's text of the transaction (Solana base64, EVM `0x` hex), forwarded as is; null to encode it from the slab. */
  private readonly singleText: (string | null)[];
  private readonly singleLane: LaneName[];

  constructor(private readonly d: AdmissionDeps) {
    this.jobs = d.jobs;
    this.singleBlock = new Array<Block | undefined>(d.jobs.slots).fill(undefined);
    this.singleDone = new Array<((o: SolanaOutcome) => void) | undefined>(d.jobs.slots).fill(undefined);
    this.singleEvmDone = new Array<((o: EvmOutcome) => void) | undefined>(d.jobs.slots).fill(undefined);
    this.singleText = new Array<string | null>(d.jobs.slots).fill(null);
    this.singleLane = new Array<LaneName>(d.jobs.slots).fill('solana-single');
    this.slab = d.slab.bytes;
    this.slabBuf = Buffer.from(this.slab.buffer, this.slab.byteOffset, this.slab.length);
    this.jobsBuf = Buffer.from(d.jobs.bytes.buffer, d.jobs.bytes.byteOffset, d.jobs.bytes.length);
  }

  laneFor(family: Family, rec: AccountRecord | null, bundle = false): LaneName {
    if (family === 'solana') return bundle ? 'solana-bundle' : 'solana-single';
    return rec?.plan === 'paid' ? 'evm-paid' : 'evm-free';
  }

  // ---- gate: steps 1-6 -------------------------------------------------------

  /**
   * Steps 1-2, the first thing an HTTP door asks of an arrival: is the node
   * open for the family, and does the queue controller take it. A shed costs
   * no more than this: it is decided before the door reads the peer address
   * (a getpeername(2) per request in uWS), a header, the IP bucket or the
   * account table, none of which change the answer. So shed arrivals spend
   * neither IP nor account credits.
   */
  arrive(family: Family): RelayError | null {
    return this.checkOpen(family) ?? this.shed();
  }

  /**
   * Step 1 again, then steps 3-6, for a credential given as text (`null`
   * when absent), after `arrive` (HTTP doors) or the JSON-RPC door's own
   * shed. `ip` null: the door already charged the IP bucket for this call
   * (POST /, before its body is read). The lane is derived from the account
   * (family A routes by plan). Returns the account, or the rejection to
   * answer. Refusals are returned, never thrown: a throw inside a uWS
   * handler makes V8 walk the stack for the message location, which cost a
   * shed answer ~2% of its CPU (perf, bench:e2e gate-refusal run).
   */
  gate(family: Family, credential: string | null, ip: string | null, credits: number, bundle = false): AccountRecord | RelayError {
    const closed = this.checkOpen(family);
    if (closed) return closed;
    if (ip !== null) {
      const limited = this.limitIp(ip, credits);
      if (limited) return limited;
    }
    const rec = this.authenticateAccount(family, credential, bundle);
    if (rec instanceof RelayError) return rec;
    return this.limitAccount(rec, family, credits) ?? rec;
  }

  /** Steps 1-6 for 16 raw UUID bytes (UDP), with UDP's own per-IP buckets. */
  gateBytes(family: Family, buf: Uint8Array, offset: number, ip: string, credits: number): AccountRecord | RelayError {
    const refused = this.arrive(family);
    if (refused) return refused;
    const wait = this.d.udpIpLimiter.tryTake(ip, credits, this.d.clock());
    if (wait > 0) return this.reject(E.RATE_IP, String(this.d.udpIpRps), wait);
    const rec = this.d.accounts.byBytes(buf, offset);
    const bad = this.checkAccount(family, rec, false);
    if (bad) return bad;
    return this.limitAccount(rec!, family, credits) ?? rec!;
  }

  private checkOpen(family: Family): RelayError | null {
    if (this.draining) return this.reject(E.DRAINING);
    if (!this.d.enabled[family]) return this.reject(E.NOT_FOUND);
    return null;
  }

  /** Steps 1, 4 and 5 (family A batches: the door charged the IP bucket; the record comes next). */
  authenticate(family: Family, credential: string | null): AccountRecord | RelayError {
    return this.checkOpen(family) ?? this.authenticateAccount(family, credential, false);
  }

  private authenticateAccount(family: Family, credential: string | null, bundle: boolean): AccountRecord | RelayError {
    if (credential === null || credential === '') return this.reject(E.AUTH_MISSING);
    const rec = this.d.accounts.byText(credential);
    return this.checkAccount(family, rec, bundle) ?? rec!;
  }

  private checkAccount(family: Family, rec: AccountRecord | undefined, bundle: boolean): RelayError | null {
    if (rec === undefined || !rec[family].enabled) return this.reject(E.AUTH_INVALID);
    const lane = this.laneFor(family, rec, bundle);
    if (!this.d.forwarder.lane(lane).available()) return this.reject(E.UNAVAILABLE, 'every upstream of this lane is failing');
    return null;
  }

  /** Step 3: the per-IP bucket. */
  limitIp(ip: string, credits: number): RelayError | null {
    const wait = this.d.ipLimiter.tryTake(ip, credits, this.d.clock());
    return wait > 0 ? this.reject(E.RATE_IP, String(this.d.ipRps), wait) : null;
  }

  /** Step 2: CAPACITY when the queue controller sheds this arrival. */
  shed(): RelayError | null {
    const v = this.d.verifier;
    const s = v.admit(this.d.clock());
    if (s === Shed.No) return null;
    const err = this.reject(E.CAPACITY, s === Shed.Standing ? 'standing verification queue' : OVER_BOUND);
    // Held about as long as the queue it was turned away from and the refusals held before it take to
    // drain (README, "Load shedding"): a client that resends at once comes back when there is room.
    const hold = this.d.shedHoldMs ?? 0;
    if (hold > 0) err.holdMs = Math.min(hold, Math.max(v.queueMs() + v.drainMs(this.d.heldRefusals?.() ?? 0), v.controller.targetMs));
    return err;
  }

  /**
   * The family A batch-record budget (issue 8): taken before a batch's
   * receive record is written; a wait means 429 with nothing written or sent.
   */
  takeRecordCredit(rec: AccountRecord): number {
    const wait = this.d.accounts.takeRecordCredit(rec);
    if (wait > 0) this.rejected.inc(E.RATE_ACCOUNT.code);
    return wait;
  }

  /** Step 6: the account's bucket. */
  limitAccount(rec: AccountRecord, family: Family, credits: number): RelayError | null {
    const wait = this.d.accounts.take(rec, family, credits);
    return wait > 0 ? this.reject(E.RATE_ACCOUNT, String(rec[family].tps), wait) : null;
  }

  private reject(spec: ErrorSpec, detail = '', retryAfterMs = 0): RelayError {
    this.rejected.inc(spec.code);
    return new RelayError(spec, detail, retryAfterMs);
  }

  // ---- slab ------------------------------------------------------------------

  /** Reserves slab space for a body of `length` bytes; null when in-flight bytes are at their bound. */
  reserve(length: number): Block | null {
    const offset = this.d.slab.alloc(length);
    // The caller answers (and counts) the refusal through capacityError().
    return offset < 0 ? null : { offset, length };
  }

  /** Copies `bytes` into the slab (doors whose payload is not a raw body: base64, hex, UDP). */
  copyIn(bytes: Uint8Array): Block | null {
    const b = this.reserve(bytes.length);
    if (b) this.slab.set(bytes, b.offset);
    return b;
  }

  /** Copies buf[start, end) into the slab without a view of it (UDP datagrams). */
  copyRange(buf: Buffer, start: number, end: number): Block | null {
    const b = this.reserve(end - start);
    if (b) buf.copy(this.slabBuf, b.offset, start, end);
    return b;
  }

  /**
   * Decodes text (hex, base64) into a reserved block with `decode`, which
   * writes buf[offset, offset + length) and says whether the text was valid.
   */
  decodeInto(b: Block, text: string, decode: (text: string, buf: Buffer, offset: number, length: number) => boolean): boolean {
    return decode(text, this.slabBuf, b.offset, b.length);
  }

  view(b: Block): Uint8Array {
    return this.slab.subarray(b.offset, b.offset + b.length);
  }

  release(b: Block): void {
    this.d.slab.free(b.offset);
  }

  capacityError(detail: string): RelayError {
    return this.reject(E.CAPACITY, detail);
  }

  private releaseAll(blocks: Block[]): void {
    for (const b of blocks) this.release(b);
  }

  /** Step 7: a job slot and room in the lane; -1 (answer CAPACITY) when either is exhausted. */
  private slotFor(lane: LaneName, n: number): number {
    const fwd = this.d.forwarder.lane(lane);
    if (fwd.depth + n > fwd.capacity) return -1;
    return this.jobs.acquire();
  }

  /** The outcome of a check that did not pass, as the rejection its door answers. */
  private checkError(s: number, decode: ErrorSpec, prefix: string): RelayError {
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    if (r === JobResult.Internal) return this.reject(E.CHECK_FAILED, 'the transaction check failed on this node');
    if (r === JobResult.Expired) return this.reject(E.CAPACITY, OVER_BOUND);
    return this.reject(decode, prefix + this.jobs.message(s));
  }

  // ---- admit: family B ---------------------------------------------------------

  /**
   * Admits one Solana transaction (JSON-RPC, /v2, UDP). Takes ownership of
   * `block`. `done` runs exactly once, possibly synchronously. `base64` is the
   * client's canonical base64 of the same bytes when the door has it
   * (forwarded as is, saving an encode).
   */
  solanaSingle(block: Block, overUdp: boolean, done: (o: SolanaOutcome) => void, base64: string | null = null): void {
    const lane: LaneName = 'solana-single';
    const s = this.slotFor(lane, 1);
    if (s < 0) {
      this.release(block);
      return done({ ok: false, error: this.capacityError('verification or forwarding queue full') });
    }
    this.jobs.set(s, JobKind.SolanaTx, block.offset, block.length, overUdp ? F_OVER_UDP : 0);
    this.singleBlock[s] = block;
    this.singleDone[s] = done;
    this.singleText[s] = base64;
    this.d.verifier.run(s, this.singleChecked);
  }

  /** The verifier's callback for every single transaction: the slot's columns, cleared, to the family's answer. */
  private readonly singleChecked = (s: number): void => {
    const block = this.singleBlock[s]!;
    const text = this.singleText[s] as string | null;
    const solana = this.singleDone[s];
    const evm = this.singleEvmDone[s];
    this.singleBlock[s] = undefined;
    this.singleDone[s] = undefined;
    this.singleEvmDone[s] = undefined;
    this.singleText[s] = null;
    if (evm !== undefined) this.evmDone(s, block, text, this.singleLane[s]!, evm);
    else this.solanaSingleDone(s, block, 'solana-single', solana!, text);
  };

  private solanaSingleDone(s: number, block: Block, lane: LaneName, done: (o: SolanaOutcome) => void, base64: string | null): void {
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    if (r !== JobResult.Ok && r !== JobResult.Duplicate) {
      const error = this.checkError(s, E.SOL_DECODE, '');
      this.jobs.release(s);
      this.release(block);
      return done({ ok: false, error });
    }
    const sigAt = block.offset + this.jobs.field(s, S_AUX0);
    const sig = base58EncodeAt(this.slab, sigAt, SIGNATURE_BYTES);
    this.jobs.release(s);
    if (r === JobResult.Duplicate) {
      this.release(block);
      this.duplicates.inc(lane);
      return done({ ok: true, signatures: [sig], duplicate: true });
    }
    const payload = base64 ?? this.slabBuf.toString('base64', block.offset, block.offset + block.length);
    if (!this.d.forwarder.lane(lane).offer(payload)) {
      this.unclaim(KEY_SOLANA_SINGLE, [sigAt]);
      this.release(block);
      return done({ ok: false, error: this.capacityError('forwarding queue full') });
    }
    this.release(block);
    this.admitted.inc(lane);
    done({ ok: true, signatures: [sig], duplicate: false });
  }

  /** Withdraws a dedup claim whose transaction could not be queued (main thread; the key is rebuilt from the slab). */
  private unclaim(domain: number, sigOffsets: number[]): void {
    const k = this.keyScratch;
    k[0] = domain;
    for (let i = 0; i < sigOffsets.length; i++) k.set(this.slab.subarray(sigOffsets[i]!, sigOffsets[i]! + SIGNATURE_BYTES), 1 + SIGNATURE_BYTES * i);
    this.d.dedup.release(k.subarray(0, 1 + SIGNATURE_BYTES * sigOffsets.length), this.d.clock());
  }

  /**
   * Admits a bundle of 1-4 transactions already split by the door (SPEC 2.5).
   * `minTip` is the account's minimum in lamports. Takes ownership of `blocks`.
   * The tip rule and the bundle's dedup key need the decoded transactions on
   * this thread; the signatures are checked as jobs like any other.
   */
  solanaBundle(blocks: Block[], minTip: number, done: (o: SolanaOutcome) => void): void {
    const lane: LaneName = 'solana-bundle';
    const views: SolanaTxView[] = [];
    for (let i = 0; i < blocks.length; i++) {
      const bytes = this.view(blocks[i]!);
      try {
        views.push(decodeSolanaTransaction(bytes, maxSizeFor(bytes, false)));
      } catch (e) {
        this.releaseAll(blocks);
        return done({ ok: false, error: this.reject(E.BATCH_DECODE, `transaction ${i}: ${msg(e)}`) });
      }
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
    const sigAt = blocks.map((b, i) => b.offset + views[i]!.signaturesOffset);
    const sigs = sigAt.map((o) => base58EncodeAt(this.slab, o, SIGNATURE_BYTES));
    const key = this.bundleKey(sigAt);
    if (this.d.dedup.contains(key, this.d.clock())) {
      this.releaseAll(blocks);
      this.duplicates.inc(lane);
      return done({ ok: true, signatures: sigs, duplicate: true });
    }
    const slots: number[] = [];
    for (let i = 0; i < blocks.length; i++) {
      const s = this.slotFor(lane, 1);
      if (s < 0) {
        for (const x of slots) this.jobs.release(x);
        this.releaseAll(blocks);
        return done({ ok: false, error: this.capacityError('verification or forwarding queue full') });
      }
      this.jobs.set(s, JobKind.SolanaVerify, blocks[i]!.offset, blocks[i]!.length, 0);
      slots.push(s);
    }
    let remaining = slots.length;
    const finish = (): void => {
      const bad = bundleVerdict(slots.length, (i) => this.jobs.field(slots[i]!, S_RESULT) as JobResult);
      let error: RelayError | null = null;
      if (bad >= 0) error = this.checkError(slots[bad]!, E.BATCH_DECODE, `transaction ${bad}: `);
      for (const s of slots) this.jobs.release(s);
      if (error) {
        this.releaseAll(blocks);
        return done({ ok: false, error });
      }
      const now = this.d.clock();
      if (!this.d.dedup.claim(key, now)) {
        this.releaseAll(blocks);
        this.duplicates.inc(lane);
        return done({ ok: true, signatures: sigs, duplicate: true });
      }
      const payload = blocks.map((b) => this.slabBuf.toString('base64', b.offset, b.offset + b.length));
      this.releaseAll(blocks);
      if (!this.d.forwarder.lane(lane).offer(payload)) {
        this.d.dedup.release(key, this.d.clock());
        return done({ ok: false, error: this.capacityError('forwarding queue full') });
      }
      this.admitted.inc(lane);
      done({ ok: true, signatures: sigs, duplicate: false });
    };
    for (const s of slots) {
      this.d.verifier.run(s, () => {
        if (--remaining === 0) finish();
      });
    }
  }

  /** The bundle's dedup key: its domain and its ordered signatures (a fresh array: it outlives the checks). */
  private bundleKey(sigOffsets: number[]): Uint8Array {
    const key = new Uint8Array(1 + SIGNATURE_BYTES * sigOffsets.length);
    key[0] = KEY_SOLANA_BUNDLE;
    for (let i = 0; i < sigOffsets.length; i++) key.set(this.slab.subarray(sigOffsets[i]!, sigOffsets[i]! + SIGNATURE_BYTES), 1 + SIGNATURE_BYTES * i);
    return key;
  }

  // ---- admit: family A ---------------------------------------------------------

  /**
   * Admits one EVM transaction. `hex` is the client's `0x…` text when the
   * door has it (forwarded as is, saving a re-encode). Takes ownership of `block`.
   */
  evmSingle(block: Block, hex: string | null, lane: LaneName, done: (o: EvmOutcome) => void): void {
    const s = this.slotFor(lane, 1);
    if (s < 0) {
      this.release(block);
      return done({ ok: false, error: this.capacityError('verification or forwarding queue full') });
    }
    this.jobs.set(s, JobKind.EvmTx, block.offset, block.length, 0);
    this.singleBlock[s] = block;
    this.singleEvmDone[s] = done;
    this.singleText[s] = hex;
    this.singleLane[s] = lane;
    this.d.verifier.run(s, this.singleChecked);
  }

  private evmDone(s: number, block: Block, hex: string | null, lane: LaneName, done: (o: EvmOutcome) => void): void {
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    if (r !== JobResult.Ok && r !== JobResult.Duplicate) {
      const error = this.checkError(s, E.TX_INVALID, '');
      this.jobs.release(s);
      this.release(block);
      return done({ ok: false, error });
    }
    const keyAt = this.jobs.keyAt(s);
    // Straight from the job table to text: no view of the hash, no Buffer around it.
    const hash = '0x' + this.jobsBuf.toString('hex', keyAt, keyAt + KEY_BYTES);
    if (r === JobResult.Duplicate) {
      this.jobs.release(s);
      this.release(block);
      this.duplicates.inc(lane);
      return done({ ok: true, hash, duplicate: true });
    }
    const payload = hex ?? '0x' + this.slabBuf.toString('hex', block.offset, block.offset + block.length);
    this.release(block);
    if (!this.d.forwarder.lane(lane).offer(payload)) {
      const k = this.keyScratch;
      k[0] = KEY_EVM;
      k.set(this.jobs.bytes.subarray(keyAt, keyAt + KEY_BYTES), 1);
      this.d.dedup.release(k.subarray(0, 1 + KEY_BYTES), this.d.clock());
      this.jobs.release(s);
      return done({ ok: false, error: this.capacityError('forwarding queue full') });
    }
    this.jobs.release(s);
    this.admitted.inc(lane);
    done({ ok: true, hash, duplicate: false });
  }

  /**
   * Step 8's decode part for a family A batch item, on the main thread before
   * the receive record is persisted (the record holds every item's hash).
   */
  evmPrepare(block: Block | null, hex: string, parseError: RelayError | null): BatchInput {
    if (block === null) return { block: null, hex, hash: null, error: parseError ?? this.reject(E.TX_INVALID, 'not a transaction') };
    const bytes = this.view(block);
    try {
      const tx = decodeEvmTransaction(bytes);
      validateEvmTransaction(tx, { chainId: this.d.evmChainId });
      return { block, hex, hash: toHex(txHash(bytes, tx)), error: null };
    } catch (e) {
      const error = this.reject(E.TX_INVALID, msg(e));
      const raw = toHex(txHashOfRaw(bytes));
      this.release(block);
      return { block: null, hex, hash: raw, error };
    }
  }

  /**
   * Steps 6-9 for a family A batch whose receive record is already durable
   * (DECISIONS 6; the door charged the IP bucket and the record budget): per
   * item in order one account credit (invalid and duplicate items included),
   * dedup, capacity, signature, enqueue. `done` gets every item's outcome and
   * the HTTP status.
   */
  evmBatch(rec: AccountRecord, items: BatchInput[], done: (items: BatchItem[], status: number, retryAfterMs: number) => void): void {
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
    const lane = this.laneFor('evm', rec);
    let pending = items.length;
    const settle = (i: number, item: BatchItem) => {
      out[i] = item;
      if (--pending === 0) finish();
    };
    items.forEach((it, i) => {
      const limited = this.limitAccount(rec, 'evm', 1);
      if (limited) {
        if (it.block) this.release(it.block);
        return settle(i, notSent(i, limited));
      }
      if (it.error || !it.block || !it.hash) return settle(i, notSent(i, it.error ?? this.reject(E.TX_INVALID, 'not a transaction')));
      const block = it.block;
      const s = this.slotFor(lane, 1);
      if (s < 0) {
        this.release(block);
        return settle(i, notSent(i, this.capacityError('verification or forwarding queue full')));
      }
      this.jobs.set(s, JobKind.EvmVerify, block.offset, block.length, 0);
      this.jobsBuf.write(it.hash.slice(2), this.jobs.keyAt(s), KEY_BYTES, 'hex');
      this.d.verifier.run(s, () =>
        this.evmDone(s, block, it.hex, lane, (o) => {
          if (!o.ok) return settle(i, notSent(i, o.error));
          settle(
            i,
            o.duplicate
              ? { tx_index: i, tx_hash: o.hash, status: 'duplicate', duplicate: true, retry: 'do_not_retry_automatically' }
              : { tx_index: i, tx_hash: o.hash, status: 'queued', duplicate: false, retry: 'do_not_retry_automatically', message: FORWARDED_MESSAGE },
          );
        }),
      );
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

function msg(e: unknown): string {
  if (e instanceof DecodeError) return e.message;
  return e instanceof Error ? e.message : String(e);
}
