/**
 * The dedup filter: "a hash seen on this node within the window is a
 * duplicate" (`dedup.window_s`; docs/protocol.md#duplicates), shared by every
 * thread. A bucketed table of fingerprints, a lock per bucket, two bucket
 * choices per key (insert into the less loaded). Keys (transaction hashes,
 * signatures) hash with secret seeds (keyed-hash.ts) into four words: word 0
 * picks bucket 1, word 1 bucket 2, words 2-3 plus word 0's low 4 bits form a
 * 68-bit fingerprint.
 *
 * Layout: one Int32Array; a 64-byte header, then 128-byte buckets (two lines):
 *
 *   header (16 words): | fresh evictions (u32) | spare x15 |
 *   bucket (32 words): | lock | 10 slots of (fpA, fpB, stamp) | spare |
 *   stamp = fingerprint nibble << 28 | seconds field (1 .. 2^28-1; 0 = empty)
 *
 * Time is whole seconds modulo 2^28-1 (~8.5 years): a key is a duplicate for
 * the window plus at most one second. An entry untouched for a multiple of
 * 8.5 years would look fresh again, which could only refuse that same key.
 *
 * Memory: 64 + 128 * ceil(capacity * 3 / 20) bytes (2/3 load with `capacity`
 * live entries), 183.1 MiB at the default.
 *
 * A new key is refused only if all 68 fingerprint bits match one of at most 20
 * fresh slots: <= 6.8e-20 per lookup, < 1e-12 over a full default window.
 * With both buckets full the oldest of the 20 is overwritten, which can only
 * forget a key (a resend is forwarded again), counted in `freshEvictions`:
 * 6 per million claims with `capacity` keys live, none at 80%.
 */
import { checkSeeds, keyedHash128, randomSeeds, type HashSeeds } from './keyed-hash.js';
import { lockWord, unlockWord } from './lock.js';
import { prefault } from './prefault.js';

const HEADER_WORDS = 16;
const H_EVICTIONS = 0;

/** Two cache lines per bucket: a lock word and 10 slots of 3 words, one spare word. */
const BUCKET_WORDS = 32;
const SLOTS = 10;
const SLOT_WORDS = 3;
const FIRST_SLOT = 1;
const FP_A = 0;
const FP_B = 1;
const STAMP = 2;

const TIME_MASK = 0x0fffffff;
/** Seconds wrap modulo 2^28 - 1 so a live field is never 0 (0 marks an empty slot). */
const TIME_MOD = TIME_MASK;
const TIME_UNIT_MS = 1000;
/** Stamps up to this far ahead are fresh: a thread reads the clock before the lock, so a later reading can land first. */
const SKEW_UNITS = 60;
/** Buckets per live entry: 10 slots at a 2/3 load factor. */
const BUCKETS_PER_ENTRY = 3 / 20;

/** 10 million live entries: 83k transactions/s sustained over the default 120 s window. */
export const DEFAULT_DEDUP_CAPACITY = 10_000_000;

export interface DedupHandle {
  readonly sab: SharedArrayBuffer;
  readonly windowMs: number;
  readonly capacity: number;
  readonly buckets: number;
  readonly seeds: HashSeeds;
}

interface DedupOptions {
  /** `dedup.window_s` * 1000. */
  readonly windowMs: number;
  /** Live entries the table is sized for (memory above). */
  readonly capacity?: number;
  /** Hash seeds; random unless a test needs them fixed. */
  readonly seeds?: HashSeeds;
}

/** Per-thread scratch: the key's four hash words, and per-bucket scan results. */
const hashOut = new Uint32Array(4);
const scan = new Int32Array(8);
/** The located key between hashKey and unlockKey: its buckets and fingerprint words. */
const at = new Int32Array(5);
const L_B1 = 0;
const L_B2 = 1;
const L_FPA = 2;
const L_FPB = 3;
const L_HIGH = 4;
const S_FRESH = 0;
const S_FREE = 1;
const S_OLDEST = 2;
const S_OLDEST_AGE = 3;

function secondsField(nowMs: number): number {
  let t = Math.floor(nowMs / TIME_UNIT_MS) % TIME_MOD;
  if (t < 0) t += TIME_MOD;
  return t + 1;
}

export class DedupFilter {
  readonly windowMs: number;
  readonly capacity: number;
  readonly buckets: number;
  private readonly windowUnits: number;
  private readonly sab: SharedArrayBuffer;
  private readonly seeds: HashSeeds;
  private readonly a: Int32Array;
  /** The located key of the last `peek`, for `claimPeeked`. */
  private readonly peeked = new Int32Array(5);
  /** False once `soleThread()` said no other thread uses this table: its locks are then skipped. */
  private locking = true;

  private constructor(sab: SharedArrayBuffer, windowMs: number, capacity: number, buckets: number, seeds: HashSeeds) {
    const words = HEADER_WORDS + buckets * BUCKET_WORDS;
    if (sab.byteLength < words * 4) throw new RangeError('dedup SAB smaller than its buckets');
    this.sab = sab;
    this.windowMs = windowMs;
    this.capacity = capacity;
    this.buckets = buckets;
    this.windowUnits = Math.ceil(windowMs / TIME_UNIT_MS);
    this.seeds = checkSeeds(seeds);
    this.a = new Int32Array(sab, 0, words);
  }

  static create(opts: DedupOptions): DedupFilter {
    const capacity = opts.capacity ?? DEFAULT_DEDUP_CAPACITY;
    if (!Number.isFinite(opts.windowMs) || opts.windowMs <= 0 || opts.windowMs > 2 ** 26 * TIME_UNIT_MS) {
      throw new RangeError(`dedup windowMs must be in (0, ${2 ** 26 * TIME_UNIT_MS}], got ${opts.windowMs}`);
    }
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 2 ** 28) throw new RangeError('dedup capacity must be an integer in [1, 2^28]');
    const buckets = Math.max(2, Math.ceil(capacity * BUCKETS_PER_ENTRY));
    const sab = new SharedArrayBuffer((HEADER_WORDS + buckets * BUCKET_WORDS) * 4);
    prefault(sab);
    return new DedupFilter(sab, opts.windowMs, capacity, buckets, opts.seeds ?? randomSeeds());
  }

  static attach(h: DedupHandle): DedupFilter {
    return new DedupFilter(h.sab, h.windowMs, h.capacity, h.buckets, h.seeds);
  }

  /** No other thread will use this table: its locks are skipped from now on (src/tables/lock.ts). */
  soleThread(): void {
    this.locking = false;
  }

  handle(): DedupHandle {
    return { sab: this.sab, windowMs: this.windowMs, capacity: this.capacity, buckets: this.buckets, seeds: this.seeds };
  }

  get byteLength(): number {
    return this.sab.byteLength;
  }

  /** Fresh entries overwritten because both buckets were full (u32, wraps); a metric. */
  get freshEvictions(): number {
    return Atomics.load(this.a, H_EVICTIONS) >>> 0;
  }

  /** Atomically: false if `key` was claimed within the window (a duplicate), else records it and returns true. */
  claim(key: Uint8Array, nowMs: number): boolean {
    this.hashKey(key);
    return this.claimAt(nowMs);
  }

  /** `contains`, keeping the hash for `claimPeeked`: the check peeks before signature work and claims after, hashing once. */
  peek(key: Uint8Array, nowMs: number): boolean {
    this.hashKey(key);
    this.peeked.set(at);
    return this.findAt(nowMs, false);
  }

  /** `claim` of the key the last `peek` on this instance hashed. */
  claimPeeked(nowMs: number): boolean {
    at.set(this.peeked);
    return this.claimAt(nowMs);
  }

  /** Claims the key whose buckets and fingerprint are in `at`. */
  private claimAt(nowMs: number): boolean {
    const a = this.a;
    this.lockAt();
    const b1 = at[L_B1]!;
    const b2 = at[L_B2]!;
    const fpA = at[L_FPA]!;
    const fpB = at[L_FPB]!;
    const high = at[L_HIGH]!;
    const now = secondsField(nowMs);

    if (this.scanBucket(b1, fpA, fpB, high, now, 0) >= 0 || this.scanBucket(b2, fpA, fpB, high, now, 4) >= 0) {
      this.unlockKey();
      return false;
    }
    let slot: number;
    const free1 = scan[S_FREE];
    const free2 = scan[4 + S_FREE];
    if (free1 >= 0 && (free2 < 0 || scan[S_FRESH] <= scan[4 + S_FRESH])) {
      slot = free1;
    } else if (free2 >= 0) {
      slot = free2;
    } else {
      slot = scan[S_OLDEST_AGE] >= scan[4 + S_OLDEST_AGE] ? scan[S_OLDEST] : scan[4 + S_OLDEST];
      Atomics.add(a, H_EVICTIONS, 1);
    }
    a[slot + FP_A] = fpA;
    a[slot + FP_B] = fpB;
    a[slot + STAMP] = high | now;
    this.unlockKey();
    return true;
  }

  /**
   * Withdraws a claim (the claimed transaction then failed verification), so
   * garbage sent under a real transaction's hash cannot block it. Returns
   * whether a fresh entry was removed.
   */
  release(key: Uint8Array, nowMs: number): boolean {
    return this.find(key, nowMs, true);
  }

  /** Whether `key` is present and fresh; records nothing. */
  contains(key: Uint8Array, nowMs: number): boolean {
    return this.find(key, nowMs, false);
  }

  private find(key: Uint8Array, nowMs: number, remove: boolean): boolean {
    this.hashKey(key);
    return this.findAt(nowMs, remove);
  }

  /** Hashes `key` into its two buckets and fingerprint, left in `at`. */
  private hashKey(key: Uint8Array): void {
    keyedHash128(key, this.seeds, hashOut);
    const b1 = this.bucket1();
    const b2 = this.bucket2(b1);
    at[L_B1] = b1;
    at[L_B2] = b2;
    at[L_FPA] = hashOut[2]! | 0;
    at[L_FPB] = hashOut[3]! | 0;
    at[L_HIGH] = (hashOut[0]! & 15) << 28;
  }

  /** Takes both bucket locks of the key in `at`, lower index first so two threads never deadlock. */
  private lockAt(): void {
    if (!this.locking) return;
    const b1 = at[L_B1]!;
    const b2 = at[L_B2]!;
    lockWord(this.a, b1 < b2 ? b1 : b2);
    lockWord(this.a, b1 < b2 ? b2 : b1);
  }

  /** Releases the locks `lockAt` took (reverse order). */
  private unlockKey(): void {
    if (!this.locking) return;
    const b1 = at[L_B1]!;
    const b2 = at[L_B2]!;
    unlockWord(this.a, b1 < b2 ? b2 : b1);
    unlockWord(this.a, b1 < b2 ? b1 : b2);
  }

  private findAt(nowMs: number, remove: boolean): boolean {
    const a = this.a;
    this.lockAt();
    const b1 = at[L_B1]!;
    const b2 = at[L_B2]!;
    const fpA = at[L_FPA]!;
    const fpB = at[L_FPB]!;
    const high = at[L_HIGH]!;
    const now = secondsField(nowMs);
    let slot = this.scanBucket(b1, fpA, fpB, high, now, 0);
    if (slot < 0) slot = this.scanBucket(b2, fpA, fpB, high, now, 4);
    if (slot >= 0 && remove) {
      a[slot + FP_A] = 0;
      a[slot + FP_B] = 0;
      a[slot + STAMP] = 0;
    }
    this.unlockKey();
    return slot >= 0;
  }

  /** Word index of bucket 1 (its lock word); Lemire's range reduction, exact in doubles. */
  private bucket1(): number {
    return HEADER_WORDS + Math.floor((hashOut[0] * this.buckets) / 4294967296) * BUCKET_WORDS;
  }

  /** Bucket 2, forced distinct from bucket 1 so every key has two choices. */
  private bucket2(b1: number): number {
    let b2 = HEADER_WORDS + Math.floor((hashOut[1] * this.buckets) / 4294967296) * BUCKET_WORDS;
    if (b2 === b1) b2 = b1 + BUCKET_WORDS < this.a.length ? b1 + BUCKET_WORDS : HEADER_WORDS;
    return b2;
  }

  /**
   * Under the lock: returns the slot holding the fresh key, or -1 after
   * writing into scan[off..]: fresh count, a free (empty or expired) slot or
   * -1, the oldest fresh slot and its age.
   */
  private scanBucket(base: number, fpA: number, fpB: number, high: number, now: number, off: number): number {
    const a = this.a;
    const window = this.windowUnits;
    let fresh = 0;
    let free = -1;
    let oldest = -1;
    let oldestAge = -1;
    for (let s = 0, p = base + FIRST_SLOT; s < SLOTS; s++, p += SLOT_WORDS) {
      const stamp = a[p + STAMP];
      const t = stamp & TIME_MASK;
      if (t === 0) {
        if (free < 0) free = p;
        continue;
      }
      let age = now - t;
      if (age < 0) age += TIME_MOD;
      if (age > TIME_MOD - SKEW_UNITS) age = 0;
      if (age > window) {
        if (free < 0) free = p;
        continue;
      }
      if (a[p + FP_A] === fpA && a[p + FP_B] === fpB && (stamp & ~TIME_MASK) === high) return p;
      fresh++;
      if (age > oldestAge) {
        oldest = p;
        oldestAge = age;
      }
    }
    scan[off + S_FRESH] = fresh;
    scan[off + S_FREE] = free;
    scan[off + S_OLDEST] = oldest;
    scan[off + S_OLDEST_AGE] = oldestAge;
    return -1;
  }
}
