/**
 * Hardening against an outside attack run, where it lives in the doors, each
 * pinned through real sockets against a real relay: bounded JSON-RPC arrays
 * with per-IP limits before per-call work, UDP per-source buckets kept apart
 * from HTTP's, the family A batch-record budget, and HTTP framing.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

let relay: TestRelay;

before(async () => {
  relay = await startTestRelay({
    limits: { ip_rps: 1, ip_burst: 200 },
    udp: { ip_rps: 1, ip_burst: 5 },
    evm: { max_batch: 16 },
  });
});
after(() => relay.stop());

async function rpcRaw(body: string, headers: Record<string, string> = {}) {
  const r = await fetch(relay.base + '/', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text };
}

/** One HTTP/1.1 exchange on a raw socket; resolves with what came back and whether the server closed. */
function raw(payload: Buffer, waitMs = 1500): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const url = new URL(relay.base);
    const s = net.connect(Number(url.port), url.hostname);
    let text = '';
    let closed = false;
    s.on('data', (d) => (text += d));
    s.on('close', () => {
      closed = true;
      resolve({ text, closed });
    });
    s.on('error', () => {});
    s.write(payload);
    setTimeout(() => {
      if (!closed) {
        s.destroy();
        resolve({ text, closed: false });
      }
    }, waitMs);
  });
}

test('a JSON-RPC body without a live account\'s credential is a 401 before it is read; with one, an array longer than evm.max_batch is one small 400', async () => {
  const body = '[' + Array.from({ length: 43_000 }, () => '{}').join(',') + ']';
  const strangers: Record<string, string>[] = [{}, { authorization: 'Bearer 00000000-0000-4000-8000-000000000000' }, { 'api-key': 'nope' }];
  for (const headers of strangers) {
    const r = await rpcRaw(body, headers);
    assert.equal(r.status, 401);
    assert.ok(r.text.length < 300, `answer of ${r.text.length} bytes`);
  }
  const acct = await relay.createAccount({ plan: 'paid' });
  const t0 = performance.now();
  const r = await rpcRaw(body, { authorization: `Bearer ${acct.uuid}` });
  assert.equal(r.status, 400);
  const j = JSON.parse(r.text);
  assert.equal(j.error.code, -32600);
  assert.match(j.error.message, /at most 16 calls/);
  assert.ok(r.text.length < 300, `answer of ${r.text.length} bytes`);
  assert.ok(performance.now() - t0 < 5000);
});

test('a JSON-RPC array charges the IP bucket one credit per call before any call is looked at', async () => {
  const ip = await startTestRelay({ limits: { ip_rps: 1, ip_burst: 10 }, evm: { max_batch: 64 } });
  try {
    // Made through the admin listener, which spends nothing of this bucket.
    const acct = await ip.createAccount({ plan: 'paid' });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` };
    const eleven = '[' + Array.from({ length: 11 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_sendRawTransaction","params":["0x00"]}`).join(',') + ']';
    const r = await fetch(ip.base + '/', { method: 'POST', headers, body: eleven });
    assert.equal(r.status, 429, 'eleven calls do not fit a burst of ten');
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    const j = (await r.json()) as any;
    assert.equal(j.error.code, -32005, 'one error for the whole request, not eleven');
    // The refused request spent the one credit charged before its body was parsed: nine are left.
    // Invalid calls are charged too: the IP bucket comes before any call is looked at.
    const nine = '[' + Array.from({ length: 9 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_sendRawTransaction","params":["0x00"]}`).join(',') + ']';
    const r2 = await fetch(ip.base + '/', { method: 'POST', headers, body: nine });
    assert.equal(r2.status, 400);
    const r3 = await fetch(ip.base + '/', { method: 'POST', headers, body: '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}' });
    assert.equal(r3.status, 429, 'the nine invalid calls spent the bucket');
  } finally {
    await ip.stop();
  }
});

test('POST / without a Content-Type is 415 -32015, not accepted', async () => {
  const acct = await relay.createAccount({ plan: 'paid' });
  const tx = await signed1559({ nonce: 1 });
  const r = await fetch(relay.base + '/', {
    method: 'POST',
    headers: { authorization: `Bearer ${acct.uuid}` },
    body: new TextEncoder().encode(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [tx.hex] })),
  });
  assert.equal(r.status, 415);
  assert.equal(((await r.json()) as any).error.code, -32015);
});

test('conflicting Content-Length headers close the connection before anything after them is read (request smuggling)', async () => {
  const acct = await relay.createAccount({ solana: { tps: 100, burst: 100 } });
  const tx = Buffer.from(legacyTransfer().bytes);
  const head = `POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${acct.uuid}\r\nContent-Length: ${tx.length}\r\nContent-Length: ${tx.length + 5}\r\n\r\n`;
  // uWS cannot write a status and then stop reading (see readBody): the connection just closes.
  // node:http's parser refuses the head itself with a 400 and closes.
  const refused = relay.relay.acceptor === 'uws' ? /^$/ : /^HTTP\/1\.1 400 /;
  const alone = await raw(Buffer.concat([Buffer.from(head), tx]));
  assert.match(alone.text, refused, 'the ambiguous request is not processed');
  assert.equal(alone.closed, true);
  const r = await raw(Buffer.concat([Buffer.from(head), tx, Buffer.from('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n')]));
  assert.match(r.text, refused);
  assert.doesNotMatch(r.text, /pong/, 'the smuggled request is never answered');
  assert.equal(r.closed, true);
  // Repeating the same value is not a conflict for us; node:http's parser refuses any repeat.
  const same = `POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${acct.uuid}\r\nContent-Length: ${tx.length}\r\nContent-Length: ${tx.length}\r\n\r\n`;
  const ok = await raw(Buffer.concat([Buffer.from(same), tx]), 800);
  assert.match(ok.text, relay.relay.acceptor === 'uws' ? /^HTTP\/1\.1 200 / : /^HTTP\/1\.1 400 /);
});

test('UDP datagrams from an address do not spend the HTTP bucket of that address (spoofable sources)', async () => {
  const acct = await relay.createAccount({ solana: { tps: 1000, burst: 1000 } });
  const s = dgram.createSocket('udp4');
  const key = Buffer.from(acct.uuid.replaceAll('-', ''), 'hex');
  for (let i = 0; i < 50; i++) {
    const tx = legacyTransfer().bytes;
    const p = Buffer.alloc(23 + tx.length);
    p.set([43, 6, 58, 10, 0]);
    key.copy(p, 5);
    p.writeUInt16LE(tx.length, 21);
    p.set(tx, 23);
    await new Promise<void>((res, rej) => s.send(p, relay.udpPort, '127.0.0.1', (e) => (e ? rej(e) : res())));
  }
  s.close();
  const limited = async () => relay.metric('txrelay_udp_datagrams_total', { outcome: 'TXR_RATE_IP' });
  for (let i = 0; i < 100 && (await limited()) < 40; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok((await limited()) >= 40, 'UDP is limited by its own bucket (burst 5)');
  const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': acct.uuid }, body: legacyTransfer().bytes });
  assert.equal(r.status, 200, 'the same address over HTTP still has its bucket');
});

test('a family A batch flood writes at most the account\'s own rate of receive records; the rest is 429 with nothing written', async () => {
  const acct = await relay.createAccount({ evm: { tps: 1, burst: 2 } });
  const refused0 = await relay.metric('txrelay_batch_records_refused_total');
  const answers: { status: number; batch: string | null; code: number | null }[] = [];
  for (let i = 0; i < 12; i++) {
    const tx = await signed1559({ nonce: 100 + i });
    const r = await fetch(relay.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'svc_sendRawTransactionBatch', params: [tx.hex] }),
    });
    const j = (await r.json()) as any;
    answers.push({ status: r.status, batch: r.headers.get('x-svc-batch-id'), code: j.error?.code ?? null });
  }
  const recorded = answers.filter((a) => a.batch !== null);
  assert.ok(recorded.length >= 2 && recorded.length <= 4, `records written: ${recorded.length} (burst 2 + 1/s)`);
  const refused = answers.filter((a) => a.batch === null);
  assert.ok(refused.every((a) => a.status === 429 && a.code === -32005), JSON.stringify(refused));
  assert.equal((await relay.metric('txrelay_batch_records_refused_total')) - refused0, refused.length);
});

test('on a dual-stack listener an IPv4 client is keyed and recorded by its IPv4 address', async () => {
  const dual = await startTestRelay({ http: { host: '::' } });
  try {
    const acct = await dual.createAccount({ plan: 'paid' });
    const port = new URL(dual.base).port;
    const tx = await signed1559({ nonce: 5 });
    const r = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: [tx.hex] }),
    });
    assert.equal(r.status, 202);
    const rec = await dual.adminCall('GET', `/admin/batches/${r.headers.get('x-svc-batch-id')}`);
    assert.equal(rec.json.client_ip, '127.0.0.1');
  } finally {
    await dual.stop();
  }
});

/** Opens `n` connections that each declare a body of `declared` bytes and send all but the last byte. */
async function partialBodies(r: TestRelay, n: number, headers: string, declared: number, path = '/'): Promise<net.Socket[]> {
  const url = new URL(r.base);
  const body = Buffer.alloc(declared - 1, 0x20);
  const socks = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(Number(url.port), url.hostname, () => {
        s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}Content-Length: ${declared}\r\n\r\n`);
        s.write(body, () => resolve(s));
      });
      s.on('error', () => {});
    })),
  );
  return socks;
}

test('stalled bodies: a stranger\'s is never buffered, an account\'s counts toward the body budget and leaves it with its connection', async (t) => {
  const relay = await startTestRelay({ limits: { ip_rps: 10_000, ip_burst: 10_000 } });
  t.after(() => relay.stop());
  // Strangers: 300 connections, each 128 KiB minus a byte, no credential. Nothing of theirs is held.
  const strangers = await partialBodies(relay, 300, '', 131_072);
  t.after(() => strangers.forEach((s) => s.destroy()));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await relay.metric('txrelay_body_buffered_bytes'), 0);
  // An account's stalled bodies are held, as received, within the budget.
  const acct = await relay.createAccount({ plan: 'paid' });
  const mine = await partialBodies(relay, 20, `Authorization: Bearer ${acct.uuid}\r\n`, 65_536);
  let held = 0;
  for (let i = 0; i < 100 && held < 20 * 65_535; i++) {
    await new Promise((r) => setTimeout(r, 20));
    held = await relay.metric('txrelay_body_buffered_bytes');
  }
  assert.ok(held >= 20 * 65_535 && held <= 20 * 65_536, `held ${held}`);
  for (const s of mine) s.destroy();
  for (let i = 0; i < 100 && held > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    held = await relay.metric('txrelay_body_buffered_bytes');
  }
  assert.equal(held, 0, 'given back when the clients went away');
});

test('past http.max_buffered_body_bytes a body is refused 503 retry-safe, and other requests go on', async (t) => {
  const small = await startTestRelay({ http: { max_buffered_body_bytes: 1_048_576 } });
  t.after(() => small.stop());
  const acct = await small.createAccount({ plan: 'paid' });
  const url = new URL(small.base);
  const socks: net.Socket[] = [];
  t.after(() => socks.forEach((s) => s.destroy()));
  const answers: string[] = [];
  // Sixteen stalled 120 KB bodies fill a 1 MiB budget; the ninth and later are refused.
  for (let i = 0; i < 16; i++) {
    const s = net.connect(Number(url.port), url.hostname);
    socks.push(s);
    s.on('error', () => {});
    s.on('data', (d) => answers.push(d.toString()));
    s.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${acct.uuid}\r\nContent-Length: 120000\r\n\r\n` + ' '.repeat(119_999));
  }
  for (let i = 0; i < 100 && answers.length < 8; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(answers.length >= 7 && answers.length <= 9, `${answers.length} refused`);
  for (const a of answers) {
    assert.match(a, /^HTTP\/1\.1 503 /);
    assert.match(a, /max_buffered_body_bytes/);
    assert.match(a, /retry_safe/);
  }
  assert.ok((await small.metric('txrelay_body_buffered_bytes')) <= 1_048_576);
  const tx = await signed1559({ nonce: 77 });
  const ok = await fetch(small.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [tx.hex] }),
  });
  assert.notEqual(ok.status, 503, 'a body that arrives whole in one chunk takes no budget');
});


test('incomplete /v2 bodies wait in the body budget, not in the transaction slab another tenant needs', async (t) => {
  const { startUpstream } = await import('../helpers/upstream.js');
  const up = await startUpstream();
  t.after(() => up.close());
  const r = await startTestRelay({ solana: { rpc_upstreams: [up.url] }, limits: { ip_rps: 10_000, ip_burst: 10_000 } });
  t.after(() => r.stop());
  const a = await r.createAccount({ solana: { tps: 1000, burst: 1000 } });
  const stalled = await partialBodies(r, 200, `api-key: ${a.uuid}\r\n`, 4096, '/v2');
  t.after(() => stalled.forEach((s) => s.destroy()));
  let held = 0;
  for (let i = 0; i < 100 && held < 200 * 4095; i++) {
    await new Promise((res) => setTimeout(res, 20));
    held = await r.metric('txrelay_body_buffered_bytes');
  }
  assert.ok(held >= 200 * 4095, `held ${held}`);
  assert.equal(await r.metric('txrelay_slab_used_bytes'), 0, 'no slab block for a body not yet whole');
  // Another tenant's transaction goes through; so does a body that arrives in pieces, once whole.
  const b = await r.createAccount({ solana: { tps: 1000, burst: 1000 } });
  const res = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': b.uuid }, body: legacyTransfer().bytes });
  assert.equal(res.status, 200);
  const tx = legacyTransfer();
  const url = new URL(r.base);
  const answer = await new Promise<string>((resolve) => {
    let got = '';
    const s = net.connect(Number(url.port), url.hostname, () => {
      s.write(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${b.uuid}\r\nContent-Length: ${tx.bytes.length}\r\n\r\n`);
      s.write(Buffer.from(tx.bytes.subarray(0, 100)));
      setTimeout(() => s.write(Buffer.from(tx.bytes.subarray(100))), 50);
    });
    s.on('data', (d) => {
      got += d;
      if (got.includes('\r\n\r\n')) {
        s.destroy();
        resolve(got);
      }
    });
  });
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.ok(answer.includes(tx.signature));
});
