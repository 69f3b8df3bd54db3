/**
 * Per-account token buckets in a SharedArrayBuffer, one slot per account per
 * family, read and written from every thread (DECISIONS 5: over any interval
 * t, admitted <= burst + TPS * t). The caller maps accounts to slot numbers.
 *
 * Layout: 32 bytes per slot, so a slot never straddles a 64-byte cache line;
 * an Int32Array and a Float64Array view the same SAB:
 *
 *   byte:   0      4      8       12      16             24             32
 *         +------+------+-------+-------+--------------+--------------+
 *   slot: | lock | rate | burst | spare | milli-tokens | last         |
 *         +------+------+-------+-------+--------------+--------------+
 *           i32    i32    i32             f64            f64
 *   lock:   0 free, 1 held, 2 held with sleepers (lockWord)
 *   rate:   tokens per second, integer >= 0 (= milli-tokens per ms)
 *   burst:  tokens; 0 marks a slot never configured (or cleared)
 *   milli-tokens, last: the bucket state, last = ms since epochMs of the last refill
 *
 * Why a lock and not a lock-free update: the state that must change together
 * is two words (tokens, last). A 32-bit CAS cannot cover both; a 64-bit CAS
 * through BigInt64Array allocates a BigInt per attempt; GCRA packs the state
 * into one "theoretical arrival time" word but then needs sub-millisecond
 * resolution, and 32 bits of microseconds wrap in 71 minutes, shorter than a
 * refill of 2000 tokens at 1 TPS. The critical section is a dozen arithmetic
 * operations on one cache line; uncontended the lock costs one CAS and one
 * exchange.
 *
 * Why the state is float64 and not u32 milliseconds with integer milli-tokens:
 * flooring instants to whole milliseconds makes the bucket lag real time by up
 * to 1 ms, and then the DECISIONS 5 bound can be exceeded by rate * 1 ms
 * (500 TPS, burst 1: takes at 0.999 ms and 2.000 ms both pass, though
 * burst + rate * 1.001 ms = 1.5005 tokens). The fields
 * are only touched under the lock, whose Atomics operations order the plain
 * reads and writes, so float64 costs nothing here. The bucket is then the
 * exact continuous one, and float64 milliseconds do not wrap: a wall-clock
 * reading has a 2^-12 ms grid, differences of such readings are exact, and
 * rate * elapsed stays exact below 2^53, so there is no wrap bound to explain.
 */

import { lockWord, unlockWord } from './lock.js';

/** Int32 words per slot (32 bytes). */
const SLOT_WORDS = 8;
const LOCK = 0;
const RATE = 1;
const BURST = 2;
/** Float64 index of a slot's milli-tokens within the slot (byte 16); last follows. */
const SLOT_F64 = 4;
const F_TOKENS = 2;

/** Milli-tokens per token: an integer rate in tokens/s refills exactly `rate` milli-tokens per ms. */
export const MILLI = 1000;
/** Sanity bound on burst, far above any plan (DECISIONS 2 defaults are 2..2000). */
export const MAX_BURST = 2_000_000;
/** Sanity bound on rate (tokens/s), likewise. */
export const MAX_RATE = 2_000_000;
/** Returned by tryTake when n tokens can never become available (rate 0, n > burst, unconfigured slot). */
export const NEVER = Number.POSITIVE_INFINITY;
/**
 * Rounding tolerance in milli-tokens (a billionth of a token), for clocks whose
 * readings are not on one binary grid. Tokens never go below -EPS, so the
 * total over-admission it allows is EPS, not EPS per take.
 */
const EPS = 1e-6;

/**
 * Under the lock: refills the bucket whose milli-tokens are f[i] and last
 * refill time f[i + 1] up to `now` (ms since the table epoch), then takes
 * `need` milli-tokens. Returns 0 when taken, else the ms to wait (or NEVER).
 * A `last` ahead of `now` is another thread that read the clock later but got
 * the lock first: no refill, and the wait counts from `last`.
 */
export function refillTake(f: Float64Array, i: number, rate: number, burstMilli: number, now: number, need: number): number {
  let tokens = f[i]!;
  const e = now - f[i + 1]!;
  if (e > 0) {
    tokens = Math.min(burstMilli, tokens + rate * e);
    f[i + 1] = now;
  } else if (tokens > burstMilli) {
    tokens = burstMilli; // burst was lowered
  }
  if (tokens >= need - EPS) {
    f[i] = tokens - need;
    return 0;
  }
  f[i] = tokens;
  if (rate === 0) return NEVER;
  return Math.ceil((need - tokens) / rate - (e < 0 ? e : 0));
}

export interface TokenBucketHandle {
  readonly sab: SharedArrayBuffer;
  readonly slots: number;
  readonly epochMs: number;
}

export interface TokenBucketOptions {
  /** Number of slots (accounts x families). */
  readonly slots: number;
  /** Current time; becomes the table epoch. */
  readonly nowMs: number;
}

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${v}`);
  }
}

export class TokenBucketTable {
  readonly slots: number;
  readonly epochMs: number;
  private readonly sab: SharedArrayBuffer;
  private readonly a: Int32Array;
  private readonly f: Float64Array;

  private constructor(sab: SharedArrayBuffer, slots: number, epochMs: number) {
    if (sab.byteLength < slots * SLOT_WORDS * 4) throw new RangeError('token bucket SAB smaller than its slots');
    this.sab = sab;
    this.slots = slots;
    this.epochMs = epochMs;
    this.a = new Int32Array(sab, 0, slots * SLOT_WORDS);
    this.f = new Float64Array(sab, 0, slots * SLOT_F64);
  }

  /** Allocates `slots * 32` bytes. */
  static create(opts: TokenBucketOptions): TokenBucketTable {
    checkInt('slots', opts.slots, 1, 2 ** 26);
    return new TokenBucketTable(new SharedArrayBuffer(opts.slots * SLOT_WORDS * 4), opts.slots, Math.floor(opts.nowMs));
  }

  /** Rebuilds the table in another thread from `handle()`. */
  static attach(h: TokenBucketHandle): TokenBucketTable {
    return new TokenBucketTable(h.sab, h.slots, h.epochMs);
  }

  handle(): TokenBucketHandle {
    return { sab: this.sab, slots: this.slots, epochMs: this.epochMs };
  }

  get byteLength(): number {
    return this.sab.byteLength;
  }

  /**
   * Sets a slot's limits. A slot never configured (or cleared) starts full;
   * otherwise tokens earned so far at the old rate are kept, clamped to the
   * new burst.
   */
  configure(slot: number, rate: number, burst: number, nowMs: number): void {
    checkInt('slot', slot, 0, this.slots - 1);
    checkInt('rate', rate, 0, MAX_RATE);
    checkInt('burst', burst, 1, MAX_BURST);
    const a = this.a;
    const f = this.f;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    const now = nowMs - this.epochMs;
    lockWord(a, base + LOCK);
    const oldBurst = a[base + BURST]!;
    if (oldBurst === 0) {
      f[fi] = burst * MILLI;
      f[fi + 1] = now;
    } else {
      refillTake(f, fi, a[base + RATE]!, oldBurst * MILLI, now, 0);
      f[fi] = Math.min(f[fi]!, burst * MILLI);
    }
    a[base + RATE] = rate;
    a[base + BURST] = burst;
    unlockWord(a, base + LOCK);
  }

  /** Forgets a slot (account removed); the next configure() starts it full. */
  clear(slot: number): void {
    checkInt('slot', slot, 0, this.slots - 1);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    lockWord(a, base + LOCK);
    a[base + RATE] = 0;
    a[base + BURST] = 0;
    this.f[fi] = 0;
    this.f[fi + 1] = 0;
    unlockWord(a, base + LOCK);
  }

  /**
   * Takes n tokens. Returns 0 when they were taken; otherwise takes nothing
   * and returns the milliseconds until n tokens will be there (rounded up, so
   * waiting that long succeeds if nobody else takes meanwhile), or NEVER.
   */
  tryTake(slot: number, n: number, nowMs: number): number {
    if (!((slot >>> 0) === slot && slot < this.slots && n >= 1)) checkTake(slot, this.slots, n);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    lockWord(a, base + LOCK);
    const burst = a[base + BURST]!;
    const r = n > burst ? NEVER : refillTake(this.f, slot * SLOT_F64 + F_TOKENS, a[base + RATE]!, burst * MILLI, nowMs - this.epochMs, n * MILLI);
    unlockWord(a, base + LOCK);
    return r;
  }

  /** Whole tokens available now (admin API, tests); refills, takes nothing. */
  available(slot: number, nowMs: number): number {
    checkInt('slot', slot, 0, this.slots - 1);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    lockWord(a, base + LOCK);
    const burst = a[base + BURST]!;
    if (burst > 0) refillTake(this.f, fi, a[base + RATE]!, burst * MILLI, nowMs - this.epochMs, 0);
    const tokens = this.f[fi]!;
    unlockWord(a, base + LOCK);
    return Math.floor((tokens + EPS) / MILLI);
  }
}

function checkTake(slot: number, slots: number, n: number): never {
  checkInt('slot', slot, 0, slots - 1);
  throw new RangeError(`n must be >= 1, got ${n}`);
}
