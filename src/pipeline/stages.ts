/**
 * The stage order, as data: for each kind of submission the stages it passes,
 * in order, and the one loop that runs them (docs/architecture.md#the-pipeline).
 * A stage returns NEXT to go on, an Outcome to stop there (the pipeline's
 * `finish` answers it), or WAIT when it handed the submission to something
 * that resumes it later (a check, a durable write), or HEAD / READ when the
 * door is to read the head / the body now (the door reads, the pipeline
 * never calls it to); the resumption runs the loop again, from the stage after.
 * Stages are plain functions of (pipeline, submission): the table is shared,
 * so running it makes nothing per request.
 */
import { E, RelayError } from '../errors.js';
import { F_OVER_UDP, JobKind, JobResult, KEY_BYTES, S_AUX0, S_AUX1, S_AUX2, S_AUX3, S_AUX4, S_BLOCKHASH, S_RESULT } from '../exec/jobs.js';
import { bundleRef, evmRef, solanaRef } from '../landing/ref.js';
import { KEY_EVM, KEY_SOLANA_SINGLE } from '../exec/check.js';
import { base58EncodeAt } from '../native/base58.js';
import type { Pipeline } from './admit.js';
import { SLAB_FULL } from './place.js';
import { bundleId, bundleVerdict, memberViews, placeBundle, placeBundleTexts, prepareBundle } from './bundle.js';
import { prepareItem } from './evm-batch.js';
import { Outcome } from './outcome.js';
import { Kind, Next, Submission } from './submission.js';

/** Go on to the next stage. */
export const NEXT = null;
/** Stop here: something else resumes the submission or finishes it. */
export const WAIT = 1;
/** Stop here: the door reads the body (`Next.Body`), whose arrival resumes the submission. */
export const READ = 2;
/** Stop here: the door reads the head and the peer (`Next.Head`), then resumes the submission. */
export const HEAD = 3;
type Step = Outcome | typeof NEXT | typeof WAIT | typeof READ | typeof HEAD;
type Stage = (p: Pipeline, sub: Submission) => Step;

const SIGNATURE_BYTES = 64;
const QUEUES_FULL = 'verification or forwarding queue full';
const LANE_FULL = 'forwarding queue full';

// ---- gate: everything before a byte of the body is kept ----------------------

/** Not a request this door takes (Content-Type, query, method): refused without touching the gate. */
export function door(_p: Pipeline, sub: Submission): Step {
  return sub.refused === null ? NEXT : Outcome.refused(sub.refused);
}

/** Draining and shed (gate.ts), before anything of the request is read; then the door reads its head and peer. */
export function arrive(p: Pipeline, sub: Submission): Step {
  if (sub.arrived) return NEXT;
  const refused = p.gate.arrive(sub);
  if (refused !== null) return Outcome.refused(refused);
  return sub.ip === null ? HEAD : NEXT;
}

/** The head's refusal, per-IP, the account and its lane, its credit (gate.ts). */
export function gate(p: Pipeline, sub: Submission): Step {
  if (sub.refused !== null) return Outcome.refused(sub.refused);
  const refused = p.gate.pass(sub);
  return refused === null ? NEXT : Outcome.refused(refused, sub.hash);
}

/** Malformed params found by the door: refused after the gate, so they cost their credit. */
export function invalid(_p: Pipeline, sub: Submission): Step {
  return sub.invalid === null ? NEXT : Outcome.refused(sub.invalid, sub.hash);
}

/** The body, when the payload did not come with the head: the door reads it (`admit` says so), then `bodyArrived` resumes. */
export function read(p: Pipeline, sub: Submission): Step {
  if (sub.maxBody === 0) return NEXT;
  sub.body = p;
  return READ;
}

// ---- place: the payload into the slab -----------------------------------------

/** A raw Solana body: read straight into its slab block, or (chunked) assembled by the body reader. */
export function solanaBody(_p: Pipeline, sub: Submission): Step {
  const bytes = sub.received;
  if (bytes === null) return NEXT;
  if (sub.offset >= 0) {
    sub.length = bytes.length;
    return NEXT;
  }
  if (bytes.length === 0) return Outcome.refused(new RelayError(E.SOL_DECODE, 'empty body'));
  sub.bytes = bytes;
  sub.end = bytes.length;
  return NEXT;
}

/** A plain-text body: one `0x` transaction, ASCII whitespace around it allowed. */
export function evmBody(_p: Pipeline, sub: Submission): Step {
  const bytes = sub.received;
  if (bytes !== null) sub.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1').trim();
  return NEXT;
}

/** One transaction's bytes into the slab, decoded from its text where it came as text. */
export function place(p: Pipeline, sub: Submission): Step {
  if (sub.offset >= 0) return NEXT;
  let err: RelayError | null = null;
  if (sub.kind === Kind.EvmTx) err = p.place.hex(sub, sub.text!);
  else if (sub.text !== null) err = p.place.solanaText(sub, sub.text);
  else {
    const offset = p.place.copy(sub.bytes!, sub.start, sub.end);
    if (offset < 0) err = new RelayError(E.CAPACITY, SLAB_FULL);
    else {
      sub.offset = offset;
      sub.length = sub.end - sub.start;
    }
  }
  return err === null ? NEXT : Outcome.refused(err);
}

/** A bundle's members into the slab: from its binary body, or decoded from its texts (JSON-RPC sendBundle). */
export function placeMembers(p: Pipeline, sub: Submission): Step {
  const err = sub.received !== null ? placeBundle(p.place, sub, sub.received) : placeBundleTexts(p.place, sub);
  return err === null ? NEXT : Outcome.refused(err);
}

// ---- check: one transaction, or a bundle's members, to the verifier -------------

/** One transaction to its check: inline, at the turn's end or on a worker (src/exec/verifier.ts). */
export function check(p: Pipeline, sub: Submission): Step {
  let s = sub.slot;
  if (s >= 0) {
    // An EVM batch item: its slot was filled when it was decoded; the lane must still have room.
    if (p.laneFull(sub.lane)) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), sub.hash);
  } else {
    s = p.slotFor(sub.lane);
    if (s < 0) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), sub.hash);
    sub.slot = s;
    if (sub.kind === Kind.SolanaTx) p.jobs.set(s, JobKind.SolanaTx, sub.offset, sub.length, sub.overUdp ? F_OVER_UDP : 0);
    else p.jobs.set(s, JobKind.EvmTx, sub.offset, sub.length, 0);
  }
  p.verify(s, sub);
  return WAIT;
}

/** A bundle: its tip rule, a duplicate of it, then each member to its check. */
export function checkMembers(p: Pipeline, sub: Submission): Step {
  const err = prepareBundle(p.place, sub, p.d.tips);
  if (err !== null) return Outcome.refused(err);
  const ids = sub.ids!;
  if (p.d.dedup.contains(sub.key!, p.clock())) return p.accepted(sub, 'duplicate', ids[0]!, ids);
  const n = ids.length;
  const slots: number[] = [];
  sub.slots = slots;
  for (let i = 0; i < n; i++) {
    const s = p.slotFor(sub.lane);
    if (s < 0) return Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL));
    const v = memberViews[i]!;
    p.jobs.set(s, JobKind.SolanaVerify, sub.offsets![i]!, sub.lengths![i]!, 0);
    p.jobs.setField(s, S_AUX0, v.signaturesOffset);
    p.jobs.setField(s, S_AUX1, v.numSignatures);
    p.jobs.setField(s, S_AUX2, v.accountKeysOffset);
    p.jobs.setField(s, S_AUX3, v.messageOffset);
    p.jobs.setField(s, S_AUX4, v.messageLength);
    p.jobs.setField(s, S_BLOCKHASH, v.recentBlockhashOffset);
    slots.push(s);
  }
  sub.pending = n;
  for (const s of slots) p.verify(s, sub);
  return WAIT;
}

// ---- enqueue: a checked transaction to its lane ------------------------------------

/** A checked Solana or EVM transaction: a duplicate, its client gone, or offered to its lane. */
export function enqueue(p: Pipeline, sub: Submission): Step {
  const s = sub.slot;
  const r = p.jobs.field(s, S_RESULT) as JobResult;
  const solana = sub.kind === Kind.SolanaTx;
  if (r !== JobResult.Ok && r !== JobResult.Duplicate) {
    return Outcome.refused(p.checkError(s, solana ? E.SOL_DECODE : E.TX_INVALID, ''), sub.hash);
  }
  let id: string;
  let payload: string;
  if (solana) {
    const sigAt = sub.offset + p.jobs.field(s, S_AUX0);
    id = base58EncodeAt(p.place.bytes, sigAt, SIGNATURE_BYTES);
    if (r === JobResult.Duplicate) {
      p.traceDuplicate(sub, id);
      return p.accepted(sub, 'duplicate', id);
    }
    if (p.gone(sub)) {
      p.unclaim(KEY_SOLANA_SINGLE, p.place.bytes, sigAt, SIGNATURE_BYTES);
      return Outcome.refused(new RelayError(E.CLIENT_GONE));
    }
    // Base64 that decoded is canonical: the client's own text is forwarded, saving an encode.
    payload = sub.textForwarded ? sub.text! : p.place.buf.toString('base64', sub.offset, sub.offset + sub.length);
    const trace = p.trace(sub, id);
    if (trace && p.d.tracker!.follows('solana')) trace.landingRef = solanaRef(p.jobs, s, p.place.bytes, sub.offset, sub.lane);
    if (!p.d.forwarder.lane(sub.lane).offer(payload, trace)) {
      if (trace) p.d.tracker!.forget(trace);
      p.unclaim(KEY_SOLANA_SINGLE, p.place.bytes, sigAt, SIGNATURE_BYTES);
      return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL));
    }
  } else {
    const keyAt = p.jobs.keyAt(s);
    id = sub.hash ?? '0x' + p.jobsBuf.toString('hex', keyAt, keyAt + KEY_BYTES);
    if (r === JobResult.Duplicate) {
      p.traceDuplicate(sub, id);
      return p.accepted(sub, 'duplicate', id);
    }
    if (p.gone(sub)) {
      p.unclaim(KEY_EVM, p.jobs.bytes, keyAt, KEY_BYTES);
      return Outcome.refused(new RelayError(E.CLIENT_GONE), id);
    }
    payload = sub.text ?? '0x' + p.place.buf.toString('hex', sub.offset, sub.offset + sub.length);
    const trace = p.trace(sub, id);
    if (trace && p.d.tracker!.follows('evm')) trace.landingRef = evmRef(p.jobs, s, sub.lane);
    if (!p.d.forwarder.lane(sub.lane).offer(payload, trace)) {
      if (trace) p.d.tracker!.forget(trace);
      p.unclaim(KEY_EVM, p.jobs.bytes, keyAt, KEY_BYTES);
      return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL), id);
    }
  }
  return p.accepted(sub, 'queued', id);
}

/** A checked bundle: all members valid, not a duplicate, its client still there, then to its lane whole. */
export function enqueueBundle(p: Pipeline, sub: Submission): Step {
  const slots = sub.slots!;
  const bad = bundleVerdict(slots.length, (i) => p.jobs.field(slots[i]!, S_RESULT) as JobResult);
  if (bad >= 0) return Outcome.refused(p.checkError(slots[bad]!, E.BATCH_DECODE, `transaction ${bad}: `));
  const ids = sub.ids!;
  const key = sub.key!;
  if (p.gone(sub)) return Outcome.refused(new RelayError(E.CLIENT_GONE));
  if (!p.d.dedup.claim(key, p.clock())) {
    p.traceDuplicate(sub, ids[0]!);
    return p.accepted(sub, 'duplicate', ids[0]!, ids);
  }
  const payload = sub.offsets!.map((o, i) => p.place.buf.toString('base64', o, o + sub.lengths![i]!));
  const trace = p.trace(sub, ids[0]!);
  if (trace) p.d.tracker!.alias(trace, bundleId(key));
  if (trace && p.d.tracker!.follows('solana')) trace.landingRef = bundleRef(p.jobs, slots, p.place.bytes, sub.offsets!, ids, sub.lane);
  if (!p.d.forwarder.lane('solana-bundle').offer(payload, trace)) {
    if (trace) p.d.tracker!.forget(trace);
    p.d.dedup.release(key, p.clock());
    return Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL));
  }
  return p.accepted(sub, 'queued', ids[0]!, ids);
}

// ---- groups: a JSON-RPC body's calls, an EVM batch's items ------------------------

/** A JSON-RPC body's calls, each admitted in turn; the IP bucket pays for each past the first. */
export function expand(p: Pipeline, sub: Submission): Step {
  if (sub.invalid !== null) return Outcome.refused(sub.invalid);
  const calls = sub.calls!;
  if (calls.length > 1) {
    const limited = p.gate.more(sub, calls.length - 1);
    if (limited !== null) return Outcome.refused(limited);
  }
  p.admitMembers(sub, calls);
  return WAIT;
}

/** Items are admitted, each taking its credit, only once the receive record is durable (docs/protocol.md#evm-batches). */
export function record(p: Pipeline, sub: Submission): Step {
  const recorder = p.d.batches;
  if (recorder === null) return Outcome.refused(new RelayError(E.BATCH_RECORD));
  const limited = p.gate.takeRecord(sub.account!);
  if (limited !== null) return Outcome.refused(limited);
  const texts = sub.texts!;
  const items: Submission[] = new Array(texts.length);
  for (let i = 0; i < texts.length; i++) {
    const item = new Submission(Kind.EvmTx, 'evm', sub.io);
    item.door = sub.door;
    item.account = sub.account;
    item.lane = sub.lane;
    item.text = texts[i]!;
    item.textForwarded = true;
    const err = p.place.hex(item, item.text);
    if (err !== null) item.invalid = err;
    else {
      item.slot = p.jobs.acquire();
      prepareItem(p.place, p.jobs, p.d.evmChainId, item);
    }
    items[i] = item;
  }
  const batchId = recorder.newId();
  sub.batchId = batchId;
  recorder
    .persist({
      batch_id: batchId,
      received_at: new Date().toISOString(),
      account_id: sub.account!.id,
      client_ip: sub.ip ?? '',
      tx_hashes: items.map((x) => x.hash),
    })
    .then(
      () => p.admitMembers(sub, items),
      () => {
        for (const x of items) p.release(x);
        p.finish(sub, Outcome.refused(new RelayError(E.BATCH_RECORD)));
      },
    );
  return WAIT;
}

// ---- status reads ------------------------------------------------------------------

/** A status read: its ids from the query or the body, answered by the status service (maybe later). */
export function status(p: Pipeline, sub: Submission): Step {
  if (sub.invalid !== null) return Outcome.refused(sub.invalid);
  p.d.statuses(sub.account!, sub.queryIds!, (o) => p.finish(sub, o));
  return WAIT;
}

/**
 * The order, per Kind (its numeric value indexes this table). A status read
 * whose ids came in its query has no body: `read` passes it on at once.
 */
export const STAGES: readonly (readonly Stage[])[] = [
  /* SolanaTx */ [door, arrive, gate, invalid, read, solanaBody, place, check, enqueue],
  /* Bundle   */ [door, arrive, gate, invalid, read, placeMembers, checkMembers, enqueueBundle],
  /* EvmTx    */ [door, arrive, gate, invalid, read, evmBody, place, check, enqueue],
  /* EvmBatch */ [door, arrive, gate, invalid, record],
  /* Calls    */ [door, arrive, gate, read, expand],
  /* Query    */ [door, arrive, gate, invalid, read, status],
];

/**
 * The loop: runs `sub`'s stages from `sub.step` until one stops it; an
 * Outcome is its answer. Returns what the door does next.
 */
export function runStages(p: Pipeline, sub: Submission): Next {
  const stages = STAGES[sub.kind]!;
  for (let i = sub.step; i < stages.length; i++) {
    // Set first: a stage that waits may be resumed before it returns (an inline check).
    sub.step = i + 1;
    const r = stages[i]!(p, sub);
    if (r === NEXT) continue;
    if (r === READ) return Next.Body;
    if (r === HEAD) return Next.Head;
    if (r !== WAIT) p.finish(sub, r);
    return Next.Done;
  }
  return Next.Done;
}
