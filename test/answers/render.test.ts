/**
 * The answer modules without sockets: each wire family's rule, once
 * (docs/protocol.md#errors, #solana-json-rpc, #websocket, #admin-api).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E, NOT_A_UUID, RelayError, TxrelayError, unknownKey } from '../../src/errors.js';
import { Outcome } from '../../src/pipeline/outcome.js';
import { TAKES_EVM, TAKES_JITO, TAKES_SOLANA, inDoorWords, tipsWords, type Answer, type DoorWords } from '../../src/answers/answer.js';
import { renderSolana } from '../../src/answers/solana.js';
import { renderEvmText } from '../../src/answers/evm.js';
import { Shape, renderCall, renderStatuses, renderWhole, rpcRefusal, type Call } from '../../src/answers/rpc.js';
import { adminRefusal, renderAdminError } from '../../src/answers/admin.js';

const SIG = '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW';
const TIPS = ['7eBMMXs8QGYxMNiE7zxgmGLuZXmAfiyVVnghhxgWukqd'];
const solanaWords: DoorWords = { takes: TAKES_SOLANA, tips: tipsWords(TIPS) };
const evmWords: DoorWords = { takes: TAKES_EVM, tips: '' };
/** A success as the pipeline makes it: its lane dry or not, its request's id. */
const accepted = (status: 'queued' | 'duplicate', id: string, f: { dry?: boolean; requestId?: string | null; ids?: string[] } = {}) =>
  Outcome.accepted(status, id, f.ids ?? null, f.dry ?? false, f.requestId ?? null);

/** A copy: every module reuses its one Answer. */
const seen = (a: Answer) => ({ ...a, headers: a.headers === undefined ? undefined : Object.fromEntries(a.headers) });

test('Solana doors: the signature as a JSON result; duplicate and dry run in headers; refusals in the table\'s plain text', () => {
  assert.deepEqual(seen(renderSolana(accepted('queued', SIG), solanaWords)), {
    status: 200,
    type: 'application/json',
    body: `{"jsonrpc":"2.0","result":"${SIG}","id":null}`,
    headers: undefined,
    holdMs: 0,
  });
  const dup = seen(renderSolana(accepted('duplicate', SIG, { dry: true, requestId: 'r1' }), solanaWords));
  assert.deepEqual(dup.headers, { 'x-svc-duplicate': 'true', 'x-svc-dry-run': 'true' });
  const bundle = seen(renderSolana(accepted('queued', SIG, { ids: [SIG, 'two'] }), solanaWords));
  assert.equal(bundle.body, `{"jsonrpc":"2.0","result":["${SIG}","two"],"id":null}`);

  const limited = new RelayError(E.RATE_ACCOUNT, '2', 1500);
  const r = seen(renderSolana(Outcome.refused(limited), solanaWords));
  assert.deepEqual(r, {
    status: 429,
    type: 'text/plain; charset=utf-8',
    body: 'Exceed Rate Limit: 2 per second',
    headers: { 'retry-after': '2', 'x-ratelimit-retry-after-ms': '1500' },
    holdMs: 0,
  });
  const shed = new RelayError(E.CAPACITY, 'queue full');
  shed.holdMs = 40;
  assert.equal(renderSolana(Outcome.refused(shed), solanaWords).holdMs, 40, 'a held shed stays held');
});

test('a door\'s own words: a missing credential names what it takes; a bundle without a tip names the tip accounts', () => {
  const missing = renderSolana(Outcome.refused(new RelayError(E.AUTH_MISSING)), solanaWords);
  assert.equal(missing.status, 401);
  assert.equal(missing.body, 'Not Found api-key (send the account UUID in the api-key header or as ?api-key=)');
  const tip = renderSolana(Outcome.refused(new RelayError(E.TIP_NOT_FOUND)), solanaWords);
  assert.equal(tip.status, 606);
  assert.equal(tip.body, `Tip Instruction Not Found (tip one of: ${TIPS[0]})`);
  // A detail given where it was raised is kept: the door's words do not replace it.
  const other = new RelayError(E.AUTH_MISSING, ' (only the EVM header)');
  assert.equal(inDoorWords(other, solanaWords), other);
  assert.equal(inDoorWords(new RelayError(E.AUTH_MISSING), { takes: TAKES_JITO, tips: '' }).text, `Not Found api-key${TAKES_JITO}`);
  // The EVM door's message names its forms.
  const evm = JSON.parse(renderEvmText(Outcome.refused(new RelayError(E.AUTH_MISSING)), evmWords).body);
  assert.equal(evm.error.message, 'Unauthorized: account UUID missing (send the account UUID as `Authorization: Bearer <uuid>` or ?auth=)');
});

test('an unknown key: "Invalid Api-Key"; one that is not a UUID at all says so', () => {
  assert.equal(unknownKey('00000000-0000-4000-8000-000000000000').text, 'Invalid Api-Key');
  assert.equal(unknownKey('nope').text, `Invalid Api-Key${NOT_A_UUID}`);
  assert.equal(unknownKey('nope').message, 'Unauthorized: account UUID not recognised (not a UUID)');
  assert.equal(unknownKey(null).text, 'Invalid Api-Key');
});

test('EVM plain-text door: 202 with the queued headers and CORS; a refusal keeps CORS', () => {
  const ok = seen(renderEvmText(accepted('duplicate', '0xab', { dry: true }), evmWords));
  assert.equal(ok.status, 202);
  assert.equal(ok.headers!['x-svc-duplicate'], 'true');
  assert.equal(ok.headers!['x-svc-dry-run'], 'true');
  assert.equal(ok.headers!['access-control-allow-origin'], '*');
  assert.match(JSON.parse(ok.body).message, /dry run/);
  const bad = seen(renderEvmText(Outcome.refused(new RelayError(E.TX_INVALID, 'bad rlp')), evmWords));
  assert.equal(bad.status, 400);
  assert.equal(bad.headers!['access-control-allow-origin'], '*');
  assert.deepEqual(JSON.parse(bad.body).error, { code: -32602, message: 'Invalid transaction: bad rlp', data: { retry: 'do_not_retry_automatically' } });
});

const call = (c: Partial<Call>): Call => ({ shape: Shape.EvmTx, rpcId: '7', solanaWire: false, solanaClient: false, socket: false, bundleId: '', result: null, ...c });

test('JSON-RPC, the Solana rule once: 401 and 429 plain text, every other refused Solana call HTTP 200 with the error object', () => {
  const sol = call({ shape: Shape.SolanaTx, solanaWire: true });
  const decode = seen(renderCall(sol, Outcome.refused(new RelayError(E.SOL_DECODE, 'short')), solanaWords));
  assert.equal(decode.status, 200);
  assert.equal(JSON.parse(decode.body).error.code, -32602);
  const unauth = seen(renderCall(sol, Outcome.refused(new RelayError(E.AUTH_INVALID)), solanaWords));
  assert.deepEqual([unauth.status, unauth.type, unauth.body], [401, 'text/plain; charset=utf-8', 'Invalid Api-Key']);
  // The same refusal to an EVM call is its own status, as JSON.
  const evm = seen(renderCall(call({}), Outcome.refused(new RelayError(E.TX_INVALID, 'x')), evmWords));
  assert.equal(evm.status, 400);
  // A method the relay does not serve, asked with the api-key header alone: a Solana client, HTTP 200.
  const read = seen(renderCall(call({ solanaClient: true }), Outcome.refused(new RelayError(E.METHOD_NOT_FOUND, 'getBalance')), solanaWords));
  assert.equal(read.status, 200);
  // Over /ws: always the JSON-RPC object.
  const ws = seen(renderCall({ ...sol, socket: true }, Outcome.refused(new RelayError(E.AUTH_INVALID)), solanaWords));
  assert.equal(JSON.parse(ws.body).error.code, -32010);
});

test('JSON-RPC successes: each shape\'s body and headers; over /ws the x-svc facts in `svc`', () => {
  const evm = seen(renderCall(call({}), accepted('duplicate', '0xab', { requestId: 'rq' }), evmWords));
  assert.equal(evm.status, 202);
  assert.deepEqual(evm.headers, { 'x-svc-submission-state': 'queued', 'x-svc-duplicate': 'true' });
  assert.equal(JSON.parse(evm.body).svc, undefined, 'HTTP says it in headers');
  const overWs = JSON.parse(renderCall(call({ socket: true }), accepted('duplicate', '0xab', { dry: true, requestId: 'rq' }), evmWords).body);
  assert.deepEqual(overWs.svc, { request_id: 'rq', duplicate: true, dry_run: true });
  assert.equal(overWs.result, '0xab');
  const plain = JSON.parse(renderCall(call({ socket: true, shape: Shape.SolanaTx }), accepted('queued', SIG, { requestId: 'rq2' }), solanaWords).body);
  assert.deepEqual(plain, { jsonrpc: '2.0', result: SIG, id: 7, svc: { request_id: 'rq2' } });

  const one = seen(renderCall(call({ shape: Shape.BundleOfOne, bundleId: 'bid' }), accepted('queued', SIG), solanaWords));
  assert.deepEqual([one.status, JSON.parse(one.body).result, one.headers], [200, SIG, { 'x-bundle-id': 'bid' }]);
  const bundle = seen(renderCall(call({ shape: Shape.Bundle, bundleId: 'bid' }), accepted('queued', SIG), solanaWords));
  assert.equal(JSON.parse(bundle.body).result, 'bid');
  const tips = seen(renderCall(call({ shape: Shape.Read, result: JSON.stringify(TIPS) }), Outcome.answered([]), solanaWords));
  assert.deepEqual(JSON.parse(tips.body).result, TIPS);
  const full = seen(renderCall(call({ shape: Shape.Read, result: new RelayError(E.INVALID_PARAMS, 'too many') }), Outcome.answered([]), solanaWords));
  assert.equal(full.status, 400);

  // An EVM batch: its status by the batch rule, its id in a header.
  const batch = Outcome.group('b1', [accepted('queued', '0x01'), Outcome.refused(new RelayError(E.TX_INVALID, 'x'), '0x02')], true, null);
  const b = seen(renderCall(call({ shape: Shape.EvmBatch }), batch, evmWords));
  assert.equal(b.status, 202);
  assert.deepEqual(b.headers, { 'x-svc-batch-id': 'b1', 'x-svc-dry-run': 'true' });
  const limited = Outcome.group('b2', [Outcome.refused(new RelayError(E.RATE_ACCOUNT, '1', 2500), '0x03')], true, null);
  const l = seen(renderCall(call({ shape: Shape.EvmBatch }), limited, evmWords));
  assert.equal(l.status, 429);
  assert.equal(l.headers!['retry-after'], '3');
});

test('a whole request refused: plain text for a Solana caller\'s 401, 429 and shed; Jito\'s paths answer 200 otherwise', () => {
  const shed = new RelayError(E.CAPACITY, 'full');
  assert.equal(renderWhole(shed, true, false, solanaWords).type, 'text/plain; charset=utf-8');
  assert.equal(renderWhole(shed, false, false, evmWords).status, 503);
  assert.equal(renderWhole(shed, false, false, evmWords).type, 'application/json');
  const parse = new RelayError(E.PARSE, 'not JSON');
  assert.equal(renderWhole(parse, false, true, solanaWords).status, 200);
  assert.equal(renderWhole(parse, true, false, solanaWords).status, 400);
  assert.equal(renderWhole(new RelayError(E.AUTH_MISSING), false, true, { takes: TAKES_JITO, tips: '' }).body, `Not Found api-key${TAKES_JITO}`);
  const up = seen(rpcRefusal(new RelayError(E.RATE_IP, '5', 900), evmWords));
  assert.equal(up.status, 429);
  assert.equal(up.headers!['x-ratelimit-retry-after-ms'], '900');
});

test('status reads: one object for GET, {"statuses":[...]} for POST', () => {
  const view = { id: 'x', state: 'queued' } as never;
  assert.deepEqual(JSON.parse(renderStatuses(Outcome.answered([view]), true, evmWords).body), { id: 'x', state: 'queued' });
  assert.deepEqual(JSON.parse(renderStatuses(Outcome.answered([view]), false, evmWords).body), { statuses: [{ id: 'x', state: 'queued' }] });
  assert.equal(renderStatuses(Outcome.refused(new RelayError(E.AUTH_INVALID)), true, evmWords).status, 401);
});

test('admin API errors from the table; an internal error\'s own message is never shown', () => {
  const nf = seen(renderAdminError(new TxrelayError(E.BATCH_NOT_FOUND)));
  assert.equal(nf.status, 404);
  assert.deepEqual(JSON.parse(nf.body), { error: { code: 'TXR_BATCH_NOT_FOUND', message: 'no batch record with that id' } });
  const internal = JSON.parse(renderAdminError(new Error('secret path /var/x')).body);
  assert.deepEqual(internal, { error: { code: 'TXR_INTERNAL', message: 'internal error' } });
  assert.equal(adminRefusal(E.ADMIN_AUTH).status, 401);
});
