/**
 * The admission pipeline: the one way in for every door; its stages and their
 * order per kind are the table in stages.ts (docs/architecture.md). A door
 * asks `arrive` before it reads anything, builds its submission, hands it to
 * `admit` and pushes the body when told to; its sink gets the Outcome. The
 * pipeline never calls a door in between. Everything
 * before the check runs on the request's thread,
 * so unauthorised, over-limit and shed traffic never costs a signature check.
 * Every answer leaves through `finish`, which gives back what the submission
 * held and counts it: nothing answered uncounted, nothing held leaked.
 */
import { E, RelayError, type ErrorSpec } from '../errors.js';
import type { Clock } from '../clock.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { Slab } from '../tables/slab.js';
import type { LaneName } from '../forward/lane.js';
import { JobResult, S_RESULT, type JobTable } from '../exec/jobs.js';
import { CounterSet, LABEL_SEPARATOR } from '../obs/metrics.js';
import { MAX_V1_TX_SIZE } from '../chains/solana/decode.js';
import type { TipAccounts } from '../chains/solana/tip.js';
import { Gate, OVER_BOUND, type GateDeps } from './gate.js';
import { Placer, SLAB_FULL } from './place.js';
import { MAX_BUNDLE_BODY } from './bundle.js';
import type { BatchRecorder } from './evm-batch.js';
import { runStages } from './stages.js';
import { Outcome } from './outcome.js';
import { Kind, type Submission, type Sink, type Turn } from './submission.js';
import { Admission, Group, type BodySink } from './admission.js';
import type { Family } from './accounts.js';
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
  /** The ingress scheduler's state: whether a checked transaction is queued now or waits (`Turn`). */
  turn: Turn;
  /** A status read for an authenticated account: its answer, or its refusal (the reads' own rate limit); maybe later (acceptor threads ask each other). */
  statuses: (account: AccountRecord, ids: readonly string[], done: (o: Outcome) => void) => void;
}

/** A Solana signature: the dedup key of a single transaction. */
const SIGNATURE_BYTES = 64;

/**
 * The id of the request `sub` came in (its outermost submission's), made the
 * first time something of it is queued: a refused or shed request costs none.
 */
function requestIdOf(a: Admission): string {
  const root = rootOf(a);
  return (root.requestId ??= nextRequestId());
}

function rootOf(a: Admission): Admission {
  let root = a;
  while (root.parent !== null) root = root.parent;
  return root;
}

/** The door a status names: a datagram's is `udp`. */
const doorOf = (a: Admission): string => (a.sub.overUdp ? 'udp' : a.sub.door || (a.parent?.sub.door ?? ''));
/** Refusals for what the client wrote (docs/protocol.md#rate-limits): charged to the account's refusals bucket. */
const SHAPE_ERRORS: ReadonlySet<ErrorSpec> = new Set([E.PARSE, E.INVALID_REQUEST, E.JSON_TOO_DEEP, E.METHOD_NOT_FOUND, E.INVALID_PARAMS, E.TOO_LARGE]);

export class Pipeline implements BodySink {
  readonly gate: Gate;
  /** Refusals by the table's code; admissions and duplicates by lane. */
  readonly rejected = new CounterSet<string>();
  /** The same refusals by door and code, the key joined by LABEL_SEPARATOR (the metric's labels). */
  readonly rejectedByDoor = new CounterSet<string>();
  readonly admitted = new CounterSet<LaneName>();
  readonly duplicates = new CounterSet<LaneName>();
  // The rest is the stages' (stages.ts), not the doors'.
  readonly place: Placer;
  readonly jobs: JobTable;
  readonly clock: Clock;
  /** The job table's bytes as a Buffer: a hash's hex straight from its slot. */
  readonly jobsBuf: Buffer;
  /** The admission each job slot checks (a bundle's for each of its members). */
  private readonly bySlot: (Admission | undefined)[];
  private readonly keyScratch = new Uint8Array(1 + SIGNATURE_BYTES);

  constructor(readonly d: PipelineDeps) {
    this.gate = new Gate(d);
    this.place = new Placer(d.slab);
    this.jobs = d.jobs;
    this.clock = d.clock;
    this.jobsBuf = Buffer.from(d.jobs.bytes.buffer, d.jobs.bytes.byteOffset, d.jobs.bytes.length);
    this.bySlot = new Array<Admission | undefined>(d.jobs.slots).fill(undefined);
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

  /**
   * Asked by a door before it reads anything of an arrival: draining, the
   * family off, or shed (gate.ts steps 1-2). A refusal is built into the
   * submission (`refusedAt`) and admitted, so it is counted and answered
   * like any other.
   */
  arrive(kind: Kind, family: Family): RelayError | null {
    return this.gate.arrive(kind, family);
  }

  /**
   * The one way in. `sink` gets the outcome exactly once, possibly before
   * `admit` returns. Returns the admission when the door is to read the body
   * now, while its request is readable, and push it into it (it is the body
   * reader's target, src/ingress/body.ts); null when there is nothing to read.
   */
  admit(sub: Submission, sink: Sink): Admission | null {
    const a = new Admission(sub, sink, this);
    return runStages(this, a) ? a : null;
  }

  /** A member of `parent`'s group (a call of a JSON-RPC body, an EVM batch's item), admitted by `admitMembers`; it settles into the group, never to a sink of its own. */
  member(sub: Submission, parent: Admission): Admission {
    const m = new Admission(sub, parent.sink, this);
    m.parent = parent;
    return m;
  }

  // ---- the body, as the door pushes it ----------------------------------------

  /** A raw transaction body of `length` bytes: its slab block, read into directly; null when refused. */
  bodyInto(a: Admission, length: number): Uint8Array | null {
    if (length === 0) {
      this.finish(a, Outcome.refused(new RelayError(E.SOL_DECODE, 'empty body')));
      return null;
    }
    if (!this.place.reserve(a, length)) {
      this.finish(a, Outcome.refused(new RelayError(E.CAPACITY, SLAB_FULL)));
      return null;
    }
    return this.place.view(a.offset, length);
  }

  /** The body is here: the stages go on from the one after `read`. */
  bodyArrived(a: Admission, bytes: Uint8Array): void {
    a.received = bytes;
    void runStages(this, a);
  }

  bodyTooLarge(a: Admission, n: number): void {
    const kind = a.sub.kind;
    let err: RelayError;
    if (kind === Kind.SolanaTx) err = new RelayError(E.SOL_DECODE, `transaction is ${n} bytes, more than ${MAX_V1_TX_SIZE}`);
    else if (kind === Kind.Bundle) err = new RelayError(E.BATCH_DECODE, `body is ${n} bytes, more than ${MAX_BUNDLE_BODY}`);
    else if (kind === Kind.Query) err = new RelayError(E.TOO_LARGE, `a status read's body of ${n} bytes exceeds ${a.sub.maxBody}`);
    else err = new RelayError(E.TOO_LARGE, `body of ${n} bytes exceeds http.max_body_bytes (${this.d.maxBody})`);
    this.finish(a, Outcome.refused(err));
  }

  bodyOverBudget(a: Admission): void {
    this.finish(a, Outcome.refused(new RelayError(E.CAPACITY, 'request bodies being read are over http.max_buffered_body_bytes')));
  }

  /**
   * A refusal for its shape, of a JSON body (`POST /`, Jito's paths, a `/ws`
   * message, `POST /v1/status`) or one of its calls, takes a credit of the
   * account its credential named; other doors' refusals are paid for at the gate.
   */
  private chargeRefusal(a: Admission): void {
    const root = rootOf(a);
    if (root.account === null || (root.sub.kind !== Kind.Calls && root.sub.kind !== Kind.Query)) return;
    this.gate.chargeRefusal(root.account);
  }

  // ---- groups: a JSON-RPC body's calls, an EVM batch's items ---------------------

  /** Admits a group's members (made by `member`) in order; the group settles when the last one does. */
  admitMembers(parent: Admission, members: Admission[]): void {
    parent.group ??= new Group(members);
    for (const m of members) void runStages(this, m);
  }

  /** A member settled: its outcome kept in order; the last to settle answers the group (members were counted as they settled). */
  private memberSettled(m: Admission, o: Outcome): void {
    m.outcome = o;
    const g = m.parent!;
    const group = g.group!;
    if (--group.pending > 0) {
      // The members still unsettled are all checked and waiting: queue them now.
      if (group.checked !== null && group.checked.length === group.pending) this.queueGroup(group);
      return;
    }
    const items = group.members.map((c) => c.outcome!);
    const requestId = rootOf(g).requestId;
    if (g.sub.kind === Kind.Calls) return this.settle(g, Outcome.group(null, items, false, requestId));
    const sent = items.filter((x) => x.sent && x.id !== null).map((x) => x.id!);
    if (this.d.tracker !== null && sent.length > 0) this.d.tracker.batch(group.batchId!, requestIdOf(g), g.account!.id, g.sub.door, sent);
    // Durable before the answer, so a crash after it leaves the record complete. A failed write does
    // not change the answer (the record holds every hash); the recorder counts it.
    const done = Outcome.group(group.batchId, items, this.dry(g.lane), requestId);
    const answer = (): void => this.settle(g, done);
    this.d.batches!.updateOutcome(group.batchId!, items).then(answer, answer);
  }

  /** Queues a group's checked members in order; the last to settle answers the group. */
  private queueGroup(group: Group): void {
    const slots = group.checked!;
    group.checked = null;
    group.flushing = true;
    for (const s of slots) this.onChecked(s);
  }

  // ---- check ----------------------------------------------------------------

  /** A job slot and room in the lane; -1 (answer CAPACITY) when either is exhausted. */
  slotFor(lane: LaneName): number {
    return this.laneFull(lane) ? -1 : this.jobs.acquire();
  }

  laneFull(lane: LaneName): boolean {
    const fwd = this.d.forwarder.lane(lane);
    return fwd.depth >= fwd.capacity;
  }

  /** Slot `s`, filled for `a`, to the verifier; `onChecked` resumes `a` (the scheduler calls it when not inline). */
  verify(s: number, a: Admission): void {
    this.bySlot[s] = a;
    if (this.d.verifier.run(s)) this.onChecked(s);
  }

  /** Slot `s` is checked: `sub` goes on, or waits in the scheduler's `commits` until its answer can leave at once (`Turn`). */
  readonly onChecked = (s: number): void => {
    const a = this.bySlot[s]!;
    const root = this.answeredBy(a);
    const t = this.d.turn;
    if (root !== null && root.sub.corked && !t.committing && (t.ack.depth > 0 || t.holding)) {
      if (t.commits.push(s) === 1) setImmediate(t.runCommits);
      return;
    }
    // A group's members are queued together, right before its answer: one queued as soon as it was
    // checked would be forwarded unanswered if the connection closed before the last member settled
    // (docs/protocol.md#deviations). A bundle in a group queues in its own enqueue stage, as it settles.
    const group = a.parent?.group ?? null;
    if (group !== null && !group.flushing && a.sub.kind !== Kind.Bundle) {
      (group.checked ??= []).push(s);
      if (group.checked.length === group.pending) this.queueGroup(group);
      return;
    }
    this.bySlot[s] = undefined;
    // A bundle goes on once its last member is checked.
    if (a.sub.kind === Kind.Bundle && --a.bundle!.pending > 0) return;
    void runStages(this, a);
  };

  /**
   * Its client went away before the answer (uWS closes a connection whose next
   * request came before this answer): nothing is queued that nobody was told
   * of, and its claim is withdrawn, so a resend is checked afresh. An EVM
   * batch's items go on: its durable record already names them.
   */
  gone(a: Admission): boolean {
    const root = this.answeredBy(a);
    return root !== null && root.sub.conn?.aborted === true;
  }

  /** The admission whose answer tells of `a` (its JSON-RPC body's, or its own); null for an EVM batch's item. */
  private answeredBy(a: Admission): Admission | null {
    let root = a;
    while (root.parent !== null && root.parent.sub.kind === Kind.Calls) root = root.parent;
    return root.parent === null ? root : null;
  }

  /**
   * A transaction's success, with what its answer says besides: whether its
   * lane is dry, its request's id (a datagram has none: nothing answers it),
   * and a bundle's id.
   */
  accepted(a: Admission, status: 'queued' | 'duplicate', id: string, ids: readonly string[] | null = null): Outcome {
    return Outcome.accepted(status, id, ids, this.dry(a.lane), a.sub.overUdp ? null : requestIdOf(a), a.bundle?.id ?? null);
  }

  /** A trace for a transaction about to be queued; undefined when tracing is off. */
  trace(a: Admission, id: string): Trace | undefined {
    return this.d.tracker?.open(id, requestIdOf(a), a.account!.id, a.sub.family, doorOf(a));
  }

  traceDuplicate(a: Admission, id: string): void {
    this.d.tracker?.duplicate(id, requestIdOf(a), a.account!.id, a.sub.family, doorOf(a));
  }

  checkError(s: number, decode: ErrorSpec, prefix: string): RelayError {
    const r = this.jobs.field(s, S_RESULT) as JobResult;
    if (r === JobResult.Internal) return new RelayError(E.CHECK_FAILED, 'the transaction check failed on this node');
    if (r === JobResult.Expired) return new RelayError(E.CAPACITY, OVER_BOUND);
    if (r === JobResult.BadSignature && decode === E.SOL_DECODE) return new RelayError(E.SOL_SIGNATURE);
    return new RelayError(decode, prefix + this.jobs.message(s));
  }

  /** Withdraws a dedup claim whose transaction could not be queued: it stays resubmittable. */
  unclaim(domain: number, from: Uint8Array, at: number, n: number): void {
    const k = this.keyScratch;
    k[0] = domain;
    for (let i = 0; i < n; i++) k[1 + i] = from[at + i]!;
    this.d.dedup.release(k.subarray(0, 1 + n), this.clock());
  }

  // ---- finish ---------------------------------------------------------------

  release(a: Admission): void {
    if (a.slot >= 0) {
      this.jobs.release(a.slot);
      a.slot = -1;
    }
    const parts = a.bundle;
    if (parts !== null && parts.slots !== null) {
      for (const s of parts.slots) this.jobs.release(s);
      parts.slots = null;
    }
    this.place.releaseOf(a);
  }

  /** The one way out: resources back, counted, to the door's sink (a settled group skips it: its members were counted). */
  finish(a: Admission, o: Outcome): void {
    this.release(a);
    if (o.error !== null) {
      if (SHAPE_ERRORS.has(o.error.spec)) this.chargeRefusal(a);
      this.rejected.inc(o.error.spec.code);
      this.rejectedByDoor.inc((doorOf(a) || 'other') + LABEL_SEPARATOR + o.error.spec.code);
    } else if (a.sub.kind <= Kind.EvmTx) {
      (o.status === 'queued' ? this.admitted : this.duplicates).inc(a.lane);
    }
    this.settle(a, o);
  }

  /** `a`'s outcome to its door's sink, or into its group (a JSON-RPC body's EVM batch settles into the body). */
  private settle(a: Admission, o: Outcome): void {
    if (a.parent === null) a.sink(a.sub, o);
    else this.memberSettled(a, o);
  }
}
