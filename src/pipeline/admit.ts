/**
 * The admission pipeline: the one way in for every door; its stages and their
 * order per kind are the table in stages.ts (docs/architecture.md). Everything
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
import { Kind, Submission, type BodySink, type Next, type Sink, type Turn } from './submission.js';
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
function requestIdOf(sub: Submission): string {
  const root = rootOf(sub);
  return (root.requestId ??= nextRequestId());
}

function rootOf(sub: Submission): Submission {
  let root = sub;
  while (root.parent !== null) root = root.parent;
  return root;
}

/** The door a status names: a datagram's is `udp`. */
const doorOf = (sub: Submission): string => (sub.overUdp ? 'udp' : sub.door || (sub.parent?.door ?? ''));
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
  /** The submission each job slot checks (a bundle's for each of its members). */
  private readonly bySlot: (Submission | undefined)[];
  private readonly keyScratch = new Uint8Array(1 + SIGNATURE_BYTES);

  constructor(readonly d: PipelineDeps) {
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

  /**
   * The one way in. `sink` gets the outcome exactly once, possibly before
   * `admit` returns. What it returns the door does at once, while its
   * request is readable: `Next.Head`, read the head and peer and `resume`;
   * `Next.Body`, read the body into `sub` (src/ingress/body.ts).
   */
  admit(sub: Submission, sink: Sink): Next {
    sub.sink = sink;
    sub.step = 0;
    return runStages(this, sub);
  }

  /** After `Next.Head`: the head and peer are read into `sub` (`sub.refused` if the head is not this door's). */
  resume(sub: Submission): Next {
    return runStages(this, sub);
  }

  // ---- the body (src/ingress/body.ts, through the submission) ---------------

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

  /** The body is here: the stages go on from the one after `read`. */
  bodyArrived(sub: Submission, bytes: Uint8Array): void {
    sub.received = bytes;
    void runStages(this, sub);
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

  /**
   * A refusal for its shape, of a JSON body (`POST /`, Jito's paths, a `/ws`
   * message, `POST /v1/status`) or one of its calls, takes a credit of the
   * account its credential named; other doors' refusals are paid for at the gate.
   */
  private chargeRefusal(sub: Submission): void {
    const root = rootOf(sub);
    if (root.account === null || (root.kind !== Kind.Calls && root.kind !== Kind.Query)) return;
    this.gate.chargeRefusal(root.account);
  }

  // ---- groups: a JSON-RPC body's calls, an EVM batch's items ---------------------

  /** Admits a group's members in order; the group settles when the last one does. */
  admitMembers(group: Submission, members: Submission[]): void {
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
    if (g.kind === Kind.Calls) return g.sink!(g, g.children!.length === 1 ? o : Outcome.group(null, g.children!.map((c) => c.outcome!), false, rootOf(g).requestId));
    const items = g.children!.map((c) => c.outcome!);
    const sent = items.filter((x) => x.sent && x.id !== null).map((x) => x.id!);
    if (this.d.tracker !== null && sent.length > 0) this.d.tracker.batch(g.batchId!, requestIdOf(g), g.account!.id, g.door, sent);
    // Durable before the answer, so a crash after it leaves the record complete. A failed write does
    // not change the answer (the record holds every hash); the recorder counts it.
    const done = Outcome.group(g.batchId, items, this.dry(g.lane), rootOf(g).requestId);
    const answer = (): void => g.sink!(g, done);
    this.d.batches!.updateOutcome(g.batchId!, items).then(answer, answer);
  };

  /** Queues a group's checked members in order; the last to settle answers the group. */
  private queueGroup(g: Submission): void {
    const slots = g.checked!;
    g.checked = null;
    g.flushing = true;
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

  /** Slot `s`, filled for `sub`, to the verifier; `onChecked` resumes `sub` (the scheduler calls it when not inline). */
  verify(s: number, sub: Submission): void {
    this.bySlot[s] = sub;
    if (this.d.verifier.run(s)) this.onChecked(s);
  }

  /** Slot `s` is checked: `sub` goes on, or waits in the scheduler's `commits` until its answer can leave at once (`Turn`). */
  readonly onChecked = (s: number): void => {
    const sub = this.bySlot[s]!;
    const root = this.answeredBy(sub);
    const t = this.d.turn;
    if (root !== null && root.io.corked && !t.committing && (t.ack.depth > 0 || t.holding)) {
      if (t.commits.push(s) === 1) setImmediate(t.runCommits);
      return;
    }
    // A group's members are queued together, right before its answer: one queued as soon as it was
    // checked would be forwarded unanswered if the connection closed before the last member settled
    // (docs/protocol.md#deviations). A bundle in a group queues in its own enqueue stage, as it settles.
    const g = sub.parent;
    if (g !== null && !g.flushing && sub.kind !== Kind.Bundle && (g.kind === Kind.Calls || g.kind === Kind.EvmBatch)) {
      (g.checked ??= []).push(s);
      if (g.checked.length === g.pending) this.queueGroup(g);
      return;
    }
    this.bySlot[s] = undefined;
    // A bundle goes on once its last member is checked.
    if (sub.kind === Kind.Bundle && --sub.pending > 0) return;
    void runStages(this, sub);
  };

  /**
   * Its client went away before the answer (uWS closes a connection whose next
   * request came before this answer): nothing is queued that nobody was told
   * of, and its claim is withdrawn, so a resend is checked afresh. An EVM
   * batch's items go on: its durable record already names them.
   */
  gone(sub: Submission): boolean {
    const root = this.answeredBy(sub);
    return root !== null && root.conn?.aborted === true;
  }

  /** The submission whose answer tells of `sub` (its JSON-RPC array's, or its own); null for an EVM batch's item. */
  private answeredBy(sub: Submission): Submission | null {
    let root = sub;
    while (root.parent !== null && root.parent.kind === Kind.Calls) root = root.parent;
    return root.parent === null ? root : null;
  }

  /**
   * A transaction's success, with what its answer says besides: whether its
   * lane is dry, and its request's id (a datagram has none: nothing answers it).
   */
  accepted(sub: Submission, status: 'queued' | 'duplicate', id: string, ids: readonly string[] | null = null): Outcome {
    return Outcome.accepted(status, id, ids, this.dry(sub.lane), sub.overUdp ? null : requestIdOf(sub));
  }

  /** A trace for a transaction about to be queued; undefined when tracing is off. */
  trace(sub: Submission, id: string): Trace | undefined {
    return this.d.tracker?.open(id, requestIdOf(sub), sub.account!.id, sub.family, doorOf(sub));
  }

  traceDuplicate(sub: Submission, id: string): void {
    this.d.tracker?.duplicate(id, requestIdOf(sub), sub.account!.id, sub.family, doorOf(sub));
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

  release(sub: Submission): void {
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
  finish(sub: Submission, o: Outcome): void {
    this.release(sub);
    if (o.error !== null) {
      if (SHAPE_ERRORS.has(o.error.spec)) this.chargeRefusal(sub);
      this.rejected.inc(o.error.spec.code);
      this.rejectedByDoor.inc((doorOf(sub) || 'other') + LABEL_SEPARATOR + o.error.spec.code);
    } else if (sub.kind <= Kind.EvmTx) {
      (o.status === 'queued' ? this.admitted : this.duplicates).inc(sub.lane);
    }
    sub.sink!(sub, o);
  }
}
