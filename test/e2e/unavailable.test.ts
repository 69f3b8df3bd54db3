/**
 * A lane whose upstreams all fail (docs/protocol.md#forwarding) refuses new admissions before
 * sending anything (EVM -32001 503 retry_safe, Solana 503 "Upstream
 * Unavailable", Solana JSON-RPC -32001 retry_safe in an HTTP 200), and admits again once an upstream heals. Real relay, real
 * upstream server switched between failing and healthy.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';
import { SolanaClient } from '../../src/client/solana.js';

let relay: TestRelay | undefined;
let up: Awaited<ReturnType<typeof startUpstream>> | undefined;

after(async () => {
  await relay?.stop();
  await up?.close();
});

test('every upstream failing: 503 Upstream Unavailable / -32001 retry_safe before sending; healed: admitted again', async () => {
  up = await startUpstream({ mode: 'http-500' });
  relay = await startTestRelay({
    solana: { rpc_upstreams: [up.url] },
    evm: { upstreams: { free: [up.url] } },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  const sol = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const evm = (await relay.createAccount({ evm: { tps: 1000, burst: 1000 } })).uuid;
  const v2 = (bytes: Uint8Array) => fetch(relay!.base + '/v2', { method: 'POST', headers: { 'api-key': sol }, body: bytes });

  // Failures accumulate on the upstream until its breaker opens; admissions are 200 until then.
  let last: Response | undefined;
  await eventually(
    async () => {
      last = await v2(legacyTransfer().bytes);
      await new Promise((r) => setTimeout(r, 20));
      return last.status === 503;
    },
    10000,
    'the breaker to open',
  );
  assert.equal(await last!.text(), 'Upstream Unavailable');
  // Upstream failures never reach the submitter; they are counted per upstream.
  assert.ok((await relay.metric('txrelay_upstream_items_total', { lane: 'solana-single', outcome: 'http_error' })) >= 5);
  assert.equal(await relay.metric('txrelay_upstream_breaker_open', { lane: 'solana-single' }), 1);

  // The Solana JSON-RPC door answers as Solana RPC does: HTTP 200 with the error object, marked retry-safe
  // (retried until it meets the open breaker again: a half-open probe may be admitted in between).
  let rpcBody: any;
  await eventually(async () => {
    const r = await fetch(relay!.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': sol },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'sendTransaction', params: [Buffer.from(legacyTransfer().bytes).toString('base64'), { encoding: 'base64' }] }),
    });
    assert.equal(r.status, 200);
    rpcBody = await r.json();
    return rpcBody.error !== undefined;
  }, 10000, 'a JSON-RPC refusal');
  assert.equal(rpcBody.error.code, -32001);
  assert.equal(rpcBody.error.data.retry, 'retry_safe');
  // The client library reads that as not sent, safe to resend.
  const client = new SolanaClient({ url: relay.base, apiKey: sol });
  try {
    let out: Awaited<ReturnType<SolanaClient['sendTransaction']>> | undefined;
    let tx = legacyTransfer();
    await eventually(async () => (out = await client.sendTransaction((tx = legacyTransfer()).bytes)).kind !== 'accepted', 10000, 'a client refusal');
    assert.deepEqual(out, { kind: 'not-sent', signature: tx.signature, reason: rpcBody.error.message, retry: 'retry_safe' });
  } finally {
    await client.close();
  }

  let nonce = 0;
  const evmSend = async () =>
    fetch(relay!.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${evm}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [(await signed1559({ nonce: nonce++ })).hex] }),
    });
  let e = await evmSend();
  for (let i = 0; i < 50 && e.status !== 503; i++) {
    await new Promise((r) => setTimeout(r, 20));
    e = await evmSend();
  }
  assert.equal(e.status, 503);
  const body = (await e.json()) as any;
  assert.equal(body.error.code, -32001);
  assert.equal(body.error.data.retry, 'retry_safe');

  up.setMode('ok');
  await eventually(async () => (await v2(legacyTransfer().bytes)).status === 200, 10000, 'the lane to recover');
});
