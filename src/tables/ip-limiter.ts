/**
 * Per-source-IP token buckets (`limits.ip_rps`, `limits.ip_burst`;
 * docs/protocol.md#rate-limits) in a fixed-size bucketed hash table shared by
 * every thread. IPs are placed by a keyed hash (keyed-hash.ts), so nobody can
 * aim many addresses at one bucket. A full bucket evicts the entry that would
 * hold the most tokens now: a full entry equals a fresh one, while a non-full
 * one hands its IP up to a burst again (counted in `evictions`). Keys are exact
 * strings: callers normalise ("::ffff:" prefixes, IPv6 /128 or /64).
 *
 * Layout: a 64-byte header (16 i32: rate, burst, evictions, spare), then
 * buckets of 128 bytes (two cache lines): lock word, spare word, 5 entries:
 *
 *   entry (24 bytes): | tagA i32 | tagB i32 | milli-tokens f64 | last f64 |
 *
 * tagA = hash word 1 | 1 (0 marks an empty entry), tagB = word 2; word 0 picks
 * the bucket. The state is token-bucket.ts's (float64, see there), last in ms
 * since epochMs. Memory: 64 + 128 * ceil(capacity / 5) bytes, 1.6 MiB at the
 * default. Two IPs share an entry only if bucket and 63 tag bits agree (about
 * 5 * 2^-63 per new IP), and then share one, stricter, limit.
 */
import { prefault } from './prefault.js';
import { keyedHashString96, randomSeeds, checkSeeds, type HashSeeds } from './keyed-hash.js';
import { lockWord, unlockWord } from './lock.js';
import { MAX_BURST, MAX_RATE, MILLI, NEVER, refillTake } from './token-bucket.js';

const HEADER_WORDS = 16;
const H_RATE = 0;
const H_BURST = 1;
const H_EVICTIONS = 2;

const BUCKET_BYTES = 128;
const ENTRIES = 5;
const ENTRY_BYTES = 24;
const FIRST_ENTRY_BYTE = 8;
/** Within an entry: tags are i32 words 0 and 1, milli-tokens and last are f64 at bytes 8 and 16. */
const TAG_B = 1;
const ENTRY_TOKENS_BYTE = 8;

/** Defaults of `limits.ip_rps` and `limits.ip_burst` (docs/configuration.md). */
export const DEFAULT_IP_RPS = 1000;
export const DEFAULT_IP_BURST = 2000;
/** Distinct IPs tracked at once; beyond that the fullest (idlest) entries are recycled. */
export const DEFAULT_IP_CAPACITY = 65_536;

export interface IpLimiterHandle {
  readonly sab: SharedArrayBuffer;
  readonly buckets: number;
  readonly epochMs: number;
  readonly seeds: HashSeeds;
}

interface IpLimiterOptions {
  /** Current time; becomes the table epoch. */
  readonly nowMs: number;
  /** Tokens per second per IP (`limits.ip_rps`). */
  readonly rate?: number;
  /** Bucket size per IP (`limits.ip_burst`). */
  readonly burst?: number;
  /** Entries (distinct IPs) the table holds; rounded up to a multiple of 5. */
  readonly capacity?: number;
  /** Hash seeds; random unless a test needs them fixed. */
  readonly seeds?: HashSeeds;
}

/** Scratch for the three hash words of the current key; one per thread. */
const hashOut = new Uint32Array(3);

function checkLimits(rate: number, burst: number): void {
  if (!Number.isInteger(rate) || rate < 0 || rate > MAX_RATE) throw new RangeError(`ip rate must be an integer in [0, ${MAX_RATE}]`);
  if (!Number.isInteger(burst) || burst < 1 || burst > MAX_BURST) throw new RangeError(`ip burst must be an integer in [1, ${MAX_BURST}]`);
}

export class IpLimiter {
  readonly buckets: number;
  readonly epochMs: number;
  private readonly sab: SharedArrayBuffer;
  private readonly seeds: HashSeeds;
  private readonly a: Int32Array;
  private readonly f: Float64Array;
  /** False once `soleThread()` said no other thread uses this table: its locks are then skipped. */
  private locking = true;

  private constructor(sab: SharedArrayBuffer, buckets: number, epochMs: number, seeds: HashSeeds) {
    const bytes = HEADER_WORDS * 4 + buckets * BUCKET_BYTES;
    if (sab.byteLength < bytes) throw new RangeError('ip limiter SAB smaller than its buckets');
    this.sab = sab;
    this.buckets = buckets;
    this.epochMs = epochMs;
    this.seeds = checkSeeds(seeds);
    this.a = new Int32Array(sab, 0, bytes >>> 2);
    this.f = new Float64Array(sab, 0, bytes >>> 3);
  }

  static create(opts: IpLimiterOptions): IpLimiter {
    const rate = opts.rate ?? DEFAULT_IP_RPS;
    const burst = opts.burst ?? DEFAULT_IP_BURST;
    const capacity = opts.capacity ?? DEFAULT_IP_CAPACITY;
    checkLimits(rate, burst);
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 2 ** 26) throw new RangeError('ip limiter capacity must be an integer in [1, 2^26]');
    const buckets = Math.ceil(capacity / ENTRIES);
    const sab = new SharedArrayBuffer(HEADER_WORDS * 4 + buckets * BUCKET_BYTES);
    prefault(sab);
    const t = new IpLimiter(sab, buckets, Math.floor(opts.nowMs), opts.seeds ?? randomSeeds());
    t.a[H_RATE] = rate;
    t.a[H_BURST] = burst;
    return t;
  }

  static attach(h: IpLimiterHandle): IpLimiter {
    return new IpLimiter(h.sab, h.buckets, h.epochMs, h.seeds);
  }

  /** No other thread will use this table: its locks are skipped from now on (src/tables/lock.ts). */
  soleThread(): void {
    this.locking = false;
  }

  handle(): IpLimiterHandle {
    return { sab: this.sab, buckets: this.buckets, epochMs: this.epochMs, seeds: this.seeds };
  }

  /** Entries the table can hold. */
  get capacity(): number {
    return this.buckets * ENTRIES;
  }

  get byteLength(): number {
    return this.sab.byteLength;
  }

  get rate(): number {
    return Atomics.load(this.a, H_RATE);
  }

  get burst(): number {
    return Atomics.load(this.a, H_BURST);
  }

  /** Entries evicted while holding fewer than `burst` tokens (u32, wraps); a metric. */
  get evictions(): number {
    return Atomics.load(this.a, H_EVICTIONS) >>> 0;
  }

  /** Changes the limits for every IP in every thread; tokens above the new burst are clamped on next use. */
  setLimits(rate: number, burst: number): void {
    checkLimits(rate, burst);
    Atomics.store(this.a, H_RATE, rate);
    Atomics.store(this.a, H_BURST, burst);
  }

  /** As TokenBucketTable.tryTake, for `ip`: 0 when taken, else ms to wait, or NEVER (n > burst, rate 0). */
  tryTake(ip: string, n: number, nowMs: number): number {
    if (!(n >= 1)) throw new RangeError(`n must be >= 1, got ${n}`);
    const a = this.a;
    const rate = Atomics.load(a, H_RATE);
    const burst = Atomics.load(a, H_BURST);
    if (n > burst) return NEVER;
    const now = nowMs - this.epochMs;
    keyedHashString96(ip, this.seeds, hashOut);
    // Lemire's multiply-shift range reduction; exact in doubles since buckets < 2^26.
    const bucket = Math.floor((hashOut[0]! * this.buckets) / 4294967296);
    const tagA = hashOut[1]! | 1;
    const tagB = hashOut[2]! | 0;
    const byte = HEADER_WORDS * 4 + bucket * BUCKET_BYTES;
    const lock = byte >>> 2;

    if (this.locking) lockWord(a, lock);
    let e = byte + FIRST_ENTRY_BYTE;
    const end = e + ENTRIES * ENTRY_BYTES;
    for (; e < end; e += ENTRY_BYTES) {
      const w = e >>> 2;
      if (a[w] === tagA && a[w + TAG_B] === tagB) break;
    }
    if (e === end) e = this.claimEntry(byte, tagA, tagB, now, rate, burst * MILLI);
    const r = refillTake(this.f, (e + ENTRY_TOKENS_BYTE) >>> 3, rate, burst * MILLI, now, n * MILLI);
    if (this.locking) unlockWord(a, lock);
    return r;
  }

  /** Under the bucket lock: an empty entry, else the one that would be fullest now; reset to full. Returns its byte offset. */
  private claimEntry(byte: number, tagA: number, tagB: number, now: number, rate: number, burstMilli: number): number {
    const a = this.a;
    const f = this.f;
    let victim = -1;
    let victimTokens = -1;
    for (let e = byte + FIRST_ENTRY_BYTE, k = 0; k < ENTRIES; k++, e += ENTRY_BYTES) {
      if (a[e >>> 2] === 0) {
        victim = e;
        victimTokens = burstMilli;
        break;
      }
      const fi = (e + ENTRY_TOKENS_BYTE) >>> 3;
      const t = Math.min(burstMilli, f[fi]! + rate * Math.max(0, now - f[fi + 1]!));
      if (t > victimTokens) {
        victim = e;
        victimTokens = t;
      }
    }
    if (victimTokens < burstMilli) Atomics.add(a, H_EVICTIONS, 1);
    const w = victim >>> 2;
    a[w] = tagA;
    a[w + TAG_B] = tagB;
    const fi = (victim + ENTRY_TOKENS_BYTE) >>> 3;
    f[fi] = burstMilli;
    f[fi + 1] = now;
    return victim;
  }
}
