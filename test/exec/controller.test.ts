/**
 * The queue controller: shed only what cannot be served within the
 * latency target, and only when the delay is a standing queue (CoDel, RFC
 * 8289, applied at the door), plus a hard bound for open-loop overload.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKLOG_TRUST_MS, DrainMeter, QueueController, Shed } from '../../src/exec/controller.js';

const opts = { targetMs: 5, intervalMs: 100, maxMs: 100 };

test('a burst that drains within an interval is absorbed: nothing is shed below the hard bound', () => {
  const c = new QueueController(opts);
  c.observe(40, 1000); // way above target, but only just now
  for (let t = 1000; t < 1090; t += 1) assert.equal(c.decide(t, 60), Shed.No);
  c.observe(1, 1095); // drained
  assert.equal(c.decide(1200, 60), Shed.No);
  assert.equal(c.isStanding, false);
});

test('above target for a whole interval is a standing queue: sheds start, spaced by interval/sqrt(n)', () => {
  const c = new QueueController(opts);
  c.observe(20, 0);
  c.observe(20, 100); // interval elapsed with every sample above target
  assert.equal(c.isStanding, true);
  assert.equal(c.decide(100, 10), Shed.Standing, 'first arrival shed at once');
  assert.equal(c.decide(101, 10), Shed.No);
  assert.equal(c.decide(199, 10), Shed.No, 'next shed after interval/sqrt(1) = 100 ms');
  assert.equal(c.decide(200, 10), Shed.Standing);
  // Third: 100/sqrt(2) = 70.7 ms after the second due time.
  assert.equal(c.decide(270, 10), Shed.No);
  assert.equal(c.decide(271, 10), Shed.Standing);
  assert.equal(c.shedStanding, 3);
});

test('closed-loop overload: the control law sheds a small share, so goodput stays at capacity', () => {
  const c = new QueueController(opts);
  // 10 s of 15,000 arrivals/s against a queue that never drains (1024 clients each resending at once).
  let shed = 0;
  let arrivals = 0;
  for (let t = 0; t < 10_000; t += 1) {
    c.observe(60, t);
    for (let k = 0; k < 15; k++, arrivals++) if (c.decide(t + k / 15, 60) !== Shed.No) shed++;
  }
  assert.ok(shed > 0, 'a standing queue is signalled');
  assert.ok(shed / arrivals < 0.05, `shed ${shed} of ${arrivals}`);
});

test('the queue falling under target ends the standing state and the shedding', () => {
  const c = new QueueController(opts);
  c.observe(20, 0);
  c.observe(20, 150);
  assert.equal(c.decide(150, 10), Shed.Standing);
  c.observe(2, 160);
  assert.equal(c.isStanding, false);
  for (let t = 161; t < 400; t++) assert.equal(c.decide(t, 10), Shed.No);
});

test('an arrival whose estimated wait exceeds the hard bound is shed whatever the state', () => {
  const c = new QueueController(opts);
  assert.equal(c.decide(0, 100), Shed.No);
  assert.equal(c.decide(0, 100.5), Shed.OverMax);
  assert.equal(c.shedOverMax, 1);
});

test('a shed period that resumes soon restarts near the previous rate (RFC 8289 section 5.4)', () => {
  const c = new QueueController(opts);
  c.observe(20, 0);
  c.observe(20, 100);
  let t = 100;
  for (let i = 0; i < 10; ) if (c.decide(t++, 10) === Shed.Standing) i++;
  const first = c.shedStanding;
  c.observe(1, t); // leaves
  assert.equal(c.decide(t, 10), Shed.No);
  c.observe(20, t + 1);
  c.observe(20, t + 101);
  // Back in: spacing starts at interval/sqrt(count) with count near 10, not 1.
  const start = t + 101;
  assert.equal(c.decide(start, 10), Shed.Standing);
  let next = start + 1;
  while (c.decide(next, 10) !== Shed.Standing) next++;
  assert.ok(next - start < 50, `second shed ${next - start} ms after the first (would be 100 ms from count 1)`);
  assert.ok(c.shedStanding === first + 2);
});

test('nonsensical settings are refused', () => {
  assert.throws(() => new QueueController({ targetMs: 0 }), RangeError);
  assert.throws(() => new QueueController({ targetMs: 10, maxMs: 5 }), RangeError);
});

/** Samples every 5 ms from `from` while `waiting` checks wait and `perMs` leave the queue per ms; returns the time reached. */
function drainFor(m: DrainMeter, from: number, ms: number, perMs: number, waiting: number, left: { n: number }): number {
  let t = from;
  for (; t < from + ms; t += 5) {
    left.n += perMs * 5;
    m.sample(t + 5, left.n, waiting);
  }
  return t;
}

test('a queue that stays non-empty is priced at the pace checks left it, once it has stood for BACKLOG_TRUST_MS', () => {
  const m = new DrainMeter();
  const left = { n: 0 };
  m.sample(0, 0, 500);
  let t = drainFor(m, 0, BACKLOG_TRUST_MS - 5, 2, 500, left);
  assert.equal(m.ms(100), 0, 'a burst younger than the trust period is no forecast');
  t = drainFor(m, t, 10, 2, 500, left);
  assert.equal(m.ms(100), 50, '100 checks at 2 per ms');
  // The acceptor spends more of itself elsewhere: the pace falls to 0.5/ms and the price follows it.
  t = drainFor(m, t, 200, 0.5, 500, left);
  assert.ok(Math.abs(m.ms(100) - 200) < 1, `100 checks at 0.5 per ms: ${m.ms(100)}`);
});

test('a queue seen empty, at a sample or between samples, starts its trust period again', () => {
  const m = new DrainMeter();
  const left = { n: 0 };
  m.sample(0, 0, 500);
  let t = drainFor(m, 0, 100, 2, 500, left);
  assert.equal(m.ms(100), 50);
  m.sample(t + 5, left.n, 0);
  t += 5;
  assert.equal(m.ms(100), 0, 'empty at a sample');
  t = drainFor(m, t, 100, 2, 500, left);
  assert.equal(m.ms(100), 50);
  m.emptied();
  t = drainFor(m, t, BACKLOG_TRUST_MS - 5, 2, 500, left);
  assert.equal(m.ms(100), 0, 'emptied between samples (a turn drained it)');
  drainFor(m, t, 10, 2, 500, left);
  assert.equal(m.ms(100), 50);
});
