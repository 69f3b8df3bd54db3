/**
 * The lane's ring (src/forward/ring.ts), pure: an item is stored once, freed
 * when the last upstream is done with it, and ends exactly once with the
 * verdict the answers gave; the head moves only over items everyone is done with.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ring, Verdict } from '../../src/forward/ring.js';
import type { Trace } from '../../src/status/tracker.js';

const A = 1;
const B = 2;

function ring(capacity: number, upstreams: number) {
  const ends: { verdict: number; reason: number; trace: unknown }[] = [];
  const r = new Ring<string>(capacity, upstreams, (verdict, reason, trace) => ends.push({ verdict, reason, trace }));
  return { r, ends };
}

test('an item ends only when every upstream is done with it, and then frees its slot', () => {
  const { r, ends } = ring(4, 2);
  const t = { id: 't' } as unknown as Trace;
  const s = r.push('0xaa', t, 7, 1000);
  assert.equal(s, 0);
  assert.equal(r.item(s), '0xaa');
  assert.equal(r.accountOf(s), 7);
  assert.equal(r.bornAt(s), 1000);
  assert.equal(r.open, 1);
  r.mark(A, s, Verdict.ACCEPTED, 0);
  assert.equal(ends.length, 0);
  assert.equal(r.open, 0, 'answered by one upstream: no longer counts against admission');
  assert.equal(r.held, 1, 'still held for the other');
  assert.equal(r.stale(s, A), true);
  assert.equal(r.stale(s, B), false);
  r.mark(B, s, Verdict.REJECTED, 9);
  assert.deepEqual(ends, [{ verdict: Verdict.ACCEPTED, reason: 9, trace: t }]);
  assert.equal(r.held, 0);
  assert.equal(r.settled, 1);
  assert.equal(r.accepted, 1);
  assert.equal(r.stale(s, B), true, 'below the head: any late answer is stale');
});

test('every answer a refusal: the item ends REJECTED; nobody answered: it ends NONE and leaves the open count then', () => {
  const { r, ends } = ring(4, 2);
  const a = r.push('x', undefined, -1, 0);
  const b = r.push('y', undefined, -1, 0);
  r.mark(A, a, Verdict.REJECTED, 0);
  r.mark(B, a, Verdict.REJECTED, 0);
  assert.equal(r.open, 1);
  r.mark(A, b, Verdict.NONE, 1);
  assert.equal(r.open, 1, 'given up by one, still owed by the other');
  r.markAll(b, [A, B], 2);
  assert.deepEqual(
    ends.map((e) => [e.verdict, e.reason]),
    [
      [Verdict.REJECTED, 0],
      [Verdict.NONE, 2],
    ],
  );
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
  const { r, ends } = ring(3, 1);
  for (let i = 0; i < 10; i++) {
    const s = r.push('v' + i, undefined, i, i);
    assert.equal(s, i);
    assert.equal(r.item(s), 'v' + i);
    r.mark(A, s, Verdict.ACCEPTED, 0);
  }
  assert.equal(ends.length, 10);
  assert.equal(r.tail, 10);
  assert.equal(r.head, 10);
});

test('32 upstreams: the done mask is the full 32 bits', () => {
  const { r, ends } = ring(2, 32);
  assert.equal(r.allMask, 0xffffffff);
  const s = r.push('z', undefined, -1, 0);
  const bits = Array.from({ length: 32 }, (_, k) => (1 << k) >>> 0);
  for (const b of bits.slice(0, 31)) r.mark(b, s, Verdict.ACCEPTED, 0);
  assert.equal(ends.length, 0);
  r.mark(bits[31]!, s, Verdict.ACCEPTED, 0);
  assert.equal(ends.length, 1);
});
