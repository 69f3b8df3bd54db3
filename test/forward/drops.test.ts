/**
 * Unaccepted items (src/forward/drops.ts), pure: each reason is counted and
 * logged at most once per interval with the count held back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Drops, R_EXPIRED, R_REJECTED, R_SHUTDOWN, R_SPILLED } from '../../src/forward/drops.js';
import { LOG_INTERVAL_MS, Throttle } from '../../src/forward/log.js';

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
