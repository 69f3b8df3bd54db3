import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import nacl from 'tweetnacl';
import { decodeSolanaTransaction, maxSizeFor, type SolanaTxView } from '../../../src/chains/solana/decode.js';
import { ed25519Backend, ed25519Backends, ed25519FallbackReason, isCanonicalScalar, verifySolanaTransaction, verifyWith, type Ed25519Backend } from '../../../src/chains/solana/verify.js';
import { nativeAddon } from '../../../src/native/addon.js';
import * as h from '../../helpers/solana.js';

const backends: Ed25519Backend[] = ed25519Backends;

function decode(bytes: Uint8Array): SolanaTxView {
  return decodeSolanaTransaction(bytes, maxSizeFor(bytes, false));
}

function twoSigners(version: h.Version): h.BuiltTx {
  const payer = h.newKeypair();
  const other = h.newKeypair();
  return h.buildTransaction(version, payer, [h.transferIx(payer.publicKey, h.randomAddress(), 1), h.transferIx(other.publicKey, h.randomAddress(), 2)], {
    signers: [other],
  });
}

const samples: [string, h.BuiltTx][] = [
  ['legacy', h.legacyTransfer()],
  ['v0 with lookup', h.v0WithLookup()],
  ['v1', h.v1Transfer({ config: { priorityFeeLamports: 7n } })],
  ['legacy, 2 signers', twoSigners('legacy')],
  ['v0, 2 signers', twoSigners('v0')],
  ['v1, 2 signers', twoSigners('v1')],
  ['v1, 4096 bytes', h.paddedTransaction('v1', 4096)],
];

test('the native verifier is the default where the addon is built; sodium-native otherwise', () => {
  assert.ok(ed25519Backends.includes('sodium-native'), 'sodium-native loads here');
  if (nativeAddon !== null) assert.equal(ed25519Backend, 'native', ed25519FallbackReason ?? '');
  else assert.equal(ed25519Backend, 'sodium-native');
});

test('TXRELAY_ED25519_BACKEND=sodium-native keeps libsodium, and the start-up reason says so', async () => {
  const { spawnSync } = await import('node:child_process');
  const code = `const v = await import(${JSON.stringify(new URL('../../../src/chains/solana/verify.js', import.meta.url).href)}); console.log(JSON.stringify([v.ed25519Backend, v.ed25519FallbackReason]));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, TXRELAY_ED25519_BACKEND: 'sodium-native' }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['sodium-native', 'TXRELAY_ED25519_BACKEND=sodium-native']);
});

for (const backend of backends) {
  describe(`Ed25519 verification with ${backend}`, () => {
    for (const [name, tx] of samples) {
      test(`every signature of a real ${name} transaction verifies`, () => {
        assert.equal(verifyWith(backend, tx.bytes, decode(tx.bytes)), true);
      });

      test(`flipping one message byte of a ${name} transaction fails verification`, () => {
        const view = decode(tx.bytes);
        for (const at of [view.recentBlockhashOffset, view.messageOffset + view.messageLength - 1]) {
          const bad = Uint8Array.from(tx.bytes);
          bad[at] ^= 0x01;
          assert.equal(verifyWith(backend, bad, view), false, `byte ${at}`);
        }
      });

      test(`flipping one byte of any signature of a ${name} transaction fails verification`, () => {
        const view = decode(tx.bytes);
        for (let i = 0; i < view.numSignatures; i++) {
          for (const within of [0, 40, 63]) {
            const bad = Uint8Array.from(tx.bytes);
            bad[view.signaturesOffset + 64 * i + within] ^= 0x80;
            assert.equal(verifyWith(backend, bad, view), false, `signature ${i} byte ${within}`);
          }
        }
      });
    }

    test('a signature by the wrong key fails (signer 2 signs in slot 1)', () => {
      const tx = twoSigners('legacy');
      const view = decode(tx.bytes);
      const bad = Uint8Array.from(tx.bytes);
      bad.copyWithin(view.signaturesOffset + 64, view.signaturesOffset, view.signaturesOffset + 64);
      assert.equal(verifyWith(backend, bad, view), false);
    });

    test('a non-canonical S (S + L) is rejected', () => {
      const tx = h.legacyTransfer();
      const view = decode(tx.bytes);
      const bad = Uint8Array.from(tx.bytes);
      addL(bad, view.signaturesOffset + 32);
      assert.equal(verifyWith(backend, bad, view), false);
    });

    test('bytes inside a SharedArrayBuffer verify the same', () => {
      for (const [, tx] of samples) {
        const shared = new Uint8Array(new SharedArrayBuffer(tx.bytes.length + 7), 7, tx.bytes.length);
        shared.set(tx.bytes);
        const view = decode(shared);
        assert.equal(verifyWith(backend, shared, view), true);
        shared[view.recentBlockhashOffset] ^= 1;
        assert.equal(verifyWith(backend, shared, view), false);
      }
    });
  });
}

test('verifySolanaTransaction uses the process backend', () => {
  const tx = h.v1Transfer();
  assert.equal(verifySolanaTransaction(tx.bytes, decode(tx.bytes)), true);
});

test('a view from other bytes (different length) never verifies', () => {
  const a = h.legacyTransfer();
  const view = decode(a.bytes);
  assert.equal(verifyWith('sodium-native', Uint8Array.from([...a.bytes, 0]), view), false);
});

test('isCanonicalScalar: S < L only', () => {
  const L = Uint8Array.from([0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, ...new Uint8Array(15), 0x10]);
  assert.equal(isCanonicalScalar(L, 0), false);
  const lMinus1 = Uint8Array.from(L);
  lMinus1[0]! -= 1;
  assert.equal(isCanonicalScalar(lMinus1, 0), true);
  assert.equal(isCanonicalScalar(new Uint8Array(32), 0), true);
  assert.equal(isCanonicalScalar(new Uint8Array(32).fill(0xff), 0), false);
});

test('tweetnacl, the reference implementation, agrees with both backends on every signature, valid or corrupted', () => {
  for (const [name, tx] of samples) {
    for (let trial = 0; trial < 8; trial++) {
      const bytes = Uint8Array.from(tx.bytes);
      const view = decode(bytes);
      // Trial 0 as signed; the others with one byte of a signature or of the message flipped.
      if (trial > 0) {
        const inSig = trial % 2 === 1;
        const at = inSig ? view.signaturesOffset + ((trial * 37) % (64 * view.numSignatures)) : view.messageOffset + ((trial * 53) % view.messageLength);
        bytes[at]! ^= 1 << trial % 8;
      }
      let reference = true;
      const message = bytes.subarray(view.messageOffset, view.messageOffset + view.messageLength);
      for (let i = 0; i < view.numSignatures; i++) {
        const sig = bytes.subarray(view.signaturesOffset + 64 * i, view.signaturesOffset + 64 * (i + 1));
        const key = bytes.subarray(view.accountKeysOffset + 32 * i, view.accountKeysOffset + 32 * (i + 1));
        if (!isCanonicalScalar(bytes, view.signaturesOffset + 64 * i + 32) || !nacl.sign.detached.verify(message, sig, key)) reference = false;
      }
      for (const backend of backends) assert.equal(verifyWith(backend, bytes, view), reference, `${name}, trial ${trial}, ${backend}`);
    }
  }
});

test('tweetnacl agrees: the helper signs with the web3.js Keypair secret key', () => {
  const kp = h.newKeypair();
  const msg = Uint8Array.from([1, 2, 3]);
  assert.ok(nacl.sign.detached.verify(msg, nacl.sign.detached(msg, kp.secretKey), kp.publicKey.toBytes()));
});

test('inside a worker thread, transactions in a SharedArrayBuffer slab verify with both backends', async () => {
  const txs = samples.map(([, t]) => t.bytes);
  const total = txs.reduce((n, b) => n + b.length, 0);
  const sab = new SharedArrayBuffer(total);
  const slab = new Uint8Array(sab);
  const spans: [number, number][] = [];
  let at = 0;
  for (const b of txs) {
    slab.set(b, at);
    spans.push([at, b.length]);
    at += b.length;
  }
  // Corrupt the last transaction's signature so a false result is exercised too.
  slab[spans[spans.length - 1]![0] + spans[spans.length - 1]![1] - 1]! ^= 1;

  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const d = await import(workerData.decodeUrl);
      const v = await import(workerData.verifyUrl);
      const slab = new Uint8Array(workerData.sab);
      const out = [];
      for (const backend of workerData.backends) {
        for (const [off, len] of workerData.spans) {
          const bytes = slab.subarray(off, off + len);
          const view = d.decodeSolanaTransaction(bytes, d.maxSizeFor(bytes, false));
          out.push(backend + ':' + v.verifyWith(backend, bytes, view));
        }
      }
      parentPort.postMessage({ backend: v.ed25519Backend, out });
    })().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
  `;
  const result = await new Promise<{ backend?: string; out?: string[]; error?: string }>((resolve, reject) => {
    const w = new Worker(code, {
      eval: true,
      workerData: {
        sab,
        spans,
        backends,
        decodeUrl: new URL('../../../src/chains/solana/decode.js', import.meta.url).href,
        verifyUrl: new URL('../../../src/chains/solana/verify.js', import.meta.url).href,
      },
    });
    w.once('message', (m) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
  assert.equal(result.error, undefined);
  assert.equal(result.backend, ed25519Backend);
  const expected: string[] = [];
  for (const b of backends) for (let i = 0; i < spans.length; i++) expected.push(`${b}:${i < spans.length - 1}`);
  assert.deepEqual(result.out, expected);
});

/** Adds the group order L to the 32-byte little-endian scalar at `o` (mod 2^256). */
function addL(b: Uint8Array, o: number): void {
  const L = [0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
  let carry = 0;
  for (let i = 0; i < 32; i++) {
    const s = b[o + i]! + L[i]! + carry;
    b[o + i] = s & 0xff;
    carry = s >> 8;
  }
}

test('one shared buffer reused for one transaction after another: each verdict is about the bytes there now', () => {
  // As the slab path does: the same SharedArrayBuffer-backed bytes, refilled, at the same offsets
  // (the verifier reuses its views of the scratch copy when the window is the same).
  const sab = new Uint8Array(new SharedArrayBuffer(4096));
  const put = (b: Uint8Array): Uint8Array => {
    sab.set(b);
    return sab.subarray(0, b.length);
  };
  const a = h.legacyTransfer().bytes;
  const b = h.legacyTransfer().bytes;
  assert.equal(a.length, b.length);
  const badB = Uint8Array.from(b);
  badB[10]! ^= 1; // inside the signature
  const badMsg = Uint8Array.from(a);
  badMsg[a.length - 1]! ^= 1; // inside the message
  const two = twoSigners('legacy').bytes;
  const seq: [string, Uint8Array, boolean][] = [
    ['a', a, true],
    ['b', b, true],
    ['b, signature flipped', badB, false],
    ['a again', a, true],
    ['a, message flipped', badMsg, false],
    ['two signers', two, true],
    ['b after a different shape', b, true],
  ];
  for (const [name, tx, want] of seq) {
    const bytes = put(tx);
    for (const backend of backends) assert.equal(verifyWith(backend, bytes, decode(bytes)), want, `${name} (${backend})`);
  }
});

test('without sodium-native (TXRELAY_ED25519_BACKEND=node:crypto) node:crypto checks and signs: generated transactions verify, a corrupted one does not', async () => {
  const { spawnSync } = await import('node:child_process');
  const code = `
    const v = await import(${JSON.stringify(new URL('../../../src/chains/solana/verify.js', import.meta.url).href)});
    const d = await import(${JSON.stringify(new URL('../../../src/chains/solana/decode.js', import.meta.url).href)});
    const g = await import(${JSON.stringify(new URL('../../../src/bench/txgen.js', import.meta.url).href)});
    const txs = g.solanaTransfers(4);
    const out = [v.ed25519Backend, g.ed25519SignBackend];
    for (const tx of txs) out.push(v.verifySolanaTransaction(tx, d.decodeSolanaTransaction(tx, 1232)));
    const bad = Uint8Array.from(txs[0]); bad[bad.length - 1] ^= 1;
    out.push(v.verifySolanaTransaction(bad, d.decodeSolanaTransaction(bad, 1232)));
    console.log(JSON.stringify(out));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, TXRELAY_ED25519_BACKEND: 'node:crypto' }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['node:crypto', 'node:crypto', true, true, true, true, false]);
});
