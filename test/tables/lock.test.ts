/**
 * `soleThread()` on the shared tables (src/tables/lock.ts): a relay with no
 * verify workers skips their locks. Same answers as a locking twin fed the
 * same operations, and no lock traffic at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DedupFilter } from '../../src/tables/dedup.js';
import { IpLimiter } from '../../src/tables/ip-limiter.js';
import { TokenBucketTable } from '../../src/tables/token-bucket.js';

const SEEDS = Uint32Array.from([0x12345678, 0x9abcdef0, 0x0badf00d, 0x7e57ab1e]);

/** Counts the lock primitives (the only Atomics.compareExchange/exchange callers in these tables) while `fn` runs. */
function lockCalls(fn: () => void): number {
  const cas = Atomics.compareExchange;
  const xchg = Atomics.exchange;
  let n = 0;
  Atomics.compareExchange = ((...a: Parameters<typeof cas>) => (n++, cas(...a))) as typeof cas;
  Atomics.exchange = ((...a: Parameters<typeof xchg>) => (n++, xchg(...a))) as typeof xchg;
  try {
    fn();
  } finally {
    Atomics.compareExchange = cas;
    Atomics.exchange = xchg;
  }
  return n;
}

const key = (i: number): Uint8Array => {
  const k = new Uint8Array(32);
  new DataView(k.buffer).setUint32(0, i);
  return k;
};

test('dedup: a sole-thread filter answers as a locking one and takes no lock', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom('claim', 'peek+claim', 'release', 'contains'), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 3000 })), { maxLength: 200 }), (ops) => {
      const locking = DedupFilter.create({ windowMs: 1000, capacity: 64, seeds: SEEDS });
      const sole = DedupFilter.create({ windowMs: 1000, capacity: 64, seeds: SEEDS });
      sole.soleThread();
      let now = 0;
      const run = (f: DedupFilter, op: string, k: Uint8Array, t: number): boolean => {
        if (op === 'claim') return f.claim(k, t);
        if (op === 'peek+claim') return f.peek(k, t) ? f.claimPeeked(t) : false;
        if (op === 'release') return f.release(k, t);
        return f.contains(k, t);
      };
      for (const [op, i, dt] of ops) {
        now += dt;
        const want = run(locking, op, key(i), now);
        let got = false;
        assert.equal(lockCalls(() => (got = run(sole, op, key(i), now))), 0);
        assert.equal(got, want, `${op} ${i} at ${now}`);
      }
    }),
  );
  // The locking twin really locks: the count above is not vacuous.
  const f = DedupFilter.create({ windowMs: 1000, capacity: 64, seeds: SEEDS });
  assert.ok(lockCalls(() => f.claim(key(1), 0)) >= 2);
});

test('ip limiter and token buckets: sole-thread tables answer as locking ones and take no lock', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 500 })), { maxLength: 200 }), (ops) => {
      const ipL = IpLimiter.create({ nowMs: 0, rate: 10, burst: 20, seeds: SEEDS });
      const ipS = IpLimiter.create({ nowMs: 0, rate: 10, burst: 20, seeds: SEEDS });
      ipS.soleThread();
      const tbL = TokenBucketTable.create({ slots: 10, nowMs: 0 });
      const tbS = TokenBucketTable.create({ slots: 10, nowMs: 0 });
      tbS.soleThread();
      for (let s = 0; s < 10; s++) {
        tbL.configure(s, 5 + s, 10, 0);
        assert.equal(lockCalls(() => tbS.configure(s, 5 + s, 10, 0)), 0);
      }
      let now = 0;
      for (const [i, n, dt] of ops) {
        now += dt;
        const ip = `10.0.0.${i}`;
        let got = 0;
        assert.equal(lockCalls(() => (got = ipS.tryTake(ip, n, now))), 0);
        assert.equal(got, ipL.tryTake(ip, n, now));
        assert.equal(lockCalls(() => (got = tbS.tryTake(i, n, now))), 0);
        assert.equal(got, tbL.tryTake(i, n, now));
      }
    }),
  );
  const ip = IpLimiter.create({ nowMs: 0, rate: 10, burst: 20, seeds: SEEDS });
  assert.ok(lockCalls(() => ip.tryTake('10.0.0.1', 1, 0)) >= 2);
});
