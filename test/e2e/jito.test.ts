/**
 * Jito's JSON-RPC API as a drop-in (docs/protocol.md#jito-compatible-api):
 * Jito's own client, jito-js-rpc, pointed at `<relay>/api/v1`, against a
 * real relay and real stand-in upstreams that record what they receive;
 * bundles built and signed with @solana/web3.js.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import bs58 from 'bs58';
import { Keypair } from '@solana/web3.js';
import { startTestRelay, eventually, postTo, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { legacyTransfer, tipTransfer } from '../helpers/solana.js';

type JitoClient = import('jito-js-rpc').JitoJsonRpcClient;
const jito = await import('jito-js-rpc').catch(() => null);
const skip = jito === null ? 'jito-js-rpc is not installed (npm ci installs it)' : false;

const TIPS = [Keypair.generate().publicKey.toBase58(), Keypair.generate().publicKey.toBase58()];
let relay: TestRelay;
let rpcUp: TestUpstream;
let bundleUp: TestUpstream;
let key: string;
let client: JitoClient;

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

/** Jito's bundle id: hex SHA-256 over the members' first signatures, in order. */
function bundleIdOf(signatures: string[]): string {
  return createHash('sha256').update(Buffer.concat(signatures.map((s) => bs58.decode(s)))).digest('hex');
}

/** The sendBundle calls the bundle upstream received whose first transaction is `first` (base64). */
const bundlesStartingWith = (up: TestUpstream, first: Uint8Array) => up.calls().filter((c) => c.method === 'sendBundle' && c.params[0][0] === b64(first));

const post = (path: string, body: unknown, headers: Record<string, string>) =>
  postTo(relay.base + path, JSON.stringify(body), { 'content-type': 'application/json', ...headers });

before(async () => {
  if (skip) return;
  rpcUp = await startUpstream();
  bundleUp = await startUpstream();
  relay = await startTestRelay({
    solana: { rpc_upstreams: [rpcUp.url], bundle_upstreams: [bundleUp.url], tip_accounts: TIPS },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000, min_tip_lamports: 5000 } })).uuid;
  client = new jito!.JitoJsonRpcClient(`${relay.base}/api/v1`, key);
});

after(async () => {
  await relay?.stop();
  await rpcUp?.close();
  await bundleUp?.close();
});

test('getTipAccounts answers the configured tip accounts', { skip }, async () => {
  const r = await client.getTipAccounts();
  assert.deepEqual(r, { jsonrpc: '2.0', result: TIPS, id: 1 });
  assert.ok(TIPS.includes(await client.getRandomTipAccount()));
});

test('sendBundle answers the bundle id and the upstream receives exactly one sendBundle; a resend is a duplicate with the same id', { skip }, async () => {
  const a = legacyTransfer();
  const t = tipTransfer(TIPS[1]!, 5000, { version: 'v0' });
  const id = bundleIdOf([a.signature, t.signature]);
  const r = await client.sendBundle([[b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }]);
  assert.deepEqual(r, { jsonrpc: '2.0', result: id, id: 1 });
  // Jito's default encoding, base58: the same bundle, the same id, not forwarded again.
  const again = await client.sendBundle([[bs58.encode(a.bytes), bs58.encode(t.bytes)]]);
  assert.deepEqual(again, { jsonrpc: '2.0', result: id, id: 1 });
  // A duplicate is answered without being queued, so once the first has arrived nothing more can.
  await eventually(() => bundlesStartingWith(bundleUp, a.bytes).length > 0, 5000, 'the bundle forwarded');
  const sent = bundlesStartingWith(bundleUp, a.bytes);
  assert.equal(sent.length, 1, 'exactly one sendBundle');
  assert.deepEqual(sent[0]!.params, [[b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }]);
});

test('a bundle with no tip is refused with -32602 and the 606 message, and not forwarded', { skip }, async () => {
  const a = legacyTransfer();
  const r = await client.sendBundle([[b64(a.bytes)], { encoding: 'base64' }]);
  assert.deepEqual(r.error, { code: -32602, message: `Tip Instruction Not Found (tip one of: ${TIPS.join(', ')})`, data: { retry: 'do_not_retry_automatically' } });
  assert.equal(bundlesStartingWith(bundleUp, a.bytes).length, 0);
});

test('getBundleStatuses and getInflightBundleStatuses read the account\'s statuses by bundle id: without a chain RPC a forwarded bundle is Pending, an unknown id Invalid', { skip }, async () => {
  const a = legacyTransfer();
  const t = tipTransfer(TIPS[0]!, 5000);
  const id = bundleIdOf([a.signature, t.signature]);
  assert.equal((await client.sendBundle([[b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }])).result, id);
  await eventually(() => bundlesStartingWith(bundleUp, a.bytes).length > 0, 5000, 'the bundle forwarded');
  const unknown = 'f'.repeat(64);
  const inflight = await client.getInFlightBundleStatuses([[id, unknown]]);
  assert.deepEqual(inflight.result!.value, [
    { bundle_id: id, status: 'Pending', landed_slot: null },
    { bundle_id: unknown, status: 'Invalid', landed_slot: null },
  ]);
  assert.deepEqual((await client.getBundleStatuses([[id]])).result, { context: { slot: 0 }, value: [null] });
  // Another account's bundle id is as unknown as one never sent.
  const other = (await relay.createAccount({ solana: { tps: 10, burst: 10 } })).uuid;
  const theirs = new jito!.JitoJsonRpcClient(`${relay.base}/api/v1`, other);
  assert.equal((await theirs.getInFlightBundleStatuses([[id]])).result!.value[0]!.status, 'Invalid');
  // Jito takes up to 5 ids a call.
  const six = await client.getBundleStatuses([[id, id, id, id, id, id]]);
  assert.equal(six.error?.code, -32602);
});

test('sendTransaction on /api/v1/transactions is forwarded to the single lane; bundleOnly=true makes it a bundle of one', { skip }, async () => {
  const tx = legacyTransfer();
  const r = await client.sendTxn([b64(tx.bytes), { encoding: 'base64' }]);
  assert.deepEqual(r, { jsonrpc: '2.0', result: tx.signature, id: 1 });
  await eventually(() => rpcUp.calls().some((c) => c.method === 'sendTransaction' && c.params[0] === b64(tx.bytes)), 5000, 'the transaction forwarded');
  // bundleOnly: the bundle rules apply (a tip), and it goes to the bundle lane.
  const tipped = tipTransfer(TIPS[0]!, 6000);
  const b = await client.sendTxn([b64(tipped.bytes), { encoding: 'base64' }], true);
  assert.deepEqual(b, { jsonrpc: '2.0', result: tipped.signature, id: 1 });
  await eventually(() => bundlesStartingWith(bundleUp, tipped.bytes).length === 1, 5000, 'the bundle of one forwarded');
  const untipped = await client.sendTxn([b64(legacyTransfer().bytes), { encoding: 'base64' }], true);
  assert.equal(untipped.error?.message, `Tip Instruction Not Found (tip one of: ${TIPS.join(', ')})`);
  // sendBundle is not served on the transactions path.
  const wrong = await post('/api/v1/transactions', { jsonrpc: '2.0', id: 1, method: 'sendBundle', params: [[b64(tipped.bytes)]] }, { 'api-key': key });
  assert.equal(wrong.status, 200);
  assert.equal(wrong.json.error.code, -32601);
});

test('credentials: the api-key header, the x-jito-auth header, ?uuid= or ?api-key=, exactly one of them', { skip }, async () => {
  const call = { jsonrpc: '2.0', id: 5, method: 'getTipAccounts', params: [] };
  for (const [path, headers] of [
    ['/api/v1/bundles', { 'x-jito-auth': key }],
    ['/api/v1/bundles', { 'api-key': key }],
    [`/api/v1/bundles?uuid=${key}`, {}],
    [`/api/v1/bundles?api-key=${key}`, {}],
  ] as const) {
    const r = await post(path, call, headers);
    assert.equal(r.status, 200, `${path} ${Object.keys(headers)}`);
    assert.deepEqual(r.json.result, TIPS);
  }
  // A bundle with x-jito-auth goes through like one with ?uuid=.
  const t = tipTransfer(TIPS[0]!, 7000);
  const sent = await post('/api/v1/bundles', { jsonrpc: '2.0', id: 6, method: 'sendBundle', params: [[bs58.encode(t.bytes)]] }, { 'x-jito-auth': key });
  assert.equal(sent.json.result, bundleIdOf([t.signature]));

  const two = await post(`/api/v1/bundles?uuid=${key}`, call, { 'x-jito-auth': key });
  assert.equal(two.status, 200);
  assert.equal(two.json.error.code, -32600);
  assert.match(two.json.error.message, /one of the api-key header, the x-jito-auth header, \?uuid= or \?api-key=/);
  const both = await post(`/api/v1/bundles?uuid=${key}&api-key=${key}`, call, {});
  assert.equal(both.json.error.code, -32600);

  const none = await post('/api/v1/bundles', call, {});
  assert.equal(none.status, 401);
  assert.equal(none.text, 'Not Found api-key (send the account UUID in the api-key header, the x-jito-auth header, ?uuid= or ?api-key=)');
  const bearerOnly = await post('/api/v1/bundles', call, { authorization: `Bearer ${key}` });
  assert.equal(bearerOnly.status, 401);
  assert.match(bearerOnly.text, /^Not Found api-key \(Solana methods take the api-key header/);
  const unknown = new jito!.JitoJsonRpcClient(`${relay.base}/api/v1`, '00000000-0000-4000-8000-000000000000');
  await assert.rejects(unknown.getTipAccounts(), (e: any) => e.response?.status === 401 && e.response.data === 'Invalid Api-Key');
  // A long query string is refused before anything else of it is read.
  const long = await post(`/api/v1/bundles?uuid=${key}&x=${'a'.repeat(300)}`, call, {});
  assert.equal(long.json.error.code, -32600);
  const many = await post(`/api/v1/bundles?uuid=${key}&a&b&c&d`, call, {});
  assert.equal(many.json.error.code, -32600);
  // Parameters Jito's clients may add are ignored.
  assert.deepEqual((await post(`/api/v1/bundles?uuid=${key}&other=1`, call, {})).json.result, TIPS);
});

test('Jito paths count under the door label jito', { skip }, async () => {
  const before = await relay.metric('txrelay_accept_seconds_count', { door: 'jito' });
  await client.getTipAccounts();
  assert.equal(await relay.metric('txrelay_accept_seconds_count', { door: 'jito' }), before + 1);
});

test('the node:http acceptor serves Jito paths the same way', { skip }, async () => {
  const up = await startUpstream();
  const r2 = await startTestRelay({
    http: { acceptor: 'node' },
    solana: { rpc_upstreams: [up.url], bundle_upstreams: [up.url], tip_accounts: TIPS },
  });
  try {
    const k = (await r2.createAccount({ solana: { tps: 100, burst: 100, min_tip_lamports: 5000 } })).uuid;
    const c = new jito!.JitoJsonRpcClient(`${r2.base}/api/v1`, k);
    assert.deepEqual((await c.getTipAccounts()).result, TIPS);
    const t = tipTransfer(TIPS[0]!, 5000);
    assert.equal((await c.sendBundle([[b64(t.bytes)], { encoding: 'base64' }])).result, bundleIdOf([t.signature]));
    const tx = legacyTransfer();
    assert.equal((await c.sendTxn([b64(tx.bytes), { encoding: 'base64' }])).result, tx.signature);
    assert.equal((await c.getInFlightBundleStatuses([[bundleIdOf([t.signature])]])).result!.value[0]!.status, 'Pending');
    await eventually(() => up.calls().some((x) => x.method === 'sendBundle') && up.calls().some((x) => x.method === 'sendTransaction'), 5000, 'both forwarded');
  } finally {
    await r2.stop();
    await up.close();
  }
});
