/**
 * A forwarding lane (DECISIONS 8): a bounded FIFO of admitted, already-encoded
 * transactions, fanned out to every upstream of the lane.
 *
 * One shared power-of-two ring, one read cursor per upstream (two shown):
 *
 *                head = cursor[B]          cursor[A]              tail
 *                       v                       v                      v
 *   ring:  ... freed    | taken by A, not by B  | taken by no upstream | free ...
 *                       |<--- held = tail - head, at most capacity --->|
 *                                               |<------ depth ------->|
 *
 * An item is stored once however many upstreams there are, every upstream sees
 * admission order by construction, and a slot is freed as soon as every cursor
 * has passed it (sent or skipped). Per-upstream queues would hold a reference
 * per upstream and need a cross-queue rule for "full" anyway.
 *
 * A slow upstream must not throttle the lane for the fast ones, because the
 * point of fan-out is redundancy. When the ring is full and at least one
 * upstream has already taken the oldest item, the laggards are overrun: they
 * skip that item (counted `overrun` for them) and the slot is reused.
 * Admission is refused only when no upstream has taken the oldest item, i.e.
 * when even the fastest one is `capacity` behind; `depth` measures exactly
 * that. A dead upstream is cut out sooner by its breaker: while it is open its
 * items are skipped, not waited for.
 *
 * In flight per upstream is bounded by its connection count (pipelining 1),
 * so undici never queues internally: items for a saturated upstream wait in
 * the ring, where the next request picks up to MAX_BATCH of them at once.
 * The ring's capacity is therefore the lane's memory bound, plus at most
 * connections x MAX_BATCH items per upstream inside request bodies.
 *
 * Outcome per item (`pending`/`accepted`, indexed like the ring): `forwarded`
 * counts an item once the first upstream answers it with a result; `dropped`
 * counts it when every upstream has answered or skipped it and none took it.
 * An item may still be in flight after its ring slot was freed, so the ring
 * is sized capacity + in-flight items, and a slot whose previous item has not
 * settled is never reused (offer refuses instead; see `offer`).
 */
import { systemClock, type Clock } from '../shared/clock.js';
import { Breaker, Permit, type BreakerOptions, type BreakerState } from './breaker.js';
import {
  ForwardConfigError,
  Outcome,
  UPSTREAM_CONNECTIONS,
  UpstreamClient,
  bundleCall,
  evmCall,
  parseUpstreamUrl,
  solanaCall,
  type LogLevel,
  type LogSink,
  type PostResult,
  type UpstreamStats,
} from './upstream.js';

export type LaneName = 'evm-paid' | 'evm-free' | 'solana-single' | 'solana-bundle';
export const LANE_NAMES: readonly LaneName[] = ['evm-paid', 'evm-free', 'solana-single', 'solana-bundle'];

/**
 * What a lane carries, already encoded so the lane never touches transaction
 * bytes: `0x…` hex for EVM lanes, base64 for solana-single, and for a bundle
 * its base64 transactions in request order (1 or more). Strings must be pure
 * hex/base64: they are spliced into JSON without escaping.
 */
export type LaneItem<N extends LaneName> = N extends 'solana-bundle' ? readonly string[] : string;

/** DECISIONS 2 `limits.queue_capacity` default. */
export const QUEUE_CAPACITY = 10_000;
/** Items per JSON-RPC batch request: evm.max_batch's default, so a client batch travels as one request; 64 Solana v1 transactions are still under 400 KB of body. */
export const MAX_BATCH = 64;
/** Upstreams per lane: outcome counts are bytes, and each upstream multiplies the requests per transaction. */
export const MAX_UPSTREAMS = 32;
/** Largest capacity accepted: bounds the ring allocation (2^24 slots of pointers is 128 MiB). */
const MAX_CAPACITY = 1 << 24;
/** One log line per upstream and kind of trouble per 10 s: visible without a line per transaction at thousands per second. */
export const LOG_INTERVAL_MS = 10_000;

const KIND_EVM = 0;
const KIND_SOLANA = 1;
const KIND_BUNDLE = 2;

export interface LaneOptions {
  /** Upstream JSON-RPC URLs; empty runs the lane dry. */
  upstreams: readonly string[];
  capacity?: number;
  /**
   * Opportunistic JSON-RPC batching for single lanes; ignored for bundles,
   * which always go one sendBundle per request. On by default because it
   * costs nothing at low load (a lone item is sent alone, at once) and under
   * load it is what lets a few keep-alive connections carry thousands of
   * transactions per second: items that piled up while all connections were
   * busy leave in one request instead of one request each. Every item still
   * gets its own JSON-RPC answer, so accounting stays per item. An upstream
   * that refuses batches is detected and switched to single requests.
   */
  batching?: boolean;
  log?: LogSink;
  now?: Clock;
  breaker?: BreakerOptions;
  /** Per-request time-out (connect, headers, body each). */
  timeoutMs?: number;
  /** Connections per upstream, which is also the in-flight request bound. */
  connections?: number;
}

/** An upstream as this lane sees it: upstream counters plus the lane's view. */
export interface LaneUpstreamStats extends UpstreamStats {
  breaker: BreakerState;
  /** Items admitted but not yet sent to (or skipped for) this upstream. */
  backlog: number;
  /** Items inside requests still awaiting an answer. */
  inFlight: number;
  /** Items not sent because the breaker was open. */
  skipped: number;
  /** Items skipped because this upstream fell `capacity` behind while another kept up. */
  overrun: number;
  batching: boolean;
}

export interface LaneStats {
  lane: LaneName;
  /** Items no upstream has taken yet; admission is refused at `capacity`. */
  depth: number;
  capacity: number;
  /** Items held in the ring (not yet taken by every upstream). */
  held: number;
  /** Admitted items whose outcome is not final at every upstream (waiting or in flight). */
  outstanding: number;
  admitted: number;
  /** Items at least one upstream answered with a result. */
  forwarded: number;
  /** Items dropped by a dry lane. */
  discarded: number;
  /** Items every upstream failed, refused or skipped. */
  dropped: number;
  available: boolean;
  accepting: boolean;
  upstreams: LaneUpstreamStats[];
}

/** A log line is written at most once per interval; the next one says how many were held back. */
class Throttle {
  private at = -Infinity;
  private held = 0;

  /** -1 to stay quiet, else the number of lines suppressed since the last one. */
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

/** One upstream's position in this lane. */
class Outlet {
  cursor = 0;
  inFlight = 0;
  inFlightItems = 0;
  skipped = 0;
  overrun = 0;
  readonly transportLog = new Throttle();
  readonly rpcLog = new Throttle();
  readonly overrunLog = new Throttle();

  constructor(
    readonly client: UpstreamClient,
    readonly breaker: Breaker,
    public batching: boolean,
  ) {}
}

export class Lane<N extends LaneName = LaneName> {
  readonly name: N;
  readonly capacity: number;

  private readonly kind: number;
  private readonly outlets: Outlet[];
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly log: LogSink | null;
  private readonly now: Clock;

  // Ring and per-item outcome, indexed by seq & mask. Sequence numbers are
  // never reset; `&` takes them modulo 2^32, which the power-of-two size divides.
  private readonly mask: number;
  private readonly items: (LaneItem<N> | undefined)[];
  private readonly pending: Uint8Array;
  private readonly accepted: Uint8Array;
  private head = 0;
  private tail = 0;
  private settled = 0;

  private admittedCount = 0;
  private forwardedCount = 0;
  private discardedCount = 0;
  private droppedCount = 0;

  private accepting = true;
  private closed = false;
  private scheduled = false;
  private wasAvailable = true;
  private idleWaiters: (() => void)[] = [];
  private readonly pumpFn = (): void => this.pump();

  // Fan-out usually sends the same range to every upstream; build the body once.
  private lastFrom = -1;
  private lastCount = 0;
  private lastBody = '';

  constructor(name: N, opts: LaneOptions) {
    const capacity = opts.capacity ?? QUEUE_CAPACITY;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_CAPACITY) {
      throw new ForwardConfigError(`lane ${name}: queue capacity must be an integer from 1 to ${MAX_CAPACITY}`);
    }
    if (opts.upstreams.length > MAX_UPSTREAMS) {
      throw new ForwardConfigError(`lane ${name}: at most ${MAX_UPSTREAMS} upstreams`);
    }
    const connections = opts.connections ?? UPSTREAM_CONNECTIONS;
    this.name = name;
    this.capacity = capacity;
    this.kind = name === 'solana-bundle' ? KIND_BUNDLE : name === 'solana-single' ? KIND_SOLANA : KIND_EVM;
    this.maxBatch = this.kind === KIND_BUNDLE ? 1 : MAX_BATCH;
    this.maxInFlight = connections;
    this.log = opts.log ?? null;
    this.now = opts.now ?? systemClock;
    const batching = this.kind !== KIND_BUNDLE && (opts.batching ?? true);
    // Parse every URL before opening any pool, so a bad one leaves nothing behind.
    const urls = opts.upstreams.map((u, i) => parseUpstreamUrl(u, `lane ${name} upstream ${i}`));
    this.outlets = urls.map(
      (url) => new Outlet(new UpstreamClient(url, { connections, timeoutMs: opts.timeoutMs }), new Breaker(this.now, opts.breaker), batching),
    );

    let size = 1;
    const need = this.outlets.length === 0 ? 1 : capacity + connections * this.maxBatch;
    while (size < need) size *= 2;
    this.mask = size - 1;
    this.items = new Array<LaneItem<N> | undefined>(size).fill(undefined);
    this.pending = new Uint8Array(size);
    this.accepted = new Uint8Array(size);
  }

  /** True when the lane has no upstream and drops what it admits. */
  get dry(): boolean {
    return this.outlets.length === 0;
  }

  /** Items no upstream has taken yet; `offer` refuses when this reaches `capacity`. */
  get depth(): number {
    const outs = this.outlets;
    if (outs.length === 0) return 0;
    let lead = this.head;
    for (let k = 0; k < outs.length; k++) if (outs[k]!.cursor > lead) lead = outs[k]!.cursor;
    return this.tail - lead;
  }

  /** Admitted items not yet final at every upstream. */
  get outstanding(): number {
    return this.tail - this.settled;
  }

  /**
   * Whether the lane can forward: false only when it has upstreams and every
   * one's breaker is open and cooling down. The admission pipeline checks this
   * before spending anything on a transaction (DECISIONS 8).
   */
  available(): boolean {
    const outs = this.outlets;
    if (outs.length === 0) return true;
    for (let k = 0; k < outs.length; k++) if (outs[k]!.breaker.available()) return true;
    return false;
  }

  /**
   * Queues one item for every upstream. False when the lane is full (the
   * caller answers 503 capacity) or draining. A dry lane accepts, counts the
   * item as discarded and drops it.
   */
  offer(item: LaneItem<N>): boolean {
    if (!this.accepting) return false;
    if (this.outlets.length === 0) {
      this.admittedCount++;
      this.discardedCount++;
      return true;
    }
    if (this.tail - this.head >= this.capacity) {
      this.release();
      if (this.tail - this.head >= this.capacity && !this.overrunOldest()) return false;
    }
    const i = this.tail & this.mask;
    // The slot's previous item is still in flight somewhere: only possible
    // after a breaker skip moved a cursor far past its own in-flight requests
    // at very high rates. Refusing keeps the per-item outcome exact.
    if (this.pending[i] !== 0) return false;
    this.items[i] = item;
    this.pending[i] = this.outlets.length;
    this.accepted[i] = 0;
    this.tail++;
    this.admittedCount++;
    this.kick();
    return true;
  }

  /** Resolves when every admitted item is final at every upstream (or the lane is closed). */
  whenIdle(): Promise<void> {
    if (this.closed || this.settled === this.tail) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops admitting (offer returns false); queued items keep going out. */
  stop(): void {
    this.accepting = false;
  }

  /**
   * Stops everything: nothing more is sent, and sockets are closed. Requests
   * still in flight are aborted unless the lane is idle.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    const idle = this.settled === this.tail;
    this.accepting = false;
    this.closed = true;
    this.lastBody = '';
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
    await Promise.all(this.outlets.map((o) => (idle ? o.client.close() : o.client.destroy())));
  }

  stats(): LaneStats {
    return {
      lane: this.name,
      depth: this.depth,
      capacity: this.capacity,
      held: this.tail - this.head,
      outstanding: this.tail - this.settled,
      admitted: this.admittedCount,
      forwarded: this.forwardedCount,
      discarded: this.discardedCount,
      dropped: this.droppedCount,
      available: this.available(),
      accepting: this.accepting,
      upstreams: this.outlets.map((o) => ({
        ...o.client.stats(),
        breaker: o.breaker.state,
        backlog: this.tail - o.cursor,
        inFlight: o.inFlightItems,
        skipped: o.skipped,
        overrun: o.overrun,
        batching: o.batching,
      })),
    };
  }

  // ---- sending -------------------------------------------------------------------

  /** Schedules one pump for everything offered in this turn: a burst leaves together, a lone item leaves at once. */
  private kick(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    queueMicrotask(this.pumpFn);
  }

  private pump(): void {
    this.scheduled = false;
    if (this.closed) return;
    try {
      for (let k = 0; k < this.outlets.length; k++) this.feed(this.outlets[k]!);
      this.release();
    } catch (err) {
      this.internal(err);
    }
    this.checkIdle();
  }

  private feed(o: Outlet): void {
    while (o.cursor < this.tail && o.inFlight < this.maxInFlight) {
      const permit = o.breaker.request();
      if (permit === Permit.DENY) {
        // Half-open: the probe is out, the rest waits for its verdict.
        if (o.breaker.state !== 'half-open') this.skipAll(o);
        return;
      }
      if (permit === Permit.PROBE) this.say('info', 'probing upstream after cool-down', o, {});
      const from = o.cursor;
      const n = permit === Permit.PROBE || !o.batching ? 1 : Math.min(this.tail - from, this.maxBatch);
      o.cursor = from + n;
      o.inFlight++;
      o.inFlightItems += n;
      const body = this.encode(from, n);
      o.client.post(body, from, n, n > 1).then(
        (r) => this.complete(o, from, n, permit, r),
        (err: unknown) => this.internal(err),
      );
    }
  }

  private complete(o: Outlet, from: number, n: number, permit: Permit, r: PostResult): void {
    try {
      o.inFlight--;
      o.inFlightItems -= n;
      const acc = r.accepted;
      for (let i = 0; i < n; i++) this.settle(from + i, acc !== null && acc[i] === 1);
      if (r.outcome === Outcome.ABORTED) return;
      const before = o.breaker.state;
      if (r.outcome === Outcome.OK) o.breaker.success(permit);
      else o.breaker.failure(permit);
      const after = o.breaker.state;
      if (after !== before) this.transition(o, before, after);
      if (r.outcome === Outcome.OK) {
        if (r.batchRefused && o.batching) {
          o.batching = false;
          this.say('warn', 'upstream refuses JSON-RPC batches: sending one transaction per request from now on', o, { reason: r.reason });
        } else if (r.okCount < n) {
          const held = o.rpcLog.pass(this.now());
          if (held >= 0) this.say('info', 'upstream refused transactions', o, { items: n - r.okCount, reason: r.reason, suppressed: held });
        }
      } else {
        const held = o.transportLog.pass(this.now());
        if (held >= 0) this.say('warn', 'upstream request failed', o, { items: n, reason: r.reason, suppressed: held });
      }
      if (o.cursor < this.tail) this.kick();
    } catch (err) {
      this.internal(err);
    } finally {
      this.checkIdle();
    }
  }

  private transition(o: Outlet, before: BreakerState, after: BreakerState): void {
    if (after === 'open') {
      if (before === 'closed') {
        this.say('warn', 'upstream circuit opened after consecutive failures: not sending to it until a probe succeeds', o, {
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

  /** Breaker open: everything waiting for this upstream is skipped, not held. */
  private skipAll(o: Outlet): void {
    const end = this.tail;
    for (let s = o.cursor; s < end; s++) this.settle(s, false);
    o.skipped += end - o.cursor;
    o.cursor = end;
  }

  /** Ring full: if some upstream has taken the oldest item, the ones that have not skip it. */
  private overrunOldest(): boolean {
    const h = this.head;
    const outs = this.outlets;
    let taken = false;
    for (let k = 0; k < outs.length; k++) {
      if (outs[k]!.cursor > h) {
        taken = true;
        break;
      }
    }
    if (!taken) return false;
    for (let k = 0; k < outs.length; k++) {
      const o = outs[k]!;
      if (o.cursor !== h) continue;
      o.cursor = h + 1;
      o.overrun++;
      this.settle(h, false);
      const held = o.overrunLog.pass(this.now());
      if (held >= 0) this.say('warn', 'upstream too slow: the lane is full and the oldest transactions are skipped for it', o, { suppressed: held });
    }
    this.release();
    return true;
  }

  private settle(seq: number, ok: boolean): void {
    const i = seq & this.mask;
    if (ok && this.accepted[i] === 0) {
      this.accepted[i] = 1;
      this.forwardedCount++;
    }
    if (--this.pending[i] === 0) {
      this.settled++;
      if (this.accepted[i] === 0) this.droppedCount++;
    }
  }

  /** Frees the slots every upstream has passed. */
  private release(): void {
    const outs = this.outlets;
    let min = this.tail;
    for (let k = 0; k < outs.length; k++) if (outs[k]!.cursor < min) min = outs[k]!.cursor;
    for (let s = this.head; s < min; s++) this.items[s & this.mask] = undefined;
    if (min > this.head) this.head = min;
  }

  private encode(from: number, n: number): string {
    if (from === this.lastFrom && n === this.lastCount) return this.lastBody;
    let body: string;
    if (n === 1) {
      body = this.call(from);
    } else {
      body = '[' + this.call(from);
      for (let s = from + 1; s < from + n; s++) body += ',' + this.call(s);
      body += ']';
    }
    this.lastFrom = from;
    this.lastCount = n;
    this.lastBody = body;
    return body;
  }

  private call(seq: number): string {
    const item = this.items[seq & this.mask]!;
    if (this.kind === KIND_EVM) return evmCall(seq, item as string);
    if (this.kind === KIND_SOLANA) return solanaCall(seq, item as string);
    return bundleCall(seq, item as readonly string[]);
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
