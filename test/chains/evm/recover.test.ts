/**
 * Sender recovery with libsecp256k1 (native) and @noble/curves (fallback),
 * on the main thread and inside a worker reading a SharedArrayBuffer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { bytesToHex } from 'viem';
import { DecodeError } from '../../../src/errors.js';
import { decodeEvmTransaction, signingHash } from '../../../src/chains/evm/decode.js';
import { initKeccak } from '../../../src/chains/evm/hash.js';
import { nativeSecpAvailable, recoverSender, recovers, secpBackend, useSecpBackend } from '../../../src/chains/evm/recover.js';
import { privateKeyToAccount } from 'viem/accounts';
import {
  signCustom,
  signed1559,
  signed2930,
  signed4844,
  signed7702,
  signedLegacy,
  testAccount,
  fields1559,
  type SignedTx,
} from '../../helpers/evm.js';

await initKeccak();

const other = privateKeyToAccount('0x0123456789012345678901234567890123456789012345678901234567890123');

async function samples(): Promise<[string, SignedTx, string][]> {
  const me = testAccount.address.toLowerCase();
  const them = other.address.toLowerCase();
  return [
    ['legacy', await signedLegacy(), me],
    ['legacy unprotected', await signedLegacy({ chainId: null }), me],
    ['legacy, other key', await signedLegacy({ account: other, chainId: 10 }), them],
    ['EIP-2930', await signed2930(), me],
    ['EIP-1559', await signed1559({ account: other }), them],
    ['EIP-7702', await signed7702(), me],
    ['EIP-4844 network form', await signed4844({ kzg: 'fake' }), me],
    ['EIP-7594 cell-proof form', await signed4844({ kzg: 'fake', sidecar: 'cells', account: other }), them],
  ];
}

const all = await samples();

function recoverAll(): void {
  for (const [name, s, want] of all) {
    const tx = decodeEvmTransaction(s.raw);
    assert.equal(bytesToHex(recoverSender(tx, signingHash(s.raw, tx))), want, `${name} (${secpBackend})`);
  }
}

test('the native libsecp256k1 binding loads on this platform', () => {
  assert.equal(nativeSecpAvailable, true);
  assert.equal(secpBackend, 'native');
});

test('recovered sender equals the signing account, native backend, every type', () => {
  useSecpBackend('native');
  recoverAll();
});

test('recovered sender equals the signing account, noble fallback, every type', () => {
  useSecpBackend('noble');
  try {
    assert.equal(secpBackend, 'noble');
    recoverAll();
  } finally {
    useSecpBackend('native');
  }
});

test('an unrecoverable signature is a DecodeError on both backends', async () => {
  // About half of all small r values are not the x coordinate of a curve point; try a range
  // so the test does not hinge on one value, and require that none throws anything else.
  const s = await signCustom(2, fields1559());
  const base = decodeEvmTransaction(s.raw);
  const hash = signingHash(s.raw, base);
  let failed = 0;
  for (const backend of ['native', 'noble'] as const) {
    useSecpBackend(backend);
    for (let r = 1n; r < 40n; r++) {
      // r is an offset into the input: point it at one byte appended to a copy of it.
      const tx = decodeEvmTransaction(s.raw);
      const withR = Uint8Array.from([...s.raw, Number(r)]);
      tx.raw = withR;
      tx.rAt = s.raw.length;
      tx.rLen = 1;
      assert.equal(tx.r, r);
      let threw = false;
      try {
        recoverSender(tx, hash);
      } catch (e) {
        assert.ok(e instanceof DecodeError, `${backend}: ${String(e)}`);
        threw = true;
        failed++;
      }
      // The relay's check (no address derived) says no exactly where recoverSender throws.
      assert.equal(recovers(tx, hash), !threw, `${backend}, r = ${r}`);
    }
  }
  useSecpBackend('native');
  assert.ok(failed >= 2, 'some r values must fail to recover on each backend');
  const bad = decodeEvmTransaction(s.raw);
  bad.yParity = 2;
  assert.throws(() => recoverSender(bad, hash), DecodeError);
  assert.equal(recovers(bad, hash), false);
  assert.equal(recovers(base, hash), true);
});

const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const dec = await import(workerData.decode);
  const hash = await import(workerData.hash);
  const rec = await import(workerData.recover);
  await hash.initKeccak();
  const bytes = new Uint8Array(workerData.sab);
  const out = [];
  for (const [offset, length] of workerData.slots) {
    const raw = bytes.subarray(offset, offset + length);
    const tx = dec.decodeEvmTransaction(raw);
    const h = dec.signingHash(raw, tx);
    const got = {};
    for (const b of rec.nativeSecpAvailable ? ['native', 'noble'] : ['noble']) {
      rec.useSecpBackend(b);
      got[b] = Buffer.from(rec.recoverSender(tx, h)).toString('hex');
    }
    out.push({ got, hash: Buffer.from(dec.txHash(raw, tx)).toString('hex') });
  }
  parentPort.postMessage({ out, keccak: hash.keccakBackend(), native: rec.nativeSecpAvailable });
})().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
`;

function runWorker(env?: NodeJS.ProcessEnv): Promise<any> {
  // Odd offsets: the views are unaligned slices of one shared buffer, as in the slab.
  let total = 1;
  for (const [, s] of all) total += s.raw.length + 3;
  const sab = new SharedArrayBuffer(total);
  const bytes = new Uint8Array(sab);
  const slots: [number, number][] = [];
  let at = 1;
  for (const [, s] of all) {
    bytes.set(s.raw, at);
    slots.push([at, s.raw.length]);
    at += s.raw.length + 3;
  }
  const url = (p: string) => new URL(p, import.meta.url).href;
  const w = new Worker(workerSource, {
    eval: true,
    env,
    workerData: { sab, slots, decode: url('../../../src/chains/evm/decode.js'), hash: url('../../../src/chains/evm/hash.js'), recover: url('../../../src/chains/evm/recover.js') },
  });
  return new Promise((resolve, reject) => {
    w.once('message', (m) => {
      void w.terminate();
      if (m.error) reject(new Error(m.error));
      else resolve(m);
    });
    w.once('error', reject);
  });
}

test('recovery works in a worker thread on transactions living in a SharedArrayBuffer, both backends', async () => {
  const m = await runWorker();
  // The addon where npm ci built it (the worker loads its own copy), hash-wasm otherwise.
  assert.equal(m.keccak, process.env.TXRELAY_NO_NATIVE === '1' ? 'hash-wasm' : 'native');
  assert.equal(m.native, true);
  all.forEach(([name, s, want], i) => {
    assert.equal(`0x${m.out[i].got.native}`, want, `${name} native`);
    assert.equal(`0x${m.out[i].got.noble}`, want, `${name} noble`);
    assert.equal(`0x${m.out[i].hash}`, s.hash, `${name} hash`);
  });
});

test('TXRELAY_SECP_BACKEND=noble starts a thread on the noble fallback', async () => {
  const m = await runWorker({ ...process.env, TXRELAY_SECP_BACKEND: 'noble' });
  assert.equal(m.native, false);
  all.forEach(([name, , want], i) => assert.equal(`0x${m.out[i].got.noble}`, want, name));
});
