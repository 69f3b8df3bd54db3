/**
 * go-ethereum's stateless transaction checks (core/txpool/validation.go and
 * types.Sender), each pinned by a transaction signed with viem.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { concatHex, hexToBytes, toRlp, type Hex } from 'viem';
import { DecodeError } from '../../../src/errors.js';
import { decodeEvmTransaction } from '../../../src/chains/evm/decode.js';
import { initKeccak } from '../../../src/chains/evm/hash.js';
import {
  BLOB_TX_MAX_SIZE,
  floorDataGas,
  intrinsicGas,
  MAX_INIT_CODE_SIZE,
  MAX_TX_GAS,
  TX_MAX_SIZE,
  validateEvmTransaction,
  type EvmValidationOptions,
} from '../../../src/chains/evm/validate.js';
import {
  DELEGATE,
  fields1559,
  fields4844,
  fields7702,
  RECIPIENT,
  rlpInt,
  SECP256K1_N,
  signCustom,
  signed1559,
  signed2930,
  signed4844,
  signed7702,
  signedLegacy,
  testAccount,
  versionedHash,
  wrapBlobTx,
  type RlpItem,
} from '../../helpers/evm.js';

await initKeccak();

const MAINNET: EvmValidationOptions = { chainId: 1n };

function check(raw: Uint8Array, opts: EvmValidationOptions = MAINNET): void {
  validateEvmTransaction(decodeEvmTransaction(raw), opts);
}

function rejects(raw: Uint8Array, message: RegExp, opts: EvmValidationOptions = MAINNET): void {
  assert.throws(() => check(raw, opts), (e: unknown) => e instanceof DecodeError && message.test(e.message));
}

/** Serializes already-signed fields (signature included) without touching them. */
function encodeSigned(type: number, signedFields: RlpItem[]): Uint8Array {
  return hexToBytes(type === 0 ? toRlp(signedFields) : concatHex([rlpInt(type), toRlp(signedFields)]));
}

/** [nonce, gasPrice, gas, to, value, data] of a plain legacy transfer, for signCustom. */
function legacyFields(): RlpItem[] {
  return [rlpInt(7), rlpInt(20_000_000_000n), rlpInt(21_000), RECIPIENT, rlpInt(1), '0x'];
}

function data(bytes: number, fill = 0xab): Hex {
  return `0x${fill.toString(16).padStart(2, '0').repeat(bytes)}`;
}

test('valid transactions of every type pass', async () => {
  check((await signedLegacy()).raw);
  check((await signedLegacy({ to: null, data: '0x6001' })).raw);
  check((await signed2930()).raw);
  check((await signed1559({ data: data(100) })).raw);
  check((await signed7702({ authorizations: 3 })).raw);
  check((await signed4844({ kzg: 'fake', blobs: 3 })).raw);
  check((await signed4844({ kzg: 'fake', blobs: 2, sidecar: 'cells' })).raw);
  check((await signed1559({ chainId: 8453 })).raw, { chainId: 8453n });
});

// --- size -------------------------------------------------------------------

test('a non-blob transaction larger than 128 KiB (go-ethereum txMaxSize) is rejected', async () => {
  const gas = 8_000_000n;
  check((await signed1559({ data: data(TX_MAX_SIZE - 200), gas })).raw);
  rejects((await signed1559({ data: data(TX_MAX_SIZE), gas })).raw, /transaction size \d+ exceeds limit 131072/);
});

test('a 6-blob EIP-7594 network transaction fits the blob size limit; over 1 MiB is rejected', async () => {
  // Commitments and proofs are fixed-size (48 bytes), so fake KZG values give the real size.
  const six = await signed4844({ kzg: 'fake', blobs: 6, sidecar: 'cells' });
  assert.ok(six.raw.length > 800_000 && six.raw.length < BLOB_TX_MAX_SIZE, `size ${six.raw.length}`);
  check(six.raw);
  const eight = await signed4844({ kzg: 'fake', blobs: 8, sidecar: 'v0' });
  rejects(eight.raw, /transaction size \d+ exceeds limit 1048576/);
});

// --- signature ----------------------------------------------------------------

test('a high-s signature is rejected (EIP-2), though it recovers the same signer', async () => {
  const low = await signCustom(2, fields1559());
  const high = await signCustom(2, fields1559(), { highS: true });
  const tx = decodeEvmTransaction(high.raw);
  assert.ok(tx.s > SECP256K1_N / 2n);
  const { recoverSender } = await import('../../../src/chains/evm/recover.js');
  const { signingHash } = await import('../../../src/chains/evm/decode.js');
  assert.deepEqual(recoverSender(tx, signingHash(high.raw, tx)), hexToBytes(testAccount.address));
  check(low.raw);
  rejects(high.raw, /s above n\/2/);
  rejects((await signCustom(0, legacyFields(), { highS: true })).raw, /s above n\/2/);
});

test('r and s must lie in 1..n-1', async () => {
  const s = await signCustom(2, fields1559());
  const f = s.signedFields;
  rejects(encodeSigned(2, [...f.slice(0, -2), '0x', f.at(-1)!]), /r out of range/);
  rejects(encodeSigned(2, [...f.slice(0, -2), rlpInt(SECP256K1_N), f.at(-1)!]), /r out of range/);
  rejects(encodeSigned(2, [...f.slice(0, -1), '0x']), /s out of range/);
  rejects(encodeSigned(2, [...f.slice(0, -1), rlpInt(SECP256K1_N + 1n)]), /s out of range/);
  // The bounds themselves (the checks compare bytes, not integers): n-1 and n/2 are in range, one more is not.
  check(encodeSigned(2, [...f.slice(0, -2), rlpInt(SECP256K1_N - 1n), f.at(-1)!]));
  rejects(encodeSigned(2, [...f.slice(0, -2), rlpInt(SECP256K1_N + 1n), f.at(-1)!]), /r out of range/);
  check(encodeSigned(2, [...f.slice(0, -2), '0x01', rlpInt(SECP256K1_N / 2n)]));
  rejects(encodeSigned(2, [...f.slice(0, -1), rlpInt(SECP256K1_N / 2n + 1n)]), /s above n\/2/);
  rejects(encodeSigned(2, [...f.slice(0, -1), rlpInt(SECP256K1_N - 1n)]), /s above n\/2/);
  check(encodeSigned(2, [...f.slice(0, -1), '0x01']));
  // A decoded transaction still reads r and s as integers.
  const tx = decodeEvmTransaction(encodeSigned(2, [...f.slice(0, -2), rlpInt(SECP256K1_N - 1n), '0x01']));
  assert.equal(tx.r, SECP256K1_N - 1n);
  assert.equal(tx.s, 1n);
});

test('typed yParity must be 0 or 1; legacy v must be 27, 28 or chainId * 2 + 35 / 36', async () => {
  const s = await signCustom(2, fields1559());
  const f = s.signedFields;
  rejects(encodeSigned(2, [...f.slice(0, -3), '0x02', ...f.slice(-2)]), /invalid yParity 2/);
  rejects(encodeSigned(2, [...f.slice(0, -3), '0x1b', ...f.slice(-2)]), /invalid yParity 27/);
  const legacy = await signCustom(0, legacyFields());
  const lf = legacy.signedFields;
  for (const v of [0, 1, 29, 30, 34]) rejects(encodeSigned(0, [...lf.slice(0, -3), rlpInt(v), ...lf.slice(-2)]), new RegExp(`invalid v ${v}$`));
});

test('unprotected legacy transactions are not accepted', async () => {
  const s = await signedLegacy({ chainId: null });
  rejects(s.raw, /^unprotected legacy transactions are not accepted$/);
});

test('the chain id must equal the configured one, legacy and typed', async () => {
  rejects((await signedLegacy({ chainId: 5 })).raw, /wrong chain id 5, expected 1/);
  rejects((await signed1559({ chainId: 5 })).raw, /wrong chain id 5, expected 1/);
  rejects((await signed2930({ chainId: 1 })).raw, /wrong chain id 1, expected 10/, { chainId: 10n });
  rejects((await signed7702({ chainId: 2 })).raw, /wrong chain id 2, expected 1/);
  rejects((await signed4844({ chainId: 17000, kzg: 'fake' })).raw, /wrong chain id 17000, expected 1/);
});

// --- fees, nonce, gas ----------------------------------------------------------

test('maxPriorityFeePerGas above maxFeePerGas is rejected (tip above fee cap)', async () => {
  const s = await signCustom(2, fields1559({ 2: rlpInt(31_000_000_000n), 3: rlpInt(30_000_000_000n) }));
  rejects(s.raw, /tip above fee cap: maxPriorityFeePerGas 31000000000 > maxFeePerGas 30000000000/);
  check((await signCustom(2, fields1559({ 2: rlpInt(30_000_000_000n), 3: rlpInt(30_000_000_000n) }))).raw);
});

test('fee fields wider than 256 bits are rejected', async () => {
  const s = await signCustom(2, fields1559({ 3: `0x01${'00'.repeat(32)}` }));
  assert.throws(() => decodeEvmTransaction(s.raw), /maxFeePerGas: integer wider than 256 bits/);
  const legacy = await signCustom(0, [rlpInt(7), `0x01${'00'.repeat(32)}`, rlpInt(21_000), RECIPIENT, rlpInt(1), '0x']);
  assert.throws(() => decodeEvmTransaction(legacy.raw), /gasPrice: integer wider than 256 bits/);
});

test('a nonce of 2^64-1 is rejected (EIP-2681)', async () => {
  rejects((await signCustom(2, fields1559({ 1: rlpInt(2n ** 64n - 1n) }))).raw, /nonce has reached its maximum/);
  check((await signCustom(2, fields1559({ 1: rlpInt(2n ** 64n - 2n) }))).raw);
  assert.throws(() => decodeEvmTransaction(new Uint8Array(0)), DecodeError);
});

test('gas below intrinsic gas is rejected, at the exact boundary', async () => {
  const cases: [string, (gas: bigint) => Promise<{ raw: Uint8Array }>, number][] = [
    ['transfer', (gas) => signed1559({ gas }), 21_000],
    // A create, so that the EIP-7623 floor (21000 + 10 per token) stays below intrinsic gas.
    ['calldata 4 per zero byte, 16 per non-zero byte', (gas) => signed1559({ gas, to: null, data: '0x0000ff01' }), 53_000 + 4 + 4 + 16 + 16 + 2],
    ['create: 53000 + 2 per init code word', (gas) => signed1559({ gas, to: null, data: data(33, 0) }), 53_000 + 33 * 4 + 2 * 2],
    [
      'access list 2400 per address, 1900 per storage key',
      (gas) => signed2930({ gas, accessList: [{ address: RECIPIENT, storageKeys: [`0x${'01'.repeat(32)}`, `0x${'02'.repeat(32)}`] }, { address: DELEGATE, storageKeys: [] }] }),
      21_000 + 2 * 2400 + 2 * 1900,
    ],
    ['EIP-7702: 25000 per authorization', (gas) => signed7702({ gas, authorizations: 2 }), 21_000 + 2 * 25_000],
    ['blob transaction: no extra intrinsic gas', (gas) => signed4844({ gas, kzg: 'fake' }), 21_000],
  ];
  for (const [name, make, need] of cases) {
    const ok = await make(BigInt(need));
    assert.equal(intrinsicGas(decodeEvmTransaction(ok.raw)), need, name);
    check(ok.raw);
    rejects((await make(BigInt(need - 1))).raw, new RegExp(`intrinsic gas too low: gas ${need - 1}, minimum needed ${need}$`));
  }
});

test('gas below the EIP-7623 calldata floor is rejected (go-ethereum applies it statelessly since Prague)', async () => {
  // 1000 non-zero bytes: intrinsic 21000 + 16000, floor 21000 + 10 * 4000.
  const d = data(1000);
  const tx = decodeEvmTransaction((await signed1559({ data: d })).raw);
  assert.equal(intrinsicGas(tx), 37_000);
  assert.equal(floorDataGas(tx), 61_000);
  rejects((await signed1559({ data: d, gas: 60_999n })).raw, /gas below the EIP-7623 calldata floor: gas 60999, minimum needed 61000/);
  check((await signed1559({ data: d, gas: 61_000n })).raw);
});

test('gas above the EIP-7825 cap of 2^24 is rejected unless the cap is turned off', async () => {
  const over = await signed1559({ gas: MAX_TX_GAS + 1n });
  rejects(over.raw, /gas limit 16777217 exceeds the per-transaction cap 16777216/);
  check(over.raw, { chainId: 1n, maxTxGas: null });
  check((await signed1559({ gas: MAX_TX_GAS })).raw);
});

test('init code larger than 49152 bytes is rejected (EIP-3860)', async () => {
  const gas = 2_500_000n;
  check((await signed1559({ to: null, data: data(MAX_INIT_CODE_SIZE), gas })).raw);
  rejects((await signed1559({ to: null, data: data(MAX_INIT_CODE_SIZE + 1), gas })).raw, /init code size 49153 exceeds limit 49152/);
  // The limit is for creation only.
  check((await signed1559({ data: data(MAX_INIT_CODE_SIZE + 1), gas })).raw);
});

// --- EIP-7702 ---------------------------------------------------------------------

test('a set-code transaction with an empty authorization list is rejected', async () => {
  rejects((await signCustom(4, fields7702([]))).raw, /set-code transaction must have at least one authorization/);
});

test('a set-code transaction cannot create a contract', async () => {
  const auth = [rlpInt(1), DELEGATE, rlpInt(8), '0x', rlpInt(1n), rlpInt(2n)] as RlpItem[];
  rejects((await signCustom(4, fields7702([auth], { 5: '0x' }))).raw, /set-code transaction cannot create a contract/);
  check((await signCustom(4, fields7702([auth], { 4: rlpInt(50_000) }))).raw);
});

// --- EIP-4844 ---------------------------------------------------------------------

const VH = versionedHash(`0x${'aa'.repeat(48)}`);

test('a blob transaction with no blobs is rejected', async () => {
  rejects((await signCustom(3, fields4844([]))).raw, /blob transaction without blobs/);
});

test('a blob versioned hash must start with 0x01', async () => {
  rejects((await signCustom(3, fields4844([VH, `0x02${VH.slice(4)}`]))).raw, /blob versioned hash 1 has version 0x02, expected 0x01/);
});

test('more than 6 blobs per transaction are rejected (EIP-7594)', async () => {
  rejects((await signCustom(3, fields4844(Array(7).fill(VH)))).raw, /too many blobs: 7, limit 6/);
  rejects((await signed4844({ kzg: 'fake', blobs: 7, sidecar: 'cells' })).raw, /too many blobs: 7, limit 6/);
});

test('a blob transaction cannot create a contract', async () => {
  rejects((await signCustom(3, fields4844([VH], { 5: '0x' }))).raw, /blob transaction cannot create a contract/);
});

test('maxFeePerBlobGas below 1 wei is rejected', async () => {
  rejects((await signed4844({ kzg: 'fake', maxFeePerBlobGas: 0n })).raw, /maxFeePerBlobGas below the minimum of 1 wei/);
});

test('a blob transaction without its sidecar is rejected', async () => {
  rejects((await signed4844({ kzg: 'fake', sidecar: 'none' })).raw, /blob transaction without sidecar/);
});

test('sidecar counts must match: blobs == commitments == hashes, proofs == blobs or 128 * blobs', async () => {
  const commitment = `0x${'aa'.repeat(48)}` as Hex;
  const blob = `0x${'00'.repeat(131072)}` as Hex;
  const proof = `0x${'00'.repeat(48)}` as Hex;
  const withHash = await signCustom(3, fields4844([versionedHash(commitment)]));
  const canonical = withHash.hex;
  check(wrapBlobTx(canonical, 0, [blob], [commitment], [proof]).raw);
  check(wrapBlobTx(canonical, 1, [blob], [commitment], Array(128).fill(proof)).raw);
  rejects(wrapBlobTx(canonical, 0, [blob, blob], [commitment], [proof]).raw, /sidecar has 2 blobs for 1 blob hashes/);
  rejects(wrapBlobTx(canonical, 0, [blob], [commitment, commitment], [proof]).raw, /sidecar has 2 commitments for 1 blob hashes/);
  rejects(wrapBlobTx(canonical, 0, [blob], [commitment], [proof, proof]).raw, /sidecar has 2 proofs, expected 1/);
  rejects(wrapBlobTx(canonical, 1, [blob], [commitment], [proof]).raw, /sidecar has 1 proofs, expected 128/);
  rejects(wrapBlobTx(canonical, 0, [blob], [`0x${'bb'.repeat(48)}`], [proof]).raw, /commitment 0 does not match blob versioned hash 0/);
});
