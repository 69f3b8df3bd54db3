/**
 * Circuit breaker for one upstream (docs/protocol.md#forwarding): a pure state machine with
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
import type { Clock } from '../clock.js';

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
