/**
 * Family A client library against a real in-process relay, plus a tiny
 * node:http server that answers like an older node (legacy statuses the
 * relay never produces) and serves as chain RPC and ping target.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { EvmClient, localTxHash, type TxOutcome } from '../../src/client/index.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

let relay: TestRelay;
let up: Upstream;
let uuid: string;
let nonce = 0;
const fresh = () => signed1559({ nonce: nonce++ });

/** An acknowledgement names its request (x-svc-request-id); the rest of the outcome is compared as before. */
function acked<T extends object>(o: T): Omit<T, 'requestId'> {
  const { requestId, ...rest } = o as T & { requestId?: unknown };
  assert.equal(typeof requestId, 'string', 'an acknowledgement carries its request id');
  return rest;
}

// ---- a real "older node" server (not a mock of the relay) -------------------
type OldAnswer = { status: number; body?: unknown; raw?: string; drop?: boolean };
let oldNode: Server;
let oldUrl: string;
let answerNext: (req: any) => OldAnswer = () => ({ status: 500, raw: 'unset' });
const oldRequests: any[] = [];
let pings = 0;
const knownOnChain = new Set<string>();

function startOldNode(): Promise<void> {
  oldNode = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/ping') {
      pings++;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('pong');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (body.method === 'eth_getTransactionByHash') {
        const h = body.params[0];
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: knownOnChain.has(h) ? { hash: h } : null }));
        return;
      }
      oldRequests.push(body);
      const a = answerNext(body);
      if (a.drop) {
        req.socket.destroy();
        return;
      }
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.raw ?? JSON.stringify(a.body));
    });
  });
  return new Promise((r) =>
    oldNode.listen(0, '127.0.0.1', () => {
      oldUrl = `http://127.0.0.1:${(oldNode.address() as AddressInfo).port}`;
      r();
    }),
  );
}

before(async () => {
  up = await startUpstream();
  relay = await startTestRelay({
    evm: { upstreams: { paid: [up.url], free: [up.url] } },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  uuid = (await relay.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 } })).uuid;
  await startOldNode();
});

after(async () => {
  await relay?.stop();
  await up?.close();
  oldNode?.closeAllConnections();
  await new Promise((r) => oldNode?.close(r));
});

async function withClient<T>(opts: Partial<ConstructorParameters<typeof EvmClient>[0]>, fn: (c: EvmClient) => Promise<T>): Promise<T> {
  const c = new EvmClient({ url: relay.base, uuid, ...opts });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

test('JSON-RPC send is queued with the local hash; a resend is a duplicate', async () => {
  await withClient({}, async (c) => {
    const tx = await fresh();
    assert.deepEqual(acked(await c.sendRawTransaction(tx.hex)), { kind: 'queued', hash: tx.hash });
    assert.deepEqual(acked(await c.sendRawTransaction(tx.hex)), { kind: 'duplicate', hash: tx.hash });
  });
});

test('plain-text send with URL auth is queued', async () => {
  await withClient({}, async (c) => {
    const tx = await fresh();
    assert.deepEqual(acked(await c.sendRawTransaction(tx.hex, { via: 'text' })), { kind: 'queued', hash: tx.hash });
  });
});

test('an invalid transaction is a final rejection (400)', async () => {
  await withClient({}, async (c) => {
    const o = await c.sendRawTransaction('0x1234');
    assert.equal(o.kind, 'rejected');
    assert.equal((o as any).status, 400);
    assert.equal((o as any).code, -32602);
  });
});

test('a rate-limited send is not-sent retry_safe, then retried after Retry-After and queued within budget', async () => {
  const slow = (await relay.createAccount({ plan: 'paid', evm: { tps: 1, burst: 1 } })).uuid;
  const a = await fresh();
  const b = await fresh();
  await withClient({ uuid: slow, retryBudget: { maxRetries: 0, maxWaitMs: 0 } }, async (c) => {
    assert.equal((await c.sendRawTransaction(a.hex)).kind, 'queued');
    const o = await c.sendRawTransaction(b.hex);
    assert.equal(o.kind, 'not-sent');
    assert.equal((o as any).retry, 'retry_safe');
    assert.equal((o as any).code, -32005);
    assert.ok((o as any).retryAfterMs > 0 && (o as any).retryAfterMs <= 1000);
  });
  await withClient({ uuid: slow, retryBudget: { maxRetries: 3, maxWaitMs: 5000 } }, async (c) => {
    assert.deepEqual(acked(await c.sendRawTransaction(b.hex)), { kind: 'queued', hash: b.hash });
  });
});

test('batch: queued, duplicate and invalid items are mapped per item', async () => {
  await withClient({}, async (c) => {
    const seen = await fresh();
    await c.sendRawTransaction(seen.hex);
    const n = await fresh();
    const r = await c.sendBatch([n.hex, seen.hex, '0x1234']);
    assert.equal(typeof r.batchId, 'string');
    assert.deepEqual(r.items[0], { kind: 'queued', hash: n.hash });
    assert.deepEqual(r.items[1], { kind: 'duplicate', hash: seen.hash });
    assert.equal(r.items[2]!.kind, 'not-sent');
    assert.equal((r.items[2] as any).retry, 'do_not_retry_automatically');
    assert.equal(r.batchIds.length, 1, 'nothing retry_safe, so no second batch');
  });
});

test('batch: only rate-limited items are retried, in a new batch, until queued', async () => {
  const slow = (await relay.createAccount({ plan: 'paid', evm: { tps: 2, burst: 2 } })).uuid;
  const txs = [await fresh(), await fresh(), await fresh()];
  await withClient({ uuid: slow, retryBudget: { maxRetries: 10, maxWaitMs: 5000 } }, async (c) => {
    const r = await c.sendBatch(txs.map((t) => t.hex));
    assert.deepEqual(r.items, txs.map((t) => ({ kind: 'queued', hash: t.hash })));
    assert.ok(r.batchIds.length >= 2, 'the limited item went out in a later batch');
  });
});

test('legacy HTTP 200 with a hash is uncertain, and reconcile asks the chain RPC without resubmitting', async () => {
  const tx = await fresh();
  answerNext = (b) => ({ status: 200, body: { jsonrpc: '2.0', id: b.id, result: tx.hash } });
  const c = new EvmClient({ url: oldUrl, uuid, chainRpc: oldUrl, heartbeatMs: 0 });
  try {
    const before = oldRequests.length;
    const o = await c.sendRawTransaction(tx.hex);
    assert.equal(o.kind, 'uncertain');
    assert.equal((o as any).hash, tx.hash);
    assert.equal(await c.reconcile(o), 'not-found-yet');
    knownOnChain.add(tx.hash);
    assert.equal(await c.reconcile(o), 'found');
    assert.equal(oldRequests.length - before, 1, 'sent exactly once');
  } finally {
    await c.close();
  }
});

test('legacy 202 -32008, dropped connection and unparseable body are uncertain and never resent', async () => {
  const tx = await fresh();
  const c = new EvmClient({ url: oldUrl, uuid, heartbeatMs: 0 });
  try {
    const before = oldRequests.length;
    answerNext = (b) => ({ status: 202, body: { jsonrpc: '2.0', id: b.id, error: { code: -32008, message: 'uncertain', data: { tx_hash: tx.hash } } } });
    assert.deepEqual(await c.sendRawTransaction(tx.hex), { kind: 'uncertain', hash: tx.hash, reason: 'legacy -32008: outcome uncertain' });
    answerNext = () => ({ status: 0, drop: true });
    const d = await c.sendRawTransaction(tx.hex);
    assert.equal(d.kind, 'uncertain');
    assert.equal((d as any).hash, tx.hash, 'hash computed locally');
    answerNext = () => ({ status: 202, raw: '{"jsonrpc":"2.0","res' });
    const u = await c.sendRawTransaction(tx.hex);
    assert.equal(u.kind, 'uncertain');
    assert.equal((u as any).hash, tx.hash);
    assert.equal(oldRequests.length - before, 3, 'one request per call');
  } finally {
    await c.close();
  }
});

test('older-node batch statuses are uncertain; a 503 with per-item results is read and only not-sent retry_safe items are resent', async () => {
  const txs = [await fresh(), await fresh(), await fresh(), await fresh()];
  const c = new EvmClient({ url: oldUrl, uuid, heartbeatMs: 0, retryBudget: { maxRetries: 2, maxWaitMs: 1000 } });
  try {
    const before = oldRequests.length;
    answerNext = (b) => {
      const first = b.params.length === 4;
      const items = b.params.map((_h: string, i: number) =>
        first
          ? [
              { tx_index: 0, tx_hash: txs[0]!.hash, status: 'dispatched' },
              { tx_index: 1, tx_hash: txs[1]!.hash, status: 'in-flight' },
              { tx_index: 2, tx_hash: txs[2]!.hash, status: 'unknown' },
              { tx_index: 3, tx_hash: txs[3]!.hash, status: 'not-sent', retry: 'retry_safe', error: { code: -32006, message: 'capacity' } },
            ][i]
          : { tx_index: i, tx_hash: txs[3]!.hash, status: 'queued', duplicate: false, retry: 'do_not_retry_automatically' },
      );
      return { status: first ? 503 : 202, body: { jsonrpc: '2.0', id: b.id, result: { batch_id: first ? 'b1' : 'b2', transactions: items } } };
    };
    const r = await c.sendBatch(txs.map((t) => t.hex));
    assert.deepEqual(
      r.items.map((o: TxOutcome) => o.kind),
      ['uncertain', 'uncertain', 'uncertain', 'queued'],
    );
    assert.deepEqual(r.batchIds, ['b1', 'b2']);
    const sent = oldRequests.slice(before);
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[1].params, [txs[3]!.hex], 'the retry batch holds only the retry_safe item');
  } finally {
    await c.close();
  }
});

test('heartbeat: an idle client sends GET /ping', async () => {
  const start = pings;
  const c = new EvmClient({ url: oldUrl, uuid, heartbeatMs: 50 });
  try {
    await eventually(() => pings - start >= 2, 3000, 'two pings');
  } finally {
    await c.close();
  }
  const stopped = pings;
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(pings, stopped, 'close() stops the heartbeat');
});

test('localTxHash: keccak of the bytes; undefined for a blob network form', async () => {
  const tx = await fresh();
  assert.equal(localTxHash(tx.hex), tx.hash);
  assert.equal(localTxHash('0x03c3c20102'), undefined);
  assert.equal(typeof localTxHash('0x03c20102'), 'string');
  assert.equal(localTxHash('nothex'), undefined);
});

test('a relay that refuses the connection: each transaction not-sent and retry-safe, never uncertain', async () => {
  const net = await import('node:net');
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  const c = new EvmClient({ url: `http://127.0.0.1:${port}`, uuid: '00000000-0000-4000-8000-000000000000', heartbeatMs: 0, retryBudget: { maxRetries: 1, maxWaitMs: 1000 } });
  try {
    const tx = await signed1559({ nonce: 950 });
    const o = await c.sendRawTransaction(tx.hex);
    assert.equal(o.kind, 'not-sent');
    assert.equal((o as { retry: string }).retry, 'retry_safe');
    assert.equal(o.hash, tx.hash);
    const b = await c.sendBatch([tx.hex]);
    assert.deepEqual(
      b.items.map((i) => [i.kind, (i as { retry?: string }).retry]),
      [['not-sent', 'retry_safe']],
    );
  } finally {
    await c.close();
  }
});
