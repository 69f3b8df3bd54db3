/**
 * The status API through both clients, against a real in-process relay with
 * real upstream servers: forward outcomes by request id, hash and signature,
 * an upstream's rejection, unknown and other accounts' ids, chunking past
 * 100 ids, and waitForward's timeout and transport errors.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import bs58 from 'bs58';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type UpstreamCall } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { freePort } from '../../bench/e2e/relay.js';
import { legacyTransfer, tipTransfer } from '../helpers/solana.js';
import { EvmClient, SolanaClient, StatusError, MAX_STATUS_IDS, waitForwardAll, type StatusObject } from '../../src/client/index.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

let relay: TestRelay;
let evmUp: Upstream;
let slowUp: Upstream;
let solUp: Upstream;
let bundleUp: Upstream;
let key: string;
let other: string;
let slowKey: string;
let evm: EvmClient;
let sol: SolanaClient;
let nonce = 0;
const TIP = Keypair.generate().publicKey.toBase58();
/** Transactions the EVM and Solana upstreams refuse, by their hex or base64. */
const refused = new Set<string>();
const refuse = (c: UpstreamCall) => typeof c.params?.[0] === 'string' && refused.has(c.params[0]);
const fresh = () => signed1559({ nonce: nonce++ });
const randomHash = () => '0x' + randomBytes(32).toString('hex');

before(async () => {
  evmUp = await startUpstream({ mode: { rejectIf: refuse } });
  // The paid lane answers after 600 ms: long enough to see `queued`, short of the 2 s time-out.
  slowUp = await startUpstream({ mode: { delayMs: 600 } });
  solUp = await startUpstream({ mode: { rejectIf: refuse } });
  bundleUp = await startUpstream();
  relay = await startTestRelay({
    evm: { upstreams: { free: [evmUp.url], paid: [slowUp.url] } },
    solana: { rpc_upstreams: [solUp.url], bundle_upstreams: [bundleUp.url], tip_accounts: [TIP] },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  const limits = { evm: { tps: 1000, burst: 1000 }, solana: { tps: 1000, burst: 1000, min_tip_lamports: 0 } };
  key = (await relay.createAccount(limits)).uuid;
  other = (await relay.createAccount(limits)).uuid;
  slowKey = (await relay.createAccount({ ...limits, plan: 'paid' })).uuid;
  evm = new EvmClient({ url: relay.base, uuid: key, heartbeatMs: 0 });
  sol = new SolanaClient({ url: relay.base, apiKey: key, heartbeatMs: 0 });
});

after(async () => {
  await evm?.close();
  await sol?.close();
  await relay?.stop();
  await Promise.all([evmUp, slowUp, solUp, bundleUp].map((u) => u?.close()));
});

/** Nothing of the transaction shows; `node` names the answering node. */
function assertUnknown(s: StatusObject, id: string): void {
  assert.equal(s.id, id);
  assert.equal(s.state, 'unknown');
  for (const f of ['request_id', 'chain', 'door', 'received_at', 'reason'] as const) assert.equal(s[f], null, `${f} of an unknown id`);
  assert.deepEqual(s.events, []);
  assert.deepEqual(s.forwards, []);
}

test('an accepted EVM transaction reaches forwarded, by request id and by hash', async () => {
  const tx = await fresh();
  const out = await evm.sendRawTransaction(tx.hex);
  assert.equal(out.kind, 'queued');
  assert.ok(out.requestId, 'the acknowledgement carries x-svc-request-id');
  const s = await evm.waitForward(out.requestId!, { timeout: 5000 });
  assert.equal(s.timedOut, false);
  assert.equal(s.state, 'forwarded');
  assert.equal(s.id, tx.hash, 'the transaction\'s own id, though asked by request id');
  assert.equal(s.request_id, out.requestId);
  assert.equal(s.chain, 'evm');
  assert.ok(s.events.length > 0, 'events recorded');
  assert.ok(s.forwards.length >= 1);
  assert.equal(s.forwards[0]!.attempt, 1);
  assert.equal(s.forwards[0]!.http_status, 200);
  assert.equal(typeof s.forwards[0]!.latency_ms, 'number');
  assert.ok('upstream_result' in s.forwards[0]!);
  const [byHash] = await evm.status([tx.hash]);
  assert.equal(byHash!.state, 'forwarded');
  assert.equal(byHash!.request_id, out.requestId);
});

test('the plain-text door and a batch also give request ids; a batch id has a status', async () => {
  const t = await fresh();
  const text = await evm.sendRawTransaction(t.hex, { via: 'text' });
  assert.equal(text.kind, 'queued');
  assert.equal(typeof text.requestId, 'string');
  const [a, b] = [await fresh(), await fresh()];
  const batch = await evm.sendBatch([a.hex, b.hex]);
  assert.equal(batch.requestIds?.length, 1);
  assert.equal((await evm.waitForward(text.requestId!, { timeout: 5000 })).state, 'forwarded');
  assert.equal((await evm.waitForward(a.hash, { timeout: 5000 })).state, 'forwarded');
  const [byBatch, byBatchRequest] = await evm.status([batch.batchId!, batch.requestIds![0]!]);
  assert.notEqual(byBatch!.state, 'unknown');
  assert.deepEqual(byBatch!.items, [a.hash, b.hash]);
  assert.equal(byBatchRequest!.id, batch.batchId);
});

test('an accepted Solana transaction and a bundle reach forwarded, by signature and request id', async () => {
  const tx = legacyTransfer();
  const out = await sol.sendTransaction(tx.bytes);
  assert.equal(out.kind, 'accepted');
  assert.equal(typeof out.requestId, 'string');
  const s = await sol.waitForward(tx.signature, { timeout: 5000 });
  assert.equal(s.state, 'forwarded');
  assert.equal(s.request_id, out.requestId);
  const raw = legacyTransfer();
  const r = await sol.sendRaw(raw.bytes);
  assert.equal((await sol.waitForward(r.requestId!, { timeout: 5000 })).state, 'forwarded');
  const txs = [legacyTransfer(), tipTransfer(TIP, 10)];
  const bundle = await sol.sendBundle(txs.map((t) => t.bytes));
  assert.equal(bundle.kind, 'accepted');
  assert.equal(typeof bundle.requestId, 'string');
  assert.equal((await sol.waitForward(txs[0]!.signature, { timeout: 5000 })).state, 'forwarded');
});

test('a duplicate acknowledgement has its own request id, whose state is duplicate', async () => {
  const tx = await fresh();
  const first = await evm.sendRawTransaction(tx.hex);
  const again = await evm.sendRawTransaction(tx.hex);
  assert.equal(again.kind, 'duplicate');
  assert.equal(typeof again.requestId, 'string');
  assert.notEqual(again.requestId, first.requestId);
  const s = await evm.waitForward(again.requestId!, { timeout: 5000 });
  assert.equal(s.state, 'duplicate');
  // With acceptor threads the first request may have gone through another thread, whose trace this one cannot name.
  if (process.env['TXRELAY_TEST_ACCEPTORS'] === undefined) assert.match(s.reason ?? '', new RegExp(first.requestId!), 'the reason names the first request');
  else assert.match(s.reason ?? '', new RegExp(`${first.requestId!}|duplicate window`));
});

test('an upstream that rejects gives upstream_rejected with its error', async () => {
  const tx = await fresh();
  refused.add(tx.hex);
  const out = await evm.sendRawTransaction(tx.hex);
  assert.equal(out.kind, 'queued');
  const s = await evm.waitForward(tx.hash, { timeout: 5000 });
  assert.equal(s.state, 'upstream_rejected');
  assert.equal(s.forwards[0]!.upstream_error?.code, -32000);
  assert.match(s.forwards[0]!.upstream_error?.message ?? '', /rejected by test upstream/);
  const stx = legacyTransfer();
  refused.add(Buffer.from(stx.bytes).toString('base64'));
  await sol.sendTransaction(stx.bytes);
  assert.equal((await sol.waitForward(stx.signature, { timeout: 5000 })).state, 'upstream_rejected');
});

test('waitForwardAll waits on several ids with one read per round, each to its own end', async () => {
  const [good, bad] = [await fresh(), await fresh()];
  refused.add(bad.hex);
  const batch = await evm.sendBatch([good.hex, bad.hex]);
  assert.deepEqual(batch.items.map((i) => i.kind), ['queued', 'queued']);
  const reads: number[] = [];
  const unknown = randomHash();
  const got = await waitForwardAll(
    (ids) => {
      reads.push(ids.length);
      return evm.status(ids);
    },
    [good.hash, bad.hash, unknown],
    { timeout: 5000 },
  );
  assert.deepEqual(got.map((s) => s.state), ['forwarded', 'upstream_rejected', 'unknown']);
  assert.ok(got.every((s) => !s.timedOut));
  assert.equal(reads[0], 3);
  assert.ok(reads.slice(1).every((n) => n < 3), 'ids already final are not read again');
  const [byBatch] = await evm.status([batch.batchId!]);
  assert.equal(byBatch!.state, 'upstream_rejected', 'a batch ends as its first item that was not forwarded');
});

test('ids never seen are unknown, with nothing of a transaction in them', async () => {
  const hash = randomHash();
  const sig = bs58.encode(randomBytes(64));
  const [a, b] = await evm.status([hash, sig]);
  assertUnknown(a!, hash);
  assertUnknown(b!, sig);
  // unknown is final: waitForward answers at once.
  const w = await sol.waitForward(sig, { timeout: 5000 });
  assert.equal(w.state, 'unknown');
  assert.equal(w.timedOut, false);
});

test("another account's ids are unknown, by hash, signature and request id", async () => {
  const tx = await fresh();
  const out = await evm.sendRawTransaction(tx.hex);
  const stx = legacyTransfer();
  const sout = await sol.sendRaw(stx.bytes);
  await evm.waitForward(out.requestId!, { timeout: 5000 });
  const c = new EvmClient({ url: relay.base, uuid: other, heartbeatMs: 0 });
  const s = new SolanaClient({ url: relay.base, apiKey: other, heartbeatMs: 0 });
  try {
    const got = await c.status([tx.hash, out.requestId!, stx.signature, sout.requestId!]);
    got.forEach((st, i) => assertUnknown(st, [tx.hash, out.requestId!, stx.signature, sout.requestId!][i]!));
    assertUnknown((await s.status([stx.signature]))[0]!, stx.signature);
  } finally {
    await c.close();
    await s.close();
  }
});

test('more than 100 ids are sent in chunks and come back in order', async () => {
  const raw = await fetch(`${relay.base}/v1/status`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ids: Array.from({ length: MAX_STATUS_IDS + 1 }, randomHash) }),
  });
  assert.equal(raw.status, 400, 'the relay takes at most 100 ids per request');
  for (const body of [{}, { ids: [] }, { ids: [1] }]) {
    const r = await fetch(`${relay.base}/v1/status`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(r.status, 400, JSON.stringify(body));
  }
  const tx = await fresh();
  const out = await evm.sendRawTransaction(tx.hex);
  await evm.waitForward(tx.hash, { timeout: 5000 });
  const ids = Array.from({ length: 250 }, randomHash);
  ids[0] = tx.hash;
  ids[150] = out.requestId!;
  ids[249] = tx.hash;
  const got = await evm.status(ids);
  assert.equal(got.length, 250);
  // Asked by request id, the answer names the transaction.
  assert.deepEqual(got.map((s) => s.id), ids.map((id, i) => (i === 150 ? tx.hash : id)));
  for (const i of [0, 150, 249]) {
    assert.equal(got[i]!.state, 'forwarded');
    assert.equal(got[i]!.request_id, out.requestId);
  }
  assert.equal(got.filter((s) => s.state === 'unknown').length, 247);
  assert.deepEqual(await evm.status([]), []);
});

test('the JSON-RPC method txrelay_getStatuses answers the same statuses, with either credential', async () => {
  const tx = await fresh();
  await evm.sendRawTransaction(tx.hex);
  await evm.waitForward(tx.hash, { timeout: 5000 });
  const unknown = randomHash();
  const viaRest = await evm.status([tx.hash, unknown]);
  for (const cred of [{ authorization: `Bearer ${key}` }, { 'api-key': key }] as Record<string, string>[]) {
    const r = await fetch(relay.base + '/', {
      method: 'POST',
      headers: { ...cred, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'txrelay_getStatuses', params: [[tx.hash, unknown]] }),
    });
    assert.equal(r.status, 200);
    const j = (await r.json()) as { result: StatusObject[] };
    assert.deepEqual(j.result, viaRest);
  }
});

test('waitForward on a slow lane: queued until the timeout (timedOut, no throw), then forwarded', async () => {
  const c = new EvmClient({ url: relay.base, uuid: slowKey, heartbeatMs: 0 });
  try {
    const tx = await fresh();
    const out = await c.sendRawTransaction(tx.hex);
    assert.equal(out.kind, 'queued');
    const started = Date.now();
    const early = await c.waitForward(out.requestId!, { timeout: 150, pollMs: 50 });
    assert.equal(early.timedOut, true);
    assert.equal(early.state, 'queued');
    assert.ok(Date.now() - started < 1000);
    const late = await c.waitForward(out.requestId!, { timeout: 5000 });
    assert.equal(late.timedOut, false);
    assert.equal(late.state, 'forwarded');
    assert.ok(late.forwards[0]!.latency_ms! >= 500, 'the latency is the upstream\'s');
  } finally {
    await c.close();
  }
});

test('a bad key is a StatusError 401; an unreachable relay throws after the retries', async () => {
  const c = new EvmClient({ url: relay.base, uuid: randomUUID(), heartbeatMs: 0 });
  try {
    await assert.rejects(c.status([randomHash()]), (e: unknown) => e instanceof StatusError && e.status === 401);
    await assert.rejects(c.waitForward(randomHash()), (e: unknown) => e instanceof StatusError && e.status === 401);
  } finally {
    await c.close();
  }
  const port = await freePort();
  const gone = new SolanaClient({ url: `http://127.0.0.1:${port}`, apiKey: key, heartbeatMs: 0, retryBudget: { maxRetries: 2, maxWaitMs: 1000 } });
  try {
    const started = Date.now();
    await assert.rejects(gone.waitForward('x', { timeout: 60_000 }), (e: unknown) => e instanceof StatusError && e.status === undefined && /not reachable/.test(e.message));
    assert.ok(Date.now() - started >= 2 * 250, 'two retries after the default wait');
  } finally {
    await gone.close();
  }
});

test('reads over the status rate are 429 with Retry-After: retried after the wait within the budget, else a StatusError', async () => {
  const up = await startUpstream();
  const r = await startTestRelay({ evm: { upstreams: { free: [up.url] } }, status: { reads_per_s: 1, reads_burst: 1 } });
  try {
    const k = (await r.createAccount({ evm: { tps: 1000, burst: 1000 } })).uuid;
    const once = new EvmClient({ url: r.base, uuid: k, heartbeatMs: 0, retryBudget: { maxRetries: 0, maxWaitMs: 0 } });
    const patient = new EvmClient({ url: r.base, uuid: k, heartbeatMs: 0, retryBudget: { maxRetries: 3, maxWaitMs: 5000 } });
    try {
      const tx = await signed1559({ nonce: nonce++ });
      assert.equal((await once.sendRawTransaction(tx.hex)).kind, 'queued', 'submission quota is not the read rate');
      await once.status([tx.hash]);
      await assert.rejects(once.status([tx.hash]), (e: unknown) => e instanceof StatusError && e.status === 429 && e.retryAfterMs! > 0 && e.retryAfterMs! <= 1000);
      const started = Date.now();
      const w = await patient.waitForward(tx.hash, { timeout: 5000 });
      assert.equal(w.state, 'forwarded');
      assert.ok(Date.now() - started >= 100, 'waited for the bucket');
    } finally {
      await once.close();
      await patient.close();
    }
  } finally {
    await r.stop();
    await up.close();
  }
});
