/**
 * Micro benchmarks for the family A hot path: hex parsing, decoding,
 * validation, hashing (the addon's keccak, hash-wasm and @noble/hashes on the
 * same bytes) and
 * sender recovery (libsecp256k1 against @noble/curves). Each entry's `fn`
 * processes `items` transactions; bench/micro.ts reports µs per item.
 *
 * The traffic is a fixed mix of real transactions signed by viem: legacy
 * EIP-155, EIP-2930, an EIP-1559 ERC-20 transfer and EIP-7702 with one
 * authorization (blob transactions are rare and dominated by their sidecar).
 */

import { decodeEvmTransaction, signingHash, txHash, type EvmTx } from '../src/chains/evm/decode.js';
import { initKeccak, keccak256, keccak256At, keccak256Noble, keccakBackend, skipNativeKeccak } from '../src/chains/evm/hash.js';
import { nativeAddon } from '../src/native/addon.js';
import { decodeHexInto, hexTransactionLength, parseHexTransaction, toHex } from '../src/chains/evm/hex.js';

/** Stands in for the shared slab the doors decode into. */
const slab = Buffer.alloc(1 << 20);
import { nativeSecpAvailable, recoverSender, useSecpBackend } from '../src/chains/evm/recover.js';
import { validateEvmTransaction } from '../src/chains/evm/validate.js';
import { RECIPIENT, signed1559, signed2930, signed7702, signedLegacy } from '../test/helpers/evm.js';

/** Copies of the mix per call, so one call is long enough to time and short enough to repeat. */
const REPEAT = 16;
/** keccak input size: a typical EIP-1559 transfer is ~110-200 bytes. */
const KECCAK_INPUT = 200;
const KECCAKS = 64;

const ERC20_TRANSFER = `0xa9059cbb000000000000000000000000${RECIPIENT.slice(2)}00000000000000000000000000000000000000000000000000000000000f4240` as const;

let raws: Uint8Array[] = [];
let hexes: string[] = [];
let txs: EvmTx[] = [];
let sigHashes: Uint8Array[] = [];
const keccakInput = new Uint8Array(KECCAK_INPUT).map((_, i) => (i * 37 + 11) & 0xff);
const digestOut = new Uint8Array(32);

/** Results feed this so no call can be optimised away. */
export let sink = 0;

let ready: Promise<void> | null = null;
function setup(): Promise<void> {
  ready ??= (async () => {
    await initKeccak();
    skipNativeKeccak(true);
    const wasmLoaded = keccakBackend() === 'hash-wasm';
    skipNativeKeccak(false);
    if (!wasmLoaded) throw new Error('hash-wasm keccak did not load');
    const mix = [
      await signedLegacy({ data: ERC20_TRANSFER }),
      await signed2930({ data: ERC20_TRANSFER }),
      await signed1559({ data: ERC20_TRANSFER, gas: 65_000n }),
      await signed7702(),
    ];
    raws = [];
    for (let i = 0; i < REPEAT; i++) for (const s of mix) raws.push(s.raw);
    hexes = raws.map((r) => toHex(r));
    txs = raws.map((r) => decodeEvmTransaction(r));
    sigHashes = raws.map((r, i) => signingHash(r, txs[i]!));
  })();
  return ready;
}

const N = 4 * REPEAT;
const OPTS = { chainId: 1n };

function recoverAll(backend: 'native' | 'noble'): () => void {
  return () => {
    useSecpBackend(backend);
    for (let i = 0; i < N; i++) sink += recoverSender(txs[i]!, sigHashes[i]!)[0]!;
  };
}

function fullChain(backend: 'native' | 'noble'): () => void {
  return () => {
    useSecpBackend(backend);
    for (let i = 0; i < N; i++) {
      const raw = parseHexTransaction(hexes[i]!);
      const tx = decodeEvmTransaction(raw);
      validateEvmTransaction(tx, OPTS);
      sink += txHash(raw, tx)[0]!;
      sink += recoverSender(tx, signingHash(raw, tx))[0]!;
    }
  };
}

const backends: ('native' | 'noble')[] = nativeSecpAvailable ? ['native', 'noble'] : ['noble'];

export const benches: { name: string; items: number; setup?: () => Promise<void> | void; fn: () => void }[] = [
  {
    name: 'parseHexTransaction (tx mix)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) sink += parseHexTransaction(hexes[i]!).length;
    },
  },
  {
    name: 'parseHexTransaction + copy into a slab (tx mix; the doors before decodeHexInto)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) slab.set(parseHexTransaction(hexes[i]!), 64);
    },
  },
  {
    name: 'decodeHexInto a slab (tx mix; the doors)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) {
        const h = hexes[i]!;
        sink += decodeHexInto(h, slab, 64, hexTransactionLength(h)) ? 1 : 0;
      }
    },
  },
  {
    name: 'decodeEvmTransaction (tx mix)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) sink += decodeEvmTransaction(raws[i]!).size;
    },
  },
  {
    name: 'validateEvmTransaction (tx mix)',
    items: N,
    setup,
    fn: () => {
      for (let i = 0; i < N; i++) validateEvmTransaction(txs[i]!, OPTS);
    },
  },
  ...(['native', 'hash-wasm'] as const)
    .filter((b) => b === 'hash-wasm' || nativeAddon !== null)
    .flatMap((b) => [
      {
        name: `txHash + signingHash, ${b} (tx mix)`,
        items: N,
        setup,
        fn: () => {
          skipNativeKeccak(b !== 'native');
          for (let i = 0; i < N; i++) sink += txHash(raws[i]!, txs[i]!)[0]! + signingHash(raws[i]!, txs[i]!)[0]!;
          skipNativeKeccak(false);
        },
      },
      {
        name: `keccak-256 ${KECCAK_INPUT} B (${b}, into a buffer)`,
        items: KECCAKS,
        setup,
        fn: () => {
          skipNativeKeccak(b !== 'native');
          for (let i = 0; i < KECCAKS; i++) {
            keccak256At(keccakInput, 0, KECCAK_INPUT, digestOut, 0);
            sink += digestOut[0]!;
          }
          skipNativeKeccak(false);
        },
      },
    ]),
  {
    name: `keccak-256 ${KECCAK_INPUT} B (@noble/hashes)`,
    items: KECCAKS,
    setup,
    fn: () => {
      for (let i = 0; i < KECCAKS; i++) sink += keccak256Noble(keccakInput)[0]!;
    },
  },
  ...backends.map((b) => ({ name: `recoverSender (${b === 'native' ? 'libsecp256k1' : '@noble/curves'})`, items: N, setup, fn: recoverAll(b) })),
  ...backends.map((b) => ({ name: `hex -> decode -> validate -> hashes -> recover (${b})`, items: N, setup, fn: fullChain(b) })),
];
