/**
 * Keyed 32-bit hashes for the shared tables: XXH32 with secret per-process
 * seeds, several independent words per key. Seeded so a client cannot aim
 * inputs at one bucket of the IP limiter or dedup filter and evict others'
 * entries; seeds come from `crypto.getRandomValues` in the creating thread and
 * travel in the table's handle, so every thread hashes alike. Not a
 * cryptographic PRF, which is enough: dedup keys are hashes and signatures
 * nobody shapes bit by bit, and an IP collision only merges two limits.
 * Plain JS beats xxhash-wasm on these 16-64-byte keys (bench/shared.bench.ts:
 * 0.082 µs vs 0.186 µs for four words); xxhash-wasm is the tests' oracle.
 */

/** Seeds are plain u32 words; a Uint32Array survives structured cloning into handles. */
export type HashSeeds = Uint32Array;

/** Words per key: three for keyedHash96, four for keyedHash128. */
const SEED_WORDS = 4;

/** Fresh random seeds for a new table (one set per table, per process start). */
export function randomSeeds(): HashSeeds {
  return crypto.getRandomValues(new Uint32Array(SEED_WORDS));
}

/** Validates seeds arriving in a handle from another thread. */
export function checkSeeds(seeds: unknown): HashSeeds {
  if (!(seeds instanceof Uint32Array) || seeds.length < SEED_WORDS) {
    throw new TypeError(`hash seeds must be a Uint32Array of ${SEED_WORDS} words`);
  }
  return seeds;
}

const P1 = 0x9e3779b1 | 0;
const P2 = 0x85ebca77 | 0;
const P3 = 0xc2b2ae3d | 0;
const P4 = 0x27d4eb2f | 0;
const P5 = 0x165667b1 | 0;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function round(acc: number, lane: number): number {
  return Math.imul(rotl((acc + Math.imul(lane, P2)) | 0, 13), P1);
}

function word(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);
}

/** XXH32 of b[0..len) with the given seed, as an unsigned 32-bit number. */
export function xxh32(b: Uint8Array, len: number, seed: number): number {
  let i = 0;
  let h: number;
  if (len >= 16) {
    let v1 = (seed + P1 + P2) | 0;
    let v2 = (seed + P2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - P1) | 0;
    const limit = len - 16;
    while (i <= limit) {
      v1 = round(v1, word(b, i));
      v2 = round(v2, word(b, i + 4));
      v3 = round(v3, word(b, i + 8));
      v4 = round(v4, word(b, i + 12));
      i += 16;
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = (seed + P5) | 0;
  }
  h = (h + len) | 0;
  while (i + 4 <= len) {
    h = Math.imul(rotl((h + Math.imul(word(b, i), P3)) | 0, 17), P4);
    i += 4;
  }
  while (i < len) {
    h = Math.imul(rotl((h + Math.imul(b[i]!, P5)) | 0, 11), P1);
    i++;
  }
  h ^= h >>> 15;
  h = Math.imul(h, P2);
  h ^= h >>> 13;
  h = Math.imul(h, P3);
  h ^= h >>> 16;
  return h >>> 0;
}

function hashWords(bytes: Uint8Array, len: number, seeds: HashSeeds, out: Uint32Array, words: number): void {
  for (let k = 0; k < words; k++) out[k] = xxh32(bytes, len, seeds[k]!);
}

/** Writes three independent keyed 32-bit hashes of `bytes` into out[0..2]. */
export function keyedHash96(bytes: Uint8Array, seeds: HashSeeds, out: Uint32Array): void {
  hashWords(bytes, bytes.length, seeds, out, 3);
}

/** Writes four independent keyed 32-bit hashes of `bytes` into out[0..3]. */
export function keyedHash128(bytes: Uint8Array, seeds: HashSeeds, out: Uint32Array): void {
  hashWords(bytes, bytes.length, seeds, out, 4);
}

/** Longest text hashed without allocation; IPv6 text with a zone id fits. */
const MAX_SCRATCH_TEXT = 256;
const textScratch = new Uint8Array(MAX_SCRATCH_TEXT * 3);
const encoder = new TextEncoder();

/**
 * keyedHash96 of the UTF-8 bytes of `text` (IP addresses). ASCII is copied
 * byte by byte into a module scratch buffer, so the hot path allocates nothing.
 */
export function keyedHashString96(text: string, seeds: HashSeeds, out: Uint32Array): void {
  const n = text.length;
  let ascii = n <= MAX_SCRATCH_TEXT;
  if (ascii) {
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x7f) {
        ascii = false;
        break;
      }
      textScratch[i] = c;
    }
  }
  if (ascii) {
    hashWords(textScratch, n, seeds, out, 3);
    return;
  }
  const bytes = encoder.encode(text);
  hashWords(bytes, bytes.length, seeds, out, 3);
}
