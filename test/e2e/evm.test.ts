/**
 * Family A end to end: a real relay, real sockets, transactions signed by
 * viem, and a real EVM node (ganache, from the npm registry) started by the
 * test as the paid lane's upstream, so an acknowledged hash is mined and its
 * receipt is found under the hash txrelay returned.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startChain, chainCall, type TestChain } from '../helpers/ganache.js';
import { startTestRelay, eventually, postTo, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { signed1559, signedLegacy, signed2930, signed7702, testAccount } from '../helpers/evm.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

let relay: TestRelay;
let node: TestChain;
let nodeUrl: string;
let freeUp: Upstream;
let paid: string;
let free: string;
let nonce = 0;

const rpcCall = chainCall;

const post = (path: string, body: string, headers: Record<string, string>) => postTo(relay.base + path, body, headers);

const jsonHeaders = (uuid: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${uuid}` });

function send(hex: string, uuid = paid, id: unknown = 1) {
  return post('/', JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_sendRawTransaction', params: [hex] }), jsonHeaders(uuid));
}

function plain(hex: string, query: string, headers: Record<string, string> = {}) {
  return post(`/v2/svc_send_raw_transaction${query}`, hex, { 'content-type': 'text/plain', ...headers });
}

function batch(hexes: unknown[], uuid = paid, id: unknown = 9) {
  return post('/', JSON.stringify({ jsonrpc: '2.0', id, method: 'svc_sendRawTransactionBatch', params: hexes }), jsonHeaders(uuid));
}

/** A fresh, never-seen transaction that the node can mine (next nonce of the funded account). */
async function mineable() {
  return signed1559({ nonce: nonce++, gas: 21000n });
}

before(async () => {
  node = await startChain();
  nodeUrl = node.url;
  freeUp = await startUpstream();
  relay = await startTestRelay({
    evm: { upstreams: { paid: [nodeUrl], free: [freeUp.url] } },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  paid = (await relay.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 } })).uuid;
  free = (await relay.createAccount({ plan: 'free', evm: { tps: 1000, burst: 1000 } })).uuid;
});

after(async () => {
  await relay?.stop();
  await freeUp?.close();
  await node?.close();
});

test('a transaction acknowledged by JSON-RPC is mined and its receipt found under the returned hash', async () => {
  const tx = await mineable();
  const r = await send(tx.hex, paid, 42);
  assert.equal(r.status, 202, r.text);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: 42, result: tx.hash, message: 'Successfully forwarded' });
  assert.equal(r.headers.get('x-svc-submission-state'), 'queued');
  let receipt: any;
  await eventually(async () => (receipt = await rpcCall(nodeUrl, 'eth_getTransactionReceipt', [tx.hash])) !== null, 10000, 'receipt');
  assert.equal(receipt.transactionHash, tx.hash);
  assert.equal(receipt.from.toLowerCase(), testAccount.address.toLowerCase());
  assert.equal(receipt.status, '0x1');
});

test('plain text with URL auth: 202, id null, CORS headers exposed', async () => {
  const tx = await mineable();
  const r = await plain(`  ${tx.hex}\n`, `?auth=${paid}`);
  assert.equal(r.status, 202, r.text);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: null, result: tx.hash, message: 'Successfully forwarded' });
  assert.equal(r.headers.get('x-svc-submission-state'), 'queued');
  assert.equal(r.headers.get('access-control-allow-origin'), '*');
  assert.match(r.headers.get('access-control-expose-headers')!, /x-svc-submission-state.*x-svc-duplicate.*retry-after/);
  await eventually(async () => (await rpcCall(nodeUrl, 'eth_getTransactionReceipt', [tx.hash])) !== null, 10000, 'receipt');
});

test('plain text with Bearer auth works; OPTIONS is answered for preflight', async () => {
  const tx = await mineable();
  const r = await plain(tx.hex, '', { authorization: `Bearer ${paid}` });
  assert.equal(r.status, 202, r.text);
  const o = await fetch(relay.base + '/v2/svc_send_raw_transaction', { method: 'OPTIONS' });
  assert.equal(o.status, 204);
  assert.match(o.headers.get('access-control-allow-headers')!, /authorization/);
  await eventually(async () => (await rpcCall(nodeUrl, 'eth_getTransactionReceipt', [tx.hash])) !== null, 10000, 'receipt');
});

test('plain-text auth rules: both methods, duplicate auth, another parameter, malformed encoding are 400 -32600', async () => {
  const tx = await signed1559({ nonce: 900 });
  const cases: [string, Record<string, string>][] = [
    [`?auth=${paid}`, { authorization: `Bearer ${paid}` }],
    [`?auth=${paid}&auth=${paid}`, {}],
    [`?auth=${paid}&x=1`, {}],
    [`?auth=%E0%A4%A`, {}],
  ];
  for (const [q, h] of cases) {
    const r = await plain(tx.hex, q, h);
    assert.equal(r.status, 400, q);
    assert.equal(r.json.error.code, -32600, q);
    assert.equal(r.json.id, null);
    assert.ok(!r.text.includes(paid), 'no UUID in an error message');
  }
});

test('missing, malformed or unknown credentials are 401 -32010; ?auth= authenticates nothing on POST /', async () => {
  const tx = await signed1559({ nonce: 901 });
  for (const r of [
    await plain(tx.hex, ''),
    await plain(tx.hex, '?auth=nope'),
    await plain(tx.hex, '?auth=00000000-0000-4000-8000-000000000000'),
    await post(`/?auth=${paid}`, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [tx.hex] }), { 'content-type': 'application/json' }),
  ]) {
    assert.equal(r.status, 401, r.text);
    assert.equal(r.json.error.code, -32010);
  }
});

test('the Solana header on an EVM call is a 401 that names the header EVM methods take', async () => {
  const tx = await signed1559({ nonce: 905 });
  const r = await post('/', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'eth_sendRawTransaction', params: [tx.hex] }), { 'content-type': 'application/json', 'api-key': paid });
  assert.equal(r.status, 401);
  assert.equal(r.json.id, 3);
  assert.equal(r.json.error.code, -32010);
  assert.match(r.json.error.message, /Authorization: Bearer <uuid>/);
  assert.ok(!r.text.includes(paid), 'no UUID in an error message');
});

test('an Authorization header without Bearer is a 401 that shows the form, on JSON-RPC and plain text', async () => {
  const tx = await signed1559({ nonce: 906 });
  const r = await post('/', JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'eth_sendRawTransaction', params: [tx.hex] }), { 'content-type': 'application/json', authorization: paid });
  assert.equal(r.status, 401);
  assert.equal(r.json.error.code, -32010);
  assert.match(r.json.error.message, /must read `Bearer <uuid>`/);
  const p = await plain(tx.hex, '', { authorization: paid });
  assert.equal(p.status, 401);
  assert.match(p.json.error.message, /must read `Bearer <uuid>`/);
  assert.ok(!r.text.includes(paid) && !p.text.includes(paid), 'no UUID in an error message');
});

test('413 with -32013 when the body exceeds http.max_body_bytes; 415 -32015 for another Content-Type', async () => {
  const big = '0x' + 'ab'.repeat(70000);
  let r = await plain(big, `?auth=${paid}`);
  assert.equal(r.status, 413);
  assert.equal(r.json.error.code, -32013);
  r = await post(`/v2/svc_send_raw_transaction?auth=${paid}`, '0x00', { 'content-type': 'application/json' });
  assert.equal(r.status, 415);
  assert.equal(r.json.error.code, -32015);
});

test('failed local validation is 400 -32602: wrong chain id, unprotected legacy, double 0x prefix', async () => {
  const wrongChain = await signed1559({ chainId: 5, nonce: 902 });
  const unprotected = await signedLegacy({ chainId: null, nonce: 903 });
  const good = await signed1559({ nonce: 904 });
  for (const hex of [wrongChain.hex, unprotected.hex, '0x' + good.hex]) {
    const r = await send(hex);
    assert.equal(r.status, 400, hex.slice(0, 12));
    assert.equal(r.json.error.code, -32602);
  }
});

test('a duplicate is 202 with the same hash and x-svc-duplicate: true; JSON-RPC and plain text share dedup', async () => {
  const tx = await signed2930({ nonce: 905 });
  const first = await send(tx.hex);
  assert.equal(first.status, 202);
  assert.equal(first.headers.get('x-svc-duplicate'), null);
  const dup = await plain(tx.hex, `?auth=${paid}`);
  assert.equal(dup.status, 202);
  assert.equal(dup.json.result, tx.hash);
  assert.equal(dup.headers.get('x-svc-duplicate'), 'true');
});

test('free accounts route to the free lane, paid to the paid lane', async () => {
  const tx = await signed7702({ nonce: 906 });
  const r = await send(tx.hex, free);
  assert.equal(r.status, 202, r.text);
  await eventually(() => freeUp.calls().some((c) => c.method === 'eth_sendRawTransaction' && (c.params as string[])[0] === tx.hex), 5000, 'free lane');
});

test('a JSON-RPC array of eth_sendRawTransaction calls is answered with an array of single responses', async () => {
  const a = await signed1559({ nonce: 907 });
  const b = await signed1559({ nonce: 908 });
  const r = await post(
    '/',
    JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [a.hex] },
      { jsonrpc: '2.0', id: 2, method: 'eth_sendRawTransaction', params: [b.hex] },
    ]),
    jsonHeaders(free),
  );
  assert.equal(r.status, 202);
  assert.deepEqual(
    r.json.map((x: any) => [x.id, x.result]),
    [
      [1, a.hash],
      [2, b.hash],
    ],
  );
});

test('429 -32005 with Retry-After and x-ratelimit-retry-after-ms; plain text and JSON-RPC share quota', async () => {
  const rec = await relay.createAccount({ plan: 'free', evm: { tps: 1, burst: 2 } });
  assert.equal((await send((await signed1559({ nonce: 1000 })).hex, rec.uuid)).status, 202);
  assert.equal((await plain((await signed1559({ nonce: 1001 })).hex, `?auth=${rec.uuid}`)).status, 202);
  const r = await send((await signed1559({ nonce: 1002 })).hex, rec.uuid);
  assert.equal(r.status, 429);
  assert.equal(r.json.error.code, -32005);
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.ok(Number(r.headers.get('x-ratelimit-retry-after-ms')) > 0);
});

test('a run of refusals with the same wait answers every one with the same, whole headers (the repeats are written from reused lists)', async () => {
  // A 0 TPS account can never send: every refusal says a minute, so the answer's header lists repeat.
  const rec = await relay.createAccount({ plan: 'free', evm: { tps: 0, burst: 1 } });
  assert.equal((await send((await signed1559({ nonce: 1099 })).hex, rec.uuid)).status, 202, 'the burst of one');
  for (let i = 0; i < 3; i++) {
    const tx = (await signed1559({ nonce: 1100 + i })).hex;
    for (const r of [await send(tx, rec.uuid), await plain(tx, `?auth=${rec.uuid}`)]) {
      assert.equal(r.status, 429, `refusal ${i}`);
      assert.equal(r.headers.get('retry-after'), '60');
      assert.equal(r.headers.get('x-ratelimit-retry-after-ms'), '60000');
      assert.equal(r.headers.get('content-type'), 'application/json');
    }
    // The plain-text door's refusals carry CORS too, joined with the Retry-After pair.
    const p = await plain(tx, `?auth=${rec.uuid}`);
    assert.equal(p.headers.get('access-control-allow-origin'), '*');
    assert.match(p.headers.get('access-control-expose-headers')!, /retry-after, x-ratelimit-retry-after-ms/);
  }
});

test('batch: per-item statuses, a durable record, x-svc-batch-id', async () => {
  const good = await mineable();
  const dupOf = await signed1559({ nonce: 950 });
  assert.equal((await send(dupOf.hex)).status, 202);
  const bad = await signed1559({ chainId: 5, nonce: 951 });
  const r = await batch([good.hex, bad.hex, dupOf.hex, 'nothex']);
  assert.equal(r.status, 202, r.text);
  const id = r.headers.get('x-svc-batch-id');
  assert.ok(id);
  assert.equal(r.json.id, 9);
  assert.equal(r.json.result.batch_id, id);
  const items = r.json.result.transactions;
  assert.deepEqual(
    items.map((x: any) => [x.tx_index, x.status, x.duplicate, x.retry]),
    [
      [0, 'queued', false, 'do_not_retry_automatically'],
      [1, 'not-sent', false, 'do_not_retry_automatically'],
      [2, 'duplicate', true, 'do_not_retry_automatically'],
      [3, 'not-sent', false, 'do_not_retry_automatically'],
    ],
  );
  assert.equal(items[0].tx_hash, good.hash);
  assert.equal(items[0].message, 'Successfully forwarded');
  assert.equal(items[1].error.code, -32602);
  assert.equal(items[2].tx_hash, dupOf.hash);
  await eventually(async () => (await rpcCall(nodeUrl, 'eth_getTransactionReceipt', [good.hash])) !== null, 10000, 'batch item mined');
  let rec: any;
  await eventually(async () => {
    rec = (await relay.adminCall('GET', `/admin/batches/${id}`)).json;
    return Array.isArray(rec?.items) && rec.items.length === 4;
  }, 5000, 'batch outcome recorded');
  assert.equal(rec.batch_id, id);
  assert.equal(typeof rec.account_id, 'number');
  assert.ok(!JSON.stringify(rec).includes(paid), 'the record holds an account reference, never the UUID');
  assert.deepEqual(rec.tx_hashes.slice(0, 1), [good.hash]);
  assert.deepEqual(rec.items.map((x: any) => x.status), ['queued', 'not-sent', 'duplicate', 'not-sent']);
});

test('batch items over the account limit are not-sent retry_safe -32005; all over limit is HTTP 429', async () => {
  const rec = await relay.createAccount({ plan: 'paid', evm: { tps: 1, burst: 2 } });
  const txs = await Promise.all([960, 961, 962].map((n) => signed1559({ nonce: n })));
  const r = await batch(txs.map((t) => t.hex), rec.uuid);
  assert.equal(r.status, 202);
  const items = r.json.result.transactions;
  assert.deepEqual(items.map((x: any) => x.status), ['queued', 'queued', 'not-sent']);
  assert.equal(items[2].retry, 'retry_safe');
  assert.equal(items[2].error.code, -32005);
  const again = await batch([(await signed1559({ nonce: 963 })).hex], rec.uuid);
  assert.equal(again.status, 429);
  assert.equal(again.json.result.transactions[0].status, 'not-sent');
  assert.ok(Number(again.headers.get('retry-after')) >= 1);
  assert.ok(Number(again.headers.get('x-ratelimit-retry-after-ms')) > 0);
});

test('a batch of only invalid items is HTTP 400 with per-item statuses', async () => {
  const r = await batch(['0x01', '0x']);
  assert.equal(r.status, 400);
  assert.equal(r.json.result.transactions.length, 2);
  assert.ok(r.headers.get('x-svc-batch-id'));
});

test('batch shape: 1..evm.max_batch strings, else 400 -32602', async () => {
  for (const params of [[], [1], Array(65).fill('0x00')]) {
    const r = await batch(params);
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32602);
  }
});
