/**
 * Deeply nested JSON and refused work (docs/protocol.md#limits,
 * #rate-limits, #websocket), through real sockets against a real relay: a
 * body nested past 32 levels is refused -32600 from its bytes on every JSON
 * door, refusals spend the account's refusals bucket until its bodies are 429
 * unread, and one WebSocket flooding deep messages leaves other clients served.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import WebSocket from 'ws';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;

before(async () => {
  relay = await startTestRelay();
});
after(() => relay.stop());

/** `levels` nested arrays: `[[[...]]]`, 2 bytes a level. */
const nested = (levels: number, inner = ''): string => '['.repeat(levels) + inner + ']'.repeat(levels);
/** A JSON-RPC call whose params nest to `depth` levels in all (the call's object is the first). */
const deepCall = (depth: number, method = 'eth_sendRawTransaction'): string => `{"jsonrpc":"2.0","id":7,"method":"${method}","params":${nested(depth - 1)}}`;

async function post(path: string, body: string, headers: Record<string, string>): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(relay.base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Plain text (a Solana caller's 429).
  }
  return { status: r.status, json, text };
}

function openWs(uuid: string): Promise<WebSocket> {
  const ws = new WebSocket(relay.base.replace('http', 'ws') + `/ws?api-key=${uuid}`);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Sends `messages` and resolves with the first `n` answers, parsed. */
function exchange(ws: WebSocket, messages: string[], n = messages.length): Promise<any[]> {
  const got: any[] = [];
  return new Promise((resolve) => {
    const on = (d: WebSocket.RawData): void => {
      got.push(JSON.parse(d.toString()));
      if (got.length === n) {
        ws.off('message', on);
        resolve(got);
      }
    };
    ws.on('message', on);
    for (const m of messages) ws.send(m);
  });
}

const paid = (extra: Record<string, unknown> = {}) => relay.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 }, ...extra });

test('a 130 KB body nested 65,000 levels is refused -32600 with the depth named, on POST /, Jito\'s path, /v1/status and /ws', async () => {
  const acct = await paid({ solana: { enabled: true, tps: 1000, burst: 1000 } });
  const body = nested(65_000);
  assert.ok(body.length > 128_000 && body.length <= 128 * 1024);
  const auth = { authorization: `Bearer ${acct.uuid}` };

  const r = await post('/', body, auth);
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32600);
  assert.match(r.json.error.message, /nested more than 32 levels/);

  // Inside a call's params, and as an EVM batch's.
  const call = await post('/', deepCall(60_000, 'svc_sendRawTransactionBatch'), auth);
  assert.equal(call.status, 400);
  assert.equal(call.json.error.code, -32600);
  assert.match(call.json.error.message, /nested more than 32 levels/);

  // Jito's path: every JSON-RPC error is HTTP 200 there.
  const jito = await post('/api/v1/transactions', deepCall(60_000, 'sendTransaction'), { 'x-jito-auth': acct.uuid });
  assert.equal(jito.json?.error?.code, -32600, jito.text.slice(0, 200));
  assert.match(jito.json.error.message, /nested more than 32 levels/);

  // The status read's body is small: its own limit (16 KiB) holds 8,000 levels.
  const status = await post('/v1/status', `{"ids":${nested(8_000)}}`, auth);
  assert.equal(status.status, 400);
  assert.equal(status.json.error.code, -32600);

  const ws = await openWs(acct.uuid);
  try {
    const [a] = await exchange(ws, [body]);
    assert.equal(a.error.code, -32600);
    assert.match(a.error.message, /nested more than 32 levels/);
  } finally {
    ws.close();
  }
});

test('32 levels are parsed and the call judged; 33 are refused unread', async () => {
  const acct = await paid();
  const auth = { authorization: `Bearer ${acct.uuid}` };
  const at32 = await post('/', deepCall(32), auth);
  // Parsed: the call's params are judged (-32602), not the body's shape.
  assert.equal(at32.json.error.code, -32602, at32.text);
  const at33 = await post('/', deepCall(33), auth);
  assert.equal(at33.json.error.code, -32600, at33.text);
  assert.match(at33.json.error.message, /nested more than 32 levels/);
  // Brackets inside strings are not nesting.
  const inString = await post('/', `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["${'['.repeat(100)}"]}`, auth);
  assert.notEqual(inString.json.error.code, -32600, inString.text);
});

test('the admin API refuses a deep body -32600 too', async () => {
  const res = await fetch(relay.admin + '/admin/accounts', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
    body: nested(5_000),
  });
  const j = (await res.json()) as any;
  assert.equal(res.status, 400);
  assert.equal(j.error.code, 'TXR_JSON_TOO_DEEP');
});

test('refused bodies spend the account\'s refusals bucket: once it is empty the next body is 429 unread, over HTTP and /ws alike', async () => {
  // TPS 0: nothing refills during the test, so the burst is exactly what refusals may spend.
  const acct = await relay.createAccount({ plan: 'paid', evm: { tps: 0, burst: 3 }, solana: { enabled: false } });
  const auth = { authorization: `Bearer ${acct.uuid}` };
  const deep = nested(1_000);
  assert.equal((await post('/', deep, auth)).json.error.code, -32600);
  assert.equal((await post('/', '{not json', auth)).json.error.code, -32700);
  assert.equal((await post('/', '{"jsonrpc":"2.0","id":1,"method":"eth_nothing"}', auth)).json.error.code, -32601);
  // Refusals spent the burst: the next body, well formed or not, is 429 before it is read.
  const limited = await post('/', deep, auth);
  assert.equal(limited.status, 429);
  assert.equal(limited.json.error.code, -32005);
  assert.equal((await post('/', deepCall(3), auth)).status, 429);
  // Another account is not touched.
  const other = await paid();
  assert.equal((await post('/', deep, { authorization: `Bearer ${other.uuid}` })).json.error.code, -32600);

  // The same bucket over /ws: its messages are 429 too.
  const ws = await openWs(acct.uuid);
  try {
    const [a] = await exchange(ws, [deep]);
    assert.equal(a.error.code, -32005);
  } finally {
    ws.close();
  }
});

test('a socket that keeps sending into its account\'s empty bucket is closed 1008 after 128 rate refusals in a row', { timeout: 60_000 }, async () => {
  const acct = await relay.createAccount({ plan: 'paid', evm: { tps: 0, burst: 1 }, solana: { enabled: false } });
  const ws = await openWs(acct.uuid);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  // The first refusal spends the bucket; every message after it is a rate refusal.
  for (let i = 0; i < 400; i++) ws.send(nested(40));
  assert.equal(await closed, 1008, 'closed as a policy violation');
  // Its account's next socket waits out a cool-down: the upgrade is refused 429 with when to retry.
  await assert.rejects(openWs(acct.uuid), /429/);
  const again = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const rq = http.get(relay.base + '/ws', { headers: { 'api-key': acct.uuid, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
    rq.once('response', (r) => {
      r.resume();
      resolve(r);
    });
    rq.once('upgrade', () => reject(new Error('upgraded during the cool-down')));
    rq.once('error', reject);
  });
  assert.equal(again.statusCode, 429);
  assert.ok(Number(again.headers['retry-after']) > 0, 'says when to retry');
  // A socket that stays within its budget is never closed for it.
  const ok = await paid();
  const ws2 = await openWs(ok.uuid);
  try {
    const answers = await exchange(ws2, Array.from({ length: 200 }, () => nested(40)));
    assert.ok(answers.every((a) => a.error.code === -32600));
    assert.equal(ws2.readyState, WebSocket.OPEN);
  } finally {
    ws2.close();
  }
});

test('one WebSocket flooding deep messages does not keep another client\'s GET /ping or /ws calls from being answered', { timeout: 60_000 }, async () => {
  const flooder = await paid({ evm: { tps: 100_000, burst: 100_000 } });
  const ws = await openWs(flooder.uuid);
  const body = nested(65_000);
  const inFlight = 32;
  let answers = 0;
  let refusedDeep = 0;
  let flooding = true;
  ws.on('message', (d) => {
    answers++;
    if (JSON.parse(d.toString()).error?.code === -32600) refusedDeep++;
    // Keeps 32 messages in flight while the other client works.
    if (flooding) ws.send(body);
  });
  for (let i = 0; i < inFlight; i++) ws.send(body);

  const bystander = await paid();
  const other = await openWs(bystander.uuid);
  try {
    let pings = 0;
    for (let i = 0; i < 6; i++) {
      const r = await fetch(relay.base + '/ping');
      assert.equal(r.status, 200);
      await r.text();
      pings++;
    }
    const [st] = await exchange(other, ['{"jsonrpc":"2.0","id":1,"method":"txrelay_getStatuses","params":[["0xabc"]]}']);
    assert.ok(st.result, JSON.stringify(st));
    // Answered while the flood went on: its socket was still being answered after them.
    const before = answers;
    assert.equal(pings, 6);
    await new Promise<void>((resolve) => {
      const wait = (): void => {
        if (answers > before) resolve();
        else setTimeout(wait, 5);
      };
      wait();
    });
    assert.ok(refusedDeep > 0, 'the flood was answered -32600');
  } finally {
    flooding = false;
    ws.close();
    other.close();
  }
});

test('a socket that sends far ahead of its answers has its excess answered TXR_CAPACITY unread, and every message answered', { timeout: 60_000 }, async () => {
  // 8 x 1 KiB may wait on one socket; a turn handles at most 16 messages of it.
  const small = await startTestRelay({ http: { max_body_bytes: 1024 } });
  try {
    const acct = await small.createAccount({ plan: 'paid', evm: { tps: 100_000, burst: 100_000 } });
    const ws = new WebSocket(small.base.replace('http', 'ws') + `/ws?api-key=${acct.uuid}`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const msg = '{"a":' + nested(30, '"' + 'x'.repeat(800) + '"') + '}';
    const answers = await exchange(ws, Array.from({ length: 200 }, () => msg));
    ws.close();
    const codes = answers.map((a) => a.error?.code);
    // Parsed and judged (not a JSON-RPC object), or refused unread for waiting past the bound.
    assert.ok(codes.every((c) => c === -32600 || c === -32006), JSON.stringify([...new Set(codes)]));
    assert.ok(codes.includes(-32006), 'some messages waited past the bound');
    assert.ok(codes.includes(-32600));
  } finally {
    await small.stop();
  }
});
