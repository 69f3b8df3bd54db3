/**
 * Family B end to end: a real relay, real sockets, real upstream servers,
 * transactions built and signed with @solana/web3.js. Each test name is the
 * contract sentence it pins (docs/protocol.md).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { createHash } from 'node:crypto';
import bs58 from 'bs58';
import { Connection, Keypair, SendTransactionError } from '@solana/web3.js';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer, v0WithLookup, v1Transfer, tipTransfer, tipTransferWithSeed } from '../helpers/solana.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

let relay: TestRelay;
let rpcUp: Upstream;
let bundleUp: Upstream;
const TIP = Keypair.generate().publicKey.toBase58();
let key: string;

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

function bundleBody(txs: Uint8Array[]): Buffer {
  const head = Buffer.alloc(1 + 2 * txs.length);
  head[0] = txs.length;
  txs.forEach((t, i) => head.writeUInt16LE(t.length, 1 + 2 * i));
  return Buffer.concat([head, ...txs]);
}

function udpPacket(uuid: string, tx: Uint8Array): Buffer {
  const p = Buffer.alloc(23 + tx.length);
  p.set([43, 6, 58, 10, 0]);
  Buffer.from(uuid.replaceAll('-', ''), 'hex').copy(p, 5);
  p.writeUInt16LE(tx.length, 21);
  p.set(tx, 23);
  return p;
}

async function sendUdp(pkt: Buffer): Promise<void> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((res, rej) => s.send(pkt, relay.udpPort, '127.0.0.1', (e) => (e ? rej(e) : res())));
  s.close();
}

async function rpc(body: unknown, headers: Record<string, string> = { 'api-key': key }) {
  const r = await fetch(relay.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: safeJson(text) };
}

async function post(path: string, body: Uint8Array, headers: Record<string, string> = { 'api-key': key }) {
  const r = await fetch(relay.base + path, { method: 'POST', headers, body });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: safeJson(text) };
}

function safeJson(t: string): any {
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

function sendTx(tx: Uint8Array, id: number | string = 1) {
  return rpc({ jsonrpc: '2.0', id, method: 'sendTransaction', params: [b64(tx), { encoding: 'base64' }] });
}

/** Every transaction the single-lane upstream received, as base64. */
function receivedSingles(): string[] {
  return rpcUp.calls().filter((c) => c.method === 'sendTransaction').map((c) => (c.params as any[])[0]);
}

before(async () => {
  rpcUp = await startUpstream();
  bundleUp = await startUpstream();
  relay = await startTestRelay({
    solana: { rpc_upstreams: [rpcUp.url], bundle_upstreams: [bundleUp.url], tip_accounts: [TIP] },
    // Generous IP limit: the rate tests below target the account bucket.
    limits: { ip_rps: 100000, ip_burst: 100000 },
  });
  key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000, min_tip_lamports: 5000 } })).uuid;
});

after(async () => {
  await relay?.stop();
  await rpcUp?.close();
  await bundleUp?.close();
});

test('registration enables family B at 2 TPS', async () => {
  const rec = await relay.createAccount();
  assert.equal(rec.solana.enabled, true);
  assert.equal(rec.solana.tps, 2);
  assert.equal(rec.solana.burst, 2);
});

test('JSON-RPC sendTransaction returns the signature and forwards the exact bytes', async () => {
  const tx = v0WithLookup();
  const r = await sendTx(tx.bytes, 7);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { jsonrpc: '2.0', result: tx.signature, id: 7 });
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded v0 transaction');
  const call = rpcUp.calls().find((c) => (c.params as any[])[0] === b64(tx.bytes))!;
  assert.deepEqual((call.params as any[])[1], { encoding: 'base64', skipPreflight: true, maxRetries: 0 });
});

test('sendTransaction accepts encoding base58', async () => {
  const tx = legacyTransfer();
  const bs58 = (await import('bs58')).default;
  const r = await rpc({ jsonrpc: '2.0', id: 'x', method: 'sendTransaction', params: [bs58.encode(tx.bytes), { encoding: 'base58' }] });
  assert.equal(r.status, 200);
  assert.equal(r.json.result, tx.signature);
  assert.equal(r.json.id, 'x');
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded base58 transaction');
});

test('POST /v2 takes the raw bytes of legacy, v0 and v1 transactions', async () => {
  for (const tx of [legacyTransfer(), v0WithLookup(), v1Transfer()]) {
    const r = await post('/v2', tx.bytes);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { jsonrpc: '2.0', id: null, result: tx.signature });
    await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded /v2 transaction');
  }
});

test('a bundle is forwarded as one sendBundle with its transactions in request order', async () => {
  const a = legacyTransfer();
  const b = tipTransfer(TIP, 3000);
  const c = tipTransferWithSeed(TIP, 2000, { version: 'v0' });
  const r = await post('/v2/batch', bundleBody([a.bytes, b.bytes, c.bytes]), { 'api-key': key, 'content-type': 'application/octet-stream' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: null, result: [a.signature, b.signature, c.signature] });
  await eventually(() => bundleUp.calls().some((x) => x.method === 'sendBundle'), 5000, 'forwarded bundle');
  const call = bundleUp.calls().find((x) => x.method === 'sendBundle' && (x.params as any[])[0][0] === b64(a.bytes))!;
  assert.deepEqual(call.params, [[b64(a.bytes), b64(b.bytes), b64(c.bytes)], { encoding: 'base64' }]);
});

test('a well-formed UDP datagram is admitted and forwarded', async () => {
  const tx = legacyTransfer();
  await sendUdp(udpPacket(key, tx.bytes));
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded UDP transaction');
});

test('GET /ping answers 200 pong', async () => {
  const r = await fetch(relay.base + '/ping');
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'pong');
});

test('missing api-key is 401 "Not Found api-key" naming where it goes; unknown is "Invalid Api-Key"; not a UUID says so', async () => {
  const tx = legacyTransfer();
  for (const path of ['/v2', '/v2/batch']) {
    let r = await post(path, path === '/v2' ? tx.bytes : bundleBody([tx.bytes]), {});
    assert.equal(r.status, 401);
    assert.equal(r.text, 'Not Found api-key (send the account UUID in the api-key header or as ?api-key=)');
    r = await post(path, tx.bytes, { 'api-key': '00000000-0000-4000-8000-000000000000' });
    assert.equal(r.status, 401);
    assert.equal(r.text, 'Invalid Api-Key');
    r = await post(`${path}?api-key=00000000-0000-4000-8000-000000000000`, tx.bytes, {});
    assert.equal(r.status, 401);
    assert.equal(r.text, 'Invalid Api-Key');
    r = await post(path, tx.bytes, { 'api-key': 'not-a-uuid' });
    assert.equal(r.status, 401);
    assert.equal(r.text, 'Invalid Api-Key (not a UUID)');
  }
  let r = await rpc({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [b64(tx.bytes)] }, { 'api-key': 'not-a-uuid' });
  assert.equal(r.status, 401);
  assert.equal(r.text, 'Invalid Api-Key (not a UUID)');
  r = await rpc({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [b64(tx.bytes)] }, {});
  assert.equal(r.status, 401);
  // No credential at all says nothing of the family: the JSON-RPC error, naming both forms.
  assert.match(r.json.error.message, /^Unauthorized: account UUID missing \(Solana methods take the api-key header or \?api-key=; EVM methods take/);
});

test('a revoked key is refused at once', async () => {
  const rec = await relay.createAccount();
  assert.equal((await relay.adminCall('DELETE', `/admin/accounts/${rec.uuid}`)).status, 200);
  const r = await post('/v2', legacyTransfer().bytes, { 'api-key': rec.uuid });
  assert.equal(r.status, 401);
  assert.equal(r.text, 'Invalid Api-Key');
});

test('over the account rate the answer is 429 "Exceed Rate Limit: N per second" with Retry-After', async () => {
  const rec = await relay.createAccount(); // 2 TPS, burst 2
  const statuses: number[] = [];
  let limited: Awaited<ReturnType<typeof post>> | undefined;
  for (let i = 0; i < 4; i++) {
    const r = await post('/v2', legacyTransfer().bytes, { 'api-key': rec.uuid });
    statuses.push(r.status);
    if (r.status === 429) limited = r;
  }
  assert.deepEqual(statuses.slice(0, 2), [200, 200]);
  assert.ok(limited, `expected a 429 among ${statuses}`);
  assert.equal(limited.text, 'Exceed Rate Limit: 2 per second');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.ok(Number(limited.headers.get('x-ratelimit-retry-after-ms')) > 0);
});

test('a batch counts as 1 against TPS', async () => {
  const rec = await relay.createAccount({ solana: { tps: 1, burst: 1, min_tip_lamports: 0 } });
  const four = [legacyTransfer(), legacyTransfer(), legacyTransfer(), tipTransfer(TIP, 0)].map((t) => t.bytes);
  const r = await post('/v2/batch', bundleBody(four), { 'api-key': rec.uuid });
  assert.equal(r.status, 200, r.text);
  const again = await post('/v2/batch', bundleBody([tipTransfer(TIP, 1).bytes]), { 'api-key': rec.uuid });
  assert.equal(again.status, 429);
});

test('batch body length must equal 1 + 2*count + sum(lengths), count 1 to 4: 605', async () => {
  const tx = tipTransfer(TIP, 6000).bytes;
  const good = bundleBody([tx]);
  const cases: [string, Buffer][] = [
    ['one byte short', good.subarray(0, good.length - 1)],
    ['one byte long', Buffer.concat([good, Buffer.from([0])])],
    ['count 0', Buffer.from([0])],
    ['count 5', bundleBody([tx, tx, tx, tx, tx])],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [name, body] of cases) {
    const r = await post('/v2/batch', body);
    assert.equal(r.status, 605, name);
    assert.match(r.text, /^Batch Decode Error: /, name);
  }
});

test('an undecodable or badly signed transaction in a bundle is 605 naming its index', async () => {
  const ok = tipTransfer(TIP, 6000).bytes;
  const garbage = new Uint8Array(100).fill(7);
  let r = await post('/v2/batch', bundleBody([ok, garbage]));
  assert.equal(r.status, 605);
  assert.match(r.text, /^Batch Decode Error: transaction 1: /);
  const forged = legacyTransfer().bytes;
  forged[forged.length - 1]! ^= 1; // the message changes, the signature no longer matches
  r = await post('/v2/batch', bundleBody([tipTransfer(TIP, 6000).bytes, forged]));
  assert.equal(r.status, 605);
  assert.equal(r.text, 'Batch Decode Error: transaction 1: signature verification failed');
});

test('no transfer to a tip account is 606; tips summed over the batch below the minimum is 607', async () => {
  let r = await post('/v2/batch', bundleBody([legacyTransfer().bytes]));
  assert.equal(r.status, 606);
  // The seed's text, then the accounts a tip may go to.
  assert.equal(r.text, `Tip Instruction Not Found (tip one of: ${TIP})`);
  r = await post('/v2/batch', bundleBody([tipTransfer(TIP, 2000).bytes, tipTransfer(TIP, 2999).bytes]));
  assert.equal(r.status, 607);
  assert.equal(r.text, 'Please add a minimum tip of 5000 lamports (batch total)');
  // The same two transfers plus one more lamport reach the minimum: the tip may sit in any transaction.
  r = await post('/v2/batch', bundleBody([tipTransfer(TIP, 2000).bytes, legacyTransfer().bytes, tipTransfer(TIP, 3000).bytes]));
  assert.equal(r.status, 200, r.text);
});

test('a tip reached through an address lookup table does not count', async () => {
  const viaTable = v0WithLookup({ to: TIP, lamports: 1_000_000 });
  const r = await post('/v2/batch', bundleBody([viaTable.bytes]));
  assert.equal(r.status, 606);
});

test('/v2 errors are 400 plain text "Transaction Decode Error: …"', async () => {
  let r = await post('/v2', new Uint8Array([1, 2, 3]));
  assert.equal(r.status, 400);
  assert.match(r.text, /^Transaction Decode Error: /);
  const tx = legacyTransfer().bytes;
  tx[tx.length - 1]! ^= 0xff;
  r = await post('/v2', tx);
  assert.equal(r.status, 400);
  assert.equal(r.text, 'Transaction Decode Error: signature verification failed');
  r = await post('/v2', new Uint8Array(5000));
  assert.equal(r.status, 400);
  assert.match(r.text, /more than 4096/);
});

/** One raw HTTP/1.1 request on its own socket, written in `parts` with a pause between them; resolves with the whole answer. */
function rawParts(parts: Buffer[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(relay.base);
    const s = net.connect(Number(url.port), url.hostname);
    let text = '';
    s.on('data', (d) => {
      text += d;
      // One answer, whole: its body length is in its head.
      const m = /content-length: (\d+)\r\n/i.exec(text);
      const end = text.indexOf('\r\n\r\n');
      if (m && end >= 0 && text.length >= end + 4 + Number(m[1])) {
        s.destroy();
        resolve(text);
      }
    });
    s.on('error', reject);
    s.on('connect', async () => {
      for (const p of parts) {
        s.write(p);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
  });
}

test('/v2 reads a chunked body (no Content-Length) in pieces, and refuses an empty one', async () => {
  const tx = legacyTransfer();
  const head = `POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const half = tx.bytes.length >> 1;
  const chunk = (b: Uint8Array) => Buffer.concat([Buffer.from(b.length.toString(16) + '\r\n'), Buffer.from(b), Buffer.from('\r\n')]);
  const answer = await rawParts([Buffer.from(head), chunk(tx.bytes.subarray(0, half)), chunk(tx.bytes.subarray(half)), Buffer.from('0\r\n\r\n')]);
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.ok(answer.endsWith(`{"jsonrpc":"2.0","result":"${tx.signature}","id":null}`), answer);
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded chunked /v2 transaction');
  // The same bytes with a Content-Length go straight into their slab block: recognised as the same transaction.
  const again = await post('/v2', tx.bytes);
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('x-svc-duplicate'), 'true');
  const empty = await rawParts([Buffer.from(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Length: 0\r\n\r\n`)]);
  assert.match(empty, /^HTTP\/1\.1 400 /);
  assert.ok(empty.endsWith('Transaction Decode Error: empty body'), empty);
});

test('sendTransaction errors are HTTP 200 with -32602; bad JSON is 400 -32700; an unknown method from a Solana caller 200 -32601', async () => {
  let r = await rpc({ jsonrpc: '2.0', id: 3, method: 'sendTransaction', params: ['!!notbase64'] });
  assert.equal(r.status, 200);
  assert.equal(r.json.error.code, -32602);
  assert.equal(r.json.id, 3);
  r = await rpc('{"jsonrpc":"2.0",');
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32700);
  // A read asked with the api-key header is answered as Solana RPC answers, saying where reads go.
  r = await rpc({ jsonrpc: '2.0', id: 4, method: 'getBalance', params: [] });
  assert.equal(r.status, 200);
  assert.equal(r.json.error.code, -32601);
  assert.match(r.json.error.message, /send reads to your chain RPC/);
});

test('sendTransaction base64 is strict (standard alphabet, padded, canonical): anything else is -32602 and not forwarded', async () => {
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  // A transaction whose base64 has padding and a '+' or '/', so every variant below applies to it.
  let tx = legacyTransfer();
  while (!(tx.bytes.length % 3 !== 0 && /[+/]/.test(b64(tx.bytes)))) tx = legacyTransfer();
  const text = b64(tx.bytes);
  const body = text.replace(/=+$/, '');
  const last = body[body.length - 1]!;
  const variants: Record<string, string> = {
    'URL-safe alphabet': text.replaceAll('+', '-').replaceAll('/', '_'),
    'a character outside the alphabet': '!' + text.slice(1),
    'non-zero trailing bits': body.slice(0, -1) + B64[B64.indexOf(last) + 1] + text.slice(body.length),
    'padding left out': body,
  };
  for (const [what, bad] of Object.entries(variants)) {
    assert.notEqual(bad, text, what);
    const r = await rpc({ jsonrpc: '2.0', id: 9, method: 'sendTransaction', params: [bad, { encoding: 'base64' }] });
    assert.equal(r.status, 200, what);
    assert.equal(r.json.error.code, -32602, what);
  }
  const ok = await sendTx(tx.bytes, 10);
  assert.equal(ok.status, 200);
  await eventually(() => receivedSingles().includes(text), 5000, 'the canonical text forwarded as sent');
  assert.equal(receivedSingles().filter((t) => Buffer.from(t, 'base64').equals(Buffer.from(tx.bytes))).length, 1, 'no variant was forwarded');
});

test('a duplicate is answered as a success with x-svc-duplicate: true and not forwarded again', async () => {
  const tx = legacyTransfer();
  const first = await post('/v2', tx.bytes);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-svc-duplicate'), null);
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'first copy forwarded');
  const dup = await sendTx(tx.bytes);
  assert.equal(dup.status, 200);
  assert.equal(dup.json.result, tx.signature);
  assert.equal(dup.headers.get('x-svc-duplicate'), 'true');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(receivedSingles().filter((x) => x === b64(tx.bytes)).length, 1);
});

test('a transaction sent alone and inside a bundle are two different submissions', async () => {
  const tip = tipTransfer(TIP, 6000);
  assert.equal((await post('/v2', tip.bytes)).headers.get('x-svc-duplicate'), null);
  const r = await post('/v2/batch', bundleBody([tip.bytes]));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-svc-duplicate'), null);
  const again = await post('/v2/batch', bundleBody([tip.bytes]));
  assert.equal(again.headers.get('x-svc-duplicate'), 'true');
});

test('a badly signed transaction does not poison the dedup filter for the real one', async () => {
  const real = legacyTransfer();
  const forged = Uint8Array.from(real.bytes);
  forged[forged.length - 1]! ^= 1; // same first signature, different message
  assert.equal((await post('/v2', forged)).status, 400);
  const r = await post('/v2', real.bytes);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-svc-duplicate'), null);
});

/**
 * Sends each body as POST /v2 on its own pre-connected socket, all written in
 * the same tick, so they reach the relay in one poll of the sockets, in order
 * (as far as the kernel keeps it). uWS does not support pipelining requests
 * whose answers are asynchronous on one connection, hence one socket each.
 */
async function sameTick(bodies: Uint8Array[]): Promise<{ status: number; duplicate: boolean }[]> {
  const url = new URL(relay.base);
  const socks = await Promise.all(
    bodies.map(() => new Promise<net.Socket>((res, rej) => {
      const s = net.connect(Number(url.port), url.hostname, () => res(s));
      s.once('error', rej);
    })),
  );
  const answers = socks.map(
    (s) =>
      new Promise<string>((resolve, reject) => {
        let text = '';
        s.setEncoding('latin1');
        s.on('data', (d) => {
          text += d;
          const end = text.indexOf('\r\n\r\n');
          const len = /content-length: (\d+)/i.exec(text.slice(0, end));
          if (end >= 0 && len && text.length >= end + 4 + Number(len[1])) resolve(text);
        });
        s.on('error', reject);
        setTimeout(() => reject(new Error('no answer: ' + text)), 5000);
      }),
  );
  bodies.forEach((b, i) =>
    socks[i]!.write(Buffer.concat([Buffer.from(`POST /v2 HTTP/1.1\r\nhost: x\r\napi-key: ${key}\r\ncontent-length: ${b.length}\r\n\r\n`), b])),
  );
  const texts = await Promise.all(answers);
  socks.forEach((s) => s.destroy());
  return texts.map((t) => ({ status: Number(t.slice(9, 12)), duplicate: /x-svc-duplicate: true/i.test(t) }));
}

test('a forged copy carrying a real signature, arriving together with the genuine one, never makes it a duplicate', async () => {
  for (let round = 0; round < 8; round++) {
    const real = legacyTransfer();
    const forged = Uint8Array.from(real.bytes);
    forged[forged.length - 1]! ^= 1; // same first signature, different message
    const [f, r] = await sameTick([forged, real.bytes]);
    assert.equal(r!.status, 200);
    assert.equal(r!.duplicate, false, `round ${round}: the genuine transaction was answered as a duplicate`);
    // The forged copy fails verification, or, if the genuine one was verified first, it is its duplicate.
    assert.ok(f!.status === 400 || (f!.status === 200 && f!.duplicate), `forged: ${f!.status}`);
    await eventually(() => receivedSingles().includes(b64(real.bytes)), 5000, 'genuine transaction forwarded');
  }
});

test('concurrent identical submissions: exactly one is admitted, the rest are duplicates', async () => {
  const tx = legacyTransfer();
  const rs = await Promise.all(Array.from({ length: 6 }, () => post('/v2', tx.bytes)));
  assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
  assert.equal(rs.filter((r) => r.headers.get('x-svc-duplicate') === null).length, 1);
  await new Promise((r) => setTimeout(r, 100));
  await eventually(() => receivedSingles().includes(b64(tx.bytes)), 5000, 'forwarded once');
  assert.equal(receivedSingles().filter((x) => x === b64(tx.bytes)).length, 1);
});

test('UDP: malformed, unknown-key, oversize and over-limit datagrams are dropped silently and counted', async () => {
  const tx = legacyTransfer().bytes;
  const good = udpPacket(key, tx);
  const badMagic = Buffer.from(good);
  badMagic[0] = 0;
  const badMethod = Buffer.from(good);
  badMethod[4] = 1;
  const badLen = Buffer.from(good);
  badLen.writeUInt16LE(tx.length + 1, 21);
  const tooLarge = Buffer.alloc(23 + 1233);
  tooLarge.set([43, 6, 58, 10, 0]);
  tooLarge.writeUInt16LE(1233, 21);
  const before = {
    magic: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_magic' }),
    method: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_method' }),
    len: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_length' }),
    big: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'too_large' }),
    auth: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'TXR_AUTH_INVALID' }),
    short: await relay.metric('txrelay_udp_datagrams_total', { outcome: 'short' }),
  };
  for (const p of [badMagic, badMethod, badLen, tooLarge, udpPacket('00000000-0000-4000-8000-000000000000', tx), Buffer.from([43, 6])]) await sendUdp(p);
  await eventually(async () => (await relay.metric('txrelay_udp_datagrams_total', { outcome: 'short' })) === before.short + 1, 3000, 'udp counters');
  assert.equal(await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_magic' }), before.magic + 1);
  assert.equal(await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_method' }), before.method + 1);
  assert.equal(await relay.metric('txrelay_udp_datagrams_total', { outcome: 'bad_length' }), before.len + 1);
  assert.equal(await relay.metric('txrelay_udp_datagrams_total', { outcome: 'too_large' }), before.big + 1);
  assert.equal(await relay.metric('txrelay_udp_datagrams_total', { outcome: 'TXR_AUTH_INVALID' }), before.auth + 1);
  assert.equal(receivedSingles().includes(b64(tx)), false);
});

test('an account change is live without restart', async () => {
  const rec = await relay.createAccount({ solana: { tps: 1, burst: 1 } });
  assert.equal((await post('/v2', legacyTransfer().bytes, { 'api-key': rec.uuid })).status, 200);
  assert.equal((await post('/v2', legacyTransfer().bytes, { 'api-key': rec.uuid })).status, 429);
  const p = await relay.adminCall('PATCH', `/admin/accounts/${rec.uuid}`, { solana: { tps: 100, burst: 100 } });
  assert.equal(p.status, 200);
  // At the old 1 TPS the next token is ~1 s away; at the new 100 TPS, 10 ms.
  await new Promise((r) => setTimeout(r, 30));
  assert.equal((await post('/v2', legacyTransfer().bytes, { 'api-key': rec.uuid })).status, 200);
});

function sendBundleRpc(txs: string[], opts?: Record<string, unknown>, id: number | string = 1, headers?: Record<string, string>) {
  return rpc({ jsonrpc: '2.0', id, method: 'sendBundle', params: opts === undefined ? [txs] : [txs, opts] }, headers);
}

/** Jito's bundle id: hex SHA-256 over the members' first signatures, in order. */
function bundleIdOf(signatures: string[]): string {
  return createHash('sha256').update(Buffer.concat(signatures.map((s) => bs58.decode(s)))).digest('hex');
}

test('@solana/web3.js with the key in its URL (?api-key=), as hosted providers hand it out; /v2 and /v2/batch take it too', async () => {
  const conn = new Connection(`${relay.base}/?api-key=${key}`, { disableRetryOnRateLimit: true });
  const tx = legacyTransfer();
  assert.equal(await conn.sendRawTransaction(tx.bytes, { skipPreflight: true }), tx.signature);
  // A wrong key in the URL is the plain-text 401 web3.js reports with its status.
  const wrong = new Connection(`${relay.base}/?api-key=00000000-0000-4000-8000-000000000000`, { disableRetryOnRateLimit: true });
  await assert.rejects(wrong.sendRawTransaction(legacyTransfer().bytes, { skipPreflight: true }), /401/);

  const raw = legacyTransfer();
  let r = await post(`/v2?api-key=${key}`, raw.bytes, {});
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, raw.signature);
  const tipped = tipTransfer(TIP, 6000);
  r = await post(`/v2/batch?other=1&api-key=${key}`, bundleBody([tipped.bytes]), {});
  assert.equal(r.status, 200, r.text);
  // Two places at once is refused, as on Jito's paths.
  r = await post(`/v2?api-key=${key}`, legacyTransfer().bytes, { 'api-key': key });
  assert.equal(r.status, 400);
  assert.match(r.text, /one of the api-key header or \?api-key=/);
  r = await post(`/v2?api-key=${key}&api-key=${key}`, legacyTransfer().bytes, {});
  assert.equal(r.status, 400);
});

test('@solana/web3.js sendRawTransaction: a bad signature is -32003 with the relay\'s message, a garbage transaction -32602', async () => {
  const conn = new Connection(relay.base, { httpHeaders: { 'api-key': key }, disableRetryOnRateLimit: true });
  const forged = legacyTransfer().bytes;
  forged[forged.length - 1]! ^= 1; // the message changes, the signature no longer matches
  await assert.rejects(conn.sendRawTransaction(forged, { skipPreflight: true }), (e: unknown) => {
    assert.ok(e instanceof SendTransactionError, String(e));
    assert.equal(e.transactionError.message, 'Transaction signature verification failure');
    return true;
  });
  // web3.js 1.x keeps only the message of a sendTransaction error; its JSON-RPC call, the same request, shows the code.
  const call = (conn as any)._rpcRequest.bind(conn) as (m: string, a: unknown[]) => Promise<any>;
  const bad = await call('sendTransaction', [b64(forged), { encoding: 'base64', skipPreflight: true }]);
  assert.deepEqual(bad.error, { code: -32003, message: 'Transaction signature verification failure', data: { retry: 'do_not_retry_automatically' } });
  const garbage = await call('sendTransaction', [b64(new Uint8Array(100).fill(7)), { encoding: 'base64' }]);
  assert.equal(garbage.error.code, -32602);
  assert.match(garbage.error.message, /^Transaction Decode Error: /);
  await assert.rejects(conn.sendRawTransaction(new Uint8Array(100).fill(7), { skipPreflight: true }), /Transaction Decode Error: /);
  // A good one goes through the same client.
  const tx = legacyTransfer();
  assert.equal(await conn.sendRawTransaction(tx.bytes, { skipPreflight: true }), tx.signature);
  assert.ok(!receivedSingles().includes(b64(forged)), 'the forged transaction was not forwarded');
});

test('a Solana call with only Authorization: Bearer is 401 "Not Found api-key" naming the header to use', async () => {
  const tx = legacyTransfer();
  const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [b64(tx.bytes)] }, { authorization: `Bearer ${key}` });
  assert.equal(r.status, 401);
  assert.equal(r.text, 'Not Found api-key (Solana methods take the api-key header or ?api-key=; Authorization: Bearer is for EVM methods)');
  const b = await sendBundleRpc([b64(tipTransfer(TIP, 6000).bytes)], { encoding: 'base64' }, 2, { authorization: `Bearer ${key}` });
  assert.equal(b.status, 401);
  assert.match(b.text, /^Not Found api-key \(/);
  // The raw and bundle doors say the same.
  for (const path of ['/v2', '/v2/batch']) {
    const raw = await post(path, tx.bytes, { authorization: `Bearer ${key}` });
    assert.equal(raw.status, 401);
    assert.equal(raw.text, 'Not Found api-key (Solana methods take the api-key header or ?api-key=; Authorization: Bearer is for EVM methods)');
  }
  // With the api-key header the same call is accepted: the hint is only for the wrong header.
  assert.equal((await sendTx(tx.bytes)).json.result, tx.signature);
});

test('sendBundle on POST / answers the bundle id, forwards one sendBundle, and a resend is a duplicate with the same id', async () => {
  const a = legacyTransfer();
  const t = tipTransfer(TIP, 5000, { version: 'v0' });
  const id = bundleIdOf([a.signature, t.signature]);
  const r = await sendBundleRpc([b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }, 11);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { jsonrpc: '2.0', result: id, id: 11 });
  const again = await sendBundleRpc([b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }, 12);
  assert.equal(again.status, 200);
  assert.equal(again.json.result, id);
  assert.equal(again.headers.get('x-svc-duplicate'), 'true');
  // The same bundle as a binary body is the same submission too (one dedup, one lane).
  const bin = await post('/v2/batch', bundleBody([a.bytes, t.bytes]));
  assert.equal(bin.headers.get('x-svc-duplicate'), 'true');
  await eventually(() => bundleUp.calls().some((x) => x.method === 'sendBundle' && x.params[0][0] === b64(a.bytes)), 5000, 'forwarded bundle');
  const sent = bundleUp.calls().filter((x) => x.method === 'sendBundle' && x.params[0][0] === b64(a.bytes));
  assert.equal(sent.length, 1, 'forwarded once');
  assert.deepEqual(sent[0]!.params, [[b64(a.bytes), b64(t.bytes)], { encoding: 'base64' }]);
});

test('sendBundle takes base58 when no encoding is given, as Jito does', async () => {
  const t = tipTransfer(TIP, 6000);
  const r = await sendBundleRpc([bs58.encode(t.bytes)]);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, bundleIdOf([t.signature]));
  // Base64 text read as base58 does not decode: a 605 message, carried as -32602.
  const wrong = await sendBundleRpc([b64(tipTransfer(TIP, 6000).bytes)]);
  assert.equal(wrong.status, 200);
  assert.equal(wrong.json.error.code, -32602);
  // It reads as base64: the message says how to say so.
  assert.equal(wrong.json.error.message, 'Batch Decode Error: transaction 0: invalid base58 (this looks like base64: pass {"encoding":"base64"})');
});

test('sendBundle refusals are HTTP 200 JSON-RPC errors with -32602 and the bundle rules\' messages', async () => {
  const enc = { encoding: 'base64' };
  const cases: [string, unknown[], string | RegExp][] = [
    ['no tip', [[b64(legacyTransfer().bytes)], enc], `Tip Instruction Not Found (tip one of: ${TIP})`],
    ['tip too low', [[b64(tipTransfer(TIP, 4999).bytes)], enc], 'Please add a minimum tip of 5000 lamports (batch total)'],
    ['five transactions', [Array.from({ length: 5 }, () => b64(tipTransfer(TIP, 6000).bytes)), enc], /^Invalid params: a bundle is an array of 1 to 4/],
    ['no transactions', [[], enc], /^Invalid params: /],
    ['not an array', [b64(legacyTransfer().bytes), enc], /^Invalid params: /],
    ['unknown encoding', [[b64(legacyTransfer().bytes)], { encoding: 'hex' }], 'Invalid params: encoding must be base64 or base58'],
    ['garbage member', [[b64(tipTransfer(TIP, 6000).bytes), b64(new Uint8Array(100).fill(7))], enc], /^Batch Decode Error: transaction 1: /],
  ];
  const forged = legacyTransfer().bytes;
  forged[forged.length - 1]! ^= 1;
  cases.push(['bad signature', [[b64(tipTransfer(TIP, 6000).bytes), b64(forged)], enc], 'Batch Decode Error: transaction 1: signature verification failed']);
  const before = bundleUp.calls().length;
  for (const [what, params, message] of cases) {
    const r = await rpc({ jsonrpc: '2.0', id: what, method: 'sendBundle', params });
    assert.equal(r.status, 200, what);
    assert.equal(r.json.id, what);
    assert.equal(r.json.error.code, -32602, what);
    if (typeof message === 'string') assert.equal(r.json.error.message, message, what);
    else assert.match(r.json.error.message, message, what);
  }
  assert.equal(bundleUp.calls().length, before, 'nothing refused was forwarded');
});

test('accept latency is recorded per door in txrelay_accept_seconds', async () => {
  const before = await relay.metric('txrelay_accept_seconds_count', { door: 'solana-v2' });
  assert.equal((await post('/v2', legacyTransfer().bytes)).status, 200);
  assert.equal(await relay.metric('txrelay_accept_seconds_count', { door: 'solana-v2' }), before + 1);
  assert.ok((await relay.metric('txrelay_accept_seconds_count', { door: 'jsonrpc' })) > 0);
  assert.ok((await relay.metric('txrelay_accept_seconds_count', { door: 'solana-batch' })) > 0);
});

test('dedup.capacity sizes the duplicate table (txrelay_dedup_capacity), and a small one still finds a resend', async () => {
  const small = await startTestRelay({ dedup: { capacity: 1000 } });
  try {
    assert.equal(await small.metric('txrelay_dedup_capacity'), 1000);
    const k = (await small.createAccount({ solana: { tps: 100, burst: 100 } })).uuid;
    const tx = legacyTransfer();
    const send = () => fetch(small.base + '/v2', { method: 'POST', headers: { 'api-key': k }, body: tx.bytes });
    const first = await send();
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-svc-duplicate'), null);
    const again = await send();
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('x-svc-duplicate'), 'true');
  } finally {
    await small.stop();
  }
});
