/**
 * Robustness of the family A decoder: random mutations of valid signed
 * transactions never throw anything but DecodeError anywhere in the
 * decode -> validate -> hash -> recover chain, and decoding work grows at most
 * linearly with input size (counted in RLP headers, not wall time).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { concatHex, hexToBytes, toRlp, type Hex } from 'viem';
import { DecodeError } from '../../../src/errors.js';
import { decodeEvmTransaction, EvmTx, signingHash, txHash } from '../../../src/chains/evm/decode.js';
import { initKeccak } from '../../../src/chains/evm/hash.js';
import { parseHexTransaction } from '../../../src/chains/evm/hex.js';
import { recoverSender, useSecpBackend } from '../../../src/chains/evm/recover.js';
import { rlpHeadersRead } from '../../../src/chains/evm/rlp.js';
import { validateEvmTransaction } from '../../../src/chains/evm/validate.js';
import {
  DELEGATE,
  fields1559,
  RECIPIENT,
  rlpInt,
  signed1559,
  signed2930,
  signed4844,
  signed7702,
  signedLegacy,
  type RlpItem,
} from '../../helpers/evm.js';

await initKeccak();

const seeds: Uint8Array[] = [
  (await signedLegacy({ data: '0xa9059cbb00000000' })).raw,
  (await signedLegacy({ to: null, data: '0x6001600101' })).raw,
  (await signed2930()).raw,
  (await signed1559({ accessList: [{ address: RECIPIENT, storageKeys: [`0x${'11'.repeat(32)}`] }] })).raw,
  (await signed7702({ authorizations: 2 })).raw,
  (await signed4844({ kzg: 'fake', sidecar: 'none', blobs: 2 })).raw,
  (await signed4844({ kzg: 'fake', sidecar: 'v0' })).raw,
  (await signed4844({ kzg: 'fake', sidecar: 'cells' })).raw,
];

/** The whole family A chain on one input; returns normally or throws what the chain throws. */
function chain(raw: Uint8Array): void {
  const tx = decodeEvmTransaction(raw);
  txHash(raw, tx);
  try {
    validateEvmTransaction(tx, { chainId: 1n });
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
  }
  // Recovery runs even on transactions validation refused: it must fail cleanly too.
  const h = signingHash(raw, tx);
  for (const backend of ['native', 'noble'] as const) {
    useSecpBackend(backend);
    try {
      const addr = recoverSender(tx, h);
      assert.equal(addr.length, 20);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
    }
  }
}

function onlyDecodeErrors(raw: Uint8Array): boolean {
  try {
    chain(raw);
  } catch (e) {
    if (e instanceof DecodeError) return true;
    throw e;
  }
  return true;
}

/** Byte values that mean something to RLP: header boundaries, type bytes, zero. */
const interesting = fc.oneof(
  fc.constantFrom(0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x7f, 0x80, 0x81, 0xb7, 0xb8, 0xb9, 0xbf, 0xc0, 0xc1, 0xf7, 0xf8, 0xf9, 0xff),
  fc.integer({ min: 0, max: 255 }),
);

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'insert'; at: number; value: number }
  | { kind: 'delete'; at: number; len: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate'; at: number; len: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: interesting }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), value: interesting }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
);

/** Header bytes and the first fields are where structure lives; bias positions towards the start. */
function position(at: number, n: number): number {
  if (n === 0) return 0;
  return at % 4 === 0 ? at % Math.min(n, 64) : at % n;
}

function mutate(src: Uint8Array, ms: Mutation[]): Uint8Array {
  let b = Uint8Array.from(src);
  for (const m of ms) {
    const at = position(m.at, b.length);
    switch (m.kind) {
      case 'flip':
        if (b.length > 0) b[at] = b[at]! ^ (1 << m.bit);
        break;
      case 'set':
        if (b.length > 0) b[at] = m.value;
        break;
      case 'insert':
        b = Uint8Array.from([...b.subarray(0, at), m.value, ...b.subarray(at)]);
        break;
      case 'delete':
        b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + m.len)]);
        break;
      case 'truncate':
        b = b.slice(0, at);
        break;
      case 'duplicate':
        b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at, at + m.len), ...b.subarray(at)]);
        break;
    }
  }
  return b;
}

test('random mutations of valid transactions only ever raise DecodeError (decode, validate, hash, recover)', () => {
  const small = seeds.filter((s) => s.length < 10_000);
  fc.assert(
    fc.property(fc.constantFrom(...small), fc.array(mutation, { minLength: 1, maxLength: 4 }), (seed, ms) => onlyDecodeErrors(mutate(seed, ms))),
    { numRuns: 3000 },
  );
  useSecpBackend('native');
});

/**
 * Everything a check reads of a decoded transaction, views and integers
 * included, and how validation and both hashes come out: or the error.
 */
function outcome(raw: Uint8Array, into?: EvmTx): string {
  let tx: EvmTx;
  try {
    tx = decodeEvmTransaction(raw, into);
  } catch (e) {
    if (e instanceof DecodeError) return `decode: ${e.message}`;
    throw e;
  }
  const fields: Record<string, unknown> = { ...tx, raw: undefined, to: tx.to, data: tx.data, rBytes: tx.rBytes, sBytes: tx.sBytes, r: tx.r, s: tx.s };
  let valid = 'valid';
  try {
    validateEvmTransaction(tx, { chainId: 1n });
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    valid = e.message;
  }
  const hex = (x: Uint8Array) => Buffer.from(x).toString('hex');
  const text = (v: unknown): unknown =>
    typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? hex(v) : Array.isArray(v) ? v.map(text) : v;
  return JSON.stringify({ ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, text(v)])), valid, hash: hex(txHash(raw, tx)), signing: hex(signingHash(raw, tx)) });
}

test('decoding into a reused instance, after any earlier input, gives what a fresh decode gives', () => {
  // The checking loop decodes every transaction into one instance (exec/check.ts): nothing of
  // the previous transaction, decoded or refused halfway, may show through.
  const small = seeds.filter((s) => s.length < 10_000);
  const input = fc.tuple(fc.constantFrom(...small), fc.array(mutation, { maxLength: 3 })).map(([seed, ms]) => mutate(seed, ms));
  const scratch = new EvmTx();
  fc.assert(
    fc.property(input, input, (before, raw) => {
      outcome(before, scratch);
      assert.equal(outcome(raw, scratch), outcome(raw));
    }),
    { numRuns: 2000 },
  );
  // The unmutated seeds too, each after every other.
  for (const a of seeds) for (const b of seeds) {
    outcome(a, scratch);
    assert.equal(outcome(b, scratch), outcome(b));
  }
});

test('mutations of blob network forms only ever raise DecodeError', () => {
  const big = seeds.filter((s) => s.length >= 10_000);
  fc.assert(
    fc.property(fc.constantFrom(...big), fc.array(mutation, { minLength: 1, maxLength: 2 }), (seed, ms) => onlyDecodeErrors(mutate(seed, ms))),
    { numRuns: 150 },
  );
  useSecpBackend('native');
});

test('arbitrary bytes and arbitrary text only ever raise DecodeError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (b) => onlyDecodeErrors(b)),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), interesting, (b, t) => onlyDecodeErrors(Uint8Array.from([t, ...b]))),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (s) => {
      try {
        parseHexTransaction(s);
      } catch (e) {
        return e instanceof DecodeError;
      }
      return true;
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.constantFrom(...seeds.filter((s) => s.length < 10_000)), fc.integer({ min: 0, max: 400 }), fc.string({ maxLength: 2 }), (seed, at, junk) => {
      const hex = '0x' + Buffer.from(seed).toString('hex');
      const text = hex.slice(0, at) + junk + hex.slice(at);
      try {
        chain(parseHexTransaction(text));
      } catch (e) {
        return e instanceof DecodeError;
      }
      return true;
    }),
    { numRuns: 1000 },
  );
  useSecpBackend('native');
});

// ---------------------------------------------------------------------------
// Linear work: inputs built to maximise the number of RLP items per byte.

const SIG: RlpItem[] = [rlpInt(1), rlpInt(1n), rlpInt(1n)];

function typed(type: number, fields: RlpItem[]): Uint8Array {
  return hexToBytes(concatHex([rlpInt(type), toRlp([...fields, ...SIG])]));
}

const shapes: [string, (k: number) => Uint8Array][] = [
  ['access list of k empty entries', (k) => typed(2, fields1559({ 8: Array.from({ length: k }, () => [RECIPIENT, []]) }))],
  ['access list of one entry with k storage keys', (k) => typed(2, fields1559({ 8: [[RECIPIENT, Array.from({ length: k }, () => `0x${'00'.repeat(32)}` as Hex)]] }))],
  ['k authorizations', (k) => typed(4, [...fields1559(), Array.from({ length: k }, () => ['0x', DELEGATE, '0x', '0x', '0x01', '0x01'])])],
  ['k blob versioned hashes', (k) => typed(3, [...fields1559(), rlpInt(1), Array.from({ length: k }, () => `0x01${'00'.repeat(31)}` as Hex)])],
  ['k calldata bytes', (k) => typed(2, fields1559({ 7: `0x${'00'.repeat(k)}` }))],
  [
    'k access list entries, then one byte missing at the end',
    (k) => {
      const raw = typed(2, fields1559({ 8: Array.from({ length: k }, () => [RECIPIENT, []]) }));
      return raw.subarray(0, raw.length - 1);
    },
  ],
];

function work(raw: Uint8Array): number {
  const before = rlpHeadersRead();
  try {
    const tx = decodeEvmTransaction(raw);
    validateEvmTransaction(tx, { chainId: 1n, maxTxGas: null });
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
  }
  return rlpHeadersRead() - before;
}

test('decoding work grows at most linearly with input size (RLP headers read per byte stay bounded)', () => {
  for (const [name, make] of shapes) {
    const sizes = [500, 1000, 2000, 4000, 8000];
    const samples = sizes.map((k) => {
      const raw = make(k);
      return { bytes: raw.length, headers: work(raw) };
    });
    for (const s of samples) {
      // Every header consumes at least one byte, so headers <= bytes; anything re-scanning would break this.
      assert.ok(s.headers <= s.bytes, `${name}: ${s.headers} headers for ${s.bytes} bytes`);
    }
    const first = samples[0]!;
    const last = samples.at(-1)!;
    const perByteFirst = first.headers / first.bytes;
    const perByteLast = last.headers / last.bytes;
    // 16x the input may cost at most ~16x the work (10% slack for the fixed fields).
    assert.ok(perByteLast <= perByteFirst * 1.1 + 1e-9, `${name}: ${perByteFirst.toFixed(4)} -> ${perByteLast.toFixed(4)} headers per byte`);
  }
});
