/**
 * The stage order, as data: for each kind of submission the stages it passes,
 * in order, and the one loop that runs them (docs/architecture.md#the-pipeline).
 * A stage returns NEXT to go on, an Outcome to stop there (the pipeline's
 * `finish` answers it), or WAIT when it handed the admission to something
 * that resumes it later (a check, a durable write), or READ when the door is
 * to read the body now (the door reads and pushes it; the pipeline never
 * calls it to); the resumption runs the loop again, from the stage after.
 * Stages are plain functions of (pipeline, admission): they read the door's
 * submission (`a.sub`, never changed) and keep their state on the
 * admission. The table is shared, so running it makes nothing per request.
 */
import { E, RelayError } from '../errors.js';
import { F_OVER_UDP, JobKind, JobResult, KEY_BYTES, S_AUX0, S_AUX1, S_AUX2, S_AUX3, S_AUX4, S_BLOCKHASH, S_RESULT } from '../exec/jobs.js';
import { bundleRef, evmRef, solanaRef } from '../landing/ref.js';
import { KEY_EVM, KEY_SOLANA_SINGLE } from '../exec/check.js';
import { base58EncodeAt } from '../native/base58.js';
import type { Pipeline } from './admit.js';
import { SLAB_FULL } from './place.js';
import { bundleVerdict, memberViews, placeBundle, placeBundleTexts, prepareBundle } from './bundle.js';
import { prepareItem } from './evm-batch.js';
import { Outcome } from './outcome.js';
import { Kind, evmTx, type BundleSubmission, type EvmBatchSubmission, type EvmTxSubmission, type QuerySubmission, type SolanaTxSubmission, type Submission } from './submission.js';
import { Admission, Group } from './admission.js';

/** Go on to the next stage. */
export const NEXT = null;
/** Stop here: something else resumes the submission or finishes it. */
export const WAIT = 1;
/** Stop here: the door reads the body and pushes it, whose arrival resumes the admission. */
export const READ = 2;
type Step = Outcome | typeof NEXT | typeof WAIT | typeof READ;
type Stage = (p: Pipeline, a: Admission) => Step;

const SIGNATURE_BYTES = 64;
const QUEUES_FULL = 'verification or forwarding queue full';
const LANE_FULL = 'forwarding queue full';

// ---- gate: everything before a byte of the body is kept ----------------------

/**
 * Refused before the gate, by the door: draining or shed (Pipeline.arrive,
 * asked before the head is read), or not a request this door takes
 * (Content-Type, query, method).
 */
export function door(_p: Pipeline, a: Admission): Step {
  const refused = a.sub.refused;
  return refused === null ? NEXT : Outcome.refused(refused);
}

/** Per-IP, the account and its lane, its credit (gate.ts). */
export function gate(p: Pipeline, a: Admission): Step {
  const refused = p.gate.pass(a);
  return refused === null ? NEXT : Outcome.refused(refused, a.hash);
}

/** Malformed params found by the door, or by the pipeline (a batch item): refused after the gate, so they cost their credit. */
export function invalid(_p: Pipeline, a: Admission): Step {
  const bad = a.sub.invalid ?? a.invalid;
  return bad === null ? NEXT : Outcome.refused(bad, a.hash);
}

/** The body, when the payload did not come with the submission: the door reads it (`admit` says so) and pushes it, which resumes the run. */
export function read(_p: Pipeline, a: Admission): Step {
  return a.sub.maxBody === 0 ? NEXT : READ;
}

// ---- place: the payload into the slab -----------------------------------------

/** A raw Solana body: read straight into its slab block, or (chunked) assembled by the body reader. */
export function solanaBody(_p: Pipeline, a: Admission): Step {
  const bytes = a.received;
  if (bytes === null) return NEXT;
  if (a.offset >= 0) {
    a.length = bytes.length;
    return NEXT;
  }
  return bytes.length === 0 ? Outcome.refused(new RelayError(E.SOL_DECODE, 'empty body')) : NEXT;
}

/** A plain-text body: one `0x` transaction, ASCII whitespace around it allowed. */
export function evmBody(_p: Pipeline, a: Admission): Step {
  const bytes = a.received;
  if (bytes !== null) a.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1').trim();
  return NEXT;
}

/** One transaction's bytes into the slab, decoded from its text where it came as text. */
export function place(p: Pipeline, a: Admission): Step {
  if (a.offset >= 0) return NEXT;
  const sub = a.sub as SolanaTxSubmission | EvmTxSubmission;
  let err: RelayError | null = null;
  if (sub.kind === Kind.EvmTx) err = p.place.hex(a, (a.text ?? sub.text)!);
  else if (sub.text !== null) err = p.place.solanaText(a, sub.text, sub.encoding);
  else {
    // A datagram's transaction, or a body that came in chunks.
    const from = a.received ?? sub.bytes!;
    const start = a.received !== null ? 0 : sub.start;
    const end = a.received !== null ? from.length : sub.end;
    const offset = p.place.copy(from, start, end);
    if (offset < 0) err = new RelayError(E.CAPACITY, SLAB_FULL);
    else {
      a.offset = offset;
      a.length = end - start;
    }
  }
  return err === null ? NEXT : Outcome.refused(err);
}

/** A bundle's members into the slab: from its binary body, or decoded from its texts (JSON-RPC sendBundle). */
export function placeMembers(p: Pipeline, a: Admission): Step {
  const sub = a.sub as BundleSubmission;
  const err = a.received !== null ? placeBundle(p.place, a, a.received) : placeBundleTexts(p.place, a, sub.texts!, sub.encoding);
  return err === null ? NEXT : Outcome.refused(err);
}

// ---- check: one transaction, or a bundle's members, to the verifier -------------

/** One transaction to its check: inline, at the turn's end or on a worker (src/exec/verifier.ts). */
export function check(p: Pipeline, a: Admission): Step {
  let s = a.slot;
  if (s >= 0) {
    // An EVM batch item: its slot was filled when it was decoded; the lane must still have room.
    if (p.laneFull(a.lane)) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), a.hash);
  } else {
    s = p.slotFor(a.lane);
    if (s < 0) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), a.hash);
    a.slot = s;
    if (a.sub.kind === Kind.SolanaTx) p.jobs.set(s, JobKind.SolanaTx, a.offset, a.length, a.sub.overUdp ? F_OVER_UDP : 0);
    else p.jobs.set(s, JobKind.EvmTx, a.offset, a.length, 0);
  }
  p.verify(s, a);
  return WAIT;
}

/** A bundle: its tip rule, a duplicate of it, then each member to its check. */
export function checkMembers(p: Pipeline, a: Admission): Step {
  const err = prepareBundle(p.place, a, p.d.tips);
  if (err !== null) return Outcome.refused(err);
  const parts = a.bundle!;
  const ids = parts.ids!;
  if (p.d.dedup.contains(parts.key!, p.clock())) return p.accepted(a, 'duplicate', ids[0]!, ids);
  const n = ids.length;
  const slots: number[] = [];
  parts.slots = slots;
  for (let i = 0; i < n; i++) {
    const s = p.slotFor(a.lane);
    if (s < 0) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL));
    const v = memberViews[i]!;
    p.jobs.set(s, JobKind.SolanaVerify, parts.offsets![i]!, parts.lengths[i]!, 0);
    p.jobs.setField(s, S_AUX0, v.signaturesOffset);
    p.jobs.setField(s, S_AUX1, v.numSignatures);
    p.jobs.setField(s, S_AUX2, v.accountKeysOffset);
    p.jobs.setField(s, S_AUX3, v.messageOffset);
    p.jobs.setField(s, S_AUX4, v.messageLength);
    p.jobs.setField(s, S_BLOCKHASH, v.recentBlockhashOffset);
    slots.push(s);
  }
  parts.pending = n;
  for (const s of slots) p.verify(s, a);
  return WAIT;
}

// ---- enqueue: a checked transaction to its lane ------------------------------------

/** A checked Solana or EVM transaction: a duplicate, its client gone, or offered to its lane. */
export function enqueue(p: Pipeline, a: Admission): Step {
  const s = a.slot;
  const r = p.jobs.field(s, S_RESULT) as JobResult;
  const sub = a.sub as SolanaTxSubmission | EvmTxSubmission;
  const solana = sub.kind === Kind.SolanaTx;
  if (r !== JobResult.Ok && r !== JobResult.Duplicate) {
    return Outcome.refused(p.checkError(s, solana ? E.SOL_DECODE : E.TX_INVALID, ''), a.hash);
  }
  let id: string;
  let payload: string;
  if (solana) {
    const sigAt = a.offset + p.jobs.field(s, S_AUX0);
    id = base58EncodeAt(p.place.bytes, sigAt, SIGNATURE_BYTES);
    if (r === JobResult.Duplicate) {
      p.traceDuplicate(a, id);
      return p.accepted(a, 'duplicate', id);
    }
    if (p.gone(a)) {
      p.unclaim(KEY_SOLANA_SINGLE, p.place.bytes, sigAt, SIGNATURE_BYTES);
      return Outcome.refused(new RelayError(E.CLIENT_GONE));
    }
    // Base64 that decoded is canonical: the client's own text is forwarded, saving an encode.
    payload = sub.textForwarded ? sub.text! : p.place.buf.toString('base64', a.offset, a.offset + a.length);
    const trace = p.trace(a, id);
    if (trace && p.d.tracker!.follows('solana')) trace.landingRef = solanaRef(p.jobs, s, p.place.bytes, a.offset, a.lane);
    if (!p.d.forwarder.lane(a.lane).offer(payload, trace)) {
      if (trace) p.d.tracker!.forget(trace);
      p.unclaim(KEY_SOLANA_SINGLE, p.place.bytes, sigAt, SIGNATURE_BYTES);
      return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL));
    }
  } else {
    const keyAt = p.jobs.keyAt(s);
    id = a.hash ?? '0x' + p.jobsBuf.toString('hex', keyAt, keyAt + KEY_BYTES);
    if (r === JobResult.Duplicate) {
      p.traceDuplicate(a, id);
      return p.accepted(a, 'duplicate', id);
    }
    if (p.gone(a)) {
      p.unclaim(KEY_EVM, p.jobs.bytes, keyAt, KEY_BYTES);
      return Outcome.refused(new RelayError(E.CLIENT_GONE), id);
    }
    // An EVM transaction is forwarded as its client wrote it (its plain-text body trimmed).
    payload = a.text ?? sub.text ?? '0x' + p.place.buf.toString('hex', a.offset, a.offset + a.length);
    const trace = p.trace(a, id);
    if (trace && p.d.tracker!.follows('evm')) trace.landingRef = evmRef(p.jobs, s, a.lane);
    if (!p.d.forwarder.lane(a.lane).offer(payload, trace)) {
      if (trace) p.d.tracker!.forget(trace);
      p.unclaim(KEY_EVM, p.jobs.bytes, keyAt, KEY_BYTES);
      return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL), id);
    }
  }
  return p.accepted(a, 'queued', id);
}

/** A checked bundle: all members valid, not a duplicate, its client still there, then to its lane whole. */
export function enqueueBundle(p: Pipeline, a: Admission): Step {
  const parts = a.bundle!;
  const slots = parts.slots!;
  const bad = bundleVerdict(slots.length, (i) => p.jobs.field(slots[i]!, S_RESULT) as JobResult);
  if (bad >= 0) return Outcome.refused(p.checkError(slots[bad]!, E.BATCH_DECODE, `transaction ${bad}: `));
  const ids = parts.ids!;
  const key = parts.key!;
  if (p.gone(a)) return Outcome.refused(new RelayError(E.CLIENT_GONE));
  if (!p.d.dedup.claim(key, p.clock())) {
    p.traceDuplicate(a, ids[0]!);
    return p.accepted(a, 'duplicate', ids[0]!, ids);
  }
  const offsets = parts.offsets!;
  const payload = offsets.map((o, i) => p.place.buf.toString('base64', o, o + parts.lengths[i]!));
  const trace = p.trace(a, ids[0]!);
  if (trace) p.d.tracker!.alias(trace, parts.id!);
  if (trace && p.d.tracker!.follows('solana')) trace.landingRef = bundleRef(p.jobs, slots, p.place.bytes, offsets, ids, a.lane);
  if (!p.d.forwarder.lane('solana-bundle').offer(payload, trace)) {
    if (trace) p.d.tracker!.forget(trace);
    p.d.dedup.release(key, p.clock());
    return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL));
  }
  return p.accepted(a, 'queued', ids[0]!, ids);
}

// ---- groups: a JSON-RPC body's calls, an EVM batch's items ------------------------

/** A JSON-RPC body's calls (its door's reading), each admitted in turn; the IP bucket pays for each past the first. */
export function expand(p: Pipeline, a: Admission): Step {
  const parsed = a.parsed;
  if (parsed === null) return Outcome.refused(new RelayError(E.PARSE, 'body is not valid JSON'));
  if (parsed instanceof RelayError) return Outcome.refused(parsed);
  const calls = parsed as readonly Submission[];
  if (calls.length > 1) {
    const limited = p.gate.more(a, calls.length - 1);
    if (limited !== null) return Outcome.refused(limited);
  }
  p.admitMembers(a, calls.map((c) => p.member(c, a)));
  return WAIT;
}

/** Items are admitted, each taking its credit, only once the receive record is durable (docs/protocol.md#evm-batches). */
export function record(p: Pipeline, a: Admission): Step {
  const recorder = p.d.batches;
  if (recorder === null) return Outcome.refused(new RelayError(E.BATCH_RECORD));
  const limited = p.gate.takeRecord(a.account!);
  if (limited !== null) return Outcome.refused(limited);
  const batch = a.sub as EvmBatchSubmission;
  const texts = batch.texts!;
  const items: Admission[] = new Array(texts.length);
  for (let i = 0; i < texts.length; i++) {
    // Each item is a submission of its own, as if its door had sent it alone.
    const item = p.member(evmTx(batch.door, { text: texts[i]!, ip: batch.ip }), a);
    item.account = a.account;
    item.lane = a.lane;
    const err = p.place.hex(item, texts[i]!);
    if (err !== null) item.invalid = err;
    else {
      item.slot = p.jobs.acquire();
      prepareItem(p.place, p.jobs, p.d.evmChainId, item);
    }
    items[i] = item;
  }
  const group = new Group(items);
  const batchId = recorder.newId();
  group.batchId = batchId;
  a.group = group;
  recorder
    .persist({
      batch_id: batchId,
      received_at: new Date().toISOString(),
      account_id: a.account!.id,
      client_ip: batch.ip,
      tx_hashes: items.map((x) => x.hash),
    })
    .then(
      () => p.admitMembers(a, items),
      () => {
        for (const x of items) p.release(x);
        p.finish(a, Outcome.refused(new RelayError(E.BATCH_RECORD)));
      },
    );
  return WAIT;
}

// ---- status reads ------------------------------------------------------------------

/** A status read: its ids from the submission or, read from the body, its door's reading; answered by the status service (maybe later). */
export function status(p: Pipeline, a: Admission): Step {
  const parsed = a.parsed;
  if (parsed instanceof RelayError) return Outcome.refused(parsed);
  const ids = (a.sub as QuerySubmission).queryIds ?? (parsed as readonly string[] | null);
  if (ids === null) return Outcome.refused(new RelayError(E.PARSE, 'body is not valid JSON'));
  const account = a.account!;
  p.d.statuses(account, ids, (o) => p.finish(a, o.error === null ? o.by(account) : o));
  return WAIT;
}

/**
 * The order, per Kind (its numeric value indexes this table). A status read
 * whose ids came with the submission has no body: `read` passes it on at once.
 */
export const STAGES: readonly (readonly Stage[])[] = [
  /* SolanaTx */ [door, gate, invalid, read, solanaBody, place, check, enqueue],
  /* Bundle   */ [door, gate, invalid, read, placeMembers, checkMembers, enqueueBundle],
  /* EvmTx    */ [door, gate, invalid, read, evmBody, place, check, enqueue],
  /* EvmBatch */ [door, gate, invalid, record],
  /* Calls    */ [door, gate, read, expand],
  /* Query    */ [door, gate, invalid, read, status],
];

/**
 * The loop: runs `a`'s stages from `a.step` until one stops it; an Outcome
 * is its answer. Returns true when the door is to read the body now.
 */
export function runStages(p: Pipeline, a: Admission): boolean {
  const stages = STAGES[a.sub.kind]!;
  for (let i = a.step; i < stages.length; i++) {
    // Set first: a stage that waits may be resumed before it returns (an inline check).
    a.step = i + 1;
    const r = stages[i]!(p, a);
    if (r === NEXT) continue;
    if (r === READ) return true;
    if (r !== WAIT) p.finish(a, r);
    return false;
  }
  return false;
}
