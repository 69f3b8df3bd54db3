/**
 * The WebSocket door (docs/protocol.md#websocket) end to end, with the `ws`
 * package as the client: transactions signed by real chain libraries go over
 * a real socket to a real relay and on to real upstream servers.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream, type UpstreamMode } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer } from '../helpers/solana.js';
import { WsClient as Client } from '../helpers/ws-client.js';

async function setup(t: TestContext, extra: Record<string, unknown> = {}, mode: UpstreamMode = 'ok'): Promise<{ r: TestRelay; up: TestUpstream }> {
  const up = await startUpstream({ mode });
  t.after(() => up.close());
  const r = await startTestRelay({ evm: { upstreams: { paid: [up.url], free: [up.url] } }, solana: { rpc_upstreams: [up.url] }, ...extra });
  t.after(() => r.stop());
  return { r, up };
}


const wsUrl = (r: TestRelay, query = ''): string => r.base.replace('http', 'ws') + '/ws' + query;

describe('the WebSocket door', { concurrency: true }, () => {
  test('the upgrade checks credentials first: none or an unknown key is a 401 before any upgrade; api-key, Bearer and ?api-key= open a socket', async (t) => {
    const { r } = await setup(t);
    const acct = await r.createAccount({ plan: 'paid' });
    await assert.rejects(Client.open(wsUrl(r)), (e: any) => e.status === 401 && /missing/i.test(e.body));
    await assert.rejects(Client.open(wsUrl(r), { headers: { 'api-key': '00000000-0000-4000-8000-000000000000' } }), (e: any) => e.status === 401);
    const ways: WebSocket.ClientOptions[] = [{ headers: { 'api-key': acct.uuid } }, { headers: { authorization: `Bearer ${acct.uuid}` } }];
    for (const opts of ways) {
      const c = await Client.open(wsUrl(r), opts);
      c.ws.close();
    }
    const q = await Client.open(wsUrl(r, `?api-key=${acct.uuid}`));
    const answer = await q.call('txrelay_getStatuses', [['nope']]);
    assert.equal(answer.result[0].state, 'unknown');
    q.ws.close();
    await eventually(async () => (await r.metric('txrelay_websockets_open')) === 0, 5000, 'sockets counted closed');
  });

  /** The HTTP body, with `svc` after it saying what HTTP's headers say (docs/protocol.md#websocket; parity in ws-svc.test.ts). */
  const sameBody = (socket: string, http: string): void => {
    const { svc } = JSON.parse(socket) as { svc: { request_id: string; duplicate: boolean } };
    assert.equal(svc.duplicate, true);
    assert.match(svc.request_id, /^[0-9a-f]{32}$/);
    assert.equal(socket, `${http.slice(0, -1)},"svc":${JSON.stringify(svc)}}`);
  };

  test('each family submits over one socket with the same answer bodies as HTTP, in the same dedup and lanes', async (t) => {
    const { r, up } = await setup(t);
    const acct = await r.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } });
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    t.after(() => c.ws.close());

    const sol = legacyTransfer();
    const b64 = Buffer.from(sol.bytes).toString('base64');
    const s1 = await c.call('sendTransaction', [b64, { encoding: 'base64' }]);
    assert.equal(s1.result, sol.signature);
    const evm = await signed1559();
    const e1 = await c.call('eth_sendRawTransaction', [evm.hex]);
    assert.equal(e1.result, evm.hash);
    await up.waitForCalls(2);

    // The same transactions again: duplicates on the socket and over HTTP, answered with one body.
    const e2 = await c.call('eth_sendRawTransaction', [evm.hex]);
    const http = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: e2.id, method: 'eth_sendRawTransaction', params: [evm.hex] }),
    });
    assert.equal(http.headers.get('x-svc-duplicate'), 'true');
    sameBody(c.rawOf(e2.id), await http.text());
    const s2 = await c.call('sendTransaction', [b64]);
    const httpSol = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': acct.uuid },
      body: JSON.stringify({ jsonrpc: '2.0', id: s2.id, method: 'sendTransaction', params: [b64] }),
    });
    sameBody(c.rawOf(s2.id), await httpSol.text());
    assert.equal(await r.metric('txrelay_duplicates_total'), 4);
    assert.equal(up.calls().length, 2, 'each transaction forwarded once');

    // The statuses name the socket's door.
    const st = await c.call('txrelay_getStatuses', [[sol.signature, evm.hash]]);
    assert.deepEqual(
      st.result.map((x: any) => x.door),
      ['ws', 'ws'],
    );
  });

  test('bad messages get the JSON-RPC error and the socket stays open; nothing of them is admitted', async (t) => {
    const { r, up } = await setup(t, { http: { max_body_bytes: 16384 } });
    const acct = await r.createAccount({ plan: 'paid' });
    const c = await Client.open(wsUrl(r), { headers: { authorization: `Bearer ${acct.uuid}` } });
    t.after(() => c.ws.close());
    const next = async (send: () => void): Promise<any> => {
      const n = c.messages.length;
      send();
      return c.until(() => c.messages[n]);
    };
    const parse = await next(() => c.ws.send('this is not json'));
    assert.equal(parse.error.code, -32700);
    assert.equal(parse.id, null);
    const binary = await next(() => c.ws.send(Buffer.from([0xff, 0x00, 0x13, 0x37])));
    assert.equal(binary.error.code, -32700);
    const big = await next(() => c.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'eth_sendRawTransaction', params: ['0x' + 'ab'.repeat(9000)] })));
    assert.equal(big.error.code, -32013, 'over http.max_body_bytes');
    const unknown = await c.call('eth_sign', []);
    assert.equal(unknown.error.code, -32601);
    const bad = await c.call('eth_sendRawTransaction', ['0x1234']);
    assert.ok(bad.error.code < 0);
    assert.equal(c.closed, null);
    // Still open, and still admitting.
    const ok = await c.call('eth_sendRawTransaction', [(await signed1559()).hex]);
    assert.match(ok.result, /^0x[0-9a-f]{64}$/);
    await up.waitForCalls(1);
    assert.equal(up.calls().length, 1);
    // Beyond twice the limit the socket itself refuses the message: uWS drops the connection, node:http closes with 1009.
    c.ws.send('x'.repeat(40_000));
    assert.ok([1006, 1009].includes((await c.closedWith()).code));
  });

  test('txrelay_subscribe pushes every state change of the account’s own transactions, whichever door they came through', async (t) => {
    const { r, up } = await setup(t, {}, { rejectIf: (call) => call.method === 'sendTransaction', message: () => 'Blockhash not found' });
    const a = await r.createAccount({ plan: 'paid' });
    const b = await r.createAccount({ plan: 'paid' });
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': a.uuid } });
    t.after(() => c.ws.close());
    const sub = await c.call('txrelay_subscribe', ['statuses']);
    assert.equal(typeof sub.result, 'number');

    const evm = await signed1559();
    const res = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${a.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [evm.hex] }),
    });
    const requestId = res.headers.get('x-svc-request-id');
    await res.arrayBuffer();
    const pushes = (id: string) => c.messages.filter((m) => m.method === 'txrelay_status' && m.params.result.id === id).map((m) => m.params);
    await c.until(() => (pushes(evm.hash).length >= 2 ? true : undefined), 5000, 'queued and forwarded');
    const [queued, forwarded] = pushes(evm.hash);
    assert.equal(queued.subscription, sub.result);
    assert.equal(queued.result.state, 'queued');
    assert.equal(queued.result.request_id, requestId);
    assert.equal(forwarded.result.state, 'forwarded');
    assert.equal(forwarded.result.forwards[0].upstream_result, 'accepted');

    // A Solana transaction the upstream rejects, sent on the socket itself: its answer comes before its first push.
    const sol = legacyTransfer();
    const sent = await c.call('sendTransaction', [Buffer.from(sol.bytes).toString('base64')]);
    assert.equal(sent.result, sol.signature);
    await c.until(() => (pushes(sol.signature).some((p) => p.result.state === 'upstream_rejected') ? true : undefined), 5000, 'upstream_rejected');
    const order = c.messages.findIndex((m) => m.id === sent.id);
    const firstPush = c.messages.findIndex((m) => m.method === 'txrelay_status' && m.params.result.id === sol.signature);
    assert.ok(order < firstPush, 'the answer first');
    assert.equal(pushes(sol.signature).at(-1)!.result.forwards[0].upstream_error.message, 'Blockhash not found');

    // Another account's transactions are not pushed here; after unsubscribing, none are.
    const other = await signed1559({ nonce: 2 });
    await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${b.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [other.hex] }),
    }).then((x) => x.arrayBuffer());
    assert.equal((await c.call('txrelay_unsubscribe', [sub.result])).result, true);
    assert.equal((await c.call('txrelay_unsubscribe', [sub.result])).result, false);
    const mine = await signed1559({ nonce: 3 });
    assert.ok((await c.call('eth_sendRawTransaction', [mine.hex])).result);
    await up.waitForCalls(4);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(pushes(other.hash).length, 0, "another account's transaction");
    assert.equal(pushes(mine.hash).length, 0, 'after unsubscribing');
  });

  test('a subscription is a WebSocket method: over HTTP it is method-not-found; a socket holds at most ws.max_subscriptions', async (t) => {
    const { r } = await setup(t, { ws: { max_subscriptions: 2 } });
    const acct = await r.createAccount();
    const http = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': acct.uuid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'txrelay_subscribe', params: ['statuses'] }),
    });
    assert.equal(((await http.json()) as any).error.code, -32601);
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    t.after(() => c.ws.close());
    assert.equal(typeof (await c.call('txrelay_subscribe', ['statuses'])).result, 'number');
    assert.equal(typeof (await c.call('txrelay_subscribe', ['statuses'])).result, 'number');
    const third = await c.call('txrelay_subscribe', ['statuses']);
    assert.equal(third.error.code, -32602);
    assert.match(third.error.message, /max_subscriptions/);
    assert.equal((await c.call('txrelay_subscribe', ['blocks'])).error.code, -32602);
  });

  test('a socket shares the account quota with HTTP: over it, a 429 is the JSON-RPC error', async (t) => {
    const { r } = await setup(t);
    const acct = await r.createAccount({ solana: { tps: 1, burst: 1 } });
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    t.after(() => c.ws.close());
    const http = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': acct.uuid }, body: legacyTransfer().bytes });
    assert.equal(http.status, 200);
    const over = await c.call('sendTransaction', [Buffer.from(legacyTransfer().bytes).toString('base64')]);
    assert.equal(over.error.code, -32005);
    assert.equal(over.error.data.retry, 'retry_safe');
  });

  test('a reader that leaves more than ws.max_buffered_bytes unread is closed with 4008, its buffer bounded', async (t) => {
    const { r } = await setup(t, { ws: { max_buffered_bytes: 65536 }, status: { reads_per_s: 100_000, reads_burst: 100_000 } });
    const acct = await r.createAccount();
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    // The client stops reading: the relay's answers pile up in the kernel, then in the socket's buffer.
    (c.ws as any)._socket.pause();
    const ids = Array.from({ length: 100 }, (_, i) => `not-a-transaction-id-${i}-${'x'.repeat(60)}`);
    const msg = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'txrelay_getStatuses', params: [ids] });
    for (let i = 0; i < 2000 && c.ws.readyState === WebSocket.OPEN; i++) {
      c.ws.send(msg);
      if (i % 50 === 49) await new Promise((res) => setTimeout(res, 5));
    }
    await eventually(async () => (await r.metric('txrelay_websockets_open')) === 0, 10_000, 'the relay to close the slow reader');
    (c.ws as any)._socket.resume();
    const closed = await c.closedWith(10_000);
    assert.equal(closed.code, 4008);
    assert.match(closed.reason, /send buffer over 65536 bytes/);
  });

  test('revoking an account closes its sockets with 4001; another account’s stay open', async (t) => {
    const { r } = await setup(t);
    const a = await r.createAccount();
    const b = await r.createAccount();
    const ca = await Client.open(wsUrl(r), { headers: { 'api-key': a.uuid } });
    const cb = await Client.open(wsUrl(r), { headers: { 'api-key': b.uuid } });
    t.after(() => cb.ws.close());
    assert.equal((await r.adminCall('DELETE', `/admin/accounts/${a.id}`)).status, 200);
    const closed = await ca.closedWith();
    assert.equal(closed.code, 4001);
    assert.equal(closed.reason, 'account revoked');
    assert.equal((await cb.call('txrelay_getStatuses', [['x']])).result[0].state, 'unknown');
    await assert.rejects(Client.open(wsUrl(r), { headers: { 'api-key': a.uuid } }), (e: any) => e.status === 401);
  });

  test('a stopping relay closes its sockets with 1001', async (t) => {
    const up = await startUpstream();
    t.after(() => up.close());
    const r = await startTestRelay({ solana: { rpc_upstreams: [up.url] } });
    const acct = await r.createAccount();
    const c = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    await r.stop();
    assert.equal((await c.closedWith()).code, 1001);
  });

  test('a socket silent past ws.idle_timeout_s, not even answering pings, is closed; one that answers stays', async (t) => {
    const { r } = await setup(t, { ws: { idle_timeout_s: 8 } });
    const acct = await r.createAccount();
    const mute = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid }, autoPong: false });
    const live = await Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } });
    t.after(() => live.ws.close());
    await mute.closedWith(30_000);
    assert.equal(live.closed, null);
    assert.equal((await live.call('txrelay_getStatuses', [['x']])).result[0].state, 'unknown');
  });

  test('a closed WebSocket gives its place in http.max_connections back', async (t) => {
    const { r } = await setup(t, { http: { max_connections: 8 } });
    const acct = await r.createAccount();
    for (let round = 0; round < 3; round++) {
      const open = await Promise.all(Array.from({ length: 6 }, () => Client.open(wsUrl(r), { headers: { 'api-key': acct.uuid } })));
      for (const c of open) c.ws.close();
      await Promise.all(open.map((c) => c.closedWith()));
    }
    await eventually(async () => (await r.metric('txrelay_websockets_open')) === 0, 5000, 'sockets closed');
    const res = await fetch(r.base + '/ping');
    assert.equal(res.status, 200, 'eighteen sockets came and went under a cap of eight');
  });
});
