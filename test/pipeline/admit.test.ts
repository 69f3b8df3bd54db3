/**
 * The admission pipeline without a socket (test/helpers/pipeline.ts), with
 * transactions signed by @solana/web3.js and viem.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E, RelayError } from '../../src/errors.js';
import { Encoding, Kind, bundle as bundleOf, calls as callsOf, evmBatch, evmTx, refusedAt, solanaTx, type Submission } from '../../src/pipeline/submission.js';
import type { Outcome } from '../../src/pipeline/outcome.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';
import { PEER, TIP, assertNothingHeld, harness, v2, type Sent } from '../helpers/pipeline.js';

test('a Solana transaction is queued under its first signature; the same one again is a duplicate, not forwarded twice', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tx = sol.legacyTransfer();
  const [first] = await h.admit(v2(tx.bytes, key));
  assert.equal(first!.status, 'queued');
  assert.equal(first!.id, tx.signature);
  const [again] = await h.admit(v2(tx.bytes, key));
  assert.equal(again!.status, 'duplicate');
  assert.equal(again!.id, tx.signature);
  assert.equal(h.pipeline.admitted.get('solana-single'), 1);
  assert.equal(h.pipeline.duplicates.get('solana-single'), 1);
  assert.equal(h.forwarder.stats().lanes['solana-single'].admitted, 1, 'the lane got it once');
  assertNothingHeld(h);
});

test('a client gone before its answer (uWS closing a pipelining connection) has nothing queued, and a resend is checked afresh', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const sol1 = sol.legacyTransfer();
  const evm1 = await evm.signed1559({ nonce: 61 });
  const goneV2 = v2(sol1.bytes, key, { conn: { aborted: true } });
  const goneEvm = evmTx('jsonrpc', { conn: { aborted: true }, credential: key, ip: PEER, text: evm1.hex });
  for (const sub of [goneV2, goneEvm]) {
    const [o] = await h.admit(sub);
    assert.equal(o!.error?.spec, E.CLIENT_GONE);
  }
  assert.equal(h.pipeline.rejected.get('TXR_CLIENT_GONE'), 2);
  assert.equal(h.forwarder.stats().lanes['solana-single'].admitted, 0, 'nothing queued');
  // The same transactions from a client that stays: checked and queued, not duplicates.
  const [again] = await h.admit(v2(sol1.bytes, key));
  assert.equal(again!.status, 'queued');
  const [evmAgain] = await h.admit(evmTx('jsonrpc', { credential: key, ip: PEER, text: evm1.hex }));
  assert.equal(evmAgain!.status, 'queued');
  assertNothingHeld(h);
});

test('the gate: missing credential 401 before any check; unknown key 401; over the account rate 429 with its wait, no check run', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const tx = sol.legacyTransfer().bytes;
  const [missing] = await h.admit(v2(tx, null));
  assert.equal(missing!.error?.spec, E.AUTH_MISSING);
  const [unknown] = await h.admit(v2(tx, '00000000-0000-4000-8000-000000000000'));
  assert.equal(unknown!.error?.spec, E.AUTH_INVALID);
  assert.equal(h.verifier.stats.acceptor, 0, 'nothing refused at the gate was checked');
  const key = (await h.account({ solana: { tps: 1, burst: 1 } })).uuid;
  assert.equal((await h.admit(v2(sol.legacyTransfer().bytes, key)))[0]!.status, 'queued');
  const [limited] = await h.admit(v2(sol.legacyTransfer().bytes, key));
  assert.equal(limited!.error?.spec, E.RATE_ACCOUNT);
  assert.equal(limited!.error?.detail, '1', 'the limit named is the account\'s TPS');
  assert.ok(limited!.error!.retryAfterMs > 0 && limited!.error!.retryAfterMs <= 1000);
  assert.equal(h.verifier.stats.acceptor, 1, 'only the admitted one was checked');
  assertNothingHeld(h);
});

test('the per-IP bucket is charged before authentication: unauthenticated requests exhaust it too', async (t) => {
  const h = await harness({ ipRps: 0, ipBurst: 2 });
  t.after(() => h.close());
  const tx = sol.legacyTransfer().bytes;
  for (let i = 0; i < 2; i++) assert.equal((await h.admit(v2(tx, 'not-a-key')))[0]!.error?.spec, E.AUTH_INVALID);
  const [limited] = await h.admit(v2(tx, 'not-a-key'));
  assert.equal(limited!.error?.spec, E.RATE_IP);
});

test('draining refuses on arrival, before the door reads anything, retry-safe; the refusal is admitted and counted like any other', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  h.pipeline.draining = true;
  const off = h.pipeline.arrive(Kind.SolanaTx, 'solana');
  assert.equal(off?.spec, E.DRAINING);
  assert.equal(h.pipeline.arrive(Kind.Calls, 'evm'), null, 'a JSON-RPC body goes on: each of its calls is refused with its own id');
  let o: Outcome | undefined;
  const sub = refusedAt(Kind.SolanaTx, 'solana', 'solana-v2', off!, { maxBody: 4096 });
  assert.equal(h.pipeline.admit(sub, (_s, x) => (o = x)), null, 'the body is not read');
  assert.equal(o!.error?.spec, E.DRAINING);
  assert.equal(o!.retry, 'retry_safe');
  assert.equal(h.pipeline.rejected.get('TXR_DRAINING'), 1);
});

test('every refusal after placing gives back what the submission held: a bad signature, a body too large, an empty body', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ solana: { tps: 100, burst: 100 } })).uuid;
  const bad = Uint8Array.from(sol.legacyTransfer().bytes);
  bad[bad.length - 1]! ^= 1;
  const [forged] = await h.admit(v2(bad, key));
  assert.equal(forged!.error?.spec, E.SOL_SIGNATURE);
  assert.equal(forged!.error!.text, 'Transaction Decode Error: signature verification failed');
  const big = v2(new Uint8Array(5000), key);
  assert.equal((await h.admit(big))[0]!.error?.spec, E.SOL_DECODE);
  assert.equal((await h.admit(v2(new Uint8Array(0), key)))[0]!.error?.message, 'Transaction Decode Error: empty body');
  assertNothingHeld(h);
  assert.equal(h.pipeline.rejected.get('TXR_SOL_DECODE'), 2, 'each refusal counted by its code');
  assert.equal(h.pipeline.rejected.get('TXR_SOL_SIGNATURE'), 1);
});

test('a full slab refuses for capacity, retry-safe, before the body is read; the bytes held by a slow body count against it', async (t) => {
  const h = await harness({ slabBytes: 1024 });
  t.after(() => h.close());
  const key = (await h.account({ solana: { tps: 100, burst: 100 } })).uuid;
  // A client that declared its body and is still sending it: its block is reserved.
  const slow = solanaTx('solana-v2', { credential: key, ip: PEER, maxBody: 4096 });
  const a = h.pipeline.admit(slow, () => assert.fail('a body that never completes is never answered'));
  assert.ok(a !== null, 'the door reads the body');
  a.into(900);
  assert.equal(h.slab.live, 1);
  const [full] = await h.admit(v2(sol.legacyTransfer().bytes, key));
  assert.equal(full!.error?.spec, E.CAPACITY);
  assert.equal(full!.error?.detail, 'slab full');
  assert.equal(full!.retry, 'retry_safe');
  assert.equal(h.slab.live, 1, 'the refused one holds nothing');
});

test('a Solana transaction as base64 text: its text is what the lane forwards; invalid base64 is refused after the credit', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ solana: { tps: 100, burst: 100 } })).uuid;
  const tx = sol.legacyTransfer();
  const text = (t: string): Submission => solanaTx('jsonrpc', { credential: key, ip: PEER, text: t, encoding: Encoding.Base64, textForwarded: true });
  assert.equal((await h.admit(text(Buffer.from(tx.bytes).toString('base64'))))[0]!.id, tx.signature);
  const [bad] = await h.admit(text('not base64!'));
  assert.equal(bad!.error?.spec, E.SOL_DECODE);
  assertNothingHeld(h);
});

function bundleBody(txs: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(1 + 2 * txs.length + txs.reduce((n, t) => n + t.length, 0));
  out[0] = txs.length;
  let at = 1 + 2 * txs.length;
  txs.forEach((t, i) => {
    out[1 + 2 * i] = t.length & 0xff;
    out[2 + 2 * i] = t.length >> 8;
    out.set(t, at);
    at += t.length;
  });
  return out;
}

function bundle(txs: Uint8Array[], key: string): Sent {
  return { sub: bundleOf('solana-batch', { credential: key, ip: PEER, maxBody: 1 + 8 + 4 * 4096 }), body: bundleBody(txs) };
}

test('bundles: the tip rule across the bundle, all signatures in order, duplicates by the ordered signatures', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ solana: { tps: 100, burst: 100 } })).uuid;
  const a = sol.legacyTransfer();
  const tip = sol.tipTransfer(TIP, 1500);
  const [ok] = await h.admit(bundle([a.bytes, tip.bytes], key));
  assert.equal(ok!.status, 'queued');
  assert.deepEqual(ok!.ids, [a.signature, tip.signature]);
  assert.equal((await h.admit(bundle([a.bytes, tip.bytes], key)))[0]!.status, 'duplicate');
  assert.equal((await h.admit(bundle([tip.bytes, a.bytes], key)))[0]!.status, 'queued', 'another order is another bundle');
  assert.equal((await h.admit(bundle([sol.legacyTransfer().bytes], key)))[0]!.error?.spec, E.TIP_NOT_FOUND);
  const low = await h.admit(bundle([sol.tipTransfer(TIP, 999).bytes], key));
  assert.equal(low[0]!.error?.spec, E.TIP_TOO_LOW);
  assert.equal(low[0]!.error?.detail, '1000');
  const forged = Uint8Array.from(sol.tipTransfer(TIP, 5000).bytes);
  forged[forged.length - 1]! ^= 1;
  const [bad] = await h.admit(bundle([sol.legacyTransfer().bytes, forged], key));
  assert.equal(bad!.error?.spec, E.BATCH_DECODE);
  assert.match(bad!.error!.message, /transaction 1: signature verification failed/);
  assertNothingHeld(h);
});

function batch(texts: string[], key: string): Submission {
  return evmBatch('jsonrpc', { credential: key, ip: PEER, texts });
}

test('an EVM batch: the record holds every hash before any item is admitted; items take their credits in order', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ evm: { tps: 1, burst: 2 } })).uuid;
  const [a, b, c] = await Promise.all([evm.signed1559({ nonce: 1 }), evm.signed1559({ nonce: 2 }), evm.signed1559({ nonce: 3 })]);
  const [o] = await h.admit(batch([a!.hex, 'not hex', b!.hex, c!.hex, a!.hex], key));
  const items = o!.items!;
  assert.deepEqual(
    items.map((x) => [x.status, x.error?.spec.code ?? null]),
    [
      ['queued', null],
      ['not-sent', 'TXR_TX_INVALID'],
      ['not-sent', 'TXR_RATE_ACCOUNT'],
      ['not-sent', 'TXR_RATE_ACCOUNT'],
      ['not-sent', 'TXR_RATE_ACCOUNT'],
    ],
    'a credit each, the invalid one too, until the burst of 2 is spent',
  );
  assert.equal(items[0]!.id, a!.hash, 'the hash computed here is viem\'s');
  assert.equal(items[2]!.id, b!.hash, 'a refused item keeps its hash for reconciliation');
  assert.equal(items[1]!.id, null, 'text that is not hex has no hash');
  assert.equal(o!.httpStatus(202), 202);
  const rec = h.batches.get(o!.id!)!;
  assert.deepEqual(rec.tx_hashes, [a!.hash, null, b!.hash, c!.hash, a!.hash]);
  assert.deepEqual(rec.items.map((x) => x.status), ['queued', 'not-sent', 'not-sent', 'not-sent', 'not-sent']);
  assertNothingHeld(h);
});

test('an EVM batch: a decoding failure keeps the raw hash for reconciliation; a repeated item is a duplicate', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ evm: { tps: 100, burst: 100 } })).uuid;
  const good = await evm.signed1559({ nonce: 7 });
  const dup = await evm.signed1559({ nonce: 8 });
  const truncated = good.hex.slice(0, -4);
  const [o] = await h.admit(batch([good.hex, truncated, dup.hex, dup.hex], key));
  const items = o!.items!;
  assert.deepEqual(
    items.map((x) => x.status),
    ['queued', 'not-sent', 'queued', 'duplicate'],
  );
  assert.equal(items[1]!.error?.spec, E.TX_INVALID);
  assert.match(items[1]!.id!, /^0x[0-9a-f]{64}$/, 'keccak of the raw bytes');
  assert.equal(items[3]!.id, dup.hash);
  assertNothingHeld(h);
});

test('a JSON-RPC body\'s calls: the IP bucket is charged for each call past the first, and the group settles once, in order', async (t) => {
  const h = await harness({ ipRps: 0, ipBurst: 4 });
  t.after(() => h.close());
  const key = (await h.account({ solana: { tps: 100, burst: 100 } })).uuid;
  const txs = [sol.legacyTransfer(), sol.legacyTransfer()];
  // The door's reading of the body: its calls, each a submission of its own.
  const parse = () => txs.map((tx) => solanaTx('jsonrpc', { credential: key, ip: PEER, text: Buffer.from(tx.bytes).toString('base64') }));
  // The header's credential: a body is read only for a live account's.
  const calls = (credential = key): Sent => ({ sub: callsOf('jsonrpc', 'evm', { maxBody: 1024, credential, ip: PEER }), body: new Uint8Array(2), parse });
  const [refused] = await h.admit(calls('00000000-0000-4000-8000-000000000000'));
  assert.equal(refused!.error?.spec, E.AUTH_INVALID, 'no live account behind the header: refused before the body is read');
  const [o] = await h.admit(calls());
  assert.deepEqual(o!.items!.map((x) => x.id), txs.map((x) => x.signature));
  const [limited] = await h.admit(calls());
  assert.equal(limited!.error?.spec, E.RATE_IP, '3 credits were spent on the first request (1 + 1 more call), 1 left for two calls');
});

test('a JSON-RPC body\'s calls are queued together: a client gone after the first was checked has none of them queued', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account({ evm: { tps: 100, burst: 100 } })).uuid;
  const txs = await Promise.all([71, 72, 73].map((nonce) => evm.signed1559({ nonce })));
  // The connection closes between the first member's check and the second's.
  let checks = 0;
  const conn = { aborted: false };
  const run = h.verifier.run.bind(h.verifier);
  h.verifier.run = (s, done) => {
    if (++checks === 2) conn.aborted = true;
    return run(s, done);
  };
  const parse = () => txs.map((tx) => evmTx('jsonrpc', { credential: key, ip: PEER, text: tx.hex }));
  const [o] = await h.admit({ sub: callsOf('jsonrpc', 'evm', { conn, maxBody: 1024, credential: key, ip: PEER }), body: new Uint8Array(2), parse });
  assert.deepEqual(o!.items!.map((x) => x.error?.spec), [E.CLIENT_GONE, E.CLIENT_GONE, E.CLIENT_GONE], 'every member refused, none queued alone');
  assert.equal(h.forwarder.stats().lanes['evm-paid'].admitted + h.forwarder.stats().lanes['evm-free'].admitted, 0, 'nothing forwarded for an answer nobody will read');
  assertNothingHeld(h);
});

test('a refused submission is answered without touching the gate: the door\'s own refusal is counted like any other', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const sent = v2(new Uint8Array(10), null, { refused: new RelayError(E.UNSUPPORTED_MEDIA, 'use text/plain') });
  const [o] = await h.admit(sent);
  assert.equal(o!.error?.spec, E.UNSUPPORTED_MEDIA);
  assert.equal(h.pipeline.rejected.get('TXR_UNSUPPORTED_MEDIA'), 1);
});
