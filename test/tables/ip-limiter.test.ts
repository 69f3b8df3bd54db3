import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { IpLimiter, DEFAULT_IP_RPS, DEFAULT_IP_BURST, DEFAULT_IP_CAPACITY } from '../../src/tables/ip-limiter.js';
import { NEVER } from '../../src/tables/token-bucket.js';

const T0 = 1_700_000_000_000;

test('defaults are limits.ip_rps 1000 and limits.ip_burst 2000, 65536 entries in 1.6 MiB', () => {
  assert.equal(DEFAULT_IP_RPS, 1000);
  assert.equal(DEFAULT_IP_BURST, 2000);
  const lim = IpLimiter.create({ nowMs: T0 });
  assert.equal(lim.rate, 1000);
  assert.equal(lim.burst, 2000);
  assert.ok(lim.capacity >= DEFAULT_IP_CAPACITY);
  assert.equal(lim.byteLength, 1_677_888);
});

test('an IP gets its burst at once, then one token per 1000/rate ms; other IPs are independent', () => {
  const lim = IpLimiter.create({ nowMs: T0 });
  for (let i = 0; i < 2000; i++) assert.equal(lim.tryTake('198.51.100.1', 1, T0), 0);
  assert.equal(lim.tryTake('198.51.100.1', 1, T0), 1);
  assert.equal(lim.tryTake('198.51.100.1', 3, T0), 3);
  assert.equal(lim.tryTake('198.51.100.2', 1, T0), 0);
  assert.equal(lim.tryTake('2001:db8::1', 2000, T0), 0);
  assert.equal(lim.tryTake('2001:db8::2', 2001, T0), NEVER, 'more than a burst never fits');
  assert.equal(lim.tryTake('198.51.100.1', 1, T0 + 1), 0);
});

test('per IP, over any interval t, admitted <= burst + rate * t with many IPs interleaved', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 2000 }),
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.record({ dt: fc.integer({ min: 0, max: 30 }), ip: fc.integer({ min: 0, max: 9 }), n: fc.integer({ min: 1, max: 3 }) }), {
        maxLength: 300,
      }),
      (rate, burst, arr) => {
        const lim = IpLimiter.create({ nowMs: T0, rate, burst, capacity: 1024 });
        const admitted: { t: number; n: number }[][] = Array.from({ length: 10 }, () => []);
        let t = T0;
        for (const a of arr) {
          t += a.dt;
          if (lim.tryTake(`10.0.0.${a.ip}`, a.n, t) === 0) admitted[a.ip]!.push({ t, n: a.n });
        }
        for (const list of admitted) {
          for (let i = 0; i < list.length; i++) {
            let sum = 0;
            for (let j = i; j < list.length; j++) {
              sum += list[j]!.n;
              assert.ok(sum <= burst + (rate * (list[j]!.t - list[i]!.t)) / 1000 + 1e-9);
            }
          }
        }
      },
    ),
    { numRuns: 200 },
  );
});

test('a full bucket evicts the entry that would be fullest now; evicting idle entries is not counted as a loss', () => {
  // Capacity 5 is exactly one bucket, so every IP competes for the same entries.
  const lim = IpLimiter.create({ nowMs: T0, rate: 1, burst: 10, capacity: 5 });
  assert.equal(lim.capacity, 5);
  lim.tryTake('drained', 10, T0);
  for (let i = 0; i < 4; i++) lim.tryTake(`idle-${i}`, 1, T0 - 10_000); // full again by T0
  assert.equal(lim.evictions, 0);
  // Four newcomers each evict an idle (full) entry, never the drained one.
  for (let i = 0; i < 4; i++) lim.tryTake(`new-${i}`, 1, T0);
  assert.equal(lim.evictions, 0);
  assert.equal(lim.tryTake('drained', 1, T0), 1000, 'the drained IP is still limited');
  // Now every entry is below burst: the next newcomer must evict one and count it.
  lim.tryTake('one-more', 1, T0);
  assert.equal(lim.evictions, 1);
  assert.equal(lim.tryTake('drained', 1, T0), 1000, 'the fullest (9 tokens) went first, not the empty one');
});

test('setLimits() changes rate and burst for every IP; tokens above the new burst are clamped', () => {
  const lim = IpLimiter.create({ nowMs: T0, rate: 10, burst: 100 });
  assert.equal(lim.tryTake('192.0.2.9', 1, T0), 0);
  lim.setLimits(1, 5);
  const other = IpLimiter.attach(structuredClone(lim.handle()));
  assert.equal(other.burst, 5);
  assert.equal(other.tryTake('192.0.2.9', 5, T0), 0);
  assert.equal(other.tryTake('192.0.2.9', 1, T0), 1000);
  assert.throws(() => lim.setLimits(1, 0), RangeError);
});

test('rate 0 never refills', () => {
  const lim = IpLimiter.create({ nowMs: T0, rate: 0, burst: 2 });
  assert.equal(lim.tryTake('a', 2, T0), 0);
  assert.equal(lim.tryTake('a', 1, T0 + 1e9), NEVER);
});
