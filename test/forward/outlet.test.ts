/**
 * One upstream's side of a lane (src/forward/outlet.ts), pure (no request is
 * ever posted): its circuit breaker's transitions, what it sends next, what
 * it resends and when, and what feeds its breaker.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BREAKER_COOLDOWN_MS, BREAKER_MAX_COOLDOWN_MS, BREAKER_THRESHOLD, Breaker, Outlet, Permit, RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS, breakerNews, type Items } from '../../src/forward/outlet.js';
import { PostStatus } from '../../src/forward/result.js';
import { UpstreamClient } from '../../src/forward/upstream.js';

function setup(opts: { connections?: number; batching?: boolean } = {}) {
  let t = 1_000_000;
  const now = (): number => t;
  const breaker = new Breaker(now, { threshold: 2, cooldownMs: 100 });
  const o = new Outlet(1, new UpstreamClient(new URL('http://127.0.0.1:9/')), breaker, opts.batching ?? true, opts.connections ?? 2);
  const stale = new Set<number>();
  const items: Items & { tail: number } = { tail: 0, stale: (seq) => stale.has(seq) };
  return { o, breaker, items, stale, now, advance: (ms: number) => (t += ms) };
}
const upTo = (max: number) => (from: number) => max;

test('new items leave from the cursor, a batch at a time, up to the in-flight bound', () => {
  const { o, items, now } = setup({ connections: 2 });
  items.tail = 10;
  assert.equal(o.take(now(), items.tail, upTo(4)), true);
  assert.deepEqual([o.from, o.n, o.permit], [0, 4, Permit.PASS]);
  assert.equal(o.take(now(), items.tail, upTo(4)), true);
  assert.deepEqual([o.from, o.n], [4, 4]);
  assert.equal(o.take(now(), items.tail, upTo(4)), false, 'both connections busy');
  assert.equal(o.wakeAt, Infinity, 'an answer will wake it');
  assert.equal(o.inFlightItems, 8);
  assert.equal(o.backlog(items.tail), 2);
  o.landed(4);
  assert.equal(o.take(now(), items.tail, upTo(4)), true);
  assert.deepEqual([o.from, o.n], [8, 4]);
});

test('an upstream that refuses batches gets one item per request', () => {
  const { o, items, now } = setup({ batching: false });
  items.tail = 5;
  assert.equal(o.take(now(), items.tail, upTo(5)), true);
  assert.equal(o.n, 1);
});

test('a failed request is resent after its back-off, before newer items, leaving out what the upstream gave up', () => {
  const { o, items, stale, now, advance } = setup();
  items.tail = 6;
  assert.equal(o.take(now(), items.tail, upTo(3)), true); // 0..2
  o.landed(3);
  stale.add(0); // expired meanwhile
  o.requeue(items, 0, 3, now() + o.backoff());
  assert.equal(o.retried, 2);
  assert.equal(o.take(now(), items.tail, upTo(3)), true, 'new items go while the resend waits');
  assert.deepEqual([o.from, o.n], [3, 3]);
  o.landed(3);
  assert.equal(o.take(now(), items.tail, upTo(3)), false);
  assert.equal(o.wakeAt, now() + RETRY_BACKOFF_MS);
  advance(RETRY_BACKOFF_MS);
  assert.equal(o.take(now(), items.tail, upTo(3)), true);
  assert.deepEqual([o.from, o.n], [1, 2]);
});

test('the back-off doubles per failure in a row up to the breaker cool-down, and a success resets it', () => {
  const { o } = setup();
  const seen = Array.from({ length: 10 }, () => o.backoff());
  assert.deepEqual(seen.slice(0, 3), [RETRY_BACKOFF_MS, RETRY_BACKOFF_MS * 2, RETRY_BACKOFF_MS * 4]);
  assert.equal(seen[9], RETRY_BACKOFF_MAX_MS);
  o.judge(Permit.PASS, PostStatus.OK);
  assert.equal(o.backoff(), RETRY_BACKOFF_MS);
});

test('transport failures trip the breaker; a 4xx refusal or our own abort does not', () => {
  const { o, breaker } = setup();
  o.judge(Permit.PASS, PostStatus.REFUSED);
  o.judge(Permit.PASS, PostStatus.REFUSED);
  o.judge(Permit.PASS, PostStatus.ABORTED);
  o.judge(Permit.PASS, PostStatus.ABORTED);
  assert.equal(breaker.state, 'closed');
  assert.equal(o.judge(Permit.PASS, PostStatus.TIMEOUT), 'closed');
  assert.equal(o.judge(Permit.PASS, PostStatus.HTTP_ERROR), 'closed', 'returns the state before');
  assert.equal(breaker.state, 'open');
});

test('behind an open breaker everything waits until the cool-down; then the oldest waiting item goes alone as the probe', () => {
  const { o, breaker, items, now, advance } = setup();
  items.tail = 8;
  assert.equal(o.take(now(), items.tail, upTo(4)), true); // 0..3
  o.landed(4);
  o.judge(Permit.PASS, PostStatus.CONN_ERROR);
  o.judge(Permit.PASS, PostStatus.CONN_ERROR);
  o.requeue(items, 0, 4, now() + o.backoff());
  assert.equal(breaker.state, 'open');
  assert.equal(o.take(now(), items.tail, upTo(4)), false);
  assert.equal(o.wakeAt, breaker.probeAt());
  advance(100);
  assert.equal(o.take(now(), items.tail, upTo(4)), true);
  assert.deepEqual([o.from, o.n, o.permit], [0, 1, Permit.PROBE]);
  assert.equal(o.take(now(), items.tail, upTo(4)), false, 'nothing more until the probe is answered');
  o.landed(1);
  o.judge(Permit.PROBE, PostStatus.OK);
  assert.equal(breaker.state, 'closed');
  assert.equal(o.take(now(), items.tail, upTo(4)), true);
  assert.deepEqual([o.from, o.n], [1, 3], 'the rest of the resend, before new items');
});

test('giving up the head item moves past it whether it was never sent or waiting for a resend', () => {
  const { o, items, now } = setup();
  items.tail = 4;
  o.giveUp(0);
  assert.equal(o.cursor, 1);
  assert.equal(o.take(now(), items.tail, upTo(2)), true); // 1..2
  o.landed(2);
  o.requeue(items, 1, 2, now() + 1000);
  o.giveUp(1);
  assert.equal(o.retryItems(), 1);
  o.clear(4);
  assert.equal(o.backlog(4), 0);
});

test('breaker transitions say what happened, once', () => {
  assert.equal(breakerNews('closed', 'open')?.[0], 'warn');
  assert.match(breakerNews('closed', 'open')![1], /circuit opened/);
  assert.match(breakerNews('half-open', 'open')![1], /probe failed/);
  assert.deepEqual(breakerNews('half-open', 'closed'), ['info', 'upstream recovered: circuit closed']);
  assert.equal(breakerNews('open', 'half-open'), null);
});

// ---- the breaker ----

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
