/**
 * A request without a credential is told where this door takes one
 * (docs/protocol.md#authentication): every HTTP door, the status API and the
 * `/ws` upgrade, each in its own words, on one relay.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startTestRelay } from '../helpers/relay.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer } from '../helpers/solana.js';

const relay = await startTestRelay();
after(() => relay.stop());

const RPC = 'Unauthorized: account UUID missing (Solana methods take the api-key header or ?api-key=; EVM methods take `Authorization: Bearer <uuid>`)';
const EVM_TEXT = 'Unauthorized: account UUID missing (send the account UUID as `Authorization: Bearer <uuid>` or ?auth=)';
const STATUS = 'Unauthorized: account UUID missing (send the account UUID in the api-key header, as `Authorization: Bearer <uuid>` or as ?api-key=)';
const WS = STATUS;
const SOLANA = 'Not Found api-key (send the account UUID in the api-key header or as ?api-key=)';
const JITO = 'Not Found api-key (send the account UUID in the api-key header, the x-jito-auth header, ?uuid= or ?api-key=)';

/** The 401's text: the JSON-RPC error's message, else the plain-text body. */
async function refusal(path: string, init: RequestInit = {}): Promise<string> {
  const res = await fetch(relay.base + path, init);
  assert.equal(res.status, 401, path);
  const body = await res.text();
  return res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(body).error.message : body;
}

const rpc = (method: string, params: unknown[]): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
});

test('each HTTP door names what it takes when no credential came', async () => {
  const evm = await signed1559({ nonce: 1 });
  const sol = legacyTransfer();
  const b64 = Buffer.from(sol.bytes).toString('base64');
  const cases: [string, string, RequestInit, string][] = [
    ['POST / eth_sendRawTransaction', '/', rpc('eth_sendRawTransaction', [evm.hex]), RPC],
    ['POST / svc_sendRawTransactionBatch', '/', rpc('svc_sendRawTransactionBatch', [evm.hex]), RPC],
    ['POST / sendTransaction', '/', rpc('sendTransaction', [b64, { encoding: 'base64' }]), RPC],
    ['plain text', '/v2/svc_send_raw_transaction', { method: 'POST', body: evm.hex }, EVM_TEXT],
    ['raw bytes', '/v2', { method: 'POST', body: sol.bytes }, SOLANA],
    ['Jito transactions', '/api/v1/transactions', rpc('sendTransaction', [b64, { encoding: 'base64' }]), JITO],
    ['Jito bundles', '/api/v1/bundles', rpc('sendBundle', [[b64], { encoding: 'base64' }]), JITO],
    ['status by id', '/v1/status/0x00', {}, STATUS],
    ['status by list', '/v1/status', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ids":["0x00"]}' }, STATUS],
  ];
  for (const [door, path, init, words] of cases) assert.equal(await refusal(path, init), words, door);
});

test('the /ws upgrade without a credential is a 401 naming the three ways it takes one', async () => {
  const ws = new WebSocket(relay.base.replace('http', 'ws') + '/ws');
  const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    ws.once('open', () => reject(new Error('the socket opened without a credential')));
    ws.once('error', () => {});
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
  });
  assert.equal(refused.status, 401);
  assert.equal(JSON.parse(refused.body).error.message, WS);
});
