/**
 * A relay with no upstream (`npm start` on embedded defaults) admits and
 * drops; its answers must say so rather than claim a forward
 * (docs/protocol.md#dry-run). A lane that has an upstream answers as usual.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../helpers/relay.js';
import { startHalfDryRelay } from '../helpers/dry-lanes.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer } from '../helpers/solana.js';

const DRY = 'Accepted, not forwarded: this node has no upstream for it (dry run)';
let nonce = 0;

// The paid EVM lane forwards; the free lane and both Solana lanes run dry.
const { relay, free, paid, close } = await startHalfDryRelay();
after(close);

const rpc = (uuid: string, method: string, params: unknown) =>
  fetch(relay.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });

test('EVM on a lane with no upstream: 202 queued, a message that says it will not be forwarded, x-svc-dry-run', async () => {
  const before = await relay.metric('txrelay_lane_discarded_total', { lane: 'evm-free' });
  const tx = await signed1559({ nonce: nonce++ });
  const r = await rpc(free, 'eth_sendRawTransaction', [tx.hex]);
  assert.equal(r.status, 202);
  assert.deepEqual(await r.json(), { jsonrpc: '2.0', id: 1, result: tx.hash, message: DRY });
  assert.equal(r.headers.get('x-svc-dry-run'), 'true');
  assert.equal(r.headers.get('x-svc-submission-state'), 'queued');
  assert.equal(await relay.metric('txrelay_lane_discarded_total', { lane: 'evm-free' }), before + 1);

  const text = await fetch(`${relay.base}/v2/svc_send_raw_transaction?auth=${free}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: (await signed1559({ nonce: nonce++ })).hex,
  });
  assert.equal(text.status, 202);
  assert.equal(((await text.json()) as { message: string }).message, DRY);
  assert.equal(text.headers.get('x-svc-dry-run'), 'true');
  // A browser may read it (the plain-text door's CORS list).
  assert.match(text.headers.get('access-control-expose-headers')!, /x-svc-dry-run/);

  const batch = await rpc(free, 'svc_sendRawTransactionBatch', [(await signed1559({ nonce: nonce++ })).hex]);
  assert.equal(batch.status, 202);
  const body = (await batch.json()) as { result: { transactions: { status: string; message: string }[] } };
  assert.equal(body.result.transactions[0]!.status, 'queued');
  assert.equal(body.result.transactions[0]!.message, DRY);
  assert.equal(batch.headers.get('x-svc-dry-run'), 'true');
});

test('a lane with an upstream claims the forward and has no dry-run header', async () => {
  const tx = await signed1559({ nonce: nonce++ });
  const r = await rpc(paid, 'eth_sendRawTransaction', [tx.hex]);
  assert.equal(r.status, 202);
  assert.equal(((await r.json()) as { message: string }).message, 'Successfully forwarded');
  assert.equal(r.headers.get('x-svc-dry-run'), null);
  // Its forward is timed per upstream (txrelay_upstream_request_seconds, docs/operations.md#metrics).
  await eventually(async () => (await relay.metric('txrelay_upstream_request_seconds_count', { lane: 'evm-paid' })) >= 1, 5000, 'the forward to be timed');
});

test('Solana on a lane with no upstream: the signature, with x-svc-dry-run', async () => {
  const tx = legacyTransfer();
  const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': free }, body: tx.bytes });
  assert.equal(r.status, 200);
  assert.equal(((await r.json()) as { result: string }).result, tx.signature);
  assert.equal(r.headers.get('x-svc-dry-run'), 'true');
});
