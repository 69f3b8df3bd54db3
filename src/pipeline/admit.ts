/**
 * The admission pipeline: the one way in for every door; the stages and their
 * order are in docs/architecture.md (gate, place, expand, prepare, check,
 * enqueue, sink). Everything before the check runs on the request's thread,
 * so unauthorised, over-limit and shed traffic never costs a signature check.
 * Every answer leaves through `finish`, which gives back what the submission
 * held and counts it: nothing answered uncounted, nothing held leaked.
 */
import { E, RelayError, type ErrorSpec } from '../errors.js';
import type { Clock } from '../clock.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { Slab } from '../tables/slab.js';
import type { Forwarder } from '../forward/forwarder.js';
import type { LaneName } from '../forward/lane.js';
import type { Verifier } from '../exec/verifier.js';
import { F_OVER_UDP, JobKind, JobResult, KEY_BYTES, S_AUX0, S_AUX1, S_AUX2, S_AUX3, S_AUX4, S_BLOCKHASH, S_RESULT, type JobTable } from '../exec/jobs.js';
import { bundleRef, evmRef, solanaRef } from '../landing/ref.js';
import { KEY_EVM, KEY_SOLANA_SINGLE } from '../exec/check.js';
import { CounterSet, LABEL_SEPARATOR } from '../obs/metrics.js';
import { base58EncodeAt } from '../native/base58.js';
import { MAX_V1_TX_SIZE } from '../chains/solana/decode.js';
import type { TipAccounts } from '../chains/solana/tip.js';
import { Gate, OVER_BOUND, type GateDeps } from './gate.js';
import { Placer, SLAB_FULL } from './place.js';
import { MAX_BUNDLE_BODY, bundleId, bundleVerdict, memberViews, placeBundle, placeBundleTexts, prepareBundle } from './bundle.js';
import { prepareItem, type BatchRecorder } from './evm-batch.js';
import { Outcome } from './outcome.js';
import { Kind, Submission, type BodySink, type Sink } from './submission.js';
import type { Trace, Tracker } from '../status/tracker.js';
import { nextRequestId } from '../status/request-id.js';
import type { AccountRecord } from '../store/accounts.js';

interface PipelineDeps extends GateDeps {
  dedup: DedupFilter;
  slab: Slab;
  jobs: JobTable;
  tips: TipAccounts | null;
  evmChainId: bigint;
  /** Where EVM batch receive records go; null refuses batches (503, nothing sent). */
  batches: BatchRecorder | null;
  /** `http.max_body_bytes`, named in the answer to a body over it. */
  maxBody: number;
  /** Where admitted transactions are traced for status reads (docs/protocol.md#status); null: not traced. */
  tracker: Tracker | null;
  /** A status read for an authenticated account: its answer, or its refusal (the reads' own rate limit); maybe later (acceptor threads ask each other). */
  statuses: (account: AccountRecord, ids: readonly string[], done: (o: Outcome) => void) => void;
}

const SIGNATURE_BYTES = 64;

/**
 * The id of the request `sub` came in (its outermost submission's), made the
 * first time something of it is queued: a refused or shed request costs none.
 */
function requestIdOf(sub: Submission): string {
  let root = sub;
  while (root.parent !== null) root = root.parent;
  return (root.requestId ??= nextRequestId());
}

/** The door a status names: a datagram's is `udp`. */
const doorOf = (sub: Submission): string => (sub.overUdp ? 'udp' : sub.door || (sub.parent?.door ?? ''));
const QUEUES_FULL = 'verification or forwarding queue full';
/** Refusals for what the client wrote (docs/protocol.md#rate-limits): charged to the account's refusals bucket. */
const SHAPE_ERRORS: ReadonlySet<ErrorSpec> = new Set([E.PARSE, E.INVALID_REQUEST, E.JSON_TOO_DEEP, E.METHOD_NOT_FOUND, E.INVALID_PARAMS, E.TOO_LARGE]);
const LANE_FULL = 'forwarding queue full';

export class Pipeline implements BodySink {
  readonly gate: Gate;
  /** Refusals by the table's code; admissions and duplicates by lane. */
  readonly rejected = new CounterSet<string>();
  /** The same refusals by door and code, the key joined by LABEL_SEPARATOR (the metric's labels). */
  readonly rejectedByDoor = new CounterSet<string>();
  readonly admitted = new CounterSet<LaneName>();
  readonly duplicates = new CounterSet<LaneName>();
  private readonly place: Placer;
  private readonly jobs: JobTable;
  private readonly clock: Clock;
  /** The job table's bytes as a Buffer: a hash's hex straight from its slot. */
  private readonly jobsBuf: Buffer;
  /** The submission each job slot checks (a bundle's for each of its members). */
  private readonly bySlot: (Submission | undefined)[];
  private readonly keyScratch = new Uint8Array(1 + SIGNATURE_BYTES);

  constructor(private readonly d: PipelineDeps) {
    this.gate = new Gate(d);
    this.place = new Placer(d.slab);
    this.jobs = d.jobs;
    this.clock = d.clock;
    this.jobsBuf = Buffer.from(d.jobs.bytes.buffer, d.jobs.bytes.byteOffset, d.jobs.bytes.length);
    this.bySlot = new Array<Submission | undefined>(d.jobs.slots).fill(undefined);
  }

  get draining(): boolean {
    return this.gate.draining;
  }

  /** True when `lane` has no upstream: what it admits is counted and dropped, and answers must not claim a forward. */
  dry(lane: LaneName): boolean {
    return this.d.forwarder.lane(lane).dry;
  }

  /** From now on every submission is refused DRAINING (503, retry-safe). */
  set draining(on: boolean) {
    this.gate.draining = on;
  }

  /** The one way in. `sink` gets the outcome exactly once, possibly before `admit` returns. */
  admit(sub: Submission, sink: Sink): void {
    sub.sink = sink;
    if (sub.refused !== null) return this.finish(sub, Outcome.refused(sub.refused));
    const refused = this.gate.pass(sub);
    if (refused !== null) return this.finish(sub, Outcome.refused(refused, sub.hash));
    if (sub.invalid !== null) return this.finish(sub, Outcome.refused(sub.invalid, sub.hash));
    if (sub.kind === Kind.Query && sub.queryIds !== null) return this.d.statuses(sub.account!, sub.queryIds, (o) => this.finish(sub, o));
    if (sub.maxBody > 0) {
      // The rest continues as the body arrives (bodyInto, bodyArrived).
      sub.body = this;
      return sub.io.read(sub);
    }
    this.placed(sub);
  }

  // ---- place --------------------------------------------------------------

  /** A raw transaction body of `length` bytes: its slab block, read into directly; null when refused. */
  bodyInto(sub: Submission, length: number): Uint8Array | null {
    if (length === 0) {
      this.finish(sub, Outcome.refused(new RelayError(E.SOL_DECODE, 'empty body')));
      return null;
    }
    if (!this.place.reserve(sub, length)) {
      this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, SLAB_FULL)));
      return null;
    }
    return this.place.view(sub.offset, length);
  }

  bodyArrived(sub: Submission, bytes: Uint8Array): void {
    sub.maxBody = 0;
    switch (sub.kind) {
      case Kind.SolanaTx:
        if (sub.offset >= 0) {
          sub.length = bytes.length;
          return this.check(sub);
        }
        // Chunked: assembled by the body reader, copied into the slab here.
        if (bytes.length === 0) return this.finish(sub, Outcome.refused(new RelayError(E.SOL_DECODE, 'empty body')));
        sub.bytes = bytes;
        sub.end = bytes.length;
        return this.placed(sub);
      case Kind.EvmTx:
        // A plain-text body: one `0x` transaction, ASCII whitespace around it allowed.
        sub.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1').trim();
        return this.placed(sub);
      case Kind.Bundle: {
        const err = placeBundle(this.place, sub, bytes);
        if (err !== null) return this.finish(sub, Outcome.refused(err));
        return this.prepareBundle(sub);
      }
      case Kind.Calls:
        return this.expand(sub, bytes);
      case Kind.Query: {
        const ids = sub.io.query!(sub, bytes);
        if (ids instanceof RelayError) return this.finish(sub, Outcome.refused(ids));
        return this.d.statuses(sub.account!, ids, (o) => this.finish(sub, o));
      }
      default:
        return this.finish(sub, Outcome.refused(new RelayError(E.INTERNAL)));
    }
  }

  bodyTooLarge(sub: Submission, n: number): void {
    let err: RelayError;
    if (sub.kind === Kind.SolanaTx) err = new RelayError(E.SOL_DECODE, `transaction is ${n} bytes, more than ${MAX_V1_TX_SIZE}`);
    else if (sub.kind === Kind.Bundle) err = new RelayError(E.BATCH_DECODE, `body is ${n} bytes, more than ${MAX_BUNDLE_BODY}`);
    else if (sub.kind === Kind.Query) err = new RelayError(E.TOO_LARGE, `a status read's body of ${n} bytes exceeds ${sub.maxBody}`);
    else err = new RelayError(E.TOO_LARGE, `body of ${n} bytes exceeds http.max_body_bytes (${this.d.maxBody})`);
    this.finish(sub, Outcome.refused(err));
  }

  bodyOverBudget(sub: Submission): void {
    this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, 'request bodies being read are over http.max_buffered_body_bytes')));
  }

  /** A payload that is already here (text, a datagram, a body read whole): into the slab, then on. */
  private placed(sub: Submission): void {
    if (sub.kind === Kind.EvmBatch) return this.prepareBatch(sub);
    if (sub.kind === Kind.Bundle) {
      // A bundle sent as text (JSON-RPC sendBundle): its members decoded into the slab, then as a binary body's.
      const err = placeBundleTexts(this.place, sub);
      if (err !== null) return this.finish(sub, Outcome.refused(err));
      return this.prepareBundle(sub);
    }
    if (sub.offset < 0) {
      let err: RelayError | null = null;
      if (sub.kind === Kind.EvmTx) err = this.place.hex(sub, sub.text!);
      else if (sub.text !== null) err = this.place.solanaText(sub, sub.text);
      else {
        const offset = this.place.copy(sub.bytes!, sub.start, sub.end);
        if (offset < 0) err = new RelayError(E.CAPACITY, SLAB_FULL);
        else {
          sub.offset = offset;
          sub.length = sub.end - sub.start;
        }
      }
      if (err !== null) return this.finish(sub, Outcome.refused(err));
    }
    this.check(sub);
  }

  /**
   * A refusal for its shape, of a JSON body (`POST /`, Jito's paths, a `/ws`
   * message, `POST /v1/status`) or one of its calls, takes a credit of the
   * account its credential named; other doors' refusals are paid for at the gate.
   */
  private chargeRefusal(sub: Submission): void {
    let root = sub;
    while (root.parent !== null) root = root.parent;
    if (root.account === null || (root.kind !== Kind.Calls && root.kind !== Kind.Query)) return;
    this.gate.chargeRefusal(root.account);
  }

  // ---- expand: a JSON-RPC body's calls --------------------------------------

  private expand(sub: Submission, body: Uint8Array): void {
    const calls = sub.io.calls!(sub, body);
    if (calls instanceof RelayError) return this.finish(sub, Outcome.refused(calls));
    if (calls.length > 1) {
      const limited = this.gate.more(sub, calls.length - 1);
      if (limited !== null) return this.finish(sub, Outcome.refused(limited));
    }
    this.admitMembers(sub, calls);
  }

  /** Admits a group's members in order; the group settles when the last one does. */
  private admitMembers(group: Submission, members: Submission[]): void {
    group.children = members;
    group.pending = members.length;
    for (const m of members) {
      m.parent = group;
      m.arrived = true;
      m.ip = group.ip;
      this.admit(m, this.memberSettled);
    }
  }

  private readonly memberSettled: Sink = (m, o) => {
    m.outcome = o;
    const g = m.parent!;
    if (--g.pending > 0) {
      // The members still unsettled are all checked and waiting: queue them now.
      if (g.checked !== null && g.checked.length === g.pending) this.queueGroup(g);
      return;
    }
    // One call (the usual case) answers with its own outcome. Members were counted as they settled.
    if (g.kind === Kind.Calls) return g.sink!(g, g.children!.length === 1 ? o : Outcome.group(null, g.children!.map((c) => c.outcome!)));
    const items = g.children!.map((c) => c.outcome!);
    const sent = items.filter((x) => x.sent && x.id !== null).map((x) => x.id!);
    if (this.d.tracker !== null && sent.length > 0) this.d.tracker.batch(g.batchId!, requestIdOf(g), g.account!.id, g.door, sent);
    // Durable before the answer, so a crash after it leaves the record complete. A failed write does
    // not change the answer (the record holds every hash); the recorder counts it.
    const answer = (): void => g.sink!(g, Outcome.group(g.batchId, items));
    this.d.batches!.updateOutcome(g.batchId!, items).then(answer, answer);
  };

  /** Queues a group's checked members in order; the last to settle answers the group. */
  private queueGroup(g: Submission): void {
    const slots = g.checked!;
    g.checked = null;
    g.flushing = true;
    for (const s of slots) this.onChecked(s);
  }

  // ---- prepare: EVM batches -------------------------------------------------

  /** Items are admitted, each taking its credit, only once the receive record is durable (docs/protocol.md#evm-batches). */
  private prepareBatch(sub: Submission): void {
    const recorder = this.d.batches;
    if (recorder === null) return this.finish(sub, Outcome.refused(new RelayError(E.BATCH_RECORD)));
    const limited = this.gate.takeRecord(sub.account!);
    if (limited !== null) return this.finish(sub, Outcome.refused(limited));
    const texts = sub.texts!;
    const items: Submission[] = new Array(texts.length);
    for (let i = 0; i < texts.length; i++) {
      const item = new Submission(Kind.EvmTx, 'evm', sub.io);
      item.door = sub.door;
      item.account = sub.account;
      item.lane = sub.lane;
      item.text = texts[i]!;
      item.textForwarded = true;
      const err = this.place.hex(item, item.text);
      if (err !== null) item.invalid = err;
      else {
        item.slot = this.jobs.acquire();
        prepareItem(this.place, this.jobs, this.d.evmChainId, item);
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
        () => this.admitMembers(sub, items),
        () => {
          for (const x of items) this.release(x);
          this.finish(sub, Outcome.refused(new RelayError(E.BATCH_RECORD)));
        },
      );
  }

  // ---- prepare: bundles -----------------------------------------------------

  private prepareBundle(sub: Submission): void {
    const err = prepareBundle(this.place, sub, this.d.tips);
    if (err !== null) return this.finish(sub, Outcome.refused(err));
    const ids = sub.ids!;
    if (this.d.dedup.contains(sub.key!, this.clock())) return this.finish(sub, Outcome.duplicate(ids[0]!, ids));
    const n = ids.length;
    const slots: number[] = [];
    sub.slots = slots;
    for (let i = 0; i < n; i++) {
      const s = this.slotFor(sub.lane);
      if (s < 0) return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL)));
      const v = memberViews[i]!;
      this.jobs.set(s, JobKind.SolanaVerify, sub.offsets![i]!, sub.lengths![i]!, 0);
      this.jobs.setField(s, S_AUX0, v.signaturesOffset);
      this.jobs.setField(s, S_AUX1, v.numSignatures);
      this.jobs.setField(s, S_AUX2, v.accountKeysOffset);
      this.jobs.setField(s, S_AUX3, v.messageOffset);
      this.jobs.setField(s, S_AUX4, v.messageLength);
      this.jobs.setField(s, S_BLOCKHASH, v.recentBlockhashOffset);
      slots.push(s);
    }
    sub.pending = n;
    for (const s of slots) {
      this.bySlot[s] = sub;
      this.d.verifier.run(s, this.onChecked);
    }
  }

  private bundleChecked(sub: Submission): void {
    const slots = sub.slots!;
    const bad = bundleVerdict(slots.length, (i) => this.jobs.field(slots[i]!, S_RESULT) as JobResult);
    if (bad >= 0) return this.finish(sub, Outcome.refused(this.checkError(slots[bad]!, E.BATCH_DECODE, `transaction ${bad}: `)));
    const ids = sub.ids!;
    const key = sub.key!;
    if (this.gone(sub)) return this.finish(sub, Outcome.refused(new RelayError(E.CLIENT_GONE)));
    if (!this.d.dedup.claim(key, this.clock())) {
      this.traceDuplicate(sub, ids[0]!);
      return this.finish(sub, Outcome.duplicate(ids[0]!, ids));
    }
    const payload = sub.offsets!.map((o, i) => this.place.buf.toString('base64', o, o + sub.lengths![i]!));
    const trace = this.trace(sub, ids[0]!);
    if (trace) this.d.tracker!.alias(trace, bundleId(key));
    if (trace && this.d.tracker!.follows('solana')) trace.landingRef = bundleRef(this.jobs, slots, this.place.bytes, sub.offsets!, ids, sub.lane);
    if (!this.d.forwarder.lane('solana-bundle').offer(payload, trace)) {
      if (trace) this.d.tracker!.forget(trace);
      this.d.dedup.release(key, this.clock());
      return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL)));
    }
    this.finish(sub, Outcome.queued(ids[0]!, ids));
  }

  // ---- check ----------------------------------------------------------------

  /** A job slot and room in the lane; -1 (answer CAPACITY) when either is exhausted. */
  private slotFor(lane: LaneName): number {
    return this.laneFull(lane) ? -1 : this.jobs.acquire();
  }

  private laneFull(lane: LaneName): boolean {
    const fwd = this.d.forwarder.lane(lane);
    return fwd.depth >= fwd.capacity;
  }

  /** One transaction to its check: inline, at the turn's end or on a worker (src/exec/verifier.ts). */
  private check(sub: Submission): void {
    let s = sub.slot;
    if (s >= 0) {
      // An EVM batch item: its slot was filled when it was decoded; the lane must still have room.
      if (this.laneFull(sub.lane)) return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), sub.hash));
    } else {
      s = this.slotFor(sub.lane);
      if (s < 0) return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, QUEUES_FULL), sub.hash));
      sub.slot = s;
      if (sub.kind === Kind.SolanaTx) this.jobs.set(s, JobKind.SolanaTx, sub.offset, sub.length, sub.overUdp ? F_OVER_UDP : 0);
      else this.jobs.set(s, JobKind.EvmTx, sub.offset, sub.length, 0);
    }
    this.bySlot[s] = sub;
    this.d.verifier.run(s, this.onChecked);
  }

  private readonly onChecked = (s: number): void => {
    const sub = this.bySlot[s]!;
    const root = this.answeredBy(sub);
    if (root?.io.settle?.(root, () => this.onChecked(s))) return;
    // A group's members are queued together, right before its answer: one queued as soon as it was
    // checked would be forwarded unanswered if the connection closed before the last member settled
    // (docs/protocol.md#deviations). A bundle in a group queues in `bundleChecked`, as it settles.
    const g = sub.parent;
    if (g !== null && !g.flushing && sub.kind !== Kind.Bundle && (g.kind === Kind.Calls || g.kind === Kind.EvmBatch)) {
      (g.checked ??= []).push(s);
      if (g.checked.length === g.pending) this.queueGroup(g);
      return;
    }
    this.bySlot[s] = undefined;
    if (sub.kind === Kind.Bundle) {
      if (--sub.pending === 0) this.bundleChecked(sub);
      return;
    }
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    const solana = sub.kind === Kind.SolanaTx;
    if (r !== JobResult.Ok && r !== JobResult.Duplicate) {
      return this.finish(sub, Outcome.refused(this.checkError(s, solana ? E.SOL_DECODE : E.TX_INVALID, ''), sub.hash));
    }
    let id: string;
    let payload: string;
    if (solana) {
      const sigAt = sub.offset + this.jobs.field(s, S_AUX0);
      id = base58EncodeAt(this.place.bytes, sigAt, SIGNATURE_BYTES);
      if (r === JobResult.Duplicate) {
        this.traceDuplicate(sub, id);
        return this.finish(sub, Outcome.duplicate(id));
      }
      if (this.gone(sub)) {
        this.unclaim(KEY_SOLANA_SINGLE, this.place.bytes, sigAt, SIGNATURE_BYTES);
        return this.finish(sub, Outcome.refused(new RelayError(E.CLIENT_GONE)));
      }
      // Base64 that decoded is canonical: the client's own text is forwarded, saving an encode.
      payload = sub.textForwarded ? sub.text! : this.place.buf.toString('base64', sub.offset, sub.offset + sub.length);
      const trace = this.trace(sub, id);
      if (trace && this.d.tracker!.follows('solana')) trace.landingRef = solanaRef(this.jobs, s, this.place.bytes, sub.offset, sub.lane);
      if (!this.d.forwarder.lane(sub.lane).offer(payload, trace)) {
        if (trace) this.d.tracker!.forget(trace);
        this.unclaim(KEY_SOLANA_SINGLE, this.place.bytes, sigAt, SIGNATURE_BYTES);
        return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL)));
      }
    } else {
      const keyAt = this.jobs.keyAt(s);
      id = sub.hash ?? '0x' + this.jobsBuf.toString('hex', keyAt, keyAt + KEY_BYTES);
      if (r === JobResult.Duplicate) {
        this.traceDuplicate(sub, id);
        return this.finish(sub, Outcome.duplicate(id));
      }
      if (this.gone(sub)) {
        this.unclaim(KEY_EVM, this.jobs.bytes, keyAt, KEY_BYTES);
        return this.finish(sub, Outcome.refused(new RelayError(E.CLIENT_GONE), id));
      }
      payload = sub.text ?? '0x' + this.place.buf.toString('hex', sub.offset, sub.offset + sub.length);
      const trace = this.trace(sub, id);
      if (trace && this.d.tracker!.follows('evm')) trace.landingRef = evmRef(this.jobs, s, sub.lane);
      if (!this.d.forwarder.lane(sub.lane).offer(payload, trace)) {
        if (trace) this.d.tracker!.forget(trace);
        this.unclaim(KEY_EVM, this.jobs.bytes, keyAt, KEY_BYTES);
        return this.finish(sub, Outcome.refused(new RelayError(E.CAPACITY, LANE_FULL), id));
      }
    }
    this.finish(sub, Outcome.queued(id));
  };

  /**
   * Its client went away before the answer (uWS closes a connection whose next
   * request came before this answer): nothing is queued that nobody was told
   * of, and its claim is withdrawn, so a resend is checked afresh. An EVM
   * batch's items go on: its durable record already names them.
   */
  private gone(sub: Submission): boolean {
    const root = this.answeredBy(sub);
    return root !== null && (root.io.gone?.(root) ?? false);
  }

  /** The submission whose answer tells of `sub` (its JSON-RPC array's, or its own); null for an EVM batch's item. */
  private answeredBy(sub: Submission): Submission | null {
    let root = sub;
    while (root.parent !== null && root.parent.kind === Kind.Calls) root = root.parent;
    return root.parent === null ? root : null;
  }

  /** A trace for a transaction about to be queued; undefined when tracing is off. */
  private trace(sub: Submission, id: string): Trace | undefined {
    return this.d.tracker?.open(id, requestIdOf(sub), sub.account!.id, sub.family, doorOf(sub));
  }

  private traceDuplicate(sub: Submission, id: string): void {
    this.d.tracker?.duplicate(id, requestIdOf(sub), sub.account!.id, sub.family, doorOf(sub));
  }

  private checkError(s: number, decode: ErrorSpec, prefix: string): RelayError {
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    if (r === JobResult.Internal) return new RelayError(E.CHECK_FAILED, 'the transaction check failed on this node');
    if (r === JobResult.Expired) return new RelayError(E.CAPACITY, OVER_BOUND);
    if (r === JobResult.BadSignature && decode === E.SOL_DECODE) return new RelayError(E.SOL_SIGNATURE);
    return new RelayError(decode, prefix + this.jobs.message(s));
  }

  /** Withdraws a dedup claim whose transaction could not be queued: it stays resubmittable. */
  private unclaim(domain: number, from: Uint8Array, at: number, n: number): void {
    const k = this.keyScratch;
    k[0] = domain;
    for (let i = 0; i < n; i++) k[1 + i] = from[at + i]!;
    this.d.dedup.release(k.subarray(0, 1 + n), this.clock());
  }

  // ---- finish ---------------------------------------------------------------

  private release(sub: Submission): void {
    if (sub.slot >= 0) {
      this.jobs.release(sub.slot);
      sub.slot = -1;
    }
    const slots = sub.slots;
    if (slots !== null) {
      for (const s of slots) this.jobs.release(s);
      sub.slots = null;
    }
    this.place.releaseOf(sub);
  }

  /** The one way out: resources back, counted, to the door (a settled group skips it: its members were counted). */
  private finish(sub: Submission, o: Outcome): void {
    this.release(sub);
    if (o.error !== null) {
      if (SHAPE_ERRORS.has(o.error.spec)) this.chargeRefusal(sub);
      this.rejected.inc(o.error.spec.code);
      this.rejectedByDoor.inc((doorOf(sub) || 'other') + LABEL_SEPARATOR + o.error.spec.code);
    } else if (sub.kind <= Kind.EvmTx) {
      (o.status === 'queued' ? this.admitted : this.duplicates).inc(sub.lane);
      // Its acknowledgement names the request (x-svc-request-id), traced or not; a datagram has none.
      if (!sub.overUdp) requestIdOf(sub);
    }
    sub.sink!(sub, o);
  }
}
