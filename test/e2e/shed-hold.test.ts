/**
 * Held door sheds (`limits.shed_hold_ms`, docs/architecture.md) over real
 * sockets: a 503 for capacity decided at the door is written after its hold,
 * on every door that sheds there, while answers that are not door sheds (a
 * 404 here) go out at once.
 *
 * Overload cannot be produced on demand on a shared machine, so the door is
 * made to shed by closing the relay's verifier (a closed verifier admits
 * nothing: every arrival is over the bound), the one place this file reaches
 * inside the relay. Its queue is then empty, so the hold is
 * `limits.queue_target_ms` (set high here), capped by `limits.shed_hold_ms`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

const HOLD_MS = 150;
let relay: TestRelay;
let upstream: TestUpstream;
let uuid: string;

before(async () => {
  upstream = await startUpstream();
  relay = await startTestRelay({
    workers: { threads: 0 },
    solana: { rpc_upstreams: [upstream.url], bundle_upstreams: [upstream.url] },
    evm: { upstreams: { paid: [upstream.url], free: [upstream.url] } },
    limits: { queue_target_ms: 400, queue_max_ms: 500, shed_hold_ms: HOLD_MS },
  });
  uuid = (await relay.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 }, solana: { tps: 1000, burst: 1000, min_tip_lamports: 0 } })).uuid;
  await (relay.relay as unknown as { parts: { service: { verifier: { close(): Promise<void> } } } }).parts.service.verifier.close();
});

after(async () => {
  await relay?.stop();
  await upstream?.close();
});

async function timed(path: string, init: RequestInit): Promise<{ status: number; text: string; ms: number; at: number }> {
  const t0 = performance.now();
  const r = await fetch(relay.base + path, { method: 'POST', ...init });
  const text = await r.text();
  const at = performance.now();
  return { status: r.status, text, ms: at - t0, at };
}

test('a door shed on /v2 is held for its hold; an answer that is not a shed, asked for after it, is written first', async () => {
  const shed = timed('/v2', { headers: { 'api-key': uuid }, body: legacyTransfer().bytes });
  await new Promise((r) => setTimeout(r, 20));
  const notFound = await timed('/v2/no-such-door', { body: 'x' });
  const s = await shed;
  assert.equal(notFound.status, 404);
  assert.equal(s.status, 503, s.text);
  assert.equal(s.text, 'Server Busy', 'plain text for capacity');
  assert.ok(s.ms >= HOLD_MS - 10, `the shed answer came after ${s.ms.toFixed(0)} ms`);
  assert.ok(notFound.at < s.at, 'the 404 asked for 20 ms later was not held behind it');
});

test('the queue controller is asked before the credential is looked at: a shed arrival without one is a held 503, not a 401', async () => {
  // A shed is decided before anything of the request is read.
  const unauth = await timed('/v2', { body: legacyTransfer().bytes });
  assert.equal(unauth.status, 503, unauth.text);
  assert.ok(unauth.ms >= HOLD_MS - 10, `the shed answer came after ${unauth.ms.toFixed(0)} ms`);
});

test('JSON-RPC (family B text and family A JSON-RPC) and the EVM text door hold their door sheds too', async () => {
  const [rpcB, rpcA, text] = await Promise.all([
    timed('/', {
      headers: { 'content-type': 'application/json', 'api-key': uuid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [Buffer.from(legacyTransfer().bytes).toString('base64'), { encoding: 'base64' }] }),
    }),
    timed('/', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_sendRawTransaction', params: [(await signed1559()).hex] }),
    }),
    timed(`/v2/svc_send_raw_transaction?auth=${uuid}`, { headers: { 'content-type': 'text/plain' }, body: (await signed1559()).hex }),
  ]);
  for (const [name, r] of [['sendTransaction', rpcB], ['eth_sendRawTransaction', rpcA], ['plain text', text]] as const) {
    assert.equal(r.status, 503, `${name}: ${r.text}`);
    assert.ok(r.ms >= HOLD_MS - 10, `${name}: the shed answer came after ${r.ms.toFixed(0)} ms`);
  }
  assert.match(rpcA.text, /-32006/);
  assert.match(text.text, /-32006/);
});
