/**
 * A forwarding lane (docs/protocol.md#forwarding): a bounded FIFO of admitted, already-encoded
 * transactions, fanned out to every upstream of the lane.
 *
 * One shared power-of-two ring, one send cursor per upstream (two shown):
 *
 *          head                      cursor[B]             cursor[A]      tail
 *           v                           v                     v             v
 *   ring:  | sent to A and B, some      | sent to A, not to B | sent to     | free ...
 *          | still awaiting an answer   |                     | neither     |
 *          |<------------- held = tail - head, at most capacity ----------->|
 *
 * An item is stored once, every upstream sees admission order, and a slot is
 * freed once every upstream is done with it: one bit of `done[slot]` each, set
 * when it answered (accepted or refused) or gave the item up (overrun,
 * expired, shutdown).
 *
 * Acknowledged work is never silently dropped. An item no upstream has
 * accepted stays, for every upstream that has not answered it, until
 * MAX_AGE_MS: behind an open breaker it waits (the half-open probe takes the
 * oldest), and after a transport failure (time-out, connection error, 5xx,
 * 408, 429, unparseable answer) it is resent after a bounded back-off. A
 * JSON-RPC error or another 4xx is final for that item (a batch refused with a
 * 4xx is first resent one item per request). Every item no upstream accepted
 * is counted under its reason (`rejected`, `expired`, `shutdown`) and logged,
 * throttled; at the end of a stop's drain `spill` takes them out instead, to
 * be written down and resent by the next start (src/forward/spill.ts).
 *
 * The ring is the memory bound. When full, if some upstream has answered the
 * oldest item, those still owing it are overrun and the slot reused: a slow
 * upstream must not throttle the fast ones. Otherwise `offer` refuses (503
 * retry_safe): every upstream is behind. `depth`, the items no upstream has
 * answered, is what admission compares with `capacity`.
 *
 * In flight per upstream is bounded by its connections (pipelining 1), so the
 * HTTP client never queues: waiting items stay in the ring, and the next
 * request takes up to MAX_BATCH. An answer for an item given up or reused is
 * recognised by the done bit or `seq < head`, and ignored.
 */
import { systemClock, type Clock } from '../clock.js';
import { Breaker, Permit, type BreakerOptions, type BreakerState } from './breaker.js';
import { ForwardConfigError, PostStatus, UPSTREAM_CONNECTIONS, UpstreamClient, parseUpstreamUrl, type LogLevel, type LogSink, type PostResult, type UpstreamOptions, type UpstreamStats } from './upstream.js';
import { CallKind, callLength, writeCall, type BodyWriter } from './wire.js';
import type { Trace } from '../status/tracker.js';

export type LaneName = 'evm-paid' | 'evm-free' | 'solana-single' | 'solana-bundle';
export const LANE_NAMES: readonly LaneName[] = ['evm-paid', 'evm-free', 'solana-single', 'solana-bundle'];

/**
 * Already encoded: `0x…` hex for EVM lanes, base64 for solana-single, a
 * bundle's base64 transactions in order. Must be pure hex/base64: they are
 * spliced into JSON without escaping.
 */
type LaneItem<N extends LaneName> = N extends 'solana-bundle' ? readonly string[] : string;

/**
 * Why an acknowledged item ended without any upstream accepting it.
 * `expired_after_restart`: written down at shutdown, and too old to send when
 * the node started again (docs/operations.md#graceful-shutdown).
 */
type DropReason = 'rejected' | 'expired' | 'shutdown' | 'expired_after_restart';
const DROP_REASONS: readonly DropReason[] = ['rejected', 'expired', 'shutdown', 'expired_after_restart'];

/**
 * An acknowledged item no upstream accepted by the end of the drain, taken out
 * of its lane to be written to the data directory and resent on the next
 * start (src/forward/spill.ts). Plain data: it crosses threads and files.
 */
export interface SpillEntry {
  lane: LaneName;
  family: 'evm' | 'solana';
  /** As queued: `0x…` hex, base64, or a bundle's base64 transactions. */
  item: string | string[];
  /** When it was admitted (wall-clock ms). */
  ackedAt: number;
  /** The account that sent it (its id, never its key); -1 unknown. */
  account: number;
}

export const QUEUE_CAPACITY = 10_000;
/** evm.max_batch's default, so a client batch travels as one request. */
export const MAX_BATCH = 64;
/** A larger single item still goes alone. agave's RPC refuses bodies over 50 kB, the smallest known limit. */
export const MAX_BATCH_BYTES = 48 * 1024;
/** The per-item done set is one 32-bit mask. */
const MAX_UPSTREAMS = 32;
/** Bounds the ring allocation (2^24 pointers is 128 MiB). */
const MAX_CAPACITY = 1 << 24;
/** One log line per upstream and kind of trouble per 10 s, not one per transaction. */
const LOG_INTERVAL_MS = 10_000;
/**
 * How long an unaccepted item is kept and retried. A Solana blockhash expires
 * after 150 slots (~60 s, rarely 90 s), and a minute is five EVM blocks, after
 * which a searcher's transaction has lost its point. The breaker's probes, one
 * a second, see an upstream back from a hang well inside this.
 */
export const MAX_AGE_MS = 60_000;
/** First resend after a transport failure, doubled per consecutive failure until the breaker takes over. */
const RETRY_BACKOFF_MS = 20;
/** The breaker's base cool-down: past it the breaker, not the back-off, decides. */
const RETRY_BACKOFF_MAX_MS = 1_000;
/** The clock is injected, so the wake-up timer re-reads it at least this often. */
const MAX_WAKE_MS = 1_000;


// Per-item verdict: no answer yet, some upstream accepted, or every answer so far refused.
const NONE = 0;
const ACCEPTED = 1;
const REJECTED = 2;

// Indexes into DROP_REASONS.
const R_REJECTED = 0;
const R_EXPIRED = 1;
const R_SHUTDOWN = 2;
const R_EXPIRED_AFTER_RESTART = 3;
/** Not a drop: taken out by `spill` to be written down; counted apart. */
const R_SPILLED = 4;

export interface LaneOptions {
  /** Upstream JSON-RPC URLs; empty runs the lane dry. */
  upstreams: readonly string[];
  capacity?: number;
  /**
   * Opportunistic batching (not bundles): free at low load (a lone item leaves
   * at once); under load, items that piled up while every connection was busy
   * leave in one request. An upstream refusing batches gets single requests.
   */
  batching?: boolean;
  log?: LogSink;
  now?: Clock;
  breaker?: BreakerOptions;
  timeoutMs?: number;
  /** Connections per upstream, which is also the in-flight request bound. */
  connections?: number;
  maxAgeMs?: number;
  /** PEM certificates to trust for https upstreams instead of the system store. */
  ca?: UpstreamOptions['ca'];
  /**
   * Default a microtask; the relay passes its acknowledge-first scheduler, so
   * a forward leaves after its acknowledgement (src/ingress/ack-first.ts).
   */
  schedule?: (fn: () => void) => void;
}

interface LaneUpstreamStats extends UpstreamStats {
  breaker: BreakerState;
  /** Items never sent or to be resent. */
  backlog: number;
  inFlight: number;
  /** Items put back after a transport failure (a failed batch of 10 counts 10). */
  retried: number;
  /** Given up: this upstream fell `capacity` behind after another had answered them. */
  overrun: number;
  /** Given up: maximum age reached without this upstream's answer. */
  expired: number;
  batching: boolean;
}

export interface LaneStats {
  lane: LaneName;
  /** Items no upstream has answered yet; admission is refused at `capacity`. */
  depth: number;
  capacity: number;
  /** Items some upstream is not done with. */
  held: number;
  outstanding: number;
  admitted: number;
  forwarded: number;
  /** Dropped by a dry lane. */
  discarded: number;
  /** The sum of `droppedBy`. */
  dropped: number;
  droppedBy: Record<DropReason, number>;
  available: boolean;
  accepting: boolean;
  upstreams: LaneUpstreamStats[];
}

/** At most one log line per interval; the next one says how many were held back. */
class Throttle {
  private at = -Infinity;
  private held = 0;

  /** -1 to stay quiet, else the lines suppressed since the last one. */
  pass(now: number): number {
    if (now - this.at < LOG_INTERVAL_MS) {
      this.held++;
      return -1;
    }
    this.at = now;
    const h = this.held;
    this.held = 0;
    return h;
  }
}

/** Items of a failed request waiting to be resent: seqs from..from+n-1. */
interface Range {
  from: number;
  n: number;
}

/** One upstream's position in this lane. */
class Outlet {
  cursor = 0;
  /** Failed ranges to resend, sorted by `from`, never overlapping, never holding an item this upstream is done with. */
  readonly retry: Range[] = [];
  retryAt = 0;
  /** Transport failures in a row, for the back-off. */
  failures = 0;
  inFlight = 0;
  inFlightItems = 0;
  retried = 0;
  overrun = 0;
  expired = 0;
  readonly transportLog = new Throttle();
  readonly rpcLog = new Throttle();
  readonly overrunLog = new Throttle();

  constructor(
    /** This upstream's bit in the per-item done mask. */
    readonly bit: number,
    readonly client: UpstreamClient,
    readonly breaker: Breaker,
    public batching: boolean,
  ) {}

  retryItems(): number {
    let n = 0;
    for (const r of this.retry) n += r.n;
    return n;
  }
}

/** How an item ended, for its status: accepted by some upstream, refused by all that answered, or given up. */
function endOf(verdict: number, reason: number, t: Trace): ['forwarded' | 'upstream_rejected' | 'failed' | 'dropped', string | null] {
  if (verdict === ACCEPTED) return ['forwarded', null];
  if (verdict === REJECTED) return ['upstream_rejected', 'every upstream that answered refused it'];
  if (reason === R_SHUTDOWN) return ['dropped', 'the node shut down before an upstream accepted it'];
  if (reason === R_SPILLED) return ['dropped', 'the node shut down before an upstream accepted it: written to the data directory, to be resent when the node starts again'];
  // Expired: tried and failed everywhere it went, or never got out (breakers open, a backlog).
  return t.tried ? ['failed', 'no upstream accepted it before it expired'] : ['dropped', 'expired in the queue before any upstream took it'];
}

export class Lane<N extends LaneName = LaneName> {
  readonly name: N;
  readonly capacity: number;

  private readonly kind: CallKind;
  private readonly outlets: Outlet[];
  private readonly allMask: number;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly maxAge: number;
  private readonly log: LogSink | null;
  private readonly now: Clock;
  private readonly schedule: (fn: () => void) => void;

  // Ring and per-item state, indexed by seq & mask. Sequence numbers are
  // never reset; `&` takes them modulo 2^32, which the power-of-two size divides.
  private readonly mask: number;
  private readonly items: (LaneItem<N> | undefined)[];
  /** The status trace of each item (docs/protocol.md#status), where one is kept. */
  private readonly traces: (Trace | undefined)[];
  private readonly done: Uint32Array;
  private readonly verdict: Uint8Array;
  /** Admission time, for MAX_AGE_MS; monotone in seq, so expiry is always a prefix of the ring. */
  private readonly born: Float64Array;
  /** The sending account's id (-1 unknown), for the spill. */
  private readonly account: Int32Array;
  /** Oldest item some upstream is not done with; every seq below is free. */
  private head = 0;
  private tail = 0;
  /** Verdict NONE, not ended. */
  private open = 0;
  private settled = 0;

  private admittedCount = 0;
  private forwardedCount = 0;
  private discardedCount = 0;
  private readonly droppedBy = [0, 0, 0, 0];
  private readonly dropLog = [new Throttle(), new Throttle(), new Throttle(), new Throttle()];
  private readonly dropHeld = [0, 0, 0, 0];
  private spilledCount = 0;

  private accepting = true;
  private closed = false;
  private scheduled = false;
  private wasAvailable = true;
  private idleWaiters: (() => void)[] = [];
  private readonly pumpFn = (): void => this.pump();
  private readonly body: BodyWriter = {
    bodyLength: (from, n) => this.bodyLength(from, n),
    writeBody: (buf, off, from, n) => this.writeBody(buf, off, from, n),
  };
  private timer: NodeJS.Timeout | null = null;
  private wakeAt = Infinity;
  private readonly wakeFn = (): void => {
    this.timer = null;
    this.wakeAt = Infinity;
    this.pump();
  };

  constructor(name: N, opts: LaneOptions) {
    const capacity = opts.capacity ?? QUEUE_CAPACITY;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_CAPACITY) {
      throw new ForwardConfigError(`lane ${name}: queue capacity must be an integer from 1 to ${MAX_CAPACITY}`);
    }
    if (opts.upstreams.length > MAX_UPSTREAMS) {
      throw new ForwardConfigError(`lane ${name}: at most ${MAX_UPSTREAMS} upstreams`);
    }
    const maxAge = opts.maxAgeMs ?? MAX_AGE_MS;
    if (!(maxAge > 0)) throw new ForwardConfigError(`lane ${name}: maximum item age must be positive`);
    const connections = opts.connections ?? UPSTREAM_CONNECTIONS;
    this.name = name;
    this.capacity = capacity;
    this.kind = name === 'solana-bundle' ? CallKind.BUNDLE : name === 'solana-single' ? CallKind.SOLANA : CallKind.EVM;
    this.maxBatch = this.kind === CallKind.BUNDLE ? 1 : MAX_BATCH;
    this.maxInFlight = connections;
    this.maxAge = maxAge;
    this.log = opts.log ?? null;
    this.now = opts.now ?? systemClock;
    this.schedule = opts.schedule ?? queueMicrotask;
    const batching = this.kind !== CallKind.BUNDLE && (opts.batching ?? true);
    // Parse every URL before building any client, so a bad one stops construction cleanly.
    const urls = opts.upstreams.map((u, i) => parseUpstreamUrl(u, `lane ${name} upstream ${i}`));
    this.outlets = urls.map(
      (url, k) =>
        new Outlet((1 << k) >>> 0, new UpstreamClient(url, { connections, timeoutMs: opts.timeoutMs, ca: opts.ca }), new Breaker(this.now, opts.breaker), batching),
    );
    this.allMask = this.outlets.length === 32 ? 0xffffffff : (1 << this.outlets.length) - 1;

    let size = 1;
    const need = this.outlets.length === 0 ? 1 : capacity;
    while (size < need) size *= 2;
    this.mask = size - 1;
    this.items = new Array<LaneItem<N> | undefined>(size).fill(undefined);
    this.traces = new Array<Trace | undefined>(size).fill(undefined);
    this.done = new Uint32Array(size);
    this.verdict = new Uint8Array(size);
    this.born = new Float64Array(size);
    this.account = new Int32Array(size);
  }

  /** No upstream: drops what it admits. */
  get dry(): boolean {
    return this.outlets.length === 0;
  }

  get depth(): number {
    return this.open;
  }

  get outstanding(): number {
    return this.tail - this.settled;
  }

  /**
   * False only when every upstream's breaker is open and cooling down; the
   * pipeline checks it before spending anything. Half-open counts as
   * available: admitted items wait for the probe's verdict.
   */
  available(): boolean {
    const outs = this.outlets;
    if (outs.length === 0) return true;
    for (let k = 0; k < outs.length; k++) if (outs[k]!.breaker.available()) return true;
    return false;
  }

  /** Queues one item for every upstream; false when full (503 capacity) or draining. A dry lane discards it. */
  offer(item: LaneItem<N>, trace?: Trace, account = trace?.accountId ?? -1): boolean {
    if (!this.accepting) return false;
    if (this.outlets.length === 0) {
      this.admittedCount++;
      this.discardedCount++;
      trace?.final('dropped', 'no upstream is configured for this lane', this.now());
      return true;
    }
    const now = this.now();
    if (this.tail - this.head >= this.capacity) {
      this.expire(now);
      if (this.tail - this.head >= this.capacity && !this.overrunOldest()) return false;
    }
    const i = this.tail & this.mask;
    this.items[i] = item;
    this.traces[i] = trace;
    this.done[i] = 0;
    this.verdict[i] = NONE;
    this.born[i] = now;
    this.account[i] = account;
    this.tail++;
    this.open++;
    this.admittedCount++;
    this.kick();
    return true;
  }

  /** Resolves when every admitted item is final everywhere (or the lane closed). */
  whenIdle(): Promise<void> {
    if (this.closed || this.settled === this.tail) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops admitting; queued items keep going out. */
  stop(): void {
    this.accepting = false;
  }

  /** The position after the last admitted item, for `settledUpTo`. */
  position(): number {
    return this.tail;
  }

  /** Whether every item admitted before `position` is final everywhere (accepted, refused or given up). */
  settledUpTo(position: number): boolean {
    return this.closed || this.head - position >= 0;
  }

  /** Acknowledged transactions written down at shutdown that were too old to send on this start. */
  expiredAfterRestart(n: number): void {
    if (n > 0) this.droppedBy[R_EXPIRED_AFTER_RESTART]! += n;
  }

  /** Items taken out by `spill`. */
  get spilled(): number {
    return this.spilledCount;
  }

  /**
   * The end of a drain: takes out every item no upstream has accepted (queued,
   * waiting for a resend, or in flight: at-least-once) so the node writes it
   * down instead of dropping it (docs/operations.md#graceful-shutdown). Their
   * traces end; an in-flight copy's answer will be stale. Only before `close`.
   */
  spill(): SpillEntry[] {
    const out: SpillEntry[] = [];
    if (this.closed) return out;
    this.accepting = false;
    const outs = this.outlets;
    const family = this.kind === CallKind.EVM ? 'evm' : 'solana';
    const end = this.tail;
    for (let s = this.head; s < end; s++) {
      const i = s & this.mask;
      if (this.done[i] === this.allMask || this.verdict[i] === ACCEPTED) continue;
      const item = this.items[i]!;
      out.push({ lane: this.name, family, item: typeof item === 'string' ? item : [...item], ackedAt: this.born[i]!, account: this.account[i]! });
      for (let k = 0; k < outs.length; k++) {
        const o = outs[k]!;
        if ((this.done[i]! & o.bit) === 0) this.mark(o, s, NONE, R_SPILLED);
      }
    }
    // Nothing more goes out: `close` follows, and what is left owes only accepted items.
    for (const o of outs) {
      o.cursor = end;
      o.retry.length = 0;
    }
    return out;
  }

  /** Stops sending and closes sockets (aborting in-flight requests unless idle); unaccepted items drop as `shutdown`. */
  async close(): Promise<void> {
    if (this.closed) return;
    // After `spill` every item is settled, yet requests may be in flight: those are aborted too.
    const idle = this.settled === this.tail && this.outlets.every((o) => o.inFlight === 0);
    this.accepting = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const outs = this.outlets;
    const end = this.tail;
    const before = this.droppedBy[R_SHUTDOWN]!;
    for (let s = this.head; s < end; s++) {
      for (let k = 0; k < outs.length; k++) {
        const o = outs[k]!;
        if ((this.done[s & this.mask]! & o.bit) === 0) this.mark(o, s, NONE, R_SHUTDOWN);
      }
    }
    for (const o of outs) {
      o.cursor = end;
      o.retry.length = 0;
    }
    const abandoned = this.droppedBy[R_SHUTDOWN]! - before;
    if (abandoned > 0) this.say('warn', 'acknowledged transactions dropped: the lane shut down before any upstream accepted them', null, { reason: 'shutdown', items: abandoned });
    this.closed = true;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
    await Promise.all(outs.map((o) => (idle ? o.client.close() : o.client.destroy())));
  }

  stats(): LaneStats {
    const by = this.droppedBy;
    return {
      lane: this.name,
      depth: this.open,
      capacity: this.capacity,
      held: this.tail - this.head,
      outstanding: this.tail - this.settled,
      admitted: this.admittedCount,
      forwarded: this.forwardedCount,
      discarded: this.discardedCount,
      dropped: by[R_REJECTED]! + by[R_EXPIRED]! + by[R_SHUTDOWN]! + by[R_EXPIRED_AFTER_RESTART]!,
      droppedBy: { rejected: by[R_REJECTED]!, expired: by[R_EXPIRED]!, shutdown: by[R_SHUTDOWN]!, expired_after_restart: by[R_EXPIRED_AFTER_RESTART]! },
      available: this.available(),
      accepting: this.accepting,
      upstreams: this.outlets.map((o) => ({
        ...o.client.stats(),
        breaker: o.breaker.state,
        backlog: this.tail - o.cursor + o.retryItems(),
        inFlight: o.inFlightItems,
        retried: o.retried,
        overrun: o.overrun,
        expired: o.expired,
        batching: o.batching,
      })),
    };
  }

  // ---- sending -------------------------------------------------------------------

  /** Schedules one pump for everything offered so far: a burst leaves together, a lone item at once. */
  private kick(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    this.schedule(this.pumpFn);
  }

  private pump(): void {
    this.scheduled = false;
    if (this.closed) return;
    try {
      const now = this.now();
      this.expire(now);
      let wake = Infinity;
      for (let k = 0; k < this.outlets.length; k++) {
        const w = this.feed(this.outlets[k]!, now);
        if (w < wake) wake = w;
      }
      if (wake !== Infinity) {
        // Something waits on time (back-off, cool-down): also wake for the oldest item's expiry.
        if (this.head < this.tail) {
          const e = this.born[this.head & this.mask]! + this.maxAge;
          if (e < wake) wake = e;
        }
        this.wake(wake, now);
      }
    } catch (err) {
      this.internal(err);
    }
    this.checkIdle();
  }

  /** Sends what this upstream may take now; returns when to look again, or Infinity. */
  private feed(o: Outlet, now: number): number {
    const r = o.retry;
    while (o.inFlight < this.maxInFlight) {
      const retryDue = r.length > 0 && now >= o.retryAt;
      if (!retryDue && o.cursor >= this.tail) return r.length > 0 ? o.retryAt : Infinity;
      const permit = o.breaker.request();
      if (permit === Permit.DENY) {
        // Open: wait for the cool-down. Half-open: the probe is out and its answer kicks the lane.
        const at = o.breaker.probeAt();
        return at === -Infinity ? Infinity : at;
      }
      if (permit === Permit.PROBE) this.say('info', 'probing upstream after cool-down', o, {});
      const single = permit === Permit.PROBE || !o.batching;
      let from: number;
      let n: number;
      if (r.length > 0 && (retryDue || permit === Permit.PROBE)) {
        // Oldest first: a resend goes before new items, and the probe is the oldest waiting item.
        const front = r[0]!;
        from = front.from;
        n = single ? 1 : front.n;
        if (n === front.n) r.shift();
        else {
          front.from += n;
          front.n -= n;
        }
      } else {
        from = o.cursor;
        n = single ? 1 : this.batchSize(from);
        o.cursor = from + n;
      }
      o.inFlight++;
      o.inFlightItems += n;
      for (let i = 0; i < n; i++) this.traces[(from + i) & this.mask]?.sent(o.client.label, now);
      o.client.post(this.body, from, n, n > 1, (res) => this.complete(o, from, n, permit, res));
    }
    return Infinity;
  }

  private complete(o: Outlet, from: number, n: number, permit: Permit, r: PostResult): void {
    try {
      o.inFlight--;
      o.inFlightItems -= n;
      if (this.closed) return;
      const now = this.now();
      if (r.outcome !== PostStatus.ABORTED) {
        const before = o.breaker.state;
        // A 4xx is an upstream up and answering: it must not trip the breaker (breaker.ts).
        if (r.outcome === PostStatus.OK || r.outcome === PostStatus.REFUSED) o.breaker.success(permit);
        else o.breaker.failure(permit);
        const after = o.breaker.state;
        if (after !== before) this.transition(o, before, after);
      }
      if (r.outcome === PostStatus.OK) {
        o.failures = 0;
        if (r.batchRefused) {
          // Refused as a batch, not item by item: resend them one per request at once.
          if (o.batching) {
            o.batching = false;
            this.say('warn', 'upstream refuses JSON-RPC batches: sending one transaction per request from now on', o, { reason: r.reason });
          }
          this.answeredAll(o, from, n, now, r.httpStatus, 'refused as a batch: resent one per request');
          this.requeue(o, from, n, now);
        } else {
          const acc = r.accepted!;
          for (let i = 0; i < n; i++) {
            const seq = from + i;
            if (this.stale(o, seq)) continue;
            this.traces[seq & this.mask]?.answered(o.client.label, now, acc[i] === 1 ? 'ok' : 'rejected', r.httpStatus, acc[i] === 1 ? null : r.reason);
            this.mark(o, seq, acc[i] === 1 ? ACCEPTED : REJECTED, R_REJECTED);
          }
          if (r.okCount < n) {
            const held = o.rpcLog.pass(now);
            if (held >= 0) this.say('info', 'upstream refused transactions', o, { items: n - r.okCount, reason: r.reason, suppressed: held });
          }
        }
      } else if (r.outcome === PostStatus.REFUSED) {
        o.failures = 0;
        if (n > 1) {
          // The batch may be what was refused (its size, its shape): each item gets a request of its own.
          this.answeredAll(o, from, n, now, r.httpStatus, `${r.reason}: resent one per request`);
          for (let i = 0; i < n; i++) this.requeue(o, from + i, 1, now);
        } else if (!this.stale(o, from)) {
          this.traces[from & this.mask]?.answered(o.client.label, now, 'rejected', r.httpStatus, r.reason);
          this.mark(o, from, REJECTED, R_REJECTED);
        }
        const held = o.rpcLog.pass(now);
        if (held >= 0) this.say('info', n > 1 ? 'upstream refused a batch request: resending its transactions one per request' : 'upstream refused transactions', o, { items: n, reason: r.reason, suppressed: held });
      } else {
        this.answeredAll(o, from, n, now, r.httpStatus, r.reason);
        o.failures++;
        const backoff = Math.min(RETRY_BACKOFF_MS * 2 ** (o.failures - 1), RETRY_BACKOFF_MAX_MS);
        this.requeue(o, from, n, now + backoff);
        const held = o.transportLog.pass(now);
        if (held >= 0) this.say('warn', 'upstream request failed: its transactions will be resent', o, { items: n, reason: r.reason, suppressed: held });
      }
      this.kick();
    } catch (err) {
      this.internal(err);
    } finally {
      this.checkIdle();
    }
  }

  /** A request that will be resent: each traced item's attempt failed. */
  private answeredAll(o: Outlet, from: number, n: number, now: number, httpStatus: number, why: string): void {
    for (let i = 0; i < n; i++) {
      if (!this.stale(o, from + i)) this.traces[(from + i) & this.mask]?.answered(o.client.label, now, 'failed', httpStatus || null, why);
    }
  }

  /** Up to MAX_BATCH items and MAX_BATCH_BYTES, unless the first alone is larger. */
  private batchSize(from: number): number {
    const max = Math.min(this.tail - from, this.maxBatch);
    let bytes = callLength(this.kind, from, this.items[from & this.mask]!) + 2;
    let n = 1;
    while (n < max) {
      const b = callLength(this.kind, from + n, this.items[(from + n) & this.mask]!) + 1;
      if (bytes + b > MAX_BATCH_BYTES) break;
      bytes += b;
      n++;
    }
    return n;
  }

  /** Given up by this upstream, or its slot freed and maybe reused. */
  private stale(o: Outlet, seq: number): boolean {
    return seq < this.head || (this.done[seq & this.mask]! & o.bit) !== 0;
  }

  private requeue(o: Outlet, from: number, n: number, at: number): void {
    // Items given up meanwhile are always a prefix: overrun, expiry and shutdown work from the head.
    const end = from + n;
    while (from < end && this.stale(o, from)) from++;
    if (from === end) return;
    n = end - from;
    o.retried += n;
    const r = o.retry;
    let k = r.length;
    while (k > 0 && r[k - 1]!.from > from) k--;
    r.splice(k, 0, { from, n });
    o.retryAt = at;
  }

  private transition(o: Outlet, before: BreakerState, after: BreakerState): void {
    if (after === 'open') {
      if (before === 'closed') {
        this.say('warn', 'upstream circuit opened after consecutive failures: holding its transactions until a probe succeeds', o, {
          cooldownMs: o.breaker.cooldownMs,
        });
      } else {
        this.say('warn', 'upstream probe failed: circuit stays open', o, { cooldownMs: o.breaker.cooldownMs });
      }
    } else if (after === 'closed') {
      this.say('info', 'upstream recovered: circuit closed', o, {});
    }
    const avail = this.available();
    if (avail !== this.wasAvailable) {
      this.wasAvailable = avail;
      this.say(
        avail ? 'info' : 'error',
        avail ? `lane ${this.name} available again` : `lane ${this.name} unavailable: every upstream is failing, new transactions are refused`,
        null,
        {},
      );
    }
  }

  /** Head items past the maximum age: every upstream still owing them gives them up. */
  private expire(now: number): void {
    const limit = now - this.maxAge;
    const outs = this.outlets;
    while (this.head < this.tail && this.born[this.head & this.mask]! <= limit) {
      const seq = this.head;
      for (let k = 0; k < outs.length; k++) {
        const o = outs[k]!;
        if ((this.done[seq & this.mask]! & o.bit) !== 0) continue;
        this.giveUp(o, seq);
        o.expired++;
        this.mark(o, seq, NONE, R_EXPIRED);
      }
      if (this.head === seq) break; // cannot happen: every bit is set now; never spin
    }
  }

  /** Ring full: if some upstream answered the oldest item, the others give it up. */
  private overrunOldest(): boolean {
    const seq = this.head;
    if (this.verdict[seq & this.mask] === NONE) return false;
    const outs = this.outlets;
    const now = this.now();
    for (let k = 0; k < outs.length; k++) {
      const o = outs[k]!;
      if ((this.done[seq & this.mask]! & o.bit) !== 0) continue;
      this.giveUp(o, seq);
      o.overrun++;
      this.mark(o, seq, NONE, R_REJECTED);
      const held = o.overrunLog.pass(now);
      if (held >= 0) this.say('warn', 'upstream too slow: the lane is full and the oldest transactions, already answered by another upstream, are skipped for it', o, { suppressed: held });
    }
    return true;
  }

  /** Takes the head item out of this upstream's queue; an in-flight copy's answer will be stale. */
  private giveUp(o: Outlet, seq: number): void {
    if (o.cursor === seq) {
      o.cursor = seq + 1;
      return;
    }
    const r = o.retry;
    if (r.length > 0 && r[0]!.from === seq) {
      if (r[0]!.n === 1) r.shift();
      else {
        r[0]!.from++;
        r[0]!.n--;
      }
    }
  }

  /**
   * Upstream `o` is done with `seq`: answered (ACCEPTED, REJECTED) or gave up
   * (NONE). After the last upstream, the item ends: forwarded if anyone
   * accepted, else dropped as `rejected` if refused, otherwise for `reason`.
   */
  private mark(o: Outlet, seq: number, v: number, reason: number): void {
    const i = seq & this.mask;
    const was = this.verdict[i]!;
    if (v === ACCEPTED && was !== ACCEPTED) {
      if (was === NONE) this.open--;
      this.verdict[i] = ACCEPTED;
      this.forwardedCount++;
    } else if (v === REJECTED && was === NONE) {
      this.open--;
      this.verdict[i] = REJECTED;
    }
    const d = (this.done[i]! | o.bit) >>> 0;
    this.done[i] = d;
    if (d !== this.allMask) return;
    this.settled++;
    const final = this.verdict[i]!;
    if (final !== ACCEPTED) {
      if (final === NONE) this.open--;
      this.dropped(final === REJECTED && reason !== R_SPILLED ? R_REJECTED : reason);
    }
    const t = this.traces[i];
    if (t !== undefined) {
      this.traces[i] = undefined;
      t.final(...endOf(final, reason, t), this.now());
    }
    this.items[i] = undefined;
    while (this.head < this.tail && this.done[this.head & this.mask] === this.allMask) this.head++;
  }

  private dropped(reason: number): void {
    if (reason === R_SPILLED) {
      this.spilledCount++;
      return;
    }
    this.droppedBy[reason]!++;
    if (reason === R_SHUTDOWN) return; // close() logs them in one line
    this.dropHeld[reason]!++;
    const held = this.dropLog[reason]!.pass(this.now());
    if (held < 0) return;
    const items = this.dropHeld[reason]!;
    this.dropHeld[reason] = 0;
    const why = reason === R_REJECTED ? 'every upstream that answered refused them' : `no upstream accepted them within ${this.maxAge} ms`;
    this.say(reason === R_REJECTED ? 'info' : 'warn', `acknowledged transactions dropped: ${why}`, null, { reason: DROP_REASONS[reason], items });
  }

  private wake(at: number, now: number): void {
    if (at >= this.wakeAt) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.wakeAt = at;
    this.timer = setTimeout(this.wakeFn, Math.min(Math.max(at - now, 1), MAX_WAKE_MS));
  }

  // The clients ask for the body of calls from..from+n-1 and have it written into their buffers.

  private bodyLength(from: number, n: number): number {
    // A batch is '[' call (',' call)* ']': n + 1 bytes of punctuation.
    let len = n > 1 ? n + 1 : 0;
    for (let s = from; s < from + n; s++) len += callLength(this.kind, s, this.items[s & this.mask]!);
    return len;
  }

  private writeBody(buf: Buffer, off: number, from: number, n: number): number {
    if (n === 1) return writeCall(buf, off, this.kind, from, this.items[from & this.mask]!);
    buf[off++] = 0x5b;
    for (let s = from; s < from + n; s++) {
      if (s > from) buf[off++] = 0x2c;
      off = writeCall(buf, off, this.kind, s, this.items[s & this.mask]!);
    }
    buf[off++] = 0x5d;
    return off;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0 || this.settled !== this.tail) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private internal(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.say('error', 'forwarding lane internal error', null, { error: message.slice(0, 200) });
  }

  private say(level: LogLevel, msg: string, o: Outlet | null, fields: Record<string, unknown>): void {
    if (this.log === null) return;
    try {
      this.log(level, msg, o === null ? { lane: this.name, ...fields } : { lane: this.name, upstream: o.client.label, ...fields });
    } catch {
      // A broken log sink must not stop forwarding.
    }
  }
}
