/**
 * The keyed table hash through xxhash-wasm: the reference the plain-JS XXH32
 * in src/tables/keyed-hash.ts is tested (and benchmarked) against.
 */
import xxhash from 'xxhash-wasm';
import type { HashSeeds } from '../../src/tables/keyed-hash.js';

const api = await xxhash();

/** keyedHash128's four words, one per seed, computed by xxhash-wasm. */
export function keyedHash128Wasm(bytes: Uint8Array, seeds: HashSeeds, out: Uint32Array): void {
  for (let k = 0; k < 4; k++) out[k] = api.h32Raw(bytes, seeds[k]!);
}
