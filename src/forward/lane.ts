/**
 * A forwarding lane (docs/protocol.md#forwarding): a bounded FIFO of admitted, already-encoded
 * transactions, fanned out to every upstream of the lane. The lane coordinates its parts:
 *
 *   ring.ts    the items, stored once in admission order, who is done with each, their traces
 *   outlet.ts  one upstream's cursor, resends, back-off, circuit breaker and batching
 *   wire.ts    each request's body, encoded once and handed to the client (`post(body, done)`)
 *   drops.ts   unaccepted items: counters and throttled logs
 *   stats.ts   the statistics snapshot
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
 * answered, is what admission compares with `capacity`. An answer for an
 * item given up or reused is recognised by the done bit or `seq < head`, and
 * ignored.
 */
import { systemClock, type Clock } from '../clock.js';
import { Drops, R_EXPIRED, R_EXPIRED_AFTER_RESTART, R_REJECTED, R_SHUTDOWN, R_SPILLED } from './drops.js';
import type { LogLevel, LogSink } from './log.js';
import { Breaker, Outlet, Permit, breakerNews, type BreakerOptions, type BreakerState } from './outlet.js';
import { PostStatus, type PostResult } from './result.js';
import { MAX_UPSTREAMS, Ring, Verdict } from './ring.js';
import { laneStats, type LaneStats } from './stats.js';
import { UPSTREAM_CONNECTIONS, UpstreamClient, type UpstreamOptions } from './upstream.js';
import { parseUpstreamUrl } from './url.js';
import { CallKind, Encoder } from './wire.js';
import type { SpillEntry } from './spill.js';
import type { Trace } from '../status/tracker.js';
import type { LaneTap } from './tap.js';
import { ForwardConfigError } from '../errors.js';

export type { LaneStats } from './stats.js';
export type { SpillEntry } from './spill.js';

export type LaneName = 'evm-paid' | 'evm-free' | 'solana-single' | 'solana-bundle';
export const LANE_NAMES: readonly LaneName[] = ['evm-paid', 'evm-free', 'solana-single', 'solana-bundle'];

/**
 * Already encoded: `0x…` hex for EVM lanes, base64 for solana-single, a
 * bundle's base64 transactions in order. Must be pure hex/base64: they are
 * spliced into JSON without escaping.
 */
type LaneItem<N extends LaneName> = N extends 'solana-bundle' ? readonly string[] : string;

export const QUEUE_CAPACITY = 10_000;
/** Bounds the ring allocation (2^24 pointers is 128 MiB). */
const MAX_CAPACITY = 1 << 24;
/**
 * How long an unaccepted item is kept and retried. A Solana blockhash expires
 * after 150 slots (~60 s, rarely 90 s), and a minute is five EVM blocks, after
 * which a searcher's transaction has lost its point. The breaker's probes, one
 * a second, see an upstream back from a hang well inside this.
 */
const MAX_AGE_MS = 60_000;
/** The clock is injected, so the wake-up timer re-reads it at least this often. */
const MAX_WAKE_MS = 1_000;

interface LaneOptions {
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
  /** solana-single only: the TPU route. */
  tap?: LaneTap | null;
}

export class Lane<N extends LaneName = LaneName> {
  readonly name: N;
  readonly capacity: number;

  private readonly kind: CallKind;
  private readonly outlets: Outlet[];
  /** Each outlet's done bit, in outlet order. */
  private readonly bits: number[];
  private readonly ring: Ring<LaneItem<N>>;
  private readonly encoder: Encoder;
  private readonly drops: Drops;
  private readonly maxAge: number;
  private readonly log: LogSink | null;
  private readonly now: Clock;
  private readonly schedule: (fn: () => void) => void;
  private readonly tap: LaneTap | null;

  private admittedCount = 0;
  private discardedCount = 0;
  private accepting = true;
  private closed = false;
  private scheduled = false;
  private wasAvailable = true;
  private idleWaiters: (() => void)[] = [];
  private readonly pumpFn = (): void => this.pump();
  private readonly batchSizeFn = (from: number): number => this.encoder.batchSize(from, this.ring.tail);
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
    this.maxAge = maxAge;
    this.log = opts.log ?? null;
    this.now = opts.now ?? systemClock;
    this.schedule = opts.schedule ?? queueMicrotask;
    this.tap = this.kind === CallKind.SOLANA ? (opts.tap ?? null) : null;
    const batching = this.kind !== CallKind.BUNDLE && (opts.batching ?? true);
    // Parse every URL before building any client, so a bad one stops construction cleanly.
    const urls = opts.upstreams.map((u, i) => parseUpstreamUrl(u, `lane ${name} upstream ${i}`));
    this.outlets = urls.map(
      (url, k) =>
        new Outlet((1 << k) >>> 0, new UpstreamClient(url, { connections, timeoutMs: opts.timeoutMs, ca: opts.ca }), new Breaker(this.now, opts.breaker), batching, connections),
    );
    this.bits = this.outlets.map((o) => o.bit);
    this.drops = new Drops(maxAge, (level, msg, fields) => this.say(level, msg, null, fields));
    this.ring = new Ring(this.outlets.length === 0 ? 1 : capacity, this.outlets.length, this.now, (reason) => this.drops.dropped(reason, this.now()));
    const ring = this.ring;
    this.encoder = new Encoder(this.kind, (seq) => ring.item(seq));
  }

  /** No upstream nor tap: drops what it admits. */
  get dry(): boolean {
    return this.outlets.length === 0 && this.tap === null;
  }

  get depth(): number {
    return this.ring.open;
  }

  get outstanding(): number {
    return this.ring.tail - this.ring.settled;
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
      if (this.tap !== null) {
        this.tap.offer(item as string, trace, true);
        this.admittedCount++;
        this.kick();
        return true;
      }
      this.admittedCount++;
      this.discardedCount++;
      trace?.final('dropped', 'no upstream is configured for this lane', this.now());
      return true;
    }
    const now = this.now();
    const ring = this.ring;
    if (ring.held >= this.capacity) {
      this.expire(now);
      if (ring.held >= this.capacity && !this.overrunOldest()) return false;
    }
    ring.push(item, trace, account, now);
    this.tap?.offer(item as string, trace, false);
    this.admittedCount++;
    this.kick();
    return true;
  }

  /** Resolves when every admitted item is final everywhere (or the lane closed). */
  whenIdle(): Promise<void> {
    if (this.closed || this.ring.settled === this.ring.tail) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops admitting; queued items keep going out. */
  stop(): void {
    this.accepting = false;
  }

  /** The position after the last admitted item, for `settledUpTo`. */
  position(): number {
    return this.ring.tail;
  }

  /** Whether every item admitted before `position` is final everywhere (accepted, refused or given up). */
  settledUpTo(position: number): boolean {
    return this.closed || this.ring.head - position >= 0;
  }

  /** Acknowledged transactions written down at shutdown that were too old to send on this start. */
  expiredAfterRestart(n: number): void {
    if (n > 0) this.drops.by[R_EXPIRED_AFTER_RESTART]! += n;
  }

  /** Items taken out by `spill`. */
  get spilled(): number {
    return this.drops.spilled;
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
    const ring = this.ring;
    const family = this.kind === CallKind.EVM ? 'evm' : 'solana';
    const end = ring.tail;
    for (let s = ring.head; s < end; s++) {
      if (ring.isSettled(s) || ring.verdict(s) === Verdict.ACCEPTED) continue;
      const item = ring.item(s);
      out.push({ lane: this.name, family, item: typeof item === 'string' ? item : [...item], ackedAt: ring.bornAt(s), account: ring.accountOf(s) });
      ring.markAll(s, this.bits, R_SPILLED);
    }
    // Nothing more goes out: `close` follows, and what is left owes only accepted items.
    for (const o of this.outlets) o.clear(end);
    return out;
  }

  /** Stops sending and closes sockets (aborting in-flight requests unless idle); unaccepted items drop as `shutdown`. */
  async close(): Promise<void> {
    if (this.closed) return;
    const ring = this.ring;
    // After `spill` every item is settled, yet requests may be in flight: those are aborted too.
    const idle = ring.settled === ring.tail && this.outlets.every((o) => o.inFlight === 0);
    this.accepting = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const end = ring.tail;
    const before = this.drops.by[R_SHUTDOWN]!;
    for (let s = ring.head; s < end; s++) ring.markAll(s, this.bits, R_SHUTDOWN);
    for (const o of this.outlets) o.clear(end);
    const abandoned = this.drops.by[R_SHUTDOWN]! - before;
    if (abandoned > 0) this.say('warn', 'acknowledged transactions dropped: the lane shut down before any upstream accepted them', null, { reason: 'shutdown', items: abandoned });
    this.closed = true;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
    await Promise.all([...this.outlets.map((o) => (idle ? o.client.close() : o.client.destroy())), this.tap?.close()]);
  }

  stats(): LaneStats {
    const counts = { lane: this.name, capacity: this.capacity, admitted: this.admittedCount, discarded: this.discardedCount, available: this.available(), accepting: this.accepting };
    return laneStats(counts, this.ring, this.drops, this.outlets);
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
      this.tap?.flush();
      const now = this.now();
      this.expire(now);
      let wake = Infinity;
      for (let k = 0; k < this.outlets.length; k++) {
        const w = this.feed(this.outlets[k]!, now);
        if (w < wake) wake = w;
      }
      if (wake !== Infinity) {
        // Something waits on time (back-off, cool-down): also wake for the oldest item's expiry.
        const ring = this.ring;
        if (ring.head < ring.tail) {
          const e = ring.bornAt(ring.head) + this.maxAge;
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
    const ring = this.ring;
    while (o.take(now, ring.tail, this.batchSizeFn)) {
      const from = o.from;
      const n = o.n;
      const permit = o.permit;
      if (permit === Permit.PROBE) this.say('info', 'probing upstream after cool-down', o, {});
      for (let i = 0; i < n; i++) ring.trace(from + i)?.sent(o.client.label, now);
      o.client.post(this.encoder.encode(from, n), (res) => this.complete(o, from, n, permit, res));
    }
    return o.wakeAt;
  }

  private complete(o: Outlet, from: number, n: number, permit: Permit, r: PostResult): void {
    try {
      o.landed(n);
      if (this.closed) return;
      const now = this.now();
      const before = o.judge(permit, r.outcome);
      if (o.breaker.state !== before) this.transition(o, before, o.breaker.state);
      if (r.outcome === PostStatus.OK) this.answered(o, from, n, r, now);
      else if (r.outcome === PostStatus.REFUSED) {
        if (n > 1) {
          // The batch may be what was refused (its size, its shape): each item gets a request of its own.
          this.failedAll(o, from, n, now, r.httpStatus, `${r.reason}: resent one per request`);
          for (let i = 0; i < n; i++) o.requeue(this.ring, from + i, 1, now);
        } else if (!this.ring.stale(from, o.bit)) {
          this.ring.trace(from)?.answered(o.client.label, now, 'rejected', r.httpStatus, r.reason);
          this.ring.mark(o.bit, from, Verdict.REJECTED, R_REJECTED);
        }
        const held = o.rpcLog.pass(now);
        if (held >= 0) this.say('info', n > 1 ? 'upstream refused a batch request: resending its transactions one per request' : 'upstream refused transactions', o, { items: n, reason: r.reason, suppressed: held });
      } else {
        this.failedAll(o, from, n, now, r.httpStatus, r.reason);
        o.requeue(this.ring, from, n, now + o.backoff());
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

  /** A JSON-RPC answer: per-item verdicts, or a refusal of batches as such. */
  private answered(o: Outlet, from: number, n: number, r: PostResult, now: number): void {
    const ring = this.ring;
    if (r.batchRefused) {
      // Refused as a batch, not item by item: resend them one per request at once.
      if (o.batching) {
        o.batching = false;
        this.say('warn', 'upstream refuses JSON-RPC batches: sending one transaction per request from now on', o, { reason: r.reason });
      }
      this.failedAll(o, from, n, now, r.httpStatus, 'refused as a batch: resent one per request');
      o.requeue(ring, from, n, now);
      return;
    }
    const acc = r.accepted!;
    for (let i = 0; i < n; i++) {
      const seq = from + i;
      if (ring.stale(seq, o.bit)) continue;
      const ok = acc[i] === 1;
      ring.trace(seq)?.answered(o.client.label, now, ok ? 'ok' : 'rejected', r.httpStatus, ok ? null : r.reason);
      ring.mark(o.bit, seq, ok ? Verdict.ACCEPTED : Verdict.REJECTED, R_REJECTED);
    }
    if (r.okCount < n) {
      const held = o.rpcLog.pass(now);
      if (held >= 0) this.say('info', 'upstream refused transactions', o, { items: n - r.okCount, reason: r.reason, suppressed: held });
    }
  }

  /** A request that will be resent: each traced item's attempt failed. */
  private failedAll(o: Outlet, from: number, n: number, now: number, httpStatus: number, why: string): void {
    for (let i = 0; i < n; i++) {
      if (!this.ring.stale(from + i, o.bit)) this.ring.trace(from + i)?.answered(o.client.label, now, 'failed', httpStatus || null, why);
    }
  }

  private transition(o: Outlet, before: BreakerState, after: BreakerState): void {
    const news = breakerNews(before, after);
    if (news !== null) this.say(news[0], news[1], o, after === 'open' ? { cooldownMs: o.breaker.cooldownMs } : {});
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
    const ring = this.ring;
    const outs = this.outlets;
    while (ring.head < ring.tail && ring.bornAt(ring.head) <= limit) {
      const seq = ring.head;
      for (let k = 0; k < outs.length; k++) {
        const o = outs[k]!;
        if (ring.isDone(seq, o.bit)) continue;
        o.giveUp(seq);
        o.expired++;
        ring.mark(o.bit, seq, Verdict.NONE, R_EXPIRED);
      }
      if (ring.head === seq) break; // cannot happen: every bit is set now; never spin
    }
  }

  /** Ring full: if some upstream answered the oldest item, the others give it up. */
  private overrunOldest(): boolean {
    const ring = this.ring;
    const seq = ring.head;
    if (ring.verdict(seq) === Verdict.NONE) return false;
    const outs = this.outlets;
    const now = this.now();
    for (let k = 0; k < outs.length; k++) {
      const o = outs[k]!;
      if (ring.isDone(seq, o.bit)) continue;
      o.giveUp(seq);
      o.overrun++;
      ring.mark(o.bit, seq, Verdict.NONE, R_REJECTED);
      const held = o.overrunLog.pass(now);
      if (held >= 0) this.say('warn', 'upstream too slow: the lane is full and the oldest transactions, already answered by another upstream, are skipped for it', o, { suppressed: held });
    }
    return true;
  }

  private wake(at: number, now: number): void {
    if (at >= this.wakeAt) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.wakeAt = at;
    this.timer = setTimeout(this.wakeFn, Math.min(Math.max(at - now, 1), MAX_WAKE_MS));
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0 || this.ring.settled !== this.ring.tail) return;
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
