#!/usr/bin/env node
// The long differential run of the native Ed25519 verifier (native/ed25519.c)
// against libsodium (sodium-native): N signatures (argument, default 10^7),
// valid and corrupted in eight ways, messages of 0 to 4096 bytes; any
// difference prints the input and exits 1. docs/reliability.md.
//   node scripts/reliability/ed25519-diff.mjs [count] [seed]
import { createRequire } from 'node:module';
import { nativeAddon, nativeUnavailableReason } from '../../dist/src/native/addon.js';

const require = createRequire(import.meta.url);
const sodium = require('sodium-native');
const verify = nativeAddon?.ed25519Verify;
if (typeof verify !== 'function') {
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
const counts = { accepted: 0, rejected: 0 };
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
  if ((i + 1) % 100_000 === 0) console.log(`${i + 1} signatures, no difference (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
console.log(`ed25519 differential: ${total} signatures (seed ${seedAt}), ${counts.accepted} accepted, ${counts.rejected} rejected by both, no difference`);
