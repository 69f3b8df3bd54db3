/**
 * Family B client library against a real in-process relay with real
 * upstream servers; transactions built with @solana/web3.js.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer, tipTransfer } from '../helpers/solana.js';
import { SolanaClient, UdpSender, bundleBody, firstSignature } from '../../src/client/index.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

let relay: TestRelay;
let rpcUp: Upstream;
let bundleUp: Upstream;
let key: string;
let client: SolanaClient;
const TIP = Keypair.generate().publicKey.toBase58();

/** An acknowledgement names its request (x-svc-request-id); the rest of the outcome is compared as before. */
function acked<T extends object>(o: T): Omit<T, 'requestId'> {
  const { requestId, ...rest } = o as T & { requestId?: unknown };
  assert.equal(typeof requestId, 'string', 'an acknowledgement carries its request id');
  return rest;
}

before(async () => {
  rpcUp = await startUpstream();
  bundleUp = await startUpstream();
  relay = await startTestRelay({
    solana: { rpc_upstreams: [rpcUp.url], bundle_upstreams: [bundleUp.url], tip_accounts: [TIP] },
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000, min_tip_lamports: 5000 } })).uuid;
  client = new SolanaClient({ url: relay.base, apiKey: key });
});

after(async () => {
  await client?.close();
  await relay?.stop();
  await rpcUp?.close();
  await bundleUp?.close();
});

test('sendTransaction is accepted with the signature; a resend is a duplicate', async () => {
  const tx = legacyTransfer();
  assert.deepEqual(acked(await client.sendTransaction(tx.bytes)), { kind: 'accepted', signature: tx.signature, duplicate: false });
  assert.deepEqual(acked(await client.sendTransaction(tx.bytes)), { kind: 'accepted', signature: tx.signature, duplicate: true });
  assert.equal(firstSignature(tx.bytes), tx.signature);
});

test('a refused sendTransaction (HTTP 200 with a JSON-RPC error, as Solana answers) is rejected, never accepted or uncertain', async () => {
  const forged = Uint8Array.from(legacyTransfer().bytes);
  forged[forged.length - 1]! ^= 1; // the message changes, the signature no longer matches
  assert.deepEqual(await client.sendTransaction(forged), { kind: 'rejected', status: 200, message: 'Transaction signature verification failure' });
  const garbage = await client.sendTransaction(new Uint8Array(100).fill(7));
  assert.equal(garbage.kind, 'rejected');
  assert.match((garbage as { message: string }).message, /^Transaction Decode Error: /);
  // The same bad signature on /v2 is the plain-text 400 it always was.
  assert.deepEqual(await client.sendRaw(forged), { kind: 'rejected', status: 400, message: 'Transaction Decode Error: signature verification failed' });
});

test('sendRaw on /v2 is accepted', async () => {
  const tx = legacyTransfer();
  assert.deepEqual(acked(await client.sendRaw(tx.bytes)), { kind: 'accepted', signature: tx.signature, duplicate: false });
});

test('an unknown api key is rejected with the plain-text body', async () => {
  const c = new SolanaClient({ url: relay.base, apiKey: randomUUID(), heartbeatMs: 0 });
  try {
    assert.deepEqual(await c.sendRaw(legacyTransfer().bytes), { kind: 'rejected', status: 401, message: 'Invalid Api-Key' });
  } finally {
    await c.close();
  }
});

test('sendBundle with a tip is accepted with every signature in order; without a tip it is 606', async () => {
  const a = legacyTransfer();
  const t = tipTransfer(TIP, 5000);
  assert.deepEqual(acked(await client.sendBundle([a.bytes, t.bytes])), { kind: 'accepted', signatures: [a.signature, t.signature], duplicate: false });
  const r = await client.sendBundle([legacyTransfer().bytes]);
  assert.equal(r.kind, 'rejected');
  assert.equal((r as any).status, 606);
  assert.match((r as any).message, /Tip Instruction Not Found/);
});

test('bundle body layout and the 1-4 / size checks happen before sending', async () => {
  const body = bundleBody([Uint8Array.of(1, 2, 3), Uint8Array.of(9)]);
  assert.deepEqual([...body], [2, 3, 0, 1, 0, 1, 2, 3, 9]);
  const one = new Uint8Array(10);
  assert.throws(() => bundleBody([]), TypeError);
  assert.throws(() => bundleBody([one, one, one, one, one]), /1 to 4/);
  assert.throws(() => bundleBody([new Uint8Array(1233)]), /1232/);
  const v1 = new Uint8Array(4096);
  v1[0] = 0x81;
  assert.equal(bundleBody([v1]).length, 1 + 2 + 4096);
  const v1big = new Uint8Array(4097);
  v1big[0] = 0x81;
  assert.throws(() => bundleBody([v1big]), /4096/);
  const before = bundleUp.calls().length;
  await assert.rejects(client.sendBundle([new Uint8Array(2000)]), TypeError);
  assert.equal(bundleUp.calls().length, before);
});

test('UdpSender: packet layout, size check, and a datagram reaches the upstream', async () => {
  await assert.rejects(UdpSender.create({ host: '127.0.0.1', apiKey: 'not-a-uuid' }), TypeError);
  const s = await UdpSender.create({ host: '127.0.0.1', port: relay.udpPort, apiKey: key });
  try {
    const tx = legacyTransfer();
    const p = s.packet(tx.bytes);
    assert.deepEqual([...p.subarray(0, 5)], [43, 6, 58, 10, 0]);
    assert.equal(p.subarray(5, 21).toString('hex'), key.replaceAll('-', ''));
    assert.equal(p.readUInt16LE(21), tx.bytes.length);
    assert.equal(p.length, 23 + tx.bytes.length);
    assert.throws(() => s.packet(new Uint8Array(1233)), TypeError);
    const before = rpcUp.calls().length;
    await s.send(tx.bytes);
    await rpcUp.waitForCalls(before + 1, 5000);
    const b64 = Buffer.from(tx.bytes).toString('base64');
    assert.ok(rpcUp.calls().some((c) => c.method === 'sendTransaction' && c.params[0] === b64));
  } finally {
    await s.close();
  }
});

/** A loopback port nothing listens on: bound, closed, so a connect is refused. */
async function deadPort(): Promise<number> {
  const net = await import('node:net');
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

test('a relay that refuses the connection: not-sent, retry-safe (nothing left this host), not uncertain', async () => {
  const c = new SolanaClient({ url: `http://127.0.0.1:${await deadPort()}`, apiKey: randomUUID(), heartbeatMs: 0 });
  try {
    const tx = legacyTransfer();
    const o = await c.sendRaw(tx.bytes);
    assert.equal(o.kind, 'not-sent');
    assert.equal((o as { retry: string }).retry, 'retry_safe');
    assert.equal((o as { signature?: string }).signature, tx.signature);
    assert.match((o as { reason: string }).reason, /ECONNREFUSED/);
    const b = await c.sendBundle([legacyTransfer().bytes]);
    assert.equal(b.kind, 'not-sent');
  } finally {
    await c.close();
  }
});
