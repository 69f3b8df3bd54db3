/**
 * Hostile input on every door never crashes the relay, never yields a 5xx
 * (a rejection is always a 4xx/6xx with the documented body shape), and the
 * relay keeps serving valid traffic afterwards. fast-check generates the
 * input; real sockets carry it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fc from 'fast-check';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

let relay: TestRelay;
let key: string;

before(async () => {
  relay = await startTestRelay({ limits: { ip_rps: 1000000, ip_burst: 1000000 } });
  key = (await relay.createAccount({ solana: { tps: 1000000, burst: 1000000 }, evm: { tps: 1000000, burst: 1000000 } })).uuid;
});

after(async () => {
  await relay?.stop();
});

async function post(path: string, body: Uint8Array | string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const r = await fetch(relay.base + path, { method: 'POST', headers, body });
  return { status: r.status, text: await r.text() };
}

/** Mostly-valid-looking transactions with random damage, and plain noise. */
const txLike = fc.oneof(
  fc.uint8Array({ minLength: 0, maxLength: 1500 }),
  fc.tuple(fc.nat(), fc.nat(255), fc.integer({ min: 0, max: 300 })).map(([pos, val, cut]) => {
    const b = Uint8Array.from(legacyTransfer().bytes);
    b[pos % b.length] = val;
    return b.subarray(0, Math.max(1, b.length - cut));
  }),
);

test('random and damaged bodies on /v2 and /v2/batch: only 200, 400 or 605 with plain-text bodies', async () => {
  await fc.assert(
    fc.asyncProperty(txLike, fc.boolean(), async (bytes, asBundle) => {
      const body = asBundle ? Buffer.concat([Buffer.from([bytes[0] ?? 0, bytes.length & 0xff, bytes.length >> 8]), bytes]) : bytes;
      const r = await post(asBundle ? '/v2/batch' : '/v2', body, { 'api-key': key });
      assert.ok([200, 400, 605, 606, 607].includes(r.status), `${r.status} ${r.text}`);
      if (r.status !== 200) assert.match(r.text, /^(Transaction|Batch) Decode Error: |^Tip|^Please/);
    }),
    { numRuns: 150 },
  );
});

test('random JSON-RPC envelopes on POST /: a JSON answer with a 2xx or 4xx status, never a 5xx', async () => {
  const params = fc.oneof(fc.constant(undefined), fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.object()), { maxLength: 3 }), fc.object());
  const call = fc.record(
    {
      jsonrpc: fc.oneof(fc.constant('2.0'), fc.string()),
      id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.object()),
      method: fc.oneof(fc.constantFrom('sendTransaction', 'eth_sendRawTransaction', 'svc_sendRawTransactionBatch'), fc.string()),
      params,
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(call.map((c) => JSON.stringify(c)), fc.array(call, { maxLength: 3 }).map((a) => JSON.stringify(a)), fc.string());
  await fc.assert(
    fc.asyncProperty(body, fc.boolean(), async (text, evm) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(evm ? { authorization: `Bearer ${key}` } : { 'api-key': key }) };
      const r = await post('/', text, headers);
      assert.ok(r.status < 500, `${r.status} ${r.text}`);
      if (r.status !== 401 && r.status !== 429) JSON.parse(r.text);
    }),
    { numRuns: 200 },
  );
});

test('random plain-text bodies and query strings: 202 or a 4xx JSON-RPC error', async () => {
  const q = fc.oneof(fc.constant(`?auth=${key}`), fc.string().map((s) => '?' + encodeURI(s).slice(0, 100)), fc.constant(`?auth=${key}&auth=x`));
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string(), fc.uint8Array({ maxLength: 300 }).map((b) => '0x' + Buffer.from(b).toString('hex')), fc.constant('')), q, async (text: string, query: string) => {
      const r = await post('/v2/svc_send_raw_transaction' + query, text, { 'content-type': 'text/plain' });
      assert.ok(r.status === 202 || (r.status >= 400 && r.status < 500), `${r.status} ${r.text}`);
      JSON.parse(r.text);
    }),
    { numRuns: 150 },
  );
});

test('after all of it (and random UDP datagrams), the relay still admits valid transactions', async () => {
  const s = dgram.createSocket('udp4');
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 1400 }), async (d) => {
      await new Promise<void>((res) => s.send(d, relay.udpPort, '127.0.0.1', () => res()));
    }),
    { numRuns: 200 },
  );
  s.close();
  assert.equal((await post('/v2', legacyTransfer().bytes, { 'api-key': key })).status, 200);
  const evm = await post('/v2/svc_send_raw_transaction?auth=' + key, (await signed1559({ nonce: 77 })).hex, { 'content-type': 'text/plain' });
  assert.equal(evm.status, 202);
  assert.equal((await fetch(relay.base + '/ping')).status, 200);
});
