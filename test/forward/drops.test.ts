/**
 * How unaccepted items end (src/forward/drops.ts), pure: each reason is
 * counted, logged at most once per interval with the count held back, and
 * the item's status trace gets the end its verdict and reason say.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Drops, R_EXPIRED, R_REJECTED, R_SHUTDOWN, R_SPILLED, endOf } from '../../src/forward/drops.js';
import { LOG_INTERVAL_MS, Throttle } from '../../src/forward/log.js';
import { Verdict } from '../../src/forward/ring.js';
import type { Trace } from '../../src/status/tracker.js';

function drops() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  return { d: new Drops(60_000, (level, msg, fields) => lines.push({ level, msg, fields })), lines };
}

test('a throttle passes one line per interval and reports how many it held back', () => {
  const t = new Throttle();
  assert.equal(t.pass(0), 0);
  assert.equal(t.pass(1), -1);
  assert.equal(t.pass(2), -1);
  assert.equal(t.pass(LOG_INTERVAL_MS), 2);
});

test('drops are counted per reason and logged throttled with the items since the last line', () => {
  const { d, lines } = drops();
  d.dropped(R_EXPIRED, 0);
  d.dropped(R_EXPIRED, 10);
  d.dropped(R_EXPIRED, 20);
  d.dropped(R_REJECTED, 20);
  assert.deepEqual(d.byReason(), { rejected: 1, expired: 3, shutdown: 0, expired_after_restart: 0 });
  assert.equal(d.total, 4);
  assert.deepEqual(
    lines.map((l) => [l.level, l.fields]),
    [
      ['warn', { reason: 'expired', items: 1 }],
      ['info', { reason: 'rejected', items: 1 }],
    ],
  );
  assert.match(lines[0]!.msg, /no upstream accepted them within 60000 ms/);
  d.dropped(R_EXPIRED, LOG_INTERVAL_MS);
  assert.deepEqual(lines[2]!.fields, { reason: 'expired', items: 3 }, 'the two held back and this one');
});

test('shutdown drops are counted but left to the lane to log in one line; spilled items are not drops', () => {
  const { d, lines } = drops();
  d.dropped(R_SHUTDOWN, 0);
  d.dropped(R_SPILLED, 0);
  assert.equal(d.by[R_SHUTDOWN], 1);
  assert.equal(d.spilled, 1);
  assert.equal(d.total, 1);
  assert.equal(lines.length, 0);
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

test('an ended item: refused by all counts as rejected whatever the last reason, accepted counts nothing, and its trace is finalised', () => {
  const { d } = drops();
  const finals: unknown[][] = [];
  const t = { tried: true, final: (...a: unknown[]) => finals.push(a) } as unknown as Trace;
  d.ended(Verdict.REJECTED, R_EXPIRED, t, 5);
  d.ended(Verdict.ACCEPTED, R_REJECTED, undefined, 6);
  d.ended(Verdict.REJECTED, R_SPILLED, undefined, 7);
  assert.deepEqual(d.byReason(), { rejected: 1, expired: 0, shutdown: 0, expired_after_restart: 0 });
  assert.equal(d.spilled, 1);
  assert.deepEqual(finals, [['upstream_rejected', 'every upstream that answered refused it', 5]]);
});
