/**
 * `limits.queue_max_ms` over HTTP: a transaction that waited longer than the
 * bound before its check could start is refused retry-safe (503 -32006 /
 * TXR_CAPACITY), never checked, so it is not a duplicate when resent; the
 * refusal is counted as `txrelay_shed_total{reason="expired"}`.
 *
 * A family A batch makes the wait real without timing tricks: its items are
 * submitted in one event-loop turn and checked one after another (no workers),
 * and with a 1 ms bound the items behind the first ~1 ms of checks wait past
 * it, on any machine.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';

let relay: TestRelay;
let upstream: TestUpstream;
let uuid: string;

before(async () => {
  upstream = await startUpstream();
  relay = await startTestRelay({
    workers: { threads: 0 },
    evm: { upstreams: { paid: [upstream.url], free: [upstream.url] } },
    limits: { ip_rps: 100000, ip_burst: 100000, queue_target_ms: 1, queue_max_ms: 1 },
  });
  uuid = (await relay.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 } })).uuid;
});

after(async () => {
  await relay?.stop();
  await upstream?.close();
});

async function rpc(method: string, params: unknown[]) {
  const r = await fetch(relay.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: r.status, headers: r.headers, json: (await r.json()) as any };
}

/**
 * Sends one transaction, again while it is refused retry-safe for capacity, as
 * a client should: alone in its turn it is usually checked inline, but on a
 * busy machine (the suite runs files in parallel) even a single check can
 * wait past a 1 ms bound.
 */
async function resend(hex: string) {
  for (let i = 0; ; i++) {
    const r = await rpc('eth_sendRawTransaction', [hex]);
    if (r.status !== 503 || r.json.error?.code !== -32006 || i === 50) return r;
    await new Promise((res) => setTimeout(res, 20));
  }
}

test('batch items that waited past limits.queue_max_ms are not-sent retry_safe -32006, and are fresh when resent', async () => {
  const txs = await Promise.all(Array.from({ length: 64 }, (_, i) => signed1559({ nonce: 5000 + i })));
  const r = await rpc('svc_sendRawTransactionBatch', txs.map((t) => t.hex));
  assert.equal(r.status, 202);
  const items = r.json.result.transactions as any[];
  const expired = items.filter((x) => x.status === 'not-sent');
  const queued = items.filter((x) => x.status === 'queued');
  assert.equal(expired.length + queued.length, 64, JSON.stringify(items.filter((x) => x.status !== 'not-sent' && x.status !== 'queued')));
  assert.ok(queued.length >= 1, 'the first item was checked inline');
  assert.ok(expired.length >= 1, '64 checks take longer than 1 ms');
  for (const x of expired) {
    assert.equal(x.retry, 'retry_safe');
    assert.equal(x.error.code, -32006);
    assert.match(x.error.message, /verification queue over its bound/);
  }
  assert.equal(await relay.metric('txrelay_shed_total', { reason: 'expired' }), expired.length);

  // Never checked, so never entered the dedup filter: sent again, it is accepted, not a duplicate.
  const again = await resend(txs[expired[0].tx_index].hex);
  assert.equal(again.status, 202, JSON.stringify(again.json));
  assert.equal(again.json.result, txs[expired[0].tx_index].hash);
  assert.equal(again.headers.get('x-svc-duplicate'), null);
  // A queued one is a duplicate, as before.
  const dup = await resend(txs[queued[0].tx_index].hex);
  assert.equal(dup.status, 202);
  assert.equal(dup.headers.get('x-svc-duplicate'), 'true');
});
