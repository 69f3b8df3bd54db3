#!/usr/bin/env node
// The long differential run of the native Ed25519 verifier (native/ed25519.c)
// against libsodium (sodium-native): N signatures (argument, default 10^7),
// valid and corrupted in eight ways, messages of 0 to 4096 bytes, each
// checked alone and again inside a batch call (ed25519VerifyBatchAt, batches
// of 1 to 64 of random size); any difference prints the input and exits 1.
// docs/reliability.md.
//   node scripts/reliability/ed25519-diff.mjs [count] [seed]
import { createRequire } from 'node:module';
import { nativeAddon, nativeUnavailableReason } from '../../dist/src/native/addon.js';

const require = createRequire(import.meta.url);
const sodium = require('sodium-native');
const verify = nativeAddon?.ed25519Verify;
const verifyBatch = nativeAddon?.ed25519VerifyBatchAt;
if (typeof verify !== 'function' || typeof verifyBatch !== 'function') {
  console.error(`native ed25519 unavailable: ${nativeUnavailableReason ?? 'built without ed25519'}`);
  process.exit(2);
}

const total = Number(process.argv[2] ?? 1e7);
let x = Number(process.argv[3] ?? Date.now() % 2 ** 32) >>> 0 || 1;
const seedAt = x;
/** xorshift32: reproducible from the printed seed. */
function next() {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  x >>>= 0;
  return x;
}
const fill = (b) => { for (let i = 0; i < b.length; i++) b[i] = next() & 0xff; return b; };

const pk = new Uint8Array(32);
const sk = new Uint8Array(64);
const sig = new Uint8Array(64);
const msgBuf = new Uint8Array(4096);
const seed = new Uint8Array(32);
const counts = { accepted: 0, rejected: 0, batches: 0 };
/** The pending batch: item j's signature at j * SLOT, key at + 64, message at + 96. */
const SLOT = 96 + 4096;
const slab = new Uint8Array(64 * SLOT);
const spec = new Uint32Array(4 * 64);
const out = new Uint8Array(64);
const wants = [];
let batchSize = 1 + (next() % 64);
function flush() {
  const n = wants.length;
  const valid = verifyBatch(slab, spec, n, out);
  counts.batches++;
  let ones = 0;
  for (let j = 0; j < n; j++) {
    ones += out[j];
    if ((out[j] === 1) !== wants[j]) {
      const hex = (b) => Buffer.from(b).toString('hex');
      const o = j * SLOT;
      console.error(`DIFFERENCE in a batch of ${n}, item ${j} (seed ${seedAt}): batch ${out[j]}, libsodium ${wants[j]}\n sig ${hex(slab.subarray(o, o + 64))}\n key ${hex(slab.subarray(o + 64, o + 96))}\n msg ${hex(slab.subarray(o + 96, o + 96 + spec[4 * j + 3]))}`);
      process.exit(1);
    }
  }
  if (ones !== valid) {
    console.error(`batch of ${n} (seed ${seedAt}): returned ${valid}, ${ones} ones in out`);
    process.exit(1);
  }
  wants.length = 0;
  batchSize = 1 + (next() % 64);
}
const started = Date.now();
for (let i = 0; i < total; i++) {
  if (i % 16 === 0) sodium.crypto_sign_seed_keypair(pk, sk, fill(seed));
  const r = next();
  const len = r % 8 === 0 ? next() % 4097 : next() % 300;
  const msg = fill(msgBuf.subarray(0, len));
  sodium.crypto_sign_detached(sig, msg, sk);
  const key = Uint8Array.from(pk);
  switch (i % 8) {
    case 1: sig[next() % 64] ^= 1 << (next() % 8); break;
    case 2: if (len > 0) msg[next() % len] ^= 1 << (next() % 8); else sig[0] ^= 1; break;
    case 3: key[next() % 32] ^= 1 << (next() % 8); break;
    case 4: fill(sig.subarray(32)); break;
    case 5: fill(sig.subarray(0, 32)); break;
    case 6: fill(key); break;
    default: break;
  }
  const want = sodium.crypto_sign_verify_detached(sig, msg, key) === true;
  const got = verify(sig, msg, key);
  if (got !== want) {
    const hex = (b) => Buffer.from(b).toString('hex');
    console.error(`DIFFERENCE at #${i} (seed ${seedAt}): native ${got}, libsodium ${want}\n sig ${hex(sig)}\n key ${hex(key)}\n msg ${hex(msg)}`);
    process.exit(1);
  }
  counts[want ? 'accepted' : 'rejected']++;
  const j = wants.length;
  const o = j * SLOT;
  slab.set(sig, o);
  slab.set(key, o + 64);
  slab.set(msg, o + 96);
  spec.set([o, o + 64, o + 96, len], 4 * j);
  wants.push(want);
  if (wants.length === batchSize) flush();
  if ((i + 1) % 100_000 === 0) console.log(`${i + 1} signatures, alone and in ${counts.batches} batches, no difference (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
if (wants.length > 0) flush();
const secs = (Date.now() - started) / 1000;
console.log(`ed25519 differential: ${total} signatures (seed ${seedAt}), ${counts.accepted} accepted, ${counts.rejected} rejected by both, alone and in ${counts.batches} batches, no difference (${secs.toFixed(0)} s, ${(total / secs).toFixed(0)} signatures/s)`);
