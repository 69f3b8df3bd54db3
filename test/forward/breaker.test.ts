import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Breaker, Permit, BREAKER_THRESHOLD, BREAKER_COOLDOWN_MS, BREAKER_MAX_COOLDOWN_MS } from '../../src/forward/breaker.js';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

function failTimes(b: Breaker, n: number): void {
  for (let i = 0; i < n; i++) b.failure(b.request());
}

test('numbers: opens after 5 consecutive failures, cool-down 1 s that does not grow', () => {
  assert.equal(BREAKER_THRESHOLD, 5);
  assert.equal(BREAKER_COOLDOWN_MS, 1_000);
  assert.equal(BREAKER_MAX_COOLDOWN_MS, 1_000);
});

test('after a long outage a recovered upstream is probed, and its lane available, within 1 s', () => {
  const c = clock();
  const b = new Breaker(c.now);
  failTimes(b, 5);
  // 15 s of failed probes (a hung upstream: each probe fails on its time-out).
  for (let t = 0; t < 15; t++) {
    c.advance(b.cooldownMs);
    const p = b.request();
    assert.equal(p, Permit.PROBE);
    c.advance(2_000);
    b.failure(p);
  }
  assert.equal(b.state, 'open');
  assert.equal(b.available(), false);
  // The upstream is back now: within a second the next probe goes, and answers.
  c.advance(999);
  assert.equal(b.available(), false);
  c.advance(1);
  assert.equal(b.available(), true);
  const p = b.request();
  assert.equal(p, Permit.PROBE);
  b.success(p);
  assert.equal(b.state, 'closed');
});

test('a breaker opens after 5 consecutive failures, not before', () => {
  const c = clock();
  const b = new Breaker(c.now);
  failTimes(b, 4);
  assert.equal(b.state, 'closed');
  assert.equal(b.request(), Permit.PASS);
  b.failure(Permit.PASS);
  assert.equal(b.state, 'open');
  assert.equal(b.request(), Permit.DENY);
});

test('a success resets the consecutive-failure count', () => {
  const b = new Breaker(clock().now);
  failTimes(b, 4);
  b.success(b.request());
  assert.equal(b.consecutiveFailures, 0);
  failTimes(b, 4);
  assert.equal(b.state, 'closed');
});

test('open denies until the cool-down has elapsed, then lets exactly one probe through', () => {
  const c = clock();
  const b = new Breaker(c.now);
  failTimes(b, 5);
  c.advance(999);
  assert.equal(b.request(), Permit.DENY);
  assert.equal(b.available(), false);
  c.advance(1);
  assert.equal(b.available(), true, 'probe-able counts as available');
  assert.equal(b.request(), Permit.PROBE);
  assert.equal(b.state, 'half-open');
  assert.equal(b.request(), Permit.DENY, 'only one probe at a time');
  assert.equal(b.available(), true);
});

test('a successful probe closes the breaker and resets the cool-down', () => {
  const c = clock();
  const b = new Breaker(c.now);
  failTimes(b, 5);
  c.advance(1_000);
  b.failure(b.request()); // probe fails: 2 s
  c.advance(2_000);
  const p = b.request();
  assert.equal(p, Permit.PROBE);
  b.success(p);
  assert.equal(b.state, 'closed');
  assert.equal(b.cooldownMs, 1_000);
  assert.equal(b.request(), Permit.PASS);
});

test('with a larger maximum, each failed probe doubles the cool-down up to it', () => {
  const c = clock();
  const b = new Breaker(c.now, { maxCooldownMs: 30_000 });
  failTimes(b, 5);
  const seen: number[] = [b.cooldownMs];
  for (let i = 0; i < 7; i++) {
    c.advance(b.cooldownMs - 1);
    assert.equal(b.request(), Permit.DENY);
    c.advance(1);
    const p = b.request();
    assert.equal(p, Permit.PROBE);
    b.failure(p);
    assert.equal(b.state, 'open');
    seen.push(b.cooldownMs);
  }
  assert.deepEqual(seen, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
});

test('answers to requests sent before opening neither close nor extend an open breaker', () => {
  const c = clock();
  const b = new Breaker(c.now);
  failTimes(b, 5);
  b.success(Permit.PASS);
  assert.equal(b.state, 'open');
  c.advance(1_000);
  const probe = b.request();
  b.failure(Permit.PASS); // a slow request from before, timing out now
  b.success(Permit.PASS);
  assert.equal(b.state, 'half-open', 'only the probe decides');
  b.success(probe);
  assert.equal(b.state, 'closed');
});

test('thresholds and cool-downs are configurable (integration tests use short ones)', () => {
  const c = clock();
  const b = new Breaker(c.now, { threshold: 2, cooldownMs: 50, maxCooldownMs: 120 });
  failTimes(b, 2);
  assert.equal(b.state, 'open');
  c.advance(50);
  b.failure(b.request());
  c.advance(100);
  b.failure(b.request());
  assert.equal(b.cooldownMs, 120);
});
