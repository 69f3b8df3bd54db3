/**
 * Blob transactions with real KZG material (kzg-wasm, mainnet trusted setup):
 * the EIP-4844 network form and the EIP-7594 cell-proof form decode,
 * validate, hash like viem's canonical form and recover their sender.
 * Every real-KZG case lives here; the material comes from helpers/kzg.ts's
 * cache where a run has computed it before, and is checked against its blob
 * by an independent verify_blob_kzg_proof every run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesToHex, commitmentToVersionedHash, fromRlp, type Hex } from 'viem';
import { decodeEvmTransaction, signingHash, txHash } from '../../../src/chains/evm/decode.js';
import { initKeccak } from '../../../src/chains/evm/hash.js';
import { toHex } from '../../../src/chains/evm/hex.js';
import { recoverSender } from '../../../src/chains/evm/recover.js';
import { CELL_PROOFS_PER_BLOB, validateEvmTransaction } from '../../../src/chains/evm/validate.js';
import { makeBlob, signed4844, testAccount } from '../../helpers/evm.js';
import { verifyBlobProof } from '../../helpers/kzg.js';

await initKeccak();

test('a real EIP-4844 network transaction decodes, validates, hashes like its canonical form and recovers its sender', { timeout: 120_000 }, async () => {
  const s = await signed4844({ blobs: 1, sidecar: 'v0', seed: 11 });
  const tx = decodeEvmTransaction(s.raw);
  validateEvmTransaction(tx, { chainId: 1n });
  assert.equal(toHex(txHash(s.raw, tx)), s.hash);
  assert.equal(bytesToHex(recoverSender(tx, signingHash(s.raw, tx))), testAccount.address.toLowerCase());
  assert.deepEqual([tx.sidecarVersion, tx.sidecarBlobs, tx.sidecarProofs], [0, 1, 1]);
  // The helper's KZG material is real: viem derives the same versioned hash and the proof verifies.
  const commitment = bytesToHex(tx.sidecarCommitments[0]!);
  assert.equal(bytesToHex(tx.blobVersionedHashes[0]!), commitmentToVersionedHash({ commitment }));
  const [, , , proofs] = fromRlp(`0x${s.hex.slice(4)}`) as Hex[][];
  assert.equal(await verifyBlobProof(makeBlob(11), commitment, proofs![0]!), true);
  // And a proof of another blob does not.
  assert.equal(await verifyBlobProof(makeBlob(12), commitment, proofs![0]!), false);
});

test('a real EIP-7594 cell-proof network transaction (128 proofs per blob) decodes, validates and hashes like its canonical form', { timeout: 120_000 }, async () => {
  const s = await signed4844({ blobs: 1, sidecar: 'cells', seed: 12 });
  const tx = decodeEvmTransaction(s.raw);
  validateEvmTransaction(tx, { chainId: 1n });
  assert.equal(toHex(txHash(s.raw, tx)), s.hash);
  assert.equal(toHex(txHash(s.canonical.raw, decodeEvmTransaction(s.canonical.raw))), s.hash);
  assert.equal(bytesToHex(recoverSender(tx, signingHash(s.raw, tx))), testAccount.address.toLowerCase());
  assert.deepEqual([tx.sidecarVersion, tx.sidecarBlobs, tx.sidecarProofs], [1, 1, CELL_PROOFS_PER_BLOB]);
});
