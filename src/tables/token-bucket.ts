/**
 * Per-account token buckets in a SharedArrayBuffer, one slot per account per
 * family, used from every thread (docs/protocol.md#rate-limits: over any
 * interval t, admitted <= burst + TPS * t). Callers map accounts to slots.
 *
 * Growth: with `maxSlots` the SAB is growable (reserved up front, committed by
 * `grow()`, shared rather than copied by postMessage). Views stay fixed-length
 * because V8's length-tracking views have slower element kinds; a thread
 * rebuilds its views on meeting a slot beyond them. Slots never move and a SAB
 * never shrinks, so an old view stays valid for the slots it covers.
 *
 * Layout: 32 bytes per slot, so a slot never straddles a 64-byte cache line:
 *
 *   byte:   0      4      8       12      16             24             32
 *         +------+------+-------+-------+--------------+--------------+
 *   slot: | lock | rate | burst | spare | milli-tokens | last         |
 *         +------+------+-------+-------+--------------+--------------+
 *           i32    i32    i32             f64            f64
 *   burst 0 marks a slot never configured (or cleared); last is ms since epochMs.
 *
 * A lock, because tokens and last change together: a 32-bit CAS cannot cover
 * both, a BigInt64 CAS allocates per attempt, and GCRA's single word needs
 * sub-ms resolution that wraps 32 bits in 71 minutes, less than a 2000-token
 * refill at 1 TPS. Uncontended it costs one CAS and one exchange.
 *
 * Float64, not integer ms: flooring instants to whole ms lets the bound be
 * exceeded by rate * 1 ms (500 TPS, burst 1: takes at 0.999 and 2.000 ms both
 * pass). The fields are only touched under the lock, whose Atomics order the
 * plain accesses, and wall-clock readings sit on a 2^-12 ms grid, so
 * differences and rate * elapsed are exact below 2^53: the exact continuous
 * bucket, with no wrap.
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
/** Sanity bound on burst, far above any plan (the configured defaults are 2..2000). */
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
  /** Slots when the handle was taken; the table may have grown since (attach reads the SAB's length). */
  readonly slots: number;
  readonly epochMs: number;
}

interface TokenBucketOptions {
  /** Number of slots (accounts x families) to start with. */
  readonly slots: number;
  /** Slots the table may grow to with grow(); default `slots` (a fixed table). */
  readonly maxSlots?: number;
  /** Current time; becomes the table epoch. */
  readonly nowMs: number;
}

const SLOT_BYTES = SLOT_WORDS * 4;
/** Indexes stay exact small integers and a full table stays addressable (2^26 slots = 2 GiB). */
const MAX_SLOTS = 2 ** 26;

/** ES2024 growable SharedArrayBuffer (Node >= 20), which the ES2023 lib this project builds with does not declare. */
interface GrowableSab extends SharedArrayBuffer {
  readonly growable: boolean;
  readonly maxByteLength: number;
  grow(byteLength: number): void;
}
const GrowableSharedArrayBuffer = SharedArrayBuffer as unknown as new (byteLength: number, opts: { maxByteLength: number }) => GrowableSab;

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${v}`);
  }
}

export class TokenBucketTable {
  /** Slots this thread's views cover; grows with the table (see refresh). */
  slots: number;
  readonly epochMs: number;
  private readonly sab: SharedArrayBuffer;
  private a: Int32Array;
  private f: Float64Array;
  /** False once `soleThread()` said no other thread uses this table: its locks are then skipped. */
  private locking = true;

  private constructor(sab: SharedArrayBuffer, slots: number, epochMs: number) {
    if (sab.byteLength < slots * SLOT_BYTES) throw new RangeError('token bucket SAB smaller than its slots');
    this.sab = sab;
    this.slots = slots;
    this.epochMs = epochMs;
    this.a = new Int32Array(sab, 0, slots * SLOT_WORDS);
    this.f = new Float64Array(sab, 0, slots * SLOT_F64);
  }

  /** Allocates `slots * 32` bytes, and reserves `maxSlots * 32` when the table may grow. */
  static create(opts: TokenBucketOptions): TokenBucketTable {
    const max = opts.maxSlots ?? opts.slots;
    checkInt('maxSlots', max, 1, MAX_SLOTS);
    checkInt('slots', opts.slots, 1, max);
    const sab = max > opts.slots ? new GrowableSharedArrayBuffer(opts.slots * SLOT_BYTES, { maxByteLength: max * SLOT_BYTES }) : new SharedArrayBuffer(max * SLOT_BYTES);
    return new TokenBucketTable(sab, opts.slots, Math.floor(opts.nowMs));
  }

  /** Rebuilds the table in another thread from `handle()`, with every slot it has by now. */
  static attach(h: TokenBucketHandle): TokenBucketTable {
    return new TokenBucketTable(h.sab, Math.floor(h.sab.byteLength / SLOT_BYTES), h.epochMs);
  }

  /** No other thread will use this table: its locks are skipped from now on (src/tables/lock.ts). */
  soleThread(): void {
    this.locking = false;
  }

  handle(): TokenBucketHandle {
    return { sab: this.sab, slots: this.slots, epochMs: this.epochMs };
  }

  get byteLength(): number {
    return this.sab.byteLength;
  }

  /** The most slots this table can ever have. */
  get maxSlots(): number {
    const g = this.sab as GrowableSab;
    return g.growable ? Math.floor(g.maxByteLength / SLOT_BYTES) : this.slots;
  }

  /** Grows to at least `slots` (unconfigured) from any thread; others see them on first use. RangeError beyond maxSlots. */
  grow(slots: number): void {
    checkInt('slots', slots, 1, this.maxSlots);
    if (slots * SLOT_BYTES > this.sab.byteLength) (this.sab as GrowableSab).grow(slots * SLOT_BYTES);
    this.refresh();
  }

  /** Rebuilds this thread's views if another thread grew the table; true if `slot` is now covered. */
  private covers(slot: number): boolean {
    if (slot < this.slots) return true;
    this.refresh();
    return slot < this.slots;
  }

  private refresh(): void {
    const slots = Math.floor(this.sab.byteLength / SLOT_BYTES);
    if (slots === this.slots) return;
    this.a = new Int32Array(this.sab, 0, slots * SLOT_WORDS);
    this.f = new Float64Array(this.sab, 0, slots * SLOT_F64);
    this.slots = slots;
  }

  /** Sets a slot's limits: a new (or cleared) slot starts full, else tokens earned at the old rate are kept, clamped to the new burst. */
  configure(slot: number, rate: number, burst: number, nowMs: number): void {
    this.checkSlot(slot);
    checkInt('rate', rate, 0, MAX_RATE);
    checkInt('burst', burst, 1, MAX_BURST);
    const a = this.a;
    const f = this.f;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    const now = nowMs - this.epochMs;
    if (this.locking) lockWord(a, base + LOCK);
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
    if (this.locking) unlockWord(a, base + LOCK);
  }

  /** Forgets a slot (account removed); the next configure() starts it full. */
  clear(slot: number): void {
    this.checkSlot(slot);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    if (this.locking) lockWord(a, base + LOCK);
    a[base + RATE] = 0;
    a[base + BURST] = 0;
    this.f[fi] = 0;
    this.f[fi + 1] = 0;
    if (this.locking) unlockWord(a, base + LOCK);
  }

  /**
   * Takes n tokens and returns 0, or takes nothing and returns the ms until n
   * tokens will be there (rounded up: waiting that long succeeds unless others take), or NEVER.
   */
  tryTake(slot: number, n: number, nowMs: number): number {
    if (!((slot >>> 0) === slot && slot < this.slots && n >= 1)) this.checkTake(slot, n);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    if (this.locking) lockWord(a, base + LOCK);
    const burst = a[base + BURST]!;
    const r = n > burst ? NEVER : refillTake(this.f, slot * SLOT_F64 + F_TOKENS, a[base + RATE]!, burst * MILLI, nowMs - this.epochMs, n * MILLI);
    if (this.locking) unlockWord(a, base + LOCK);
    return r;
  }

  /** What tryTake would return now, taking nothing: 0 when n tokens are there, else the wait (or NEVER). */
  waitFor(slot: number, n: number, nowMs: number): number {
    if (!((slot >>> 0) === slot && slot < this.slots && n >= 1)) this.checkTake(slot, n);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    if (this.locking) lockWord(a, base + LOCK);
    const burst = a[base + BURST]!;
    const r = n > burst ? NEVER : refillTake(this.f, fi, a[base + RATE]!, burst * MILLI, nowMs - this.epochMs, n * MILLI);
    if (r === 0) this.f[fi] = this.f[fi]! + n * MILLI;
    if (this.locking) unlockWord(a, base + LOCK);
    return r;
  }

  /** Whole tokens available now (admin API, tests); refills, takes nothing. */
  available(slot: number, nowMs: number): number {
    this.checkSlot(slot);
    const a = this.a;
    const base = slot * SLOT_WORDS;
    const fi = slot * SLOT_F64 + F_TOKENS;
    if (this.locking) lockWord(a, base + LOCK);
    const burst = a[base + BURST]!;
    if (burst > 0) refillTake(this.f, fi, a[base + RATE]!, burst * MILLI, nowMs - this.epochMs, 0);
    const tokens = this.f[fi]!;
    if (this.locking) unlockWord(a, base + LOCK);
    return Math.floor((tokens + EPS) / MILLI);
  }

  private checkSlot(slot: number): void {
    if (!(Number.isInteger(slot) && slot >= 0 && this.covers(slot))) checkInt('slot', slot, 0, this.slots - 1);
  }

  /** tryTake's slow path: a slot beyond this thread's views (the table grew) passes; anything else throws. */
  private checkTake(slot: number, n: number): void {
    this.checkSlot(slot);
    if (!(n >= 1)) throw new RangeError(`n must be >= 1, got ${n}`);
  }
}
