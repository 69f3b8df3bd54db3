import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DedupFilter, DEFAULT_DEDUP_CAPACITY } from '../../src/tables/dedup.js';

const T0 = 1_700_000_000_000;
const WINDOW = 120_000; // dedup.window_s default

/** Deterministic distinct 32-byte keys: the index in the first bytes, the rest a fixed pattern. */
function keyOf(i: number, salt = 0): Uint8Array {
  const k = new Uint8Array(32);
  const v = new DataView(k.buffer);
  v.setUint32(0, i);
  v.setUint32(4, salt);
  for (let j = 8; j < 32; j++) k[j] = (j * 31) & 0xff;
  return k;
}

test('the default filter holds 10 million live entries in 192,000,064 bytes', () => {
  assert.equal(DEFAULT_DEDUP_CAPACITY, 10_000_000);
  const f = DedupFilter.create({ windowMs: WINDOW });
  assert.equal(f.byteLength, 192_000_064);
  assert.equal(f.buckets, 1_500_000);
});

test('a hash seen on this node within the window is a duplicate', () => {
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: 1000 });
  const k = keyOf(1);
  assert.equal(f.claim(k, T0), true);
  assert.equal(f.claim(k, T0), false);
  assert.equal(f.claim(new Uint8Array(k), T0 + 60_000), false, 'equal bytes in another buffer');
  assert.equal(f.claim(k, T0 + WINDOW), false, 'still a duplicate at exactly the window');
  assert.equal(f.contains(k, T0 + WINDOW), true);
  assert.equal(f.claim(keyOf(2), T0), true, 'a different hash is not');
});

test('after the window (rounded up to whole seconds, at most 1 s longer) the hash is new again', () => {
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: 1000 });
  const k = keyOf(1);
  assert.equal(f.claim(k, T0 + 999), true);
  assert.equal(f.claim(k, T0 + 999 + WINDOW + 1001), true);
  assert.equal(f.claim(k, T0 + 999 + WINDOW + 1001), false, 'and the new claim starts a new window');
  const g = DedupFilter.create({ windowMs: 2_500, capacity: 1000 });
  assert.equal(g.claim(k, T0), true);
  assert.equal(g.claim(k, T0 + 2_500), false);
  assert.equal(g.claim(k, T0 + 4_000), true);
});

test('release() withdraws a claim so the real transaction can be claimed; other keys stay', () => {
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: 1000 });
  const k = keyOf(7);
  assert.equal(f.claim(k, T0), true);
  assert.equal(f.claim(keyOf(8), T0), true);
  assert.equal(f.release(k, T0 + 5), true);
  assert.equal(f.release(k, T0 + 5), false, 'nothing left to release');
  assert.equal(f.contains(k, T0 + 5), false);
  assert.equal(f.claim(k, T0 + 6), true);
  assert.equal(f.claim(keyOf(8), T0 + 6), false);
  assert.equal(f.release(keyOf(9), T0), false, 'releasing an unknown key is a no-op');
});

test('no false negatives within capacity: every key claimed once is a duplicate for the whole window', () => {
  const n = 200_000;
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: n });
  for (let i = 0; i < n; i++) assert.equal(f.claim(keyOf(i), T0 + (i % 1000)), true);
  for (let i = 0; i < n; i++) {
    if (f.claim(keyOf(i), T0 + WINDOW)) assert.fail(`key ${i} forgotten within the window`);
  }
  assert.equal(f.freshEvictions, 0);
});

test('false duplicates: none among 1,000,000 random keys (bound 6.8e-20 per lookup)', () => {
  const n = 1_000_000;
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: n });
  const k = new Uint8Array(32);
  let refused = 0;
  for (let i = 0; i < n; i++) {
    crypto.getRandomValues(k);
    if (!f.claim(k, T0)) refused++;
  }
  assert.equal(refused, 0);
});

test('overflow forgets the oldest entry and counts it, but never refuses a new key', () => {
  // Two buckets of 10 slots: every key has both as its choices.
  const f = DedupFilter.create({ windowMs: 1_000_000, capacity: 1 });
  assert.equal(f.buckets, 2);
  for (let i = 0; i < 500; i++) assert.equal(f.claim(keyOf(i), T0 + i * 1000), true, `key ${i}`);
  assert.equal(f.freshEvictions, 480);
  for (let i = 480; i < 500; i++) assert.equal(f.contains(keyOf(i), T0 + 500_000), true, 'the 20 newest are kept');
  for (let i = 0; i < 480; i++) assert.equal(f.contains(keyOf(i), T0 + 500_000), false, 'older ones went first');
});

test('expired slots are reused before anything fresh is evicted', () => {
  const f = DedupFilter.create({ windowMs: 10_000, capacity: 1 });
  for (let i = 0; i < 20; i++) f.claim(keyOf(i), T0);
  for (let i = 20; i < 40; i++) assert.equal(f.claim(keyOf(i), T0 + 12_000), true);
  assert.equal(f.freshEvictions, 0);
  for (let i = 20; i < 40; i++) assert.equal(f.contains(keyOf(i), T0 + 12_000), true);
});

test('a claim stamped slightly ahead of a lagging clock (thread race) still counts as fresh', () => {
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: 100 });
  assert.equal(f.claim(keyOf(3), T0 + 5_000), true);
  assert.equal(f.claim(keyOf(3), T0 + 1_000), false);
});

test('attach() from a cloned handle shares the entries and the seeds', () => {
  const f = DedupFilter.create({ windowMs: WINDOW, capacity: 100 });
  f.claim(keyOf(1), T0);
  const g = DedupFilter.attach(structuredClone(f.handle()));
  assert.equal(g.claim(keyOf(1), T0), false);
  assert.equal(g.claim(keyOf(2), T0), true);
  assert.equal(f.claim(keyOf(2), T0), false);
});

test('bad options are refused', () => {
  assert.throws(() => DedupFilter.create({ windowMs: 0 }), RangeError);
  assert.throws(() => DedupFilter.create({ windowMs: 1000, capacity: 0 }), RangeError);
});

test('peek then claimPeeked decides exactly as contains then claim, with one hash', () => {
  const a = DedupFilter.create({ windowMs: 60_000, capacity: 10_000 });
  const b = DedupFilter.create({ windowMs: 60_000, capacity: 10_000, seeds: a.handle().seeds });
  const keys = Array.from({ length: 500 }, (_, i) => Uint8Array.of(i & 255, i >> 8, 7));
  for (let round = 0; round < 2; round++) {
    for (const k of keys) {
      const seenA = a.contains(k, 1000);
      const claimedA = seenA ? false : a.claim(k, 1000);
      const seenB = b.peek(k, 1000);
      const claimedB = seenB ? false : b.claimPeeked(1000);
      assert.equal(seenB, seenA);
      assert.equal(claimedB, claimedA);
    }
  }
  // A claim after a peek on another key uses the peeked key, not the last one hashed elsewhere.
  const k1 = Uint8Array.of(1, 1, 1);
  const k2 = Uint8Array.of(2, 2, 2);
  assert.equal(b.peek(k1, 2000), false);
  assert.equal(a.contains(k2, 2000), false); // another instance hashing in between
  assert.equal(b.claimPeeked(2000), true);
  assert.equal(b.contains(k1, 2000), true);
  assert.equal(b.contains(k2, 2000), false);
});
