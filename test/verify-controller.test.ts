/**
 * The queue controller (issue 7): shed only what cannot be served within the
 * latency target, and only when the delay is a standing queue (CoDel, RFC
 * 8289, applied at the door), plus a hard bound for open-loop overload.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueController, Shed } from '../src/workers/controller.js';

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
