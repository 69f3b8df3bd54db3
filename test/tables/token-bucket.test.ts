import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TokenBucketTable, NEVER, MAX_BURST } from '../../src/tables/token-bucket.js';

const T0 = 1_700_000_000_000; // a wall-clock-sized epoch, as the relay uses

interface Arrival {
  dt: number;
  n: number;
}

/** Runs arrivals through one slot; returns the admitted (time, n) pairs. */
function run(rate: number, burst: number, arrivals: Arrival[], t0 = T0): { t: number; n: number }[] {
  const table = TokenBucketTable.create({ slots: 1, nowMs: t0 });
  table.configure(0, rate, burst, t0);
  let t = t0;
  const admitted: { t: number; n: number }[] = [];
  for (const a of arrivals) {
    t += a.dt;
    if (table.tryTake(0, a.n, t) === 0) admitted.push({ t, n: a.n });
  }
  return admitted;
}

/** Largest (admitted in [ti, tj]) - (burst + rate * (tj - ti)) over all admission-time intervals. */
function worstExcess(admitted: { t: number; n: number }[], rate: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < admitted.length; i++) {
    let sum = 0;
    for (let j = i; j < admitted.length; j++) {
      sum += admitted[j]!.n;
      worst = Math.max(worst, sum - (burst + (rate * (admitted[j]!.t - admitted[i]!.t)) / 1000));
    }
  }
  return worst;
}

const arrivals = (maxDt: number, integer: boolean) =>
  fc.array(
    fc.record({
      dt: integer ? fc.integer({ min: 0, max: maxDt }) : fc.double({ min: 0, max: maxDt, noNaN: true }),
      n: fc.integer({ min: 1, max: 4 }),
    }),
    { maxLength: 300 },
  );

test('over any interval t, admitted <= burst + rate * t, random arrivals on the millisecond grid', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 1, max: 40 }), arrivals(200, true), (rate, burst, arr) => {
      assert.ok(worstExcess(run(rate, burst, arr), rate, burst) <= 1e-9);
    }),
    { numRuns: 400 },
  );
});

test('the bound holds exactly at fractional instants too (no millisecond flooring)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 1, max: 40 }), arrivals(50, false), (rate, burst, arr) => {
      assert.ok(worstExcess(run(rate, burst, arr), rate, burst) <= 1e-9);
    }),
    { numRuns: 400 },
  );
});

test('decisions equal an exact continuous token bucket', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 1, max: 40 }), arrivals(100, false), (rate, burst, arr) => {
      const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
      table.configure(0, rate, burst, T0);
      // Model in milli-tokens; wall-clock-sized instants keep the sums exact in float64.
      let tokens = burst * 1000;
      let t = T0;
      let last = T0;
      for (const a of arr) {
        t += a.dt;
        tokens = Math.min(burst * 1000, tokens + rate * (t - last));
        last = t;
        const ok = tokens >= a.n * 1000;
        if (ok) tokens -= a.n * 1000;
        assert.equal(table.tryTake(0, a.n, t) === 0, ok);
      }
    }),
    { numRuns: 300 },
  );
});

test('steady traffic is admitted at the configured rate, not only bounded by it', () => {
  // Spacings that are exact binary fractions of a ms, so requests land exactly where a token completes.
  for (const [rate, burst] of [
    [5, 5],
    [50, 50],
    [1000, 2000],
    [2, 1],
    [4, 1],
  ] as const) {
    const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
    table.configure(0, rate, burst, T0);
    // Offer twice the rate for 10 s, evenly spaced, first and last request 10 s apart.
    const seconds = 10;
    const offered = 2 * rate * seconds;
    let admitted = 0;
    for (let i = 0; i <= offered; i++) {
      if (table.tryTake(0, 1, T0 + (i * 1000) / (2 * rate)) === 0) admitted++;
    }
    assert.equal(admitted, burst + rate * seconds, `rate ${rate} burst ${burst}`);
  }
});

test('random arrivals above the rate are admitted at the rate (burst = TPS, as accounts default)', () => {
  let x = 12345;
  const rand = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x + 0.5) / 4294967296;
  };
  // (At 2 TPS, burst 2, Poisson bunching wastes ~5% of tokens; evenly spaced traffic is exact, test above.)
  for (const rate of [5, 20, 50, 1000]) {
    const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
    table.configure(0, rate, rate, T0);
    const seconds = 600;
    let t = T0;
    let admitted = 0;
    // Poisson arrivals at twice the rate.
    while (t < T0 + seconds * 1000) {
      t += (-Math.log(rand()) * 1000) / (2 * rate);
      if (table.tryTake(0, 1, t) === 0) admitted++;
    }
    const ideal = rate + rate * seconds;
    assert.ok(admitted <= ideal && admitted >= 0.99 * ideal, `rate ${rate}: admitted ${admitted} of ${ideal}`);
  }
});

test('retry-after: waiting the returned milliseconds succeeds, and a millisecond less does not', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 1, max: 50 }),
      fc.double({ min: 0, max: 10_000, noNaN: true }),
      (rate, burst, nRaw, offset) => {
        const n = Math.min(nRaw, burst);
        const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
        table.configure(0, rate, burst, T0);
        const t = T0 + offset;
        while (table.tryTake(0, 1, t) === 0);
        const wait = table.tryTake(0, n, t);
        assert.ok(wait > 0 && Number.isInteger(wait));
        // The wait is rounded up to whole ms, so one ms less is too early.
        if (wait > 1) assert.ok(table.tryTake(0, n, t + wait - 1) > 0);
        assert.equal(table.tryTake(0, n, t + wait), 0);
      },
    ),
    { numRuns: 500 },
  );
});

test('a new account starts full: burst takes succeed at once, the next one waits 1000/rate ms', () => {
  const table = TokenBucketTable.create({ slots: 4, nowMs: T0 });
  table.configure(2, 5, 5, T0);
  for (let i = 0; i < 5; i++) assert.equal(table.tryTake(2, 1, T0), 0);
  assert.equal(table.tryTake(2, 1, T0), 200);
  assert.equal(table.available(2, T0), 0);
  assert.equal(table.available(3, T0), 0, 'other slots untouched');
});

test('configure() on a live slot keeps earned tokens, clamped to the new burst, and the new rate applies', () => {
  const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
  table.configure(0, 10, 10, T0);
  for (let i = 0; i < 10; i++) table.tryTake(0, 1, T0);
  // 300 ms at 10/s earns 3 tokens before the change.
  table.configure(0, 100, 50, T0 + 300);
  assert.equal(table.available(0, T0 + 300), 3, 'raising burst grants nothing extra');
  assert.equal(table.available(0, T0 + 400), 13, 'new rate from the change on');
  table.configure(0, 100, 2, T0 + 400);
  assert.equal(table.available(0, T0 + 400), 2, 'lowering burst clamps');
  table.configure(0, 0, 2, T0 + 400);
  table.tryTake(0, 2, T0 + 400);
  assert.equal(table.tryTake(0, 1, T0 + 1e6), NEVER, 'rate 0 never refills');
});

test('clear() forgets a slot; the next configure() starts it full again', () => {
  const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
  table.configure(0, 1, 3, T0);
  table.tryTake(0, 3, T0);
  table.clear(0);
  assert.equal(table.tryTake(0, 1, T0), NEVER, 'a cleared slot admits nothing');
  table.configure(0, 1, 3, T0);
  assert.equal(table.tryTake(0, 3, T0), 0);
});

test('NEVER for n above burst and for unconfigured slots; bad arguments throw', () => {
  const table = TokenBucketTable.create({ slots: 2, nowMs: T0 });
  table.configure(0, 100, 4, T0);
  assert.equal(table.tryTake(0, 5, T0), NEVER);
  assert.equal(table.tryTake(1, 1, T0), NEVER);
  assert.throws(() => table.tryTake(2, 1, T0), RangeError);
  assert.throws(() => table.tryTake(0.5, 1, T0), RangeError);
  assert.throws(() => table.tryTake(0, 0, T0), RangeError);
  assert.throws(() => table.configure(0, -1, 1, T0), RangeError);
  assert.throws(() => table.configure(0, 1, 0, T0), RangeError);
  assert.throws(() => table.configure(0, 1, MAX_BURST + 1, T0), RangeError);
});

test('a slot idle for months refills to its burst; a clock behind the last refill (thread race) refills nothing', () => {
  const table = TokenBucketTable.create({ slots: 1, nowMs: T0 });
  table.configure(0, 1, 10, T0);
  table.tryTake(0, 10, T0);
  const t1 = T0 + 2 ** 33; // 99 days: past any u32-milliseconds wrap
  assert.equal(table.available(0, t1), 10);
  table.tryTake(0, 10, t1);
  // This thread read the clock 500 ms before another thread's refill got the lock.
  assert.equal(table.tryTake(0, 1, t1 - 500), 1500, 'the wait counts from the later refill');
  assert.equal(table.tryTake(0, 1, t1 - 500 + 1500), 0);
});

test('attach() in another realm of the same thread sees the same slots', () => {
  const table = TokenBucketTable.create({ slots: 3, nowMs: T0 });
  table.configure(1, 10, 2, T0);
  const other = TokenBucketTable.attach(structuredClone(table.handle()));
  assert.equal(other.tryTake(1, 2, T0), 0);
  assert.equal(table.tryTake(1, 1, T0), 100);
});

test('a growable table keeps its slots and state while it grows, up to maxSlots and no further', () => {
  const table = TokenBucketTable.create({ slots: 2, maxSlots: 10, nowMs: T0 });
  assert.equal(table.slots, 2);
  assert.equal(table.maxSlots, 10);
  assert.equal(table.byteLength, 2 * 32);
  table.configure(1, 10, 3, T0);
  assert.equal(table.tryTake(1, 2, T0), 0);
  assert.throws(() => table.tryTake(2, 1, T0), RangeError, 'not grown yet');
  table.grow(7);
  assert.equal(table.slots, 7);
  assert.equal(table.byteLength, 7 * 32);
  assert.equal(table.available(1, T0), 1, 'the state of an old slot survives growth');
  assert.equal(table.tryTake(6, 1, T0), NEVER, 'a new slot starts unconfigured');
  table.configure(6, 1, 1, T0);
  assert.equal(table.tryTake(6, 1, T0), 0);
  table.grow(3); // never shrinks
  assert.equal(table.slots, 7);
  assert.throws(() => table.grow(11), RangeError);
  assert.equal(TokenBucketTable.create({ slots: 4, nowMs: T0 }).maxSlots, 4, 'without maxSlots the table is fixed');
});

test('a worker attached before the table grew takes from slots added after, and shares their state', async () => {
  const { Worker } = await import('node:worker_threads');
  const table = TokenBucketTable.create({ slots: 4, maxSlots: 4096, nowMs: T0 });
  const w = new Worker(new URL('../fixtures/bucket-worker.js', import.meta.url), { workerData: table.handle() });
  try {
    const replies: any[] = [];
    let wake: () => void = () => {};
    w.on('message', (m) => {
      replies.push(m);
      wake();
    });
    const next = async () => {
      while (replies.length === 0) await new Promise<void>((r) => (wake = r));
      return replies.shift();
    };
    assert.deepEqual(await next(), { ready: 4 });
    table.grow(4000);
    table.configure(3999, 1, 2, T0);
    w.postMessage({ slot: 3999, n: 1, nowMs: T0 });
    assert.deepEqual(await next(), { wait: 0, slots: 4000 });
    // One token left, taken here; the worker then finds the bucket empty: the same memory.
    assert.equal(table.tryTake(3999, 1, T0), 0);
    w.postMessage({ slot: 3999, n: 1, nowMs: T0 });
    assert.deepEqual(await next(), { wait: 1000, slots: 4000 });
    w.postMessage({ slot: 4000, n: 1, nowMs: T0 });
    assert.deepEqual(await next(), { error: 'RangeError' });
  } finally {
    await w.terminate();
  }
});
