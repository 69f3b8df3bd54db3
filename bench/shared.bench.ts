/**
 * The shared tables on their hot paths, single-threaded (the cost one
 * admission pays; contention is the concurrency test's business):
 * keyed hashing (JS vs wasm), token bucket take / refuse, IP limiter, dedup
 * claim of a new and of a duplicate key on the default 192 MB table (so cache
 * misses are included), and slab alloc + free.
 */
import { keyedHash128, keyedHashString96, randomSeeds } from '../src/tables/keyed-hash.js';
import { keyedHash128Wasm } from '../test/helpers/xxhash-reference.js';
import { TokenBucketTable } from '../src/tables/token-bucket.js';
import { IpLimiter } from '../src/tables/ip-limiter.js';
import { DedupFilter } from '../src/tables/dedup.js';
import { Slab } from '../src/tables/slab.js';

const BATCH = 256;
const T0 = 1_700_000_000_000;

/** Results feed this so no call can be optimised away. */
export let sink = 0;

const seeds = randomSeeds();
const out = new Uint32Array(4);
const keys = Array.from({ length: BATCH }, () => crypto.getRandomValues(new Uint8Array(32)));
const ipv4 = Array.from({ length: BATCH }, (_, i) => `198.51.${i >> 4}.${i & 255}`);
const ipv6 = Array.from({ length: BATCH }, (_, i) => `2001:db8:85a3::8a2e:370:${i.toString(16)}`);

// Token buckets: many slots, so the batch walks memory like many accounts would.
const SLOTS = 100_000;
const buckets = TokenBucketTable.create({ slots: SLOTS, nowMs: T0 });
for (let s = 0; s < SLOTS; s++) buckets.configure(s, 1_000_000, 2_000_000, T0);
// The same on a growable table (as AccountRegistry.create builds it): reserved for the default cap, grown to SLOTS.
const growable = TokenBucketTable.create({ slots: 3, maxSlots: 3 * (2 ** 20 + 1), nowMs: T0 });
growable.grow(SLOTS);
for (let s = 0; s < SLOTS; s++) growable.configure(s, 1_000_000, 2_000_000, T0);
const refused = TokenBucketTable.create({ slots: 1, nowMs: T0 });
refused.configure(0, 1, 1, T0);
refused.tryTake(0, 1, T0);
let clock = T0;
let slot = 0;

const ip = IpLimiter.create({ nowMs: T0, rate: 1_000_000, burst: 2_000_000 });

let dedup: DedupFilter | null = null;
const fresh = new Uint8Array(32);
const freshView = new DataView(fresh.buffer);
let counter = 0;

const slab = Slab.create();
const offsets = new Int32Array(BATCH);

export const benches: { name: string; items: number; setup?: () => Promise<void> | void; fn: () => void }[] = [
  {
    name: 'keyed hash, 4 words of a 32-byte key (JS XXH32)',
    items: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) {
        keyedHash128(keys[i]!, seeds, out);
        sink ^= out[0]!;
      }
    },
  },
  {
    name: 'keyed hash, 4 words of a 32-byte key (xxhash-wasm h32Raw)',
    items: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) {
        keyedHash128Wasm(keys[i]!, seeds, out);
        sink ^= out[0]!;
      }
    },
  },
  {
    name: 'keyed hash, 3 words of an IPv4 / IPv6 string',
    items: 2 * BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) {
        keyedHashString96(ipv4[i]!, seeds, out);
        keyedHashString96(ipv6[i]!, seeds, out);
        sink ^= out[0]!;
      }
    },
  },
  {
    name: 'token bucket tryTake, admitted (100k slots)',
    items: BATCH,
    fn: () => {
      clock += 1;
      for (let i = 0; i < BATCH; i++) {
        sink += buckets.tryTake(slot, 1, clock);
        slot = slot + 7919 < SLOTS ? slot + 7919 : slot + 7919 - SLOTS;
      }
    },
  },
  {
    name: 'token bucket tryTake, admitted (100k slots, growable table)',
    items: BATCH,
    fn: () => {
      clock += 1;
      for (let i = 0; i < BATCH; i++) {
        sink += growable.tryTake(slot, 1, clock);
        slot = slot + 7919 < SLOTS ? slot + 7919 : slot + 7919 - SLOTS;
      }
    },
  },
  {
    name: 'token bucket tryTake, refused with retry-after',
    items: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) sink += refused.tryTake(0, 1, T0);
    },
  },
  {
    name: 'ip limiter tryTake (IPv4, hash + bucket)',
    items: BATCH,
    fn: () => {
      clock += 1;
      for (let i = 0; i < BATCH; i++) sink += ip.tryTake(ipv4[i]!, 1, clock);
    },
  },
  {
    name: 'dedup claim, new key (default 10M-entry table, 192 MB)',
    items: BATCH,
    setup: () => {
      dedup ??= DedupFilter.create({ windowMs: 120_000 });
    },
    fn: () => {
      const f = dedup!;
      for (let i = 0; i < BATCH; i++) {
        freshView.setUint32(0, counter++);
        if (f.claim(fresh, T0)) sink++;
      }
    },
  },
  {
    name: 'dedup claim, duplicate key (default table)',
    items: BATCH,
    setup: () => {
      dedup ??= DedupFilter.create({ windowMs: 120_000 });
      for (const k of keys) dedup.claim(k, T0);
    },
    fn: () => {
      const f = dedup!;
      for (let i = 0; i < BATCH; i++) if (!f.claim(keys[i]!, T0)) sink++;
    },
  },
  {
    name: 'slab alloc + free of a 1232-byte transaction',
    items: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) offsets[i] = slab.alloc(1232);
      for (let i = 0; i < BATCH; i++) slab.free(offsets[i]!);
    },
  },
];
