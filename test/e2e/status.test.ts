/**
 * The status API (docs/protocol.md#status) end to end: transactions signed
 * by real chain libraries go through a real relay to real upstream servers
 * that accept, reject with a JSON-RPC error, or hang; their statuses are read
 * over `GET /v1/status/{id}`, `POST /v1/status` and `txrelay_getStatuses`.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream, type UpstreamMode } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';

async function setup(t: TestContext, mode: UpstreamMode = 'ok', extra: Record<string, unknown> = {}): Promise<{ r: TestRelay; up: TestUpstream }> {
  const up = await startUpstream({ mode });
  t.after(() => up.close());
  const r = await startTestRelay({ evm: { upstreams: { paid: [up.url], free: [up.url] } }, solana: { rpc_upstreams: [up.url] }, ...extra });
  t.after(() => r.stop());
  return { r, up };
}

async function sendEvm(r: TestRelay, key: string, hex: string): Promise<Response> {
  return fetch(r.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [hex] }),
  });
}

async function status(r: TestRelay, key: string, id: string, header: 'api-key' | 'bearer' = 'bearer'): Promise<any> {
  const headers: Record<string, string> = header === 'bearer' ? { authorization: `Bearer ${key}` } : { 'api-key': key };
  const res = await fetch(`${r.base}/v1/status/${encodeURIComponent(id)}`, { headers });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

describe('request statuses', { concurrency: true }, () => {
  test('an EVM transaction an upstream accepts reads queued, then forwarded, with the attempt; by hash and by request id', async (t) => {
    const { r, up } = await setup(t);
    const acct = await r.createAccount({ plan: 'paid' });
    const tx = await signed1559();
    const res = await sendEvm(r, acct.uuid, tx.hex);
    assert.equal(res.status, 202);
    const requestId = res.headers.get('x-svc-request-id');
    assert.ok(requestId, 'the acknowledgement names its request');
    await res.arrayBuffer();
    await up.waitForCalls(1);
    await eventually(async () => (await status(r, acct.uuid, tx.hash)).state === 'forwarded', 5000, 'forwarded');
    const s = await status(r, acct.uuid, tx.hash);
    assert.equal(s.id, tx.hash);
    assert.equal(s.request_id, requestId);
    assert.equal(s.chain, 'evm');
    assert.equal(s.door, 'jsonrpc');
    assert.equal(s.reason, null);
    assert.deepEqual(
      s.events.map((e: any) => e.stage),
      ['received', 'forwarded'],
    );
    assert.equal(s.forwards.length, 1);
    const f = s.forwards[0];
    assert.equal(f.upstream, new URL(up.url).origin, 'the upstream by origin only');
    assert.equal(f.attempt, 1);
    assert.equal(f.http_status, 200);
    assert.equal(f.upstream_result, 'accepted');
    assert.ok(f.latency_ms >= 0);
    // The same status under the request id, and with the other family's header.
    assert.deepEqual(await status(r, acct.uuid, requestId!), s);
    assert.deepEqual(await status(r, acct.uuid, tx.hash, 'api-key'), s);
  });

  test('a Solana transaction an upstream rejects reads upstream_rejected with the upstream error; POST /v1/status and txrelay_getStatuses answer in order', async (t) => {
    const { r } = await setup(t, { rejectIf: () => true, message: () => 'Blockhash not found' });
    const acct = await r.createAccount();
    const tx = legacyTransfer();
    const res = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': acct.uuid }, body: tx.bytes });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    await eventually(async () => (await status(r, acct.uuid, tx.signature, 'api-key')).state !== 'queued', 5000, 'an end');
    const s = await status(r, acct.uuid, tx.signature, 'api-key');
    assert.equal(s.state, 'upstream_rejected');
    assert.equal(s.door, 'solana-v2');
    assert.equal(s.forwards[0].upstream_error.message, 'Blockhash not found');
    assert.equal(typeof s.forwards[0].upstream_error.code, 'number');

    const many = await fetch(r.base + '/v1/status', {
      method: 'POST',
      headers: { 'api-key': acct.uuid, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: ['nope', tx.signature] }),
    });
    assert.equal(many.status, 200);
    const body = (await many.json()) as any;
    assert.deepEqual(
      body.statuses.map((x: any) => [x.id, x.state]),
      [
        ['nope', 'unknown'],
        [tx.signature, 'upstream_rejected'],
      ],
    );
    const rpc = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'api-key': acct.uuid, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'txrelay_getStatuses', params: [[tx.signature, 'nope']] }),
    });
    const answer = (await rpc.json()) as any;
    assert.equal(answer.id, 7);
    assert.deepEqual(
      answer.result.map((x: any) => x.state),
      ['upstream_rejected', 'unknown'],
    );
  });

  test("another account's transaction answers exactly as one never sent; a duplicate names the first request", async (t) => {
    const { r } = await setup(t);
    const a = await r.createAccount({ plan: 'paid' });
    const b = await r.createAccount({ plan: 'paid' });
    const tx = await signed1559();
    const first = await sendEvm(r, a.uuid, tx.hex);
    const firstId = first.headers.get('x-svc-request-id');
    await first.arrayBuffer();
    const mine = await status(r, a.uuid, tx.hash);
    assert.notEqual(mine.state, 'unknown');
    const theirs = await status(r, b.uuid, tx.hash);
    const never = await status(r, b.uuid, '0x' + 'ab'.repeat(32));
    assert.deepEqual({ ...theirs, id: null }, { ...never, id: null });
    assert.equal(theirs.state, 'unknown');
    assert.equal((await status(r, b.uuid, firstId!)).state, 'unknown', 'nor by its request id');

    const again = await sendEvm(r, a.uuid, tx.hex);
    assert.equal(again.headers.get('x-svc-duplicate'), 'true');
    const dupId = again.headers.get('x-svc-request-id')!;
    await again.arrayBuffer();
    const dup = await status(r, a.uuid, dupId);
    assert.equal(dup.state, 'duplicate');
    // With acceptor threads the first request may have gone through another thread, whose trace this one cannot name.
    if (process.env['TXRELAY_TEST_ACCEPTORS'] === undefined) assert.equal(dup.reason, `duplicate of request ${firstId}`);
    else assert.match(dup.reason, new RegExp(`^duplicate of request ${firstId}$|duplicate window`));
    assert.notEqual((await status(r, a.uuid, tx.hash)).state, 'duplicate', 'the hash still reads the first submission');
  });

  test('an upstream that hangs leaves the transaction queued with an attempt in flight, then failed when it expires; no upstream at all reads dropped', async (t) => {
    const { r } = await setup(t, 'hang');
    const acct = await r.createAccount({ plan: 'paid' });
    const tx = await signed1559();
    (await sendEvm(r, acct.uuid, tx.hex)).body?.cancel();
    await eventually(async () => (await status(r, acct.uuid, tx.hash)).forwards.length > 0, 5000, 'an attempt');
    const s = await status(r, acct.uuid, tx.hash);
    assert.equal(s.state, 'queued');
    assert.equal(s.forwards[0].latency_ms, null, 'no answer yet');

    const dry = await startTestRelay();
    t.after(() => dry.stop());
    const k = await dry.createAccount({ plan: 'paid' });
    const tx2 = await signed1559();
    (await sendEvm(dry, k.uuid, tx2.hex)).body?.cancel();
    const d = await status(dry, k.uuid, tx2.hash);
    assert.equal(d.state, 'dropped');
    assert.match(d.reason, /no upstream/);
  });

  test('status reads are authenticated, bounded and limited on their own', async (t) => {
    const { r } = await setup(t, 'ok', { status: { reads_per_s: 1, reads_burst: 2 } });
    // Solana's burst of 5 is the refusals bucket's (docs/protocol.md#rate-limits): room for the three refused bodies below.
    const acct = await r.createAccount({ plan: 'paid', evm: { tps: 1, burst: 1 }, solana: { enabled: true, tps: 5, burst: 5 } });
    assert.equal((await fetch(`${r.base}/v1/status/x`)).status, 401);
    assert.equal((await fetch(`${r.base}/v1/status/x`, { headers: { authorization: `Bearer ${crypto.randomUUID()}` } })).status, 401);
    const post = (body: string) =>
      fetch(r.base + '/v1/status', { method: 'POST', headers: { authorization: `Bearer ${acct.uuid}`, 'content-type': 'application/json' }, body });
    const tooMany = await post(JSON.stringify({ ids: Array.from({ length: 101 }, (_, i) => String(i)) }));
    assert.equal(tooMany.status, 400);
    assert.match(((await tooMany.json()) as any).error.message, /1 to 100 ids/);
    assert.equal((await post('not json')).status, 400);
    assert.equal((await post(JSON.stringify({ ids: [42] }))).status, 400);
    // Refused requests read nothing; the burst of 2 reads is still whole, then the third waits.
    const get = () => fetch(`${r.base}/v1/status/x`, { headers: { authorization: `Bearer ${acct.uuid}` } });
    // Sent together, so that no token comes back between them however slow this machine is.
    const reads = await Promise.all([get(), get(), get()]);
    assert.deepEqual(reads.map((x) => x.status).sort(), [200, 200, 429]);
    const limited = reads.find((x) => x.status === 429)!;
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    // Submission quota is untouched by reads: the account's one EVM credit is still there.
    const tx = await signed1559();
    assert.equal((await sendEvm(r, acct.uuid, tx.hex)).status, 202);
  });

  test("another account resubmitting a public transaction changes nothing of what its sender reads, by any id", async (t) => {
    const { r, up } = await setup(t);
    const a = await r.createAccount({ plan: 'paid' });
    const b = await r.createAccount({ plan: 'paid' });
    // A: one Solana transaction and an EVM batch of two; every id kind it was given.
    const sol = legacyTransfer();
    const solRes = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': a.uuid }, body: sol.bytes });
    assert.equal(solRes.status, 200);
    const solRequest = solRes.headers.get('x-svc-request-id')!;
    await solRes.arrayBuffer();
    const txs = [await signed1559({ nonce: 4100 }), await signed1559({ nonce: 4101 })];
    const batchRes = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${a.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: txs.map((x) => x.hex) }),
    });
    assert.equal(batchRes.status, 202, await batchRes.clone().text());
    const batchRequest = batchRes.headers.get('x-svc-request-id')!;
    const batchId = ((await batchRes.json()) as any).result.batch_id as string;
    await up.waitForCalls(3);
    const aIds = [sol.signature, solRequest, txs[0]!.hash, txs[1]!.hash, batchId, batchRequest];
    const readAll = async (key: string, ids: string[]): Promise<any[]> => {
      const res = await fetch(`${r.base}/v1/status`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ ids }) });
      assert.equal(res.status, 200);
      return ((await res.json()) as any).statuses;
    };
    await eventually(async () => (await readAll(a.uuid, aIds)).every((s) => s.state === 'forwarded'), 5000, "A's statuses forwarded");
    const before = await readAll(a.uuid, aIds);

    // B resubmits the same signed bytes, single and as a batch: B's duplicate answers.
    const bSol = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': b.uuid }, body: sol.bytes });
    assert.equal(bSol.status, 200);
    assert.equal(bSol.headers.get('x-svc-duplicate'), 'true');
    const bSolRequest = bSol.headers.get('x-svc-request-id')!;
    await bSol.arrayBuffer();
    const bEvm = await sendEvm(r, b.uuid, txs[0]!.hex);
    assert.equal(bEvm.headers.get('x-svc-duplicate'), 'true');
    const bEvmRequest = bEvm.headers.get('x-svc-request-id')!;
    await bEvm.arrayBuffer();
    const bBatch = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${b.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: txs.map((x) => x.hex) }),
    });
    assert.equal(bBatch.status, 202);
    const bBatchId = ((await bBatch.json()) as any).result.batch_id as string;

    // A reads exactly what it read before, by every id kind.
    assert.deepEqual(await readAll(a.uuid, aIds), before);
    for (const s of before) assert.equal(s.state, 'forwarded', s.id);
    // B reads its own history: duplicates, never A's requests or upstream attempts.
    const mine = await readAll(b.uuid, [sol.signature, bSolRequest, txs[0]!.hash, bEvmRequest, txs[1]!.hash]);
    for (const s of mine) {
      assert.equal(s.state, 'duplicate', s.id);
      assert.notEqual(s.request_id, solRequest);
      assert.notEqual(s.request_id, batchRequest);
      assert.deepEqual(s.forwards, []);
      assert.doesNotMatch(s.reason, new RegExp(`${solRequest}|${batchRequest}`));
    }
    const bb = await status(r, b.uuid, bBatchId);
    assert.notEqual(bb.state, 'unknown');
    assert.deepEqual(bb.forwards, []);
    // A's ids that B never held read unknown to B.
    for (const id of [solRequest, batchId, batchRequest]) assert.equal((await status(r, b.uuid, id)).state, 'unknown', id);
  });

  test("one account's flood past status.max_tracked leaves another account's statuses; request ids stay opaque and found", async (t) => {
    const { r } = await setup(t, 'ok', { status: { max_tracked: 1000 } });
    const a = await r.createAccount();
    const b = await r.createAccount({ solana: { tps: 100_000, burst: 100_000 } });
    const from = newKeypair();
    let lamports = 1000;
    const send = async (key: string): Promise<{ signature: string; requestId: string }> => {
      const tx = legacyTransfer({ from, lamports: lamports++ });
      let res = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': key }, body: tx.bytes });
      // A loaded host may shed some of the flood (retry-safe, nothing queued): sent again until admitted.
      for (let i = 0; i < 50 && res.status === 503; i++) {
        await res.arrayBuffer();
        await new Promise((ok) => setTimeout(ok, 20));
        res = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': key }, body: tx.bytes });
      }
      assert.equal(res.status, 200, await res.clone().text());
      await res.arrayBuffer();
      return { signature: tx.signature, requestId: res.headers.get('x-svc-request-id')! };
    };
    const quiet = [await send(a.uuid), await send(a.uuid)];
    const flood: { signature: string; requestId: string }[] = [];
    for (let i = 0; i < 60; i++) flood.push(...(await Promise.all(Array.from({ length: 20 }, () => send(b.uuid)))));
    quiet.push(await send(a.uuid));
    for (const q of quiet) {
      assert.match(q.requestId, /^[0-9a-f]{32}$/);
      for (const id of [q.signature, q.requestId]) assert.notEqual((await status(r, a.uuid, id, 'api-key')).state, 'expired', `A's ${id} kept`);
    }
    // A's request ids around B's 1,200 requests say nothing of them: no shared prefix, not a counter.
    assert.notEqual(quiet[1]!.requestId.slice(0, 8), quiet[2]!.requestId.slice(0, 8));
    // The busy account lost its own oldest: only its compact form is left (status.final_retention_s), its attempts gone.
    if (process.env['TXRELAY_TEST_ACCEPTORS'] === undefined) {
      const oldest = await status(r, b.uuid, flood[0]!.signature, 'api-key');
      assert.equal(oldest.compact, true);
      assert.deepEqual(oldest.forwards, []);
    }
    assert.notEqual((await status(r, b.uuid, flood.at(-1)!.signature, 'api-key')).state, 'expired');
  });
});
