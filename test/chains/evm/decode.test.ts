/**
 * Decoding of the five transaction types against transactions signed by viem:
 * our hash must equal viem's, our fields must equal viem's parse.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesToHex, concatHex, fromRlp, hexToBytes, parseTransaction, toRlp, type Hex } from 'viem';
import { DecodeError } from '../../../src/errors.js';
import { decodeEvmTransaction, EvmTx, signingHash, txHash } from '../../../src/chains/evm/decode.js';
import { initKeccak } from '../../../src/chains/evm/hash.js';
import { toHex } from '../../../src/chains/evm/hex.js';
import {
  fields1559,
  fields4844,
  RECIPIENT,
  signCustom,
  wrapBlobTx,
  type RlpItem,
  signed1559,
  signed2930,
  signed4844,
  signed7702,
  signedLegacy,
  type SignedBlobTx,
  type SignedTx,
} from '../../helpers/evm.js';

await initKeccak();

const CALLDATA: Hex = '0xa9059cbb000000000000000000000000353535353535353535353535353535353535353500000000000000000000000000000000000000000000000000000000000f4240';

async function samples(): Promise<[string, SignedTx][]> {
  return [
    ['legacy EIP-155', await signedLegacy({ data: CALLDATA })],
    ['legacy unprotected', await signedLegacy({ chainId: null })],
    ['legacy create', await signedLegacy({ to: null, data: '0x6001600101' })],
    ['EIP-2930', await signed2930({ data: CALLDATA })],
    ['EIP-1559', await signed1559({ data: CALLDATA, accessList: [{ address: RECIPIENT, storageKeys: [`0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`] }] })],
    ['EIP-1559 create', await signed1559({ to: null, data: '0x6001600101', value: 0n })],
    ['EIP-7702', await signed7702({ authorizations: 2 })],
    ['EIP-4844 canonical', await signed4844({ sidecar: 'none', kzg: 'fake', blobs: 2 })],
    ['EIP-4844 network form', await signed4844({ sidecar: 'v0', kzg: 'fake', blobs: 2 })],
    ['EIP-7594 cell-proof network form', await signed4844({ sidecar: 'cells', kzg: 'fake', blobs: 2 })],
  ];
}

const all = await samples();

function canonicalHex(s: SignedTx): Hex {
  return 'canonical' in s ? (s as SignedBlobTx).canonical.hex : s.hex;
}

test('transaction hash equals viem keccak256 of the canonical encoding, every type', () => {
  for (const [name, s] of all) {
    const tx = decodeEvmTransaction(s.raw);
    assert.equal(toHex(txHash(s.raw, tx)), s.hash, name);
  }
});

test('decoded fields equal viem parseTransaction, every type', () => {
  for (const [name, s] of all) {
    const tx = decodeEvmTransaction(s.raw);
    // viem cannot parse the EIP-7594 wrapper; the canonical form carries the same fields.
    const p = parseTransaction(canonicalHex(s)) as Record<string, any>;
    assert.equal(tx.nonce, BigInt(p.nonce ?? 0), name);
    assert.equal(tx.gasLimit, p.gas, name);
    assert.equal(tx.value, p.value ?? 0n, name);
    assert.equal(bytesToHex(tx.data), p.data ?? '0x', name);
    assert.equal(tx.to === null ? undefined : bytesToHex(tx.to), p.to ?? undefined, name);
    if (p.type === 'legacy' || p.type === 'eip2930') assert.equal(tx.gasPrice, p.gasPrice, name);
    else {
      assert.equal(tx.maxFeePerGas, p.maxFeePerGas, name);
      assert.equal(tx.maxPriorityFeePerGas, p.maxPriorityFeePerGas, name);
    }
    assert.equal(tx.r, BigInt(p.r), name);
    assert.equal(tx.s, BigInt(p.s), name);
    assert.equal(tx.yParity, p.yParity, name);
    if (p.chainId !== undefined) assert.equal(tx.chainId, BigInt(p.chainId), name);
    else assert.equal(tx.chainId, null, name);
    const al = (p.accessList ?? []) as { storageKeys: unknown[] }[];
    assert.equal(tx.accessListAddresses, al.length, name);
    assert.equal(tx.accessListStorageKeys, al.reduce((n, e) => n + e.storageKeys.length, 0), name);
    assert.deepEqual(tx.blobVersionedHashes.map((h) => bytesToHex(h)), p.blobVersionedHashes ?? [], name);
    if (p.type === 'eip4844') assert.equal(tx.maxFeePerBlobGas, p.maxFeePerBlobGas, name);
    assert.equal(tx.authorizationCount, (p.authorizationList ?? []).length, name);
  }
});

test('signing hash matches what the signature recovers against (viem recoverTransactionAddress)', async () => {
  const { recoverTransactionAddress } = await import('viem');
  const { testAccount } = await import('../../helpers/evm.js');
  const { secp256k1 } = await import('@noble/curves/secp256k1.js');
  const { keccak_256 } = await import('@noble/hashes/sha3.js');
  for (const [name, s] of all) {
    const tx = decodeEvmTransaction(s.raw);
    const h = signingHash(s.raw, tx);
    const pub = new secp256k1.Signature(tx.r, tx.s, tx.yParity).recoverPublicKey(h).toBytes(false);
    const addr = bytesToHex(keccak_256(pub.subarray(1)).subarray(12));
    assert.equal(addr, testAccount.address.toLowerCase(), name);
    assert.equal((await recoverTransactionAddress({ serializedTransaction: canonicalHex(s) as never })).toLowerCase(), addr, name);
  }
});

test('EvmTx instances share one shape across types', () => {
  const keys = Object.keys(new EvmTx()).join();
  for (const [name, s] of all) assert.equal(Object.keys(decodeEvmTransaction(s.raw)).join(), keys, name);
});

// ---------------------------------------------------------------------------
// Rejections at decode time, on real signed transactions re-encoded by hand.

function decodeFails(raw: Uint8Array, message: RegExp): void {
  assert.throws(() => decodeEvmTransaction(raw), (e: unknown) => e instanceof DecodeError && message.test(e.message));
}

/** RLP list header for a payload of `len` bytes, as hex without 0x. */
function listHeader(len: number): string {
  if (len < 56) return (0xc0 + len).toString(16);
  const l = len.toString(16).padStart(Math.ceil(len.toString(16).length / 2) * 2, '0');
  return (0xf7 + l.length / 2).toString(16) + l;
}

/** Re-encodes a legacy transaction with item `index` replaced by the given raw encoding. */
function legacyWithItem(hex: Hex, index: number, encoding: string): Uint8Array {
  const items = (fromRlp(hex) as Hex[]).map((x) => toRlp(x).slice(2));
  items[index] = encoding;
  const payload = items.join('');
  return hexToBytes(`0x${listHeader(payload.length / 2)}${payload}`);
}

test('a transaction with a non-canonical RLP length is rejected', async () => {
  const s = await signedLegacy();
  // `to` (20 bytes) written with a long-form length.
  decodeFails(legacyWithItem(s.hex, 3, `b814${RECIPIENT.slice(2)}`), /to: non-canonical length/);
  // The outer list length written with a leading zero byte.
  const payload = s.hex.slice(6);
  decodeFails(hexToBytes(`0xf900${s.hex.slice(4, 6)}${payload}`), /length has a leading zero byte/);
});

test('a transaction with a leading-zero integer is rejected', async () => {
  const s = await signedLegacy();
  decodeFails(legacyWithItem(s.hex, 0, '820007'), /nonce: integer has a leading zero byte/);
  decodeFails(legacyWithItem(s.hex, 0, '00'), /nonce: integer has a leading zero byte/);
  const custom = await signCustom(2, fields1559({ 1: '0x0007' }));
  decodeFails(custom.raw, /nonce: integer has a leading zero byte/);
});

test('a transaction with a trailing byte is rejected', async () => {
  for (const [, s] of all) {
    const raw = new Uint8Array(s.raw.length + 1);
    raw.set(s.raw);
    decodeFails(raw, /trailing bytes after transaction/);
  }
});

test('a truncated transaction is rejected', async () => {
  for (const [, s] of all) decodeFails(s.raw.subarray(0, s.raw.length - 1), /runs past|unexpected end/);
});

test('unsupported transaction types and top-level strings are rejected', () => {
  decodeFails(new Uint8Array(0), /empty transaction/);
  decodeFails(Uint8Array.of(0x05, 0xc0), /unsupported transaction type 0x05/);
  decodeFails(Uint8Array.of(0x00, 0xc0), /unsupported transaction type 0x00/);
  decodeFails(Uint8Array.of(0x7f), /unsupported transaction type 0x7f/);
  decodeFails(Uint8Array.of(0x80), /expected a list or a transaction type byte/);
});

test('a typed transaction must have exactly its fields', async () => {
  const f = fields1559();
  decodeFails((await signCustom(2, f.slice(0, 8))).raw, /unexpected end|expected a list/);
  decodeFails((await signCustom(2, [...f, '0x01'])).raw, /yParity|unexpected extra items|expected a string/);
});

test('addresses, hashes and blobs must have their exact sizes', async () => {
  decodeFails((await signCustom(2, fields1559({ 5: `0x${'35'.repeat(19)}` }))).raw, /to: must be 20 bytes or empty/);
  decodeFails((await signCustom(2, fields1559({ 8: [[`0x${'35'.repeat(21)}`, []]] }))).raw, /accessList address: must be 20 bytes/);
  decodeFails((await signCustom(2, fields1559({ 8: [[RECIPIENT, ['0x01']]] }))).raw, /accessList storageKey: must be 32 bytes/);
  decodeFails((await signCustom(2, fields1559({ 8: [[RECIPIENT]] }))).raw, /accessList storageKeys: unexpected end/);
  decodeFails((await signCustom(3, fields4844([`0x01${'00'.repeat(30)}`]))).raw, /blobVersionedHashes: must be 32 bytes/);
  const canonical = (await signed4844({ sidecar: 'none', kzg: 'fake' })).hex;
  const c48 = `0x${'aa'.repeat(48)}` as Hex;
  decodeFails(wrapBlobTx(canonical, 0, [`0x${'00'.repeat(131071)}`], [c48], [c48]).raw, /blob: must be 131072 bytes/);
  decodeFails(wrapBlobTx(canonical, 0, [`0x${'00'.repeat(131072)}`], [`0x${'aa'.repeat(47)}`], [c48]).raw, /commitment: must be 48 bytes/);
});

test('an EIP-7594 wrapper must carry version 1', async () => {
  const canonical = (await signed4844({ sidecar: 'none', kzg: 'fake' })).hex;
  const body = fromRlp(`0x${canonical.slice(4)}`) as RlpItem;
  const blob = `0x${'00'.repeat(131072)}` as Hex;
  const c48 = `0x${'aa'.repeat(48)}` as Hex;
  for (const version of ['0x02', '0x', '0x0001'] as Hex[]) {
    const raw = hexToBytes(concatHex(['0x03', toRlp([body, version, [blob], [c48], [c48]])]));
    decodeFails(raw, /unsupported blob sidecar version|sidecar version: integer wider than 8 bits/);
  }
});

test('the network forms hash like their canonical form and report their sidecar', async () => {
  for (const [name, s] of all) {
    if (!('canonical' in s)) continue;
    const c = (s as SignedBlobTx).canonical;
    const tx = decodeEvmTransaction(s.raw);
    const ctx = decodeEvmTransaction(c.raw);
    assert.deepEqual(txHash(s.raw, tx), txHash(c.raw, ctx), name);
    assert.deepEqual(signingHash(s.raw, tx), signingHash(c.raw, ctx), name);
    assert.equal(ctx.sidecarVersion, -1, name);
    if (name.startsWith('EIP-4844 network')) assert.deepEqual([tx.sidecarVersion, tx.sidecarBlobs, tx.sidecarCommitments.length, tx.sidecarProofs], [0, 2, 2, 2]);
    if (name.startsWith('EIP-7594')) assert.deepEqual([tx.sidecarVersion, tx.sidecarBlobs, tx.sidecarCommitments.length, tx.sidecarProofs], [1, 2, 2, 256]);
  }
});

test('legacy chain id is derived from EIP-155 v, and is null for v = 27 / 28', async () => {
  for (const chainId of [1, 5, 137, 11155111, 2 ** 40]) {
    const tx = decodeEvmTransaction((await signedLegacy({ chainId })).raw);
    assert.equal(tx.chainId, BigInt(chainId));
    assert.equal(tx.v, BigInt(chainId) * 2n + 35n + BigInt(tx.yParity));
  }
  const tx = decodeEvmTransaction((await signedLegacy({ chainId: null })).raw);
  assert.equal(tx.chainId, null);
  assert.equal(tx.v, 27n + BigInt(tx.yParity));
});
