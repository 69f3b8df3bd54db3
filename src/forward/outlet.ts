/**
 * One upstream's side of a lane (docs/protocol.md#forwarding): its cursor in
 * the ring, the ranges it must resend, the back-off after transport failures,
 * its circuit breaker, and whether it takes JSON-RPC batches.
 *
 * In flight is bounded by its connections (pipelining 1), so the HTTP client
 * never queues: waiting items stay in the ring and the next request takes
 * up to a batch of them. A resend goes before new items; behind an open
 * breaker everything waits, and the half-open probe is the oldest waiting item.
 */
import type { Clock } from '../clock.js';
import { Throttle, type LogLevel } from './log.js';
import { PostStatus } from './result.js';
import type { UpstreamClient } from './upstream.js';

// ---- circuit breaker ---------------------------------------------------------------

/*
 * The circuit breaker (docs/protocol.md#forwarding): a pure state machine with
 * an injected clock, so every transition is unit-testable without a socket.
 *
 *   closed --5 failures in a row--> open --cool-down elapsed, next request--> half-open
 *     ^                               ^                                          |
 *     |                               +-- probe fails: cool-down x2, to its max -+
 *     +------------------------------ probe succeeds ----------------------------+
 *
 * Only transport-level outcomes feed it (5xx, 408, 429, unparseable body,
 * time-out, connection error): counting JSON-RPC errors or other 4xx would let
 * a client's bad transactions close a lane for everyone.
 */
/** One failure is noise (a reset keep-alive socket); five in a row, about a round of 4 in flight, is a pattern. */
export const BREAKER_THRESHOLD = 5;
/** A blip costs about a second of admissions. */
export const BREAKER_COOLDOWN_MS = 1_000;
/**
 * No growth by default: the probe is a waiting transaction (never lost: it is
 * resent like any other), so a dead upstream costs one request a second, and
 * a lane that refused admission while every breaker was open takes it up
 * again within a second of its upstream's recovery.
 */
export const BREAKER_MAX_COOLDOWN_MS = 1_000;

export interface BreakerOptions {
  threshold?: number;
  cooldownMs?: number;
  maxCooldownMs?: number;
}

export const Permit = { DENY: 0, PASS: 1, PROBE: 2 } as const;
export type Permit = (typeof Permit)[keyof typeof Permit];

export type BreakerState = 'closed' | 'open' | 'half-open';

const CLOSED = 0;
const OPEN = 1;
const HALF_OPEN = 2;
const NAMES: readonly BreakerState[] = ['closed', 'open', 'half-open'];

export class Breaker {
  private st = CLOSED;
  private failures = 0;
  private openedAt = 0;
  private cooldown: number;
  private readonly threshold: number;
  private readonly baseCooldown: number;
  private readonly maxCooldown: number;

  constructor(
    private readonly now: Clock,
    opts: BreakerOptions = {},
  ) {
    this.threshold = opts.threshold ?? BREAKER_THRESHOLD;
    this.baseCooldown = opts.cooldownMs ?? BREAKER_COOLDOWN_MS;
    this.maxCooldown = Math.max(opts.maxCooldownMs ?? BREAKER_MAX_COOLDOWN_MS, this.baseCooldown);
    this.cooldown = this.baseCooldown;
  }

  get state(): BreakerState {
    return NAMES[this.st]!;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Of the current (or next) open period. */
  get cooldownMs(): number {
    return this.cooldown;
  }

  /** False only while open and cooling down: otherwise the next transaction can be the probe. */
  available(): boolean {
    return this.st !== OPEN || this.now() - this.openedAt >= this.cooldown;
  }

  /** When the next probe may go while open; -Infinity otherwise. */
  probeAt(): number {
    return this.st === OPEN ? this.openedAt + this.cooldown : -Infinity;
  }

  /** Asks to send one request. Moving from open to half-open happens here, lazily, so the breaker needs no timer. */
  request(): Permit {
    if (this.st === CLOSED) return Permit.PASS;
    if (this.st === OPEN && this.now() - this.openedAt >= this.cooldown) {
      this.st = HALF_OPEN;
      return Permit.PROBE;
    }
    return Permit.DENY;
  }

  success(p: Permit): void {
    if (this.st === CLOSED) {
      this.failures = 0;
    } else if (this.st === HALF_OPEN && p === Permit.PROBE) {
      this.st = CLOSED;
      this.failures = 0;
      this.cooldown = this.baseCooldown;
    }
    // A PASS answered while open was sent before opening; only the probe decides.
  }

  failure(p: Permit): void {
    if (this.st === CLOSED) {
      if (++this.failures >= this.threshold) this.trip();
    } else if (this.st === HALF_OPEN && p === Permit.PROBE) {
      this.cooldown = Math.min(this.cooldown * 2, this.maxCooldown);
      this.trip();
    }
    // Late failures of requests sent before opening neither extend nor shorten the cool-down.
  }

  private trip(): void {
    this.st = OPEN;
    this.openedAt = this.now();
  }
}

// ---- the outlet ----------------------------------------------------------------------

/** First resend after a transport failure, doubled per consecutive failure until the breaker takes over. */
export const RETRY_BACKOFF_MS = 20;
/** The breaker's base cool-down: past it the breaker, not the back-off, decides. */
export const RETRY_BACKOFF_MAX_MS = 1_000;

/** Items of a failed request waiting to be resent: seqs from..from+n-1. */
interface Range {
  from: number;
  n: number;
}

/** What the outlet needs to know of the ring. */
export interface Items {
  readonly tail: number;
  /** Given up by the upstream with `bit`, or freed: not to be sent or resent. */
  stale(seq: number, bit: number): boolean;
}

export class Outlet {
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

  // The request `take` chose, read right after it returns true.
  from = 0;
  n = 0;
  permit: Permit = Permit.PASS;
  /** After `take` returned false: when to look again (Infinity: an answer or an offer will). */
  wakeAt = Infinity;

  constructor(
    /** This upstream's bit in the per-item done mask. */
    readonly bit: number,
    readonly client: UpstreamClient,
    readonly breaker: Breaker,
    public batching: boolean,
    private readonly maxInFlight: number,
  ) {}

  retryItems(): number {
    let n = 0;
    for (const r of this.retry) n += r.n;
    return n;
  }

  /** Items never sent or to be resent. */
  backlog(tail: number): number {
    return tail - this.cursor + this.retryItems();
  }

  /**
   * Chooses the next request this upstream may take now: true with `from`,
   * `n` and `permit` set (and counted in flight), or false with `wakeAt`.
   * `batchSize(from)` is how many items from `from` fit one request.
   */
  take(now: number, tail: number, batchSize: (from: number) => number): boolean {
    const r = this.retry;
    if (this.inFlight >= this.maxInFlight) {
      this.wakeAt = Infinity;
      return false;
    }
    const retryDue = r.length > 0 && now >= this.retryAt;
    if (!retryDue && this.cursor >= tail) {
      this.wakeAt = r.length > 0 ? this.retryAt : Infinity;
      return false;
    }
    const permit = this.breaker.request();
    if (permit === Permit.DENY) {
      // Open: wait for the cool-down. Half-open: the probe is out and its answer kicks the lane.
      const at = this.breaker.probeAt();
      this.wakeAt = at === -Infinity ? Infinity : at;
      return false;
    }
    const single = permit === Permit.PROBE || !this.batching;
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
      from = this.cursor;
      n = single ? 1 : batchSize(from);
      this.cursor = from + n;
    }
    this.from = from;
    this.n = n;
    this.permit = permit;
    this.inFlight++;
    this.inFlightItems += n;
    return true;
  }

  /** A request's answer came back: out of flight. */
  landed(n: number): void {
    this.inFlight--;
    this.inFlightItems -= n;
  }

  /**
   * Feeds the breaker with a request's outcome; returns its state before, so
   * the caller can tell a transition. A 4xx is an upstream up and answering:
   * it must not trip the breaker (see Breaker). Our own abort says nothing.
   */
  judge(permit: Permit, outcome: PostStatus): BreakerState {
    const before = this.breaker.state;
    if (outcome === PostStatus.ABORTED) return before;
    if (outcome === PostStatus.OK || outcome === PostStatus.REFUSED) {
      this.failures = 0;
      this.breaker.success(permit);
    } else this.breaker.failure(permit);
    return before;
  }

  /** The resend delay after one more transport failure in a row. */
  backoff(): number {
    this.failures++;
    return Math.min(RETRY_BACKOFF_MS * 2 ** (this.failures - 1), RETRY_BACKOFF_MAX_MS);
  }

  /** Queues from..from+n-1 to be resent from `at`, leaving out what this upstream is done with. */
  requeue(items: Items, from: number, n: number, at: number): void {
    // Items given up meanwhile are always a prefix: overrun, expiry and shutdown work from the head.
    const end = from + n;
    while (from < end && items.stale(from, this.bit)) from++;
    if (from === end) return;
    n = end - from;
    this.retried += n;
    const r = this.retry;
    let k = r.length;
    while (k > 0 && r[k - 1]!.from > from) k--;
    r.splice(k, 0, { from, n });
    this.retryAt = at;
  }

  /** Takes the head item out of this upstream's queue; an in-flight copy's answer will be stale. */
  giveUp(seq: number): void {
    if (this.cursor === seq) {
      this.cursor = seq + 1;
      return;
    }
    const r = this.retry;
    if (r.length > 0 && r[0]!.from === seq) {
      if (r[0]!.n === 1) r.shift();
      else {
        r[0]!.from++;
        r[0]!.n--;
      }
    }
  }

  /** Nothing more goes out: every item up to `end` is done for this upstream. */
  clear(end: number): void {
    this.cursor = end;
    this.retry.length = 0;
  }
}

/** The log line for a breaker transition, or null when there is nothing to say. */
export function breakerNews(before: BreakerState, after: BreakerState): [LogLevel, string] | null {
  if (after === 'open') {
    return before === 'closed'
      ? ['warn', 'upstream circuit opened after consecutive failures: holding its transactions until a probe succeeds']
      : ['warn', 'upstream probe failed: circuit stays open'];
  }
  return after === 'closed' && before !== 'closed' ? ['info', 'upstream recovered: circuit closed'] : null;
}
