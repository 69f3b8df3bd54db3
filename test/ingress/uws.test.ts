/**
 * The acceptor loader: the first uWebSockets.js build that loads
 * wins, every one skipped says why in one line, `http.acceptor` picks or
 * forces, and where no build loads every door is served by node:http.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeAcceptor, glibcVersion, loadAcceptor, type Candidate } from '../../src/ingress/uws.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';
import { AcceptorError } from '../../src/errors.js';

const ABI = process.versions.modules;
const pkgDir = (spec: string) => dirname(fileURLToPath(import.meta.resolve(spec)));

test('auto: the first build that loads runs; each candidate before it says in one line why not', () => {
  const a = loadAcceptor('auto');
  for (const line of a.skipped) {
    assert.doesNotMatch(line, /\n|    at /, 'one line, no stack');
    assert.match(line, /^(@btc-vision\/uwebsockets\.js|uws-pack|@trufflesuite\/uws-js-unofficial)@[\d.]+[^:]*: /);
  }
  if (a.kind === 'uws') {
    assert.equal(typeof a.uws.App, 'function');
    // uws-pack and btc-vision have filter(); trufflesuite 20.30 does not.
    assert.equal(a.filter, !a.name.startsWith('@trufflesuite/'));
  } else {
    assert.equal(a.name, 'node:http');
    assert.equal(a.skipped.length, 3);
  }
});

/** These two cases hold on one kind of host each; elsewhere they skip saying which host they need. */
const here = `this is Node ABI ${ABI} on glibc ${glibcVersion() || 'unknown'}`;
const onOldGlibcNode2022 = /^2\.(2[7-9]|3[0-7])$/.test(glibcVersion()) && ['115', '127'].includes(ABI);
const onOldGlibcNode24 = Number(ABI) >= 137 && glibcVersion() !== '' && glibcVersion() < '2.38';

test('auto on Node 20/22 with glibc 2.27-2.37 takes uws-pack after btc-vision says it needs glibc 2.38', { skip: onOldGlibcNode2022 ? false : `needs Node 20 or 22 on glibc 2.27-2.37; ${here}` }, () => {
  const a = loadAcceptor('auto');
  assert.equal(a.name, 'uws-pack@20.0.8');
  assert.deepEqual(a.skipped, [`@btc-vision/uwebsockets.js@20.57.0: needs glibc >= 2.38 (this system has ${glibcVersion()})`]);
});

test('auto with no build for this Node (ABI 137+) and glibc < 2.38 falls back to node:http and says why', { skip: onOldGlibcNode24 ? false : `needs Node 24 or later (ABI 137+) on glibc below 2.38; ${here}` }, () => {
  const a = loadAcceptor('auto');
  assert.equal(a.kind, 'node');
  const line = describeAcceptor(a, 'auto');
  assert.match(line, /node:http fallback/);
  assert.match(line, /the CPU per request of uWS/);
  assert.match(line, /needs glibc >= 2\.38/);
  assert.match(line, new RegExp(`no build for Node ${process.versions.node} \\(ABI ${ABI}\\)`));
});

test('http.acceptor = "uws" fails with each candidate\'s reason when no build loads', () => {
  const missing: Candidate[] = [
    { name: 'first@1.0.0', binDir: () => join(pkgDir('uws-pack'), 'no-such-dir') },
    { name: 'second@2.0.0', binDir: () => '/nonexistent' },
  ];
  assert.throws(
    () => loadAcceptor('uws', missing),
    (e: unknown) =>
      e instanceof AcceptorError &&
      e.code === 'TXR_ACCEPTOR' &&
      e.message.includes(`first@1.0.0: no build for Node ${process.versions.node} (ABI ${ABI})`) &&
      e.message.includes('second@2.0.0: ') &&
      e.message.startsWith('http.acceptor = "uws" but no uWebSockets.js build loads'),
  );
  // auto falls back instead, carrying the same reasons for the start-up line.
  const a = loadAcceptor('auto', missing);
  assert.equal(a.kind, 'node');
  assert.equal(a.skipped.length, 2);
});

test('http.acceptor = "node" uses node:http without trying uWS', () => {
  const a = loadAcceptor('node');
  assert.deepEqual([a.kind, a.name, a.filter, a.skipped], ['node', 'node:http', true, []]);
  assert.match(describeAcceptor(a, 'node'), /^HTTP acceptor: node:http, as http\.acceptor = "node" asks; about [\d.-]+x the CPU per request of uWS/);
});

// ---- every door through the fallback, on every Node version

let relay: TestRelay;
after(() => relay?.stop());

test('every door answers through the node:http acceptor', async () => {
  relay = await startTestRelay({ http: { acceptor: 'node' } });
  const solana = await relay.createAccount({ solana: { tps: 100, burst: 100 } });
  const evm = await relay.createAccount({ evm: { tps: 100, burst: 100 } });
  const base = relay.base;

  const ping = await fetch(base + '/ping');
  assert.deepEqual([ping.status, await ping.text()], [200, 'pong']);

  const tx1 = legacyTransfer();
  const v2 = await fetch(base + '/v2', { method: 'POST', headers: { 'api-key': solana.uuid }, body: tx1.bytes });
  assert.equal(v2.status, 200);
  assert.equal(((await v2.json()) as { result: string }).result, tx1.signature);

  const tx2 = legacyTransfer();
  const rpc = await fetch(base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'api-key': solana.uuid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'sendTransaction', params: [Buffer.from(tx2.bytes).toString('base64')] }),
  });
  assert.deepEqual(await rpc.json(), { jsonrpc: '2.0', result: tx2.signature, id: 7 });

  // 605 goes out as written through node:http too.
  const bad = await fetch(base + '/v2/batch', { method: 'POST', headers: { 'api-key': solana.uuid }, body: new Uint8Array([9]) });
  assert.equal(bad.status, 605);
  assert.match(await bad.text(), /^Batch Decode Error: /);

  const e1 = await signed1559({ nonce: 0, gas: 21000n });
  const text = await fetch(`${base}/v2/svc_send_raw_transaction?auth=${evm.uuid}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: e1.hex });
  assert.equal(text.status, 202);
  assert.equal(text.headers.get('x-svc-submission-state'), 'queued');
  assert.equal(((await text.json()) as { result: string }).result, e1.hash);

  const e2 = await signed1559({ nonce: 1, gas: 21000n });
  const single = await fetch(base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${evm.uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [e2.hex] }),
  });
  assert.equal(single.status, 202);
  assert.equal(((await single.json()) as { result: string }).result, e2.hash);

  const e3 = await signed1559({ nonce: 2, gas: 21000n });
  const batch = await fetch(base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${evm.uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'svc_sendRawTransactionBatch', params: [e3.hex] }),
  });
  assert.equal(batch.status, 202);
  const batchId = batch.headers.get('x-svc-batch-id');
  assert.ok(batchId);
  assert.equal((await relay.adminCall('GET', `/admin/batches/${batchId}`)).status, 200);

  const preflight = await fetch(base + '/v2/svc_send_raw_transaction', { method: 'OPTIONS' });
  assert.equal(preflight.status, 204);
  const missing = await fetch(base + '/nowhere');
  assert.equal(missing.status, 404);
});
