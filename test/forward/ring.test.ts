/**
 * The lane's ring (src/forward/ring.ts), pure: an item is stored once, freed
 * when the last upstream is done with it, and ends exactly once with the
 * verdict the answers gave (its trace told, a drop counted under its reason);
 * the head moves only over items everyone is done with.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { R_EXPIRED, R_REJECTED, R_SHUTDOWN, R_SPILLED } from '../../src/forward/drops.js';
import { Ring, Verdict, endOf } from '../../src/forward/ring.js';
import type { Trace } from '../../src/status/tracker.js';

const A = 1;
const B = 2;

function ring(capacity: number, upstreams: number) {
  const drops: number[] = [];
  const r = new Ring<string>(capacity, upstreams, () => 5, (reason) => drops.push(reason));
  return { r, drops };
}

function trace(tried = true) {
  const finals: unknown[][] = [];
  return { t: { tried, final: (...a: unknown[]) => finals.push(a) } as unknown as Trace, finals };
}

test('an item ends only when every upstream is done with it, and then frees its slot', () => {
  const { r, drops } = ring(4, 2);
  const { t, finals } = trace();
  const s = r.push('0xaa', t, 7, 1000);
  assert.equal(s, 0);
  assert.equal(r.item(s), '0xaa');
  assert.equal(r.accountOf(s), 7);
  assert.equal(r.bornAt(s), 1000);
  assert.equal(r.open, 1);
  r.mark(A, s, Verdict.ACCEPTED, 0);
  assert.equal(finals.length, 0);
  assert.equal(r.open, 0, 'answered by one upstream: no longer counts against admission');
  assert.equal(r.held, 1, 'still held for the other');
  assert.equal(r.stale(s, A), true);
  assert.equal(r.stale(s, B), false);
  r.mark(B, s, Verdict.REJECTED, R_REJECTED);
  assert.deepEqual(finals, [['forwarded', null, 5]]);
  assert.deepEqual(drops, [], 'accepted by one: not a drop');
  assert.equal(r.held, 0);
  assert.equal(r.settled, 1);
  assert.equal(r.accepted, 1);
  assert.equal(r.stale(s, B), true, 'below the head: any late answer is stale');
});

test('every answer a refusal: the item ends REJECTED; nobody answered: it ends NONE and leaves the open count then', () => {
  const { r, drops } = ring(4, 2);
  const a = r.push('x', undefined, -1, 0);
  const b = r.push('y', undefined, -1, 0);
  r.mark(A, a, Verdict.REJECTED, 0);
  r.mark(B, a, Verdict.REJECTED, 0);
  assert.equal(r.open, 1);
  r.mark(A, b, Verdict.NONE, R_EXPIRED);
  assert.equal(r.open, 1, 'given up by one, still owed by the other');
  r.markAll(b, [A, B], R_SHUTDOWN);
  assert.deepEqual(drops, [R_REJECTED, R_SHUTDOWN]);
  assert.equal(r.open, 0);
  assert.equal(r.accepted, 0);
});

test('the head moves over a prefix only: an item done out of order waits for the ones before it', () => {
  const { r } = ring(4, 1);
  for (let i = 0; i < 3; i++) r.push('i' + i, undefined, -1, i);
  r.mark(A, 1, Verdict.ACCEPTED, 0);
  assert.equal(r.head, 0);
  assert.equal(r.isSettled(1), true);
  r.mark(A, 0, Verdict.ACCEPTED, 0);
  assert.equal(r.head, 2);
  assert.equal(r.held, 1);
});

test('sequence numbers keep growing while slots are reused (capacity rounds up to a power of two)', () => {
  const { r } = ring(3, 1);
  for (let i = 0; i < 10; i++) {
    const s = r.push('v' + i, undefined, i, i);
    assert.equal(s, i);
    assert.equal(r.item(s), 'v' + i);
    r.mark(A, s, Verdict.ACCEPTED, 0);
  }
  assert.equal(r.settled, 10);
  assert.equal(r.tail, 10);
  assert.equal(r.head, 10);
});

test('32 upstreams: the done mask is the full 32 bits', () => {
  const { r } = ring(2, 32);
  assert.equal(r.allMask, 0xffffffff);
  const s = r.push('z', undefined, -1, 0);
  const bits = Array.from({ length: 32 }, (_, k) => (1 << k) >>> 0);
  for (const b of bits.slice(0, 31)) r.mark(b, s, Verdict.ACCEPTED, 0);
  assert.equal(r.settled, 0);
  r.mark(bits[31]!, s, Verdict.ACCEPTED, 0);
  assert.equal(r.settled, 1);
});

test('refused by every upstream that answered counts as rejected whatever the last reason; a spilled item is spilled, not rejected', () => {
  const { r, drops } = ring(4, 2);
  const { t, finals } = trace();
  const a = r.push('x', t, -1, 0);
  r.mark(A, a, Verdict.REJECTED, R_REJECTED);
  r.mark(B, a, Verdict.NONE, R_EXPIRED);
  const b = r.push('y', undefined, -1, 0);
  r.mark(A, b, Verdict.REJECTED, R_REJECTED);
  r.mark(B, b, Verdict.NONE, R_SPILLED);
  assert.deepEqual(drops, [R_REJECTED, R_SPILLED]);
  assert.deepEqual(finals, [['upstream_rejected', 'every upstream that answered refused it', 5]]);
});

test('a trace ends forwarded, upstream_rejected, failed or dropped, as the verdict and reason say', () => {
  const tried = { tried: true } as unknown as Trace;
  const untried = { tried: false } as unknown as Trace;
  assert.deepEqual(endOf(Verdict.ACCEPTED, R_EXPIRED, tried), ['forwarded', null]);
  assert.equal(endOf(Verdict.REJECTED, R_REJECTED, tried)[0], 'upstream_rejected');
  assert.equal(endOf(Verdict.NONE, R_SHUTDOWN, tried)[0], 'dropped');
  assert.match(endOf(Verdict.NONE, R_SPILLED, tried)[1]!, /written to the data directory/);
  assert.deepEqual(endOf(Verdict.NONE, R_EXPIRED, tried), ['failed', 'no upstream accepted it before it expired']);
  assert.deepEqual(endOf(Verdict.NONE, R_EXPIRED, untried), ['dropped', 'expired in the queue before any upstream took it']);
});
