/**
 * The per-transaction check: decode, stateless rules, hash, dedup, signature.
 * It runs inline or in a worker over the shared slab and job table, so where
 * a job runs changes nothing about what it decides.
 *
 * Order: decode and stateless checks, dedup *peek*, signature, dedup *claim*.
 * Claiming only verified transactions means a forged copy (a Solana signature
 * does not cover the whole transaction) can never take the genuine one's key;
 * peeking first keeps a resend from costing a signature check. Of two
 * identical submissions in flight, both verify and exactly one wins the claim.
 */
import { DecodeError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { DedupFilter } from '../tables/dedup.js';
import { decodeSolanaTransaction, maxSizeFor, SolanaTxView } from '../chains/solana/decode.js';
import { ed25519Backend, ed25519Batchable, SignatureBatch, verifySignatures, verifySolanaTransaction } from '../chains/solana/verify.js';
import { decodeEvmTransaction, EvmTx } from '../chains/evm/decode.js';
import { validateEvmTransaction } from '../chains/evm/validate.js';
import { signingHashAt, txHashAt } from '../chains/evm/hash.js';
import { recovers, recoversAt } from '../chains/evm/recover.js';
import { F_CLAIMING, F_OVER_UDP, JobKind, JobResult, KEY_BYTES, S_AUX0, S_BLOCKHASH, S_AUX1, S_AUX2, S_AUX3, S_AUX4, S_FLAGS, S_KIND, S_LENGTH, S_OFFSET, type JobTable } from './jobs.js';

/**
 * Dedup key domains: a transaction sent alone and inside a bundle are
 * different submissions (docs/protocol.md#duplicates), and the families never collide.
 */
export const KEY_SOLANA_SINGLE = 1;
export const KEY_SOLANA_BUNDLE = 2;
export const KEY_EVM = 3;

const SIGNATURE_BYTES = 64;

export interface CheckContext {
  jobs: JobTable;
  /** The whole shared slab. */
  slab: Uint8Array;
  dedup: DedupFilter;
  chainId: bigint;
  clock: Clock;
  /** `limits.queue_max_ms` (Infinity: never expire). */
  maxWaitMs: number;
}

/**
 * Runs a job claimed from the ring, unless it waited past `maxWaitMs` (the
 * door's wait is only an estimate): then Expired, retry-safe, with the dedup
 * filter untouched so a resend is checked afresh.
 */
export function runClaimed(c: CheckContext, s: number): void {
  if (c.jobs.waited(s) > c.maxWaitMs) return c.jobs.setResult(s, JobResult.Expired, '');
  runCheck(c, s);
}

// Per-thread scratch: checks are synchronous, so one of each per thread is enough.
const view = new SolanaTxView();
const solanaKey = new Uint8Array(1 + SIGNATURE_BYTES);
const evmKey = new Uint8Array(1 + KEY_BYTES);
const msg32 = new Uint8Array(32);

/** A 32-64-byte key copy without the view `set(subarray)` would allocate per check. */
function copyInto(dst: Uint8Array, at: number, src: Uint8Array, from: number, n: number): void {
  for (let i = 0; i < n; i++) dst[at + i] = src[from + i]!;
}

/** Runs the job in slot `s` and writes its result (and hash / message) into the slot. Never throws. */
export function runCheck(c: CheckContext, s: number): void {
  const jobs = c.jobs;
  try {
    const off = jobs.field(s, S_OFFSET);
    switch (jobs.field(s, S_KIND) as JobKind) {
      case JobKind.SolanaTx:
        return solanaTx(c, s, c.slab.subarray(off, off + jobs.field(s, S_LENGTH)), (jobs.field(s, S_FLAGS) & F_OVER_UDP) !== 0);
      case JobKind.SolanaVerify:
        return solanaVerify(c, s, off);
      case JobKind.EvmTx:
        return evmTx(c, s, c.slab.subarray(off, off + jobs.field(s, S_LENGTH)));
      case JobKind.EvmRecover:
        return evmRecover(c, s, off);
      default:
        jobs.setResult(s, JobResult.Internal, 'unknown job kind');
    }
  } catch (e) {
    // Decoders throw only DecodeError (handled below); anything else is our bug, not the client's.
    jobs.setResult(s, JobResult.Internal, e instanceof Error ? e.message : String(e));
  }
}

function solanaTx(c: CheckContext, s: number, tx: Uint8Array, overUdp: boolean): void {
  const jobs = c.jobs;
  try {
    decodeSolanaTransaction(tx, maxSizeFor(tx, overUdp), view);
  } catch (e) {
    if (e instanceof DecodeError) return jobs.setResult(s, JobResult.Invalid, e.message);
    throw e;
  }
  jobs.setField(s, S_AUX0, view.signaturesOffset);
  jobs.setField(s, S_AUX1, view.numSignatures);
  jobs.setField(s, S_BLOCKHASH, view.recentBlockhashOffset);
  solanaKey[0] = KEY_SOLANA_SINGLE;
  copyInto(solanaKey, 1, tx, view.signaturesOffset, SIGNATURE_BYTES);
  if (c.dedup.peek(solanaKey, c.clock())) return jobs.setResult(s, JobResult.Duplicate, '');
  if (!verifySolanaTransaction(tx, view)) return jobs.setResult(s, JobResult.BadSignature, 'signature verification failed');
  claim(c, s);
}

/** A bundle member the main thread decoded: its signatures, from the offsets it found. */
function solanaVerify(c: CheckContext, s: number, at: number): void {
  const j = c.jobs;
  const ok = verifySignatures(ed25519Backend, c.slab, at, j.field(s, S_AUX1), j.field(s, S_AUX0), j.field(s, S_AUX2), j.field(s, S_AUX3), j.field(s, S_AUX4));
  j.setResult(s, ok ? JobResult.Ok : JobResult.BadSignature, ok ? '' : 'signature verification failed');
}

// ---- Several jobs at once ----------------------------------------------------

const batch = ed25519Batchable ? new SignatureBatch() : null;
/** The slots whose signatures are in `batch`, in the order added, and their verdicts. */
const staged: number[] = [];
const verdicts: boolean[] = [];

/** Whether `runClaimedBatch` checks Solana signatures in batch calls in this process (the native verifier). */
export const batchesSignatures = batch !== null;

/**
 * Several claimed jobs at once (a worker under load, verify-worker.ts): each
 * Solana job is decoded and dedup-peeked as alone, the signatures of all of
 * them are checked in native batch calls (each signature answered exactly as
 * alone: docs/protocol.md#signature-rule), then each job is finished as
 * alone, its dedup peek repeated just before its claim (another job may have
 * claimed the key meanwhile). Other kinds, and every job without the native
 * verifier, run as `runClaimed`. Never throws.
 */
export function runClaimedBatch(c: CheckContext, slots: readonly number[]): void {
  if (batch === null) {
    for (const s of slots) runClaimed(c, s);
    return;
  }
  for (const s of slots) {
    if (c.jobs.waited(s) > c.maxWaitMs) {
      c.jobs.setResult(s, JobResult.Expired, '');
      continue;
    }
    try {
      if (!stage(c, s, batch)) runCheck(c, s);
    } catch (e) {
      c.jobs.setResult(s, JobResult.Internal, e instanceof Error ? e.message : String(e));
    }
  }
  flush(c, batch);
}

/** Puts a Solana job's signatures into the batch, or answers it (bad encoding, duplicate); false for other kinds. */
function stage(c: CheckContext, s: number, b: SignatureBatch): boolean {
  const j = c.jobs;
  const off = j.field(s, S_OFFSET);
  const kind = j.field(s, S_KIND) as JobKind;
  let args: [number, number, number, number, number];
  if (kind === JobKind.SolanaTx) {
    const tx = c.slab.subarray(off, off + j.field(s, S_LENGTH));
    try {
      decodeSolanaTransaction(tx, maxSizeFor(tx, (j.field(s, S_FLAGS) & F_OVER_UDP) !== 0), view);
    } catch (e) {
      if (e instanceof DecodeError) return (j.setResult(s, JobResult.Invalid, e.message), true);
      throw e;
    }
    j.setField(s, S_AUX0, view.signaturesOffset);
    j.setField(s, S_AUX1, view.numSignatures);
    // Read after the check, as solanaTx leaves it: landing follows the transaction's blockhash.
    j.setField(s, S_BLOCKHASH, view.recentBlockhashOffset);
    if (peekSolana(c, s)) return (j.setResult(s, JobResult.Duplicate, ''), true);
    // As verifySolanaTransaction: a view of other bytes than the transaction's never verifies.
    if (tx.length !== view.size) return (j.setResult(s, JobResult.BadSignature, 'signature verification failed'), true);
    args = [view.numSignatures, view.signaturesOffset, view.accountKeysOffset, view.messageOffset, view.messageLength];
  } else if (kind === JobKind.SolanaVerify) {
    args = [j.field(s, S_AUX1), j.field(s, S_AUX0), j.field(s, S_AUX2), j.field(s, S_AUX3), j.field(s, S_AUX4)];
  } else {
    return false;
  }
  if (!b.add(off, ...args)) {
    flush(c, b);
    // Over 64 signatures never fit a batch call: checked alone.
    if (!b.add(off, ...args)) return (finish(c, s, verifySignatures(ed25519Backend, c.slab, off, ...args)), true);
  }
  staged.push(s);
  return true;
}

function flush(c: CheckContext, b: SignatureBatch): void {
  if (b.size === 0) return;
  b.run(c.slab, verdicts);
  for (let i = 0; i < staged.length; i++) {
    const s = staged[i]!;
    try {
      finish(c, s, verdicts[i]!);
    } catch (e) {
      c.jobs.setResult(s, JobResult.Internal, e instanceof Error ? e.message : String(e));
    }
  }
  staged.length = 0;
}

/** A staged job's answer once its signatures are judged, as solanaTx / solanaVerify would give it. */
function finish(c: CheckContext, s: number, ok: boolean): void {
  const j = c.jobs;
  if (!ok) return j.setResult(s, JobResult.BadSignature, 'signature verification failed');
  if ((j.field(s, S_KIND) as JobKind) === JobKind.SolanaVerify) return j.setResult(s, JobResult.Ok, '');
  if (peekSolana(c, s)) return j.setResult(s, JobResult.Duplicate, '');
  claim(c, s);
}

/** The dedup peek of a Solana transaction's key (its first signature, found at S_AUX0). */
function peekSolana(c: CheckContext, s: number): boolean {
  solanaKey[0] = KEY_SOLANA_SINGLE;
  copyInto(solanaKey, 1, c.slab, c.jobs.field(s, S_OFFSET) + c.jobs.field(s, S_AUX0), SIGNATURE_BYTES);
  return c.dedup.peek(solanaKey, c.clock());
}

const evmScratch = new EvmTx();

function evmTx(c: CheckContext, s: number, raw: Uint8Array): void {
  const jobs = c.jobs;
  const keyAt = jobs.keyAt(s);
  let tx;
  try {
    tx = decodeEvmTransaction(raw, evmScratch);
    validateEvmTransaction(tx, { chainId: c.chainId });
    txHashAt(raw, tx, jobs.bytes, keyAt);
  } catch (e) {
    if (e instanceof DecodeError) return jobs.setResult(s, JobResult.Invalid, e.message);
    throw e;
  }
  if (peekEvm(c, s)) return jobs.setResult(s, JobResult.Duplicate, '');
  signingHashAt(raw, tx, msg32, 0);
  if (!recovers(tx, msg32, jobs.bytes, jobs.senderAt(s))) return jobs.setResult(s, JobResult.BadSignature, 'signature does not recover a sender');
  jobs.setNonce(s, tx.nonce);
  claim(c, s);
}

/** An EVM batch item the main thread decoded, checked and hashed: dedup, then the sender from its signature. */
function evmRecover(c: CheckContext, s: number, at: number): void {
  const j = c.jobs;
  if (peekEvm(c, s)) return j.setResult(s, JobResult.Duplicate, '');
  const ok = recoversAt(c.slab, at + j.field(s, S_AUX0), j.field(s, S_AUX1), at + j.field(s, S_AUX2), j.field(s, S_AUX3), j.field(s, S_AUX4), j.bytes, j.msgAt(s), j.bytes, j.senderAt(s));
  if (!ok) return j.setResult(s, JobResult.BadSignature, 'signature does not recover a sender');
  claim(c, s);
}

/**
 * The dedup key a check was claiming when its worker died (F_CLAIMING set),
 * else null: the main thread withdraws it, so the client's resend after the
 * 503 retry-safe is checked afresh instead of refused as a duplicate.
 */
export function claimingKey(c: CheckContext, s: number): Uint8Array | null {
  const j = c.jobs;
  if ((j.field(s, S_FLAGS) & F_CLAIMING) === 0) return null;
  const kind = j.field(s, S_KIND) as JobKind;
  if (kind === JobKind.SolanaTx) {
    const key = new Uint8Array(1 + SIGNATURE_BYTES);
    key[0] = KEY_SOLANA_SINGLE;
    copyInto(key, 1, c.slab, j.field(s, S_OFFSET) + j.field(s, S_AUX0), SIGNATURE_BYTES);
    return key;
  }
  if (kind === JobKind.EvmTx || kind === JobKind.EvmRecover) {
    const key = new Uint8Array(1 + KEY_BYTES);
    key[0] = KEY_EVM;
    copyInto(key, 1, j.bytes, j.keyAt(s), KEY_BYTES);
    return key;
  }
  return null;
}

/** The last step: the dedup claim of the key last peeked, flagged first so a worker dying here cannot leave it behind (verifier.ts). */
function claim(c: CheckContext, s: number): void {
  const j = c.jobs;
  j.setField(s, S_FLAGS, j.field(s, S_FLAGS) | F_CLAIMING);
  j.setResult(s, c.dedup.claimPeeked(c.clock()) ? JobResult.Ok : JobResult.Duplicate, '');
}

function peekEvm(c: CheckContext, s: number): boolean {
  evmKey[0] = KEY_EVM;
  copyInto(evmKey, 1, c.jobs.bytes, c.jobs.keyAt(s), KEY_BYTES);
  return c.dedup.peek(evmKey, c.clock());
}
