/**
 * Status traces (src/status/tracker.ts) on their own, and as real lanes fill
 * them against real upstream servers: every end a transaction can come to,
 * retention and the count cap, other accounts, and the merge of several
 * threads' answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tracker } from '../../src/status/tracker.js';
import { mergeStatuses, unknownStatus } from '../../src/status/view.js';
import { nextRequestId } from '../../src/status/request-id.js';
import { laneHarness } from '../helpers/lanes.js';

const { upstream, lane } = laneHarness();
/** Request ids as the relay makes them (a tracker finds requests by their counter). */
const RQ: Record<string, string> = Object.fromEntries(['r-a', 'r-b', 'r-c', 'r-d', 'r-e', 'r-x', 'r1', 'r2', 'rq-1', 'rq-2', 'rq-3', 'rq-4', 'rq-5', 'rq-6', 'rq-7', 'rq-8'].map((k) => [k, nextRequestId()]));
const hexTx = (i: number): string => '0x02f8' + i.toString(16).padStart(8, '0') + 'ab'.repeat(40);

function tracker(now: () => number = Date.now, maxEntries = 1000, retentionMs = 60_000): Tracker {
  return new Tracker({ retentionMs, maxEntries, node: 'test', now });
}

test('through a real lane: an accepting upstream ends it forwarded, with the attempt, its status and latency', async () => {
  const up = await upstream();
  const l = lane('evm-paid', { upstreams: [up.url] });
  const t = tracker();
  const tr = t.open('0xaa', RQ['rq-1']!, 1, 'evm', 'jsonrpc');
  assert.equal(l.offer(hexTx(1), tr), true);
  assert.equal(t.status('0xaa', 1).state, 'queued');
  await l.whenIdle();
  const s = t.status('0xaa', 1);
  assert.equal(s.state, 'forwarded');
  assert.deepEqual(
    s.events.map((e) => e.stage),
    ['received', 'forwarded'],
  );
  assert.equal(s.forwards.length, 1);
  assert.equal(s.forwards[0]!.upstream, new URL(up.url).origin);
  assert.equal(s.forwards[0]!.http_status, 200);
  assert.equal(s.forwards[0]!.upstream_result, 'accepted');
  const ms = s.forwards[0]!.latency_ms!;
  assert.ok(ms >= 0);
  // To 0.01 ms, as documented: no further digits.
  assert.equal(ms, Math.round(ms * 100) / 100);
  assert.ok(!/\.\d{3}/.test(JSON.stringify(ms)), JSON.stringify(ms));
  assert.deepEqual(t.status(RQ['rq-1']!, 1), s, 'the request id finds it too');
});

test('through a real lane: a JSON-RPC error from every upstream ends it upstream_rejected with the code and message', async () => {
  const a = await upstream({ mode: 'rpc-error' });
  const b = await upstream({ mode: { status: 400 } });
  const l = lane('evm-paid', { upstreams: [a.url, b.url], batching: false });
  const t = tracker();
  l.offer(hexTx(2), t.open('0xbb', RQ['rq-2']!, 1, 'evm', 'jsonrpc'));
  await l.whenIdle();
  const s = t.status('0xbb', 1);
  assert.equal(s.state, 'upstream_rejected');
  const byUpstream = new Map(s.forwards.map((f) => [f.upstream, f]));
  assert.equal(typeof byUpstream.get(new URL(a.url).origin)!.upstream_error!.code, 'number');
  assert.equal(byUpstream.get(new URL(b.url).origin)!.http_status, 400);
});

test('through a real lane: an upstream that hangs until the item expires ends it failed; one never sent drops as expired', async () => {
  const up = await upstream({ mode: 'hang' });
  const l = lane('solana-single', { upstreams: [up.url], maxAgeMs: 300, timeoutMs: 5000 });
  const t = tracker();
  l.offer(Buffer.alloc(100, 1).toString('base64'), t.open('sigA', RQ['rq-3']!, 1, 'solana', 'solana-v2'));
  await new Promise((r) => setTimeout(r, 50));
  const inFlight = t.status('sigA', 1);
  assert.equal(inFlight.state, 'queued');
  assert.equal(inFlight.forwards[0]!.latency_ms, null, 'sent, not answered');
  await l.whenIdle();
  const s = t.status('sigA', 1);
  assert.equal(s.state, 'failed');
  assert.match(s.reason!, /no upstream accepted it before it expired/);
  await l.close();
});

test('through a real lane: a lane with no upstream drops at once, and a shutdown drops what no upstream accepted', async () => {
  const t = tracker();
  const dry = lane('evm-free', { upstreams: [] });
  dry.offer(hexTx(3), t.open('0xcc', RQ['rq-4']!, 1, 'evm', 'evm-text'));
  assert.equal(t.status('0xcc', 1).state, 'dropped');
  assert.match(t.status('0xcc', 1).reason!, /no upstream/);

  const up = await upstream({ mode: 'hang' });
  const l = lane('evm-free', { upstreams: [up.url], timeoutMs: 5000 });
  l.offer(hexTx(4), t.open('0xdd', RQ['rq-5']!, 1, 'evm', 'jsonrpc'));
  await new Promise((r) => setTimeout(r, 50));
  await l.close();
  const s = t.status('0xdd', 1);
  assert.equal(s.state, 'dropped');
  assert.match(s.reason!, /shut down/);
});

test("another account's id reads exactly as an unknown one; a duplicate names the first request and leaves the id to it", () => {
  const t = tracker();
  const first = t.open('0xee', RQ['rq-6']!, 1, 'evm', 'jsonrpc');
  first.final('forwarded', null, Date.now());
  assert.deepEqual(t.status('0xee', 2), unknownStatus('0xee', 'test'));
  assert.deepEqual(t.status(RQ['rq-6']!, 2), unknownStatus(RQ['rq-6']!, 'test'));
  t.duplicate('0xee', RQ['rq-7']!, 1, 'evm', 'jsonrpc');
  assert.equal(t.status(RQ['rq-7']!, 1).state, 'duplicate');
  assert.equal(t.status(RQ['rq-7']!, 1).reason, `duplicate of request ${RQ['rq-6']!}`);
  assert.equal(t.status('0xee', 1).state, 'forwarded');
  // Another account's duplicate does not learn the first account's request.
  t.duplicate('0xee', RQ['rq-8']!, 2, 'evm', 'jsonrpc');
  assert.doesNotMatch(t.status(RQ['rq-8']!, 2).reason!, new RegExp(RQ['rq-6']!));
});

test('retention: past it an id reads expired to its account (unknown to others); the count cap evicts the oldest first', () => {
  let now = 1_000_000;
  const t = tracker(() => now, 3, 10_000);
  t.open('a', RQ['r-a']!, 1, 'evm', 'jsonrpc');
  now += 5_000;
  t.open('b', RQ['r-b']!, 1, 'evm', 'jsonrpc');
  now += 6_000;
  assert.equal(t.status('a', 1).state, 'expired');
  assert.equal(t.status('a', 2).state, 'unknown');
  assert.equal(t.status('b', 1).state, 'queued');
  t.open('c', RQ['r-c']!, 1, 'evm', 'jsonrpc');
  t.open('d', RQ['r-d']!, 1, 'evm', 'jsonrpc');
  t.open('e', RQ['r-e']!, 1, 'evm', 'jsonrpc');
  assert.equal(t.size, 3);
  assert.equal(t.status('b', 1).state, 'expired', 'the oldest left for the cap');
  for (const id of ['c', 'd', 'e']) assert.equal(t.status(id, 1).state, 'queued');
});

test('past retention an ended status stays compact for final retention: its end and chain facts, no attempts; then expired', () => {
  let now = 1_000_000;
  const t = new Tracker({ retentionMs: 10_000, finalRetentionMs: 60_000, maxEntries: 4, node: 'test', now: () => now });
  const landed = t.open('sig-landed', RQ['rq-1']!, 1, 'solana', 'v2');
  landed.sent('http://up:8899', now);
  landed.answered('http://up:8899', now + 1, 'ok', 200, null);
  landed.final('forwarded', null, now + 1);
  landed.land({ state: 'landed', chain: { slot: 77, confirmation: 'confirmed', err: null }, at: now + 400, ackToLandedMs: 400, following: false });
  const rejected = t.open('sig-rejected', RQ['rq-2']!, 1, 'solana', 'v2');
  rejected.final('upstream_rejected', 'rpc -32002: blockhash not found', now + 2);
  t.open('sig-queued', RQ['rq-3']!, 1, 'solana', 'v2');
  assert.equal(t.status('sig-landed', 1).forwards.length, 1);
  assert.equal(t.status('sig-landed', 1).compact, undefined);

  now += 15_000; // past retention, inside final retention
  const l = t.status('sig-landed', 1);
  assert.equal(l.state, 'landed');
  assert.equal(l.compact, true);
  assert.deepEqual(l.forwards, []);
  assert.equal(l.onchain?.slot, 77);
  assert.equal(l.onchain?.ack_to_landed_ms, 400);
  assert.equal(l.request_id, RQ['rq-1']);
  const r = t.status('sig-rejected', 1);
  assert.equal(r.state, 'upstream_rejected');
  assert.equal(r.reason, 'rpc -32002: blockhash not found');
  assert.equal(r.compact, true);
  assert.equal(t.status('sig-queued', 1).state, 'expired', 'a status that never ended is not kept');
  assert.equal(t.status('sig-landed', 2).state, 'unknown', "another account's read is as for an id never sent");
  assert.equal(t.size, 0, 'compact statuses are not held traces');

  now += 60_000; // past final retention
  assert.equal(t.status('sig-landed', 1).state, 'expired');
  assert.equal(t.status('sig-rejected', 1).state, 'expired');
});

test('compact statuses are bounded by the tombstone count, and off with final retention 0', () => {
  let now = 1_000_000;
  const t = new Tracker({ retentionMs: 1_000, finalRetentionMs: 3_600_000, maxEntries: 3, node: 'test', now: () => now });
  for (let i = 0; i < 6; i++) t.open(`tx-${i}`, nextRequestId(), 1, 'evm', 'jsonrpc').final('forwarded', null, now);
  now += 2_000;
  t.evict(now);
  const states = Array.from({ length: 6 }, (_, i) => t.status(`tx-${i}`, 1).state);
  assert.equal(states.filter((s) => s === 'forwarded').length, 3, states.join(','));
  assert.deepEqual(states.slice(3), ['forwarded', 'forwarded', 'forwarded'], 'the newest are kept');
  const off = new Tracker({ retentionMs: 1_000, maxEntries: 3, node: 'test', now: () => now });
  off.open('x', nextRequestId(), 1, 'evm', 'jsonrpc').final('forwarded', null, now);
  now += 2_000;
  assert.equal(off.status('x', 1).state, 'expired');
});

test('a trace that was not queued after all is forgotten at once', () => {
  const t = tracker();
  const tr = t.open('x', RQ['r-x']!, 1, 'solana', 'solana-v2');
  t.forget(tr);
  assert.equal(t.status('x', 1).state, 'unknown');
  assert.equal(t.status(RQ['r-x']!, 1).state, 'unknown');
  assert.equal(t.size, 0);
});

test("merging threads' answers: a first submission beats a duplicate, which beats expired, which beats unknown", () => {
  const t1 = tracker();
  const t2 = tracker();
  t1.duplicate('h', RQ['r2']!, 1, 'evm', 'jsonrpc');
  t2.open('h', RQ['r1']!, 1, 'evm', 'jsonrpc').final('forwarded', null, Date.now());
  const merged = mergeStatuses([[t1.status('h', 1), t1.status('zz', 1)], [t2.status('h', 1), t2.status('zz', 1)]]);
  assert.equal(merged[0]!.state, 'forwarded');
  assert.equal(merged[0]!.request_id, RQ['r1']!);
  assert.equal(merged[1]!.state, 'unknown');
});

test("another account's duplicate of a transaction leaves its sender's trace, batch and request id as they were", () => {
  const t = tracker();
  const rqA = nextRequestId();
  const a0 = t.open('0xa0', rqA, 1, 'evm', 'jsonrpc');
  const a1 = t.open('0xa1', rqA, 1, 'evm', 'jsonrpc');
  t.batch('BATCH1', rqA, 1, 'jsonrpc', ['0xa0', '0xa1']);
  const rqS = nextRequestId();
  t.open('Sig1', rqS, 1, 'solana', 'solana-v2').final('forwarded', null, Date.now());
  a0.final('forwarded', null, Date.now());
  a1.final('forwarded', null, Date.now());
  const ids = ['0xa0', '0xa1', 'BATCH1', rqA, 'Sig1', rqS];
  const before = ids.map((id) => t.status(id, 1));
  for (const s of before) assert.equal(s.state, 'forwarded', s.id);
  const rqB = nextRequestId();
  for (const id of ['0xa0', '0xa1', 'Sig1']) t.duplicate(id, rqB, 2, id === 'Sig1' ? 'solana' : 'evm', 'jsonrpc');
  assert.deepEqual(
    ids.map((id) => t.status(id, 1)),
    before,
  );
  for (const id of ['0xa0', 'Sig1', rqB]) {
    const s = t.status(id, 2);
    assert.equal(s.state, 'duplicate');
    assert.equal(s.request_id, rqB);
  }
  for (const id of ['BATCH1', rqA, rqS]) assert.equal(t.status(id, 2).state, 'unknown');
});

test('a full tracker takes from the account holding the most: a busy account past its share does not evict another account', () => {
  let now = 1_000_000;
  const t = tracker(() => now, 100, 600_000);
  const quiet = [1, 2, 3].flatMap((acct) => Array.from({ length: 10 }, (_, i) => {
    t.open(`q${acct}-${i}`, nextRequestId(), acct, 'solana', 'solana-v2');
    return [acct, `q${acct}-${i}`] as const;
  }));
  const busy: string[] = [];
  for (let i = 0; i < 1000; i++) {
    now++;
    const rq = nextRequestId();
    busy.push(rq);
    t.open(`b-${i}`, rq, 9, 'solana', 'solana-v2');
  }
  assert.equal(t.size, 100);
  for (const [acct, id] of quiet) assert.equal(t.status(id, acct).state, 'queued', `${id} kept`);
  assert.equal(t.heldBy(9), 70, 'the busy account keeps what the others leave');
  assert.equal(t.status('b-929', 9).state, 'expired', 'its own oldest left');
  assert.equal(t.status('b-999', 9).state, 'queued');
  assert.equal(t.status(busy[999]!, 9).state, 'queued', 'found by request id');
  // A quiet account may grow, taken from the busiest, until it holds as many.
  for (let i = 0; i < 30; i++) t.open(`q1-more-${i}`, nextRequestId(), 1, 'solana', 'solana-v2');
  assert.equal(t.heldBy(1), 40);
  assert.equal(t.heldBy(9), 40);
  assert.equal(t.status('q1-0', 1).state, 'queued');
  assert.equal(t.status('q2-0', 2).state, 'queued');
  // Then it loses its own oldest, not the others'.
  t.open('q1-last', nextRequestId(), 1, 'solana', 'solana-v2');
  assert.equal(t.heldBy(1), 40);
  assert.equal(t.status('q1-0', 1).state, 'expired');
  assert.equal(t.status('q2-0', 2).state, 'queued');
  // Retention still ends the oldest of everyone.
  now += 600_000;
  assert.equal(t.status('q2-0', 2).state, 'expired');
});

test('a request outlives its ring slot when its account keeps its share: still found by its request id', () => {
  const t = tracker(Date.now, 10);
  const rq = nextRequestId();
  t.open('kept', rq, 1, 'evm', 'jsonrpc');
  // 50 more requests of another account: the ring (10 slots) has gone round five times.
  for (let i = 0; i < 50; i++) t.open(`o-${i}`, nextRequestId(), 2, 'evm', 'jsonrpc');
  assert.equal(t.status('kept', 1).state, 'queued');
  assert.equal(t.status(rq, 1).state, 'queued');
  assert.equal(t.status(rq, 1).id, 'kept');
});

test('request ids are opaque: 32 hex characters; consecutive ones share no prefix, no order and about half their bits', () => {
  const ids = Array.from({ length: 1000 }, () => nextRequestId());
  for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/);
  assert.equal(new Set(ids.map((x) => x.slice(0, 12))).size, ids.length, 'no shared prefix');
  const sorted = [...ids].sort();
  assert.notDeepEqual(sorted, ids, 'not in the order made');
  let bits = 0;
  for (let i = 1; i < ids.length; i++) {
    const a = Buffer.from(ids[i - 1]!, 'hex');
    const b = Buffer.from(ids[i]!, 'hex');
    for (let j = 0; j < 16; j++) for (let x = a[j]! ^ b[j]!; x !== 0; x &= x - 1) bits++;
  }
  const mean = bits / (ids.length - 1);
  assert.ok(mean > 60 && mean < 68, `consecutive ids differ in ${mean} of 128 bits (random: 64)`);
  // Still found by the tracker; another thread's or a made-up id of the same shape is not.
  const t = tracker();
  t.open('z', ids[999]!, 1, 'evm', 'jsonrpc');
  assert.equal(t.status(ids[999]!, 1).id, 'z');
  assert.equal(t.status('0'.repeat(32), 1).state, 'unknown');
});
