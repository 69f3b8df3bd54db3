/**
 * Bundles (docs/protocol.md#solana-bundles, #sendbundle): 1 to 4 Solana
 * transactions, all or nothing, as a binary body or as JSON-RPC text.
 * Between placing and checking, each member is decoded once here (the tip
 * rule needs the instructions; the signature checks reuse the offsets), the
 * tip rule applied across the bundle, and the dedup key built from the
 * ordered signatures.
 */
import { createHash } from 'node:crypto';
import { DecodeError, E, RelayError } from '../errors.js';
import { base58EncodeAt } from '../native/base58.js';
import { decodeSolanaTransaction, MAX_V1_TX_SIZE, maxSizeFor, SolanaTxView } from '../chains/solana/decode.js';
import { sumBundleTips, type TipAccounts } from '../chains/solana/tip.js';
import { JobResult } from '../exec/jobs.js';
import { KEY_SOLANA_BUNDLE } from '../exec/check.js';
import { SLAB_FULL, type Placer } from './place.js';
import type { Encoding } from './submission.js';
import { BundleParts, type Admission } from './admission.js';

export const MAX_BUNDLE = 4;
/** Count byte, up to 4 u16 lengths and up to 4 transactions of at most 4096 bytes (v1). */
export const MAX_BUNDLE_BODY = 1 + 2 * MAX_BUNDLE + MAX_BUNDLE * MAX_V1_TX_SIZE;

const SIGNATURE_BYTES = 64;

/** One decoded view per member, reused: the main thread prepares one bundle at a time, synchronously. */
export const memberViews: readonly SolanaTxView[] = Array.from({ length: MAX_BUNDLE }, () => new SolanaTxView());

/** Body: `count` (1-4), `count` u16 LE lengths, the transactions; the total exact. Sets the admission's bundle parts. */
export function placeBundle(p: Placer, a: Admission, body: Uint8Array): RelayError | null {
  const bad = (m: string) => new RelayError(E.BATCH_DECODE, m);
  if (body.length < 1) return bad('empty body');
  const count = body[0]!;
  if (count < 1 || count > MAX_BUNDLE) return bad(`count must be 1 to ${MAX_BUNDLE}, got ${count}`);
  const header = 1 + 2 * count;
  if (body.length < header) return bad(`body shorter than its ${count} length fields`);
  let total = header;
  const lengths: number[] = [];
  for (let i = 0; i < count; i++) {
    const len = body[1 + 2 * i]! | (body[2 + 2 * i]! << 8);
    if (len === 0) return bad(`transaction ${i} has length 0`);
    lengths.push(len);
    total += len;
  }
  if (total !== body.length) return bad(`body length ${body.length} must equal 1 + 2*count + sum(lengths) = ${total}`);
  const offsets: number[] = [];
  let at = header;
  for (let i = 0; i < count; i++) {
    const o = p.copy(body, at, at + lengths[i]!);
    if (o < 0) {
      for (const x of offsets) p.release(x);
      return new RelayError(E.CAPACITY, SLAB_FULL);
    }
    offsets.push(o);
    at += lengths[i]!;
  }
  a.bundle = new BundleParts(offsets, lengths);
  return null;
}

/**
 * A bundle sent as text (`sendBundle`): `texts` in `encoding`, each
 * decoded strictly into its own slab block, as a `sendTransaction` is. A
 * member that does not decode is 605 naming its index. Sets the admission's
 * bundle parts.
 */
export function placeBundleTexts(p: Placer, a: Admission, texts: readonly string[], encoding: Encoding): RelayError | null {
  const offsets: number[] = [];
  const lengths: number[] = [];
  for (let i = 0; i < texts.length; i++) {
    // The Placer decodes into `a.offset`; each block is moved to `offsets` at once.
    const err = p.solanaText(a, texts[i]!, encoding);
    if (err !== null) {
      for (const o of offsets) p.release(o);
      return err.spec === E.SOL_DECODE ? new RelayError(E.BATCH_DECODE, `transaction ${i}: ${err.detail}`) : err;
    }
    offsets.push(a.offset);
    lengths.push(a.length);
    a.offset = -1;
    a.length = 0;
  }
  a.bundle = new BundleParts(offsets, lengths);
  return null;
}

/**
 * A bundle's id as Jito computes it: lowercase hex SHA-256 over its members'
 * first signatures, in order (the dedup key after its domain byte), so the
 * same bundle always has the same id.
 */
function bundleId(key: Uint8Array): string {
  return createHash('sha256').update(key.subarray(1)).digest('hex');
}

/**
 * Decodes every member into `memberViews`, applies the tip rule (606 no tip
 * transfer, 607 below the account's minimum; none without tip accounts), and
 * sets the dedup key and signatures.
 */
export function prepareBundle(p: Placer, a: Admission, tips: TipAccounts | null): RelayError | null {
  const parts = a.bundle!;
  const offsets = parts.offsets!;
  const lengths = parts.lengths;
  const n = offsets.length;
  for (let i = 0; i < n; i++) {
    const bytes = p.view(offsets[i]!, lengths[i]!);
    try {
      decodeSolanaTransaction(bytes, maxSizeFor(bytes, false), memberViews[i]);
    } catch (e) {
      return new RelayError(E.BATCH_DECODE, `transaction ${i}: ${e instanceof DecodeError ? e.message : String(e)}`);
    }
  }
  if (tips !== null) {
    const { found, lamports } = sumBundleTips(
      offsets.map((o, i) => ({ bytes: p.view(o, lengths[i]!), view: memberViews[i]! })),
      tips,
    );
    if (!found) return new RelayError(E.TIP_NOT_FOUND);
    const minTip = a.account!.solana.min_tip_lamports;
    if (lamports < BigInt(minTip)) return new RelayError(E.TIP_TOO_LOW, String(minTip));
  }
  // A fresh array: it outlives the checks.
  const key = new Uint8Array(1 + SIGNATURE_BYTES * n);
  key[0] = KEY_SOLANA_BUNDLE;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const at = offsets[i]! + memberViews[i]!.signaturesOffset;
    key.set(p.bytes.subarray(at, at + SIGNATURE_BYTES), 1 + SIGNATURE_BYTES * i);
    ids.push(base58EncodeAt(p.bytes, at, SIGNATURE_BYTES));
  }
  parts.key = key;
  parts.ids = ids;
  parts.id = bundleId(key);
  return null;
}

/**
 * Which member decides a bundle's answer: the first at fault, else the first
 * not checked (expired, internal); -1 when all passed. Fault wins: answering
 * retry-safe would have the client resend a bundle that can never pass.
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
