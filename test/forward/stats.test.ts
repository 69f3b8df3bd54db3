/** A lane's statistics snapshot (src/forward/stats.ts), pure: every figure comes from the ring, the outlets and the drop counters it is given. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Breaker } from '../../src/forward/outlet.js';
import { Drops, R_EXPIRED } from '../../src/forward/drops.js';
import { Outlet } from '../../src/forward/outlet.js';
import { laneStats } from '../../src/forward/stats.js';
import { UpstreamClient } from '../../src/forward/upstream.js';

test('the snapshot: depth is the unanswered items, held and outstanding from the ring, drops summed, one row per upstream', () => {
  const drops = new Drops(1000, () => undefined);
  drops.dropped(R_EXPIRED, 0);
  const o = new Outlet(1, new UpstreamClient(new URL('http://user:pw@127.0.0.1:9/key?x=1')), new Breaker(() => 0), true, 4);
  o.cursor = 7;
  o.retried = 3;
  o.overrun = 1;
  o.expired = 2;
  const s = laneStats(
    { lane: 'evm-paid', capacity: 16, admitted: 12, discarded: 0, available: true, accepting: false },
    { head: 2, tail: 12, open: 4, settled: 9, accepted: 8 },
    drops,
    [o],
  );
  assert.equal(s.lane, 'evm-paid');
  assert.equal(s.depth, 4);
  assert.equal(s.held, 10);
  assert.equal(s.outstanding, 3);
  assert.equal(s.forwarded, 8);
  assert.equal(s.dropped, 1);
  assert.deepEqual(s.droppedBy, { rejected: 0, expired: 1, shutdown: 0, expired_after_restart: 0 });
  assert.equal(s.accepting, false);
  const u = s.upstreams[0]!;
  assert.equal(u.upstream, 'http://127.0.0.1:9/…', 'origin only: the path and query may carry a key');
  assert.equal(u.breaker, 'closed');
  assert.equal(u.backlog, 5);
  assert.deepEqual([u.retried, u.overrun, u.expired, u.batching, u.inFlight], [3, 1, 2, true, 0]);
});
