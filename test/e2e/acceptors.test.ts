/**
 * Several acceptor threads (`http.acceptors`): the main thread's listener
 * hands connections to the threads in turn, each runs every door over the
 * node's shared tables. What a client must not be able to tell: duplicates,
 * rate limits and account changes are per node whichever thread a request
 * reaches, an EVM batch's record is durable, and the node stops cleanly.
 * Real sockets, real signed transactions, a real uWS; skipped with one line
 * where no uWS build that can hand connections to threads loads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { RawConnection, header } from '../helpers/raw-http.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';

const probe = loadAcceptor('auto');
const app = probe.uws.App();
const skip =
  typeof app.getDescriptor !== 'function' || typeof app.addChildAppDescriptor !== 'function'
    ? `${probe.name} cannot hand connections to other threads: skipping the acceptor-thread tests`
    : false;
app.close();

const THREADS = 2;

/** `n` fresh connections: the listener hands them to the threads in turn, so they spread over every thread. */
async function connections(relay: TestRelay, n: number): Promise<RawConnection[]> {
  const port = relay.relay.ports.http;
  const all = Array.from({ length: n }, () => new RawConnection(port));
  await Promise.all(all.map((c) => c.connected()));
  return all;
}

/** One POST /v2 on `c`: its status and body. */
async function v2(c: RawConnection, key: string, tx: Uint8Array): Promise<{ status: number; body: string; duplicate: boolean }> {
  const before = c.responses().length;
  await c.write(Buffer.concat([Buffer.from(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Length: ${tx.length}\r\n\r\n`), tx]));
  await c.until(() => c.responses().length > before, 5000);
  const r = c.responses()[before]!;
  return { status: r.status, body: r.body, duplicate: header(r, 'x-svc-duplicate') === 'true' };
}

async function perThread(relay: TestRelay): Promise<number[]> {
  const counts: number[] = [];
  for (let i = 0; i < THREADS; i++) counts.push(await relay.metric('txrelay_acceptor_requests_total', { acceptor: String(i) }));
  return counts;
}

test('every thread serves: connections spread over them, and the node counts what each answered', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  t.after(() => relay.stop());
  assert.equal(relay.relay.acceptors, THREADS);
  const key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const conns = await connections(relay, 2 * THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  for (const c of conns) assert.equal((await v2(c, key, sol.legacyTransfer().bytes)).status, 200);
  const counts = await perThread(relay);
  assert.ok(counts.every((n) => n >= 1), `each thread answered some (${counts.join(', ')})`);
  assert.equal(await relay.metric('txrelay_admitted_total', { lane: 'solana-single' }), 2 * THREADS, 'the node\'s count is the sum of the threads\'');
  assert.equal(await relay.metric('txrelay_acceptor_requests_total', { acceptor: 'main' }), 0, 'the main thread only hands connections out');
});

test('a duplicate is one whichever thread saw the first: one dedup table per node', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  t.after(() => relay.stop());
  const key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const conns = await connections(relay, THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  const tx = sol.legacyTransfer();
  const answers = [];
  for (const c of conns) answers.push(await v2(c, key, tx.bytes));
  assert.deepEqual(
    answers.map((a) => [a.status, a.duplicate]),
    [[200, false], ...Array.from({ length: THREADS - 1 }, () => [200, true])],
  );
  for (const a of answers) assert.equal(JSON.parse(a.body).result, tx.signature);
  assert.deepEqual(await perThread(relay), Array(THREADS).fill(1), 'the same transaction reached every thread once');
  assert.equal(await relay.metric('txrelay_admitted_total', { lane: 'solana-single' }), 1);
});

test('an account\'s rate limit holds across threads: one bucket per account per node', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  t.after(() => relay.stop());
  const key = (await relay.createAccount({ solana: { tps: 0, burst: 3 } })).uuid;
  const conns = await connections(relay, 6);
  t.after(() => conns.forEach((c) => c.destroy()));
  const statuses = [];
  for (const c of conns) statuses.push((await v2(c, key, sol.legacyTransfer().bytes)).status);
  assert.deepEqual(statuses.filter((s) => s === 200).length, 3, `burst 3 over ${THREADS} threads: ${statuses.join(', ')}`);
  assert.deepEqual(statuses.filter((s) => s === 429).length, 3);
});

test('an account created, changed or revoked through the admin API is in effect on every thread when the API answers', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  t.after(() => relay.stop());
  const conns = await connections(relay, 2 * THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  for (let round = 0; round < 5; round++) {
    const acc = await relay.createAccount({ solana: { tps: 1000, burst: 1000 } });
    // No wait between the admin answer and the requests: every thread must know the key already.
    const created = await Promise.all(conns.map((c) => v2(c, acc.uuid, sol.legacyTransfer().bytes)));
    assert.deepEqual(created.map((a) => a.status), Array(conns.length).fill(200), `round ${round}: created`);
    assert.equal((await relay.adminCall('PATCH', `/admin/accounts/${acc.uuid}`, { solana: { tps: 0, burst: 1 } })).status, 200);
    const limited = await Promise.all(conns.map((c) => v2(c, acc.uuid, sol.legacyTransfer().bytes)));
    assert.ok(limited.filter((a) => a.status === 200).length <= 1, `round ${round}: the new burst of 1 holds at once`);
    assert.equal((await relay.adminCall('DELETE', `/admin/accounts/${acc.uuid}`)).status, 200);
    const revoked = await Promise.all(conns.map((c) => v2(c, acc.uuid, sol.legacyTransfer().bytes)));
    assert.deepEqual(revoked.map((a) => a.status), Array(conns.length).fill(401), `round ${round}: revoked`);
  }
});

test('an EVM batch answered by a thread has its receive record, outcomes included, in the node\'s store', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  t.after(() => relay.stop());
  const key = (await relay.createAccount({ evm: { tps: 100, burst: 100 } })).uuid;
  const [a, b] = await Promise.all([evm.signed1559({ nonce: 1 }), evm.signed1559({ nonce: 2 })]);
  for (let i = 0; i < THREADS; i++) {
    const r = await fetch(relay.base, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'svc_sendRawTransactionBatch', params: [a!.hex, b!.hex] }),
    });
    assert.equal(r.status, 202);
    const body = (await r.json()) as { result: { batch_id: string; transactions: { status: string; tx_hash: string }[] } };
    const want = i === 0 ? ['queued', 'queued'] : ['duplicate', 'duplicate'];
    assert.deepEqual(body.result.transactions.map((x) => x.status), want);
    const rec = await relay.adminCall('GET', `/admin/batches/${body.result.batch_id}`);
    assert.equal(rec.status, 200);
    assert.deepEqual(rec.json.tx_hashes, [a!.hash, b!.hash]);
    assert.deepEqual(rec.json.items.map((x: { status: string }) => x.status), want, 'the outcome is durable before the answer');
  }
});

test('UDP still goes through the main thread, and the node stops cleanly with connections open on every thread', { skip }, async (t) => {
  const relay = await startTestRelay({ http: { acceptors: THREADS } });
  const key = await relay.createAccount({ solana: { tps: 1000, burst: 1000 } });
  const conns = await connections(relay, 2 * THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  for (const c of conns) assert.equal((await v2(c, key.uuid, sol.legacyTransfer().bytes)).status, 200);
  const { UdpSender } = await import('../../src/client/solana.js');
  const udp = await UdpSender.create({ host: '127.0.0.1', port: relay.udpPort, apiKey: key.uuid });
  await udp.send(sol.legacyTransfer().bytes);
  await eventually(async () => (await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' })) === 1, 5000, 'the datagram');
  await udp.close();
  await relay.stop();
  // The clients see each close when their own sockets' events run, after stop() has resolved.
  await eventually(() => conns.every((c) => c.closed), 5000, 'every thread closed its connections');
});

test('a status read on any thread finds a transaction admitted on any other', { skip }, async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const relay = await startTestRelay({ http: { acceptors: THREADS }, solana: { rpc_upstreams: [up.url] } });
  t.after(() => relay.stop());
  const key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const conns = await connections(relay, 2 * THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  const sigs: string[] = [];
  for (const c of conns) {
    const tx = sol.legacyTransfer();
    assert.equal((await v2(c, key, tx.bytes)).status, 200);
    sigs.push(tx.signature);
  }
  await up.waitForCalls(sigs.length);
  const body = JSON.stringify({ ids: sigs });
  // Every connection, so every thread, reads every transaction: its own and the others'.
  for (const c of conns) {
    const before = c.responses().length;
    await c.write(`POST /v1/status HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await c.until(() => c.responses().length > before, 5000);
    const r = c.responses()[before]!;
    assert.equal(r.status, 200);
    const states = (JSON.parse(r.body) as { statuses: { id: string; state: string }[] }).statuses;
    assert.deepEqual(
      states.map((s) => s.id),
      sigs,
    );
    for (const s of states) assert.notEqual(s.state, 'unknown', `${s.id} is known on every thread`);
  }
});

test('a WebSocket subscribed on one thread is pushed the changes of transactions admitted on every thread, and by UDP', { skip }, async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const relay = await startTestRelay({ http: { acceptors: THREADS }, solana: { rpc_upstreams: [up.url] } });
  t.after(() => relay.stop());
  const key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(relay.base.replace('http', 'ws') + '/ws', { headers: { 'api-key': key } });
  const got: any[] = [];
  ws.on('message', (d) => got.push(JSON.parse(d.toString())));
  await new Promise((r) => ws.once('open', r));
  t.after(() => ws.close());
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'txrelay_subscribe', params: ['statuses'] }));
  await eventually(() => got.some((m) => m.id === 1), 5000, 'the subscription');
  // Subscriptions reach the other threads through the main thread: give that message its turn.
  await new Promise((r) => setTimeout(r, 100));
  const conns = await connections(relay, 2 * THREADS);
  t.after(() => conns.forEach((c) => c.destroy()));
  const sigs: string[] = [];
  for (const c of conns) {
    const tx = sol.legacyTransfer();
    assert.equal((await v2(c, key, tx.bytes)).status, 200);
    sigs.push(tx.signature);
  }
  const { UdpSender } = await import('../../src/client/solana.js');
  const udp = await UdpSender.create({ host: '127.0.0.1', port: relay.udpPort, apiKey: key });
  const dgram = sol.legacyTransfer();
  await udp.send(dgram.bytes);
  await udp.close();
  sigs.push(dgram.signature);
  const forwarded = (id: string) => got.some((m) => m.method === 'txrelay_status' && m.params.result.id === id && m.params.result.state === 'forwarded');
  await eventually(() => sigs.every(forwarded), 5000, 'a forwarded push for every transaction');
  assert.deepEqual(new Set(await perThread(relay)).has(0), false, 'the connections reached every thread');
});
