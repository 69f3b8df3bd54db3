/**
 * Micro benchmarks for the Solana hot path: decode, Ed25519 verification
 * (the native addon where it is built, sodium-native and node:crypto, side by
 * side in one run; tweetnacl, the
 * pure-JS reference the tests check against, for the comparison) and the tip rule. Each entry's
 * `fn` processes `items` transactions; the runner reports time per item.
 *
 * The traffic is a fixed mix of real signed transactions (legacy, v0 with a
 * lookup table, v1), a quarter of them tipping.
 */

import { decodeSolanaTransaction, maxSizeFor, type SolanaTxView } from '../src/chains/solana/decode.js';
import { TipAccounts, sumBundleTips, sumTips } from '../src/chains/solana/tip.js';
import nacl from 'tweetnacl';
import { ed25519Backends, verifyWith } from '../src/chains/solana/verify.js';
import { nativeAddon } from '../src/native/addon.js';
import { createRequire } from 'node:module';
import * as h from '../test/helpers/solana.js';
import { base64DecodedLength, decodeBase64Into } from '../src/chains/solana/base64.js';

export interface MicroBench {
  name: string;
  items: number;
  setup?: () => Promise<void> | void;
  fn: () => void;
}

const N = 64;
/** tweetnacl takes milliseconds per signature; fewer items keep one call short. */
const N_SLOW = 8;

interface Decoded {
  bytes: Uint8Array;
  view: SolanaTxView;
}

let raw: Uint8Array[] = [];
let decoded: Decoded[] = [];
let sharedDecoded: Decoded[] = [];
let tips: TipAccounts = new TipAccounts([]);
let bundles: Decoded[][] = [];
let sink = 0;

function setup(): void {
  if (raw.length > 0) return;
  const tipKeys = Array.from({ length: 8 }, () => h.newKeypair().publicKey);
  tips = new TipAccounts(tipKeys.map((k) => k.toBase58()));
  for (let i = 0; i < N; i++) {
    const kind = i % 4;
    const tx =
      kind === 0
        ? h.legacyTransfer()
        : kind === 1
          ? h.v0WithLookup({ tableAddresses: [h.randomAddress(), h.randomAddress()] })
          : kind === 2
            ? h.v1Transfer({ config: { priorityFeeLamports: 5000n, computeUnitLimit: 200_000 } })
            : h.tipTransfer(tipKeys[i % 8]!, 10_000 + i, { version: i % 8 === 3 ? 'legacy' : 'v1' });
    raw.push(tx.bytes);
  }
  decoded = raw.map((bytes) => ({ bytes, view: decodeSolanaTransaction(bytes, maxSizeFor(bytes, false)) }));
  // Same transactions inside one shared slab, as the verify workers see them.
  const slab = new Uint8Array(new SharedArrayBuffer(raw.reduce((n, b) => n + b.length, 0)));
  let at = 0;
  sharedDecoded = raw.map((b) => {
    slab.set(b, at);
    const bytes = slab.subarray(at, at + b.length);
    at += b.length;
    return { bytes, view: decodeSolanaTransaction(bytes, maxSizeFor(bytes, false)) };
  });
  for (let i = 0; i < N; i += 4) bundles.push(decoded.slice(i, i + 4));
  for (const d of decoded) {
    for (const b of ed25519Backends) if (!verifyWith(b, d.bytes, d.view)) throw new Error(`bench fixture does not verify with ${b}`);
  }
}

/** Stands in for the shared slab the JSON-RPC door decodes into. */
const into = Buffer.alloc(1 << 16);
let b64: string[] = [];
function setupBase64(): void {
  setup();
  b64 = raw.map((b) => Buffer.from(b).toString('base64'));
}

/**
 * One signature per item over a 200-byte message, each by its own key, from a
 * pool of 2048 cycled in order: more keys than the native verifier's per-thread
 * cache holds (128 slots), so every check is a key's first (uncached) check.
 */
const FRESH = 2048;
let fresh: Uint8Array | null = null;
let freshAt = 0;
function setupFresh(): void {
  if (fresh !== null) return;
  const sodium = createRequire(import.meta.url)('sodium-native') as {
    crypto_sign_keypair(pk: Uint8Array, sk: Uint8Array): void;
    crypto_sign_detached(sig: Uint8Array, m: Uint8Array, sk: Uint8Array): void;
  };
  fresh = new Uint8Array(FRESH * 296);
  const sk = new Uint8Array(64);
  for (let i = 0; i < FRESH; i++) {
    const o = i * 296;
    const pk = fresh.subarray(o + 64, o + 96);
    sodium.crypto_sign_keypair(pk, sk);
    const msg = fresh.subarray(o + 96, o + 296);
    for (let j = 0; j < msg.length; j++) msg[j] = (i * 31 + j * 7) & 0xff;
    sodium.crypto_sign_detached(fresh.subarray(o, o + 64), msg, sk);
  }
}
function freshKeys(check: (buf: Uint8Array, at: number) => boolean): () => void {
  return () => {
    for (let i = 0; i < N; i++) {
      if (check(fresh!, freshAt * 296)) sink++;
      freshAt = (freshAt + 1) % FRESH;
    }
  };
}
const sodiumVerify = (createRequire(import.meta.url)('sodium-native') as { crypto_sign_verify_detached(s: Uint8Array, m: Uint8Array, k: Uint8Array): boolean }).crypto_sign_verify_detached;

export const benches: MicroBench[] = [
  ...(nativeAddon?.ed25519VerifyAt !== undefined
    ? [
        {
          name: 'ed25519 one signature, every key new (native addon)',
          items: N,
          setup: setupFresh,
          fn: freshKeys((b, at) => nativeAddon!.ed25519VerifyAt!(b, at, at + 64, at + 96, 200)),
        },
      ]
    : []),
  {
    name: 'ed25519 one signature, every key new (sodium-native)',
    items: N,
    setup: setupFresh,
    fn: freshKeys((b, at) => sodiumVerify(b.subarray(at, at + 64), b.subarray(at + 96, at + 296), b.subarray(at + 64, at + 96))),
  },
  {
    name: 'solana base64 into a slab, strict by re-encoding (the JSON-RPC door before decodeBase64Into)',
    items: N,
    setup: setupBase64,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const t = b64[i]!;
        const len = base64DecodedLength(t);
        const v = into.subarray(64, 64 + len);
        if (v.write(t, 'base64') === len && v.toString('base64') === t) sink++;
      }
    },
  },
  {
    name: 'solana decodeBase64Into a slab (the JSON-RPC door)',
    items: N,
    setup: setupBase64,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const t = b64[i]!;
        if (decodeBase64Into(t, into, 64, base64DecodedLength(t))) sink++;
      }
    },
  },
  {
    name: 'solana decode (legacy/v0/v1 mix)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const b = raw[i]!;
        sink += decodeSolanaTransaction(b, maxSizeFor(b, false)).numInstructions;
      }
    },
  },
  ...(ed25519Backends.includes('native')
    ? [
        {
          name: 'solana verify native (addon; keys repeat, cached tables)',
          items: N,
          setup,
          fn: () => {
            for (let i = 0; i < N; i++) {
              const d = decoded[i]!;
              if (verifyWith('native', d.bytes, d.view)) sink++;
            }
          },
        },
        {
          name: 'solana verify native (addon), bytes in SharedArrayBuffer',
          items: N,
          setup,
          fn: () => {
            for (let i = 0; i < N; i++) {
              const d = sharedDecoded[i]!;
              if (verifyWith('native', d.bytes, d.view)) sink++;
            }
          },
        },
      ]
    : []),
  {
    name: 'solana verify sodium-native',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const d = decoded[i]!;
        if (verifyWith('sodium-native', d.bytes, d.view)) sink++;
      }
    },
  },
  {
    name: 'solana verify sodium-native, bytes in SharedArrayBuffer (copied)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const d = sharedDecoded[i]!;
        if (verifyWith('sodium-native', d.bytes, d.view)) sink++;
      }
    },
  },
  {
    name: 'solana verify node:crypto',
    items: N,
    setup,
    fn: () => {
      for (const d of decoded) if (verifyWith('node:crypto', d.bytes, d.view)) sink++;
    },
  },
  {
    name: 'solana verify tweetnacl (first signature, pure JS)',
    items: N_SLOW,
    setup,
    fn: () => {
      for (let i = 0; i < N_SLOW; i++) {
        const { bytes, view } = decoded[i]!;
        const msg = bytes.subarray(view.messageOffset, view.messageOffset + view.messageLength);
        const sig = bytes.subarray(view.signaturesOffset, view.signaturesOffset + 64);
        const key = bytes.subarray(view.accountKeysOffset, view.accountKeysOffset + 32);
        if (nacl.sign.detached.verify(msg, sig, key)) sink++;
      }
    },
  },
  {
    name: 'solana sumTips',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const d = decoded[i]!;
        if (sumTips(d.bytes, d.view, tips).found) sink++;
      }
    },
  },
  {
    name: 'solana sumBundleTips (bundles of 4)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < bundles.length; i++) if (sumBundleTips(bundles[i]!, tips).found) sink++;
    },
  },
];

/** Keeps results observable so the JIT cannot drop the work. */
export function benchSink(): number {
  return sink;
}
