/**
 * Graceful shutdown: once stopping, a node answers new work with 503 -32001
 * retry_safe ("not sent") on connections that are still open, while what it
 * already admitted is still forwarded (the lanes drain before it exits).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pool } from 'undici';
import { startTestRelay, eventually } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

test('a draining node refuses new work with 503 -32001 retry_safe and still forwards what it admitted', async () => {
  const up = await startUpstream({ mode: { delayMs: 300 } });
  const relay = await startTestRelay({ solana: { rpc_upstreams: [up.url] }, evm: { upstreams: { free: [up.url] } } });
  const uuid = (await relay.createAccount({ solana: { tps: 100, burst: 100 }, evm: { tps: 100, burst: 100 } })).uuid;
  const pool = new Pool(relay.base, { connections: 1 });
  try {
    const admitted = legacyTransfer();
    const first = await pool.request({ path: '/v2', method: 'POST', headers: { 'api-key': uuid }, body: Buffer.from(admitted.bytes) });
    assert.equal(first.statusCode, 200);
    await first.body.text();

    const stopping = relay.stop();
    const sol = await pool.request({ path: '/v2', method: 'POST', headers: { 'api-key': uuid }, body: Buffer.from(legacyTransfer().bytes) });
    assert.equal(sol.statusCode, 503);
    assert.equal(await sol.body.text(), 'Service Unavailable: shutting down');
    const evm = await pool.request({
      path: '/',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [(await signed1559({ nonce: 1 })).hex] }),
    });
    assert.equal(evm.statusCode, 503);
    const body = (await evm.body.json()) as any;
    assert.equal(body.error.code, -32001);
    assert.equal(body.error.data.retry, 'retry_safe');

    await stopping;
    // The transaction admitted before the stop reached the (slow) upstream before the node finished stopping.
    const b64 = Buffer.from(admitted.bytes).toString('base64');
    await eventually(() => up.calls().some((c) => (c.params as string[])[0] === b64), 1000, 'admitted transaction forwarded');
  } finally {
    await pool.destroy();
    await up.close();
  }
});
