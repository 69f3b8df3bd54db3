/**
 * Circuit breaker for one upstream (docs/protocol.md#forwarding): a pure state machine with
 * an injected clock, so every transition is unit-testable without a socket.
 *
 *   closed --5 failures in a row--> open --cool-down elapsed, next request--> half-open
 *     ^                               ^                                          |
 *     |                               +------ probe fails: cool-down x2 ---------+
 *     +------------------------------ probe succeeds ----------------------------+
 *
 * Only transport-level outcomes feed it (5xx, 408, 429, unparseable body,
 * time-out, connection error). A JSON-RPC error or another 4xx is an upstream
 * that is up and answering, e.g. "nonce too low"; counting it would let a
 * client's bad transactions close a lane for everyone. While open, the lane
 * holds the upstream's items; the probe carries the oldest of them.
 */
import type { Clock } from '../clock.js';

/** One failure is noise (a reset keep-alive socket); five in a row is a pattern, and at 4 requests in flight it is about one round of them. */
export const BREAKER_THRESHOLD = 5;
/** Long enough for a restarting upstream to come back, short enough that a blip costs about a second of admissions. */
export const BREAKER_COOLDOWN_MS = 1_000;
/** Ceiling of the doubling: a dead upstream costs one probe every 30 s, and recovery is noticed within 30 s. */
export const BREAKER_MAX_COOLDOWN_MS = 30_000;

export interface BreakerOptions {
  threshold?: number;
  cooldownMs?: number;
  maxCooldownMs?: number;
}

/** What `request()` grants: nothing, an ordinary request, or the single half-open probe. */
export const Permit = { DENY: 0, PASS: 1, PROBE: 2 } as const;
export type Permit = (typeof Permit)[keyof typeof Permit];

export type BreakerState = 'closed' | 'open' | 'half-open';

// Numeric states keep the hot comparison an integer compare.
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

  /** Failures in a row while closed (0 after any success). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** The cool-down that applies to the current (or next) open period. */
  get cooldownMs(): number {
    return this.cooldown;
  }

  /**
   * False only while open and still cooling down. Half-open, or open with the
   * cool-down elapsed, counts as available: the next transaction is the probe.
   */
  available(): boolean {
    return this.st !== OPEN || this.now() - this.openedAt >= this.cooldown;
  }

  /** When the next probe may go: the end of the current cool-down while open; -Infinity otherwise (nothing to wait for). */
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

  /** Reports a request's success with the permit it was sent under. */
  success(p: Permit): void {
    if (this.st === CLOSED) {
      this.failures = 0;
    } else if (this.st === HALF_OPEN && p === Permit.PROBE) {
      this.st = CLOSED;
      this.failures = 0;
      this.cooldown = this.baseCooldown;
    }
    // A PASS answered while open or half-open was sent before the breaker
    // opened; only the probe decides whether the upstream is back.
  }

  /** Reports a request's transport failure with the permit it was sent under. */
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
