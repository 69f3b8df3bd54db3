/**
 * Stateless checks mirroring go-ethereum's `txpool.ValidateTransaction`
 * (core/txpool/validation.go) and `types.Sender`'s signature rules at Osaka:
 * pool size limits, signature ranges and low s, chain id, fee sanity, nonce,
 * init code and gas caps, intrinsic gas and the EIP-7623 floor (stateless in
 * go-ethereum's pool since Prague), blob and set-code shape.
 *
 * KZG proofs are not verified: that needs the trusted setup and costs
 * milliseconds per blob, and the block producer's pool verifies them anyway;
 * only the cheap bindings (counts, versioned hashes) are checked here.
 * Stateful rules (balance, nonce order, base fee, block gas limit, minimum
 * tip, the head fork's sidecar version) are upstream's. Both sidecar versions
 * pass: go-ethereum's RPC converts version 0 to cell proofs after Osaka.
 */

import { sha256 } from '@noble/hashes/sha2.js';
import { DecodeError } from '../../errors.js';
import { type EvmTx, SIDECAR_VERSION_CELL_PROOFS, TX_BLOB, TX_LEGACY, TX_SET_CODE } from './decode.js';

/** go-ethereum legacypool txMaxSize = 4 * txSlotSize (32 KiB): the bound for every non-blob transaction. */
export const TX_MAX_SIZE = 131072;
/** go-ethereum blobpool txMaxSize, sidecar included; a 6-blob EIP-7594 network transaction is about 824 KB. */
export const BLOB_TX_MAX_SIZE = 1048576;
/** EIP-7594 (Osaka) per-transaction blob limit, go-ethereum params.BlobTxMaxBlobs. */
const MAX_BLOBS_PER_TX = 6;
/** EIP-7594 CELLS_PER_EXT_BLOB: a cell-proof sidecar carries this many proofs per blob. */
export const CELL_PROOFS_PER_BLOB = 128;
/** EIP-3860: twice EIP-170's 24576-byte code size limit. */
export const MAX_INIT_CODE_SIZE = 49152;
/** EIP-7825 (Osaka): per-transaction gas limit cap, 2^24. */
export const MAX_TX_GAS = 16777216n;
/** EIP-4844 VERSIONED_HASH_VERSION_KZG: first byte of every blob versioned hash. */
const VERSIONED_HASH_VERSION_KZG = 0x01;
/** EIP-4844 MIN_BASE_FEE_PER_BLOB_GAS: a lower blob fee cap can never be included. */
const MIN_BLOB_GAS_PRICE = 1n;

/** EIP-2681: the nonce must stay below 2^64-1 so that nonce + 1 fits. */
const NONCE_MAX = 0xffffffffffffffffn;
const MAX_U256 = (1n << 256n) - 1n;
/** Order of the secp256k1 group (SEC 2). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
/** EIP-2 (Homestead): s above n/2 is malleable and rejected. */
const SECP256K1_HALF_N = SECP256K1_N >> 1n;
const N_BYTES = Buffer.from(SECP256K1_N.toString(16).padStart(64, '0'), 'hex');
const HALF_N_BYTES = Buffer.from(SECP256K1_HALF_N.toString(16).padStart(64, '0'), 'hex');

/**
 * -1, 0 or 1: buf[at, at + len), canonical big-endian as decode.ts enforces,
 * against a 32-byte `word` whose first byte is non-zero. No BigInt, no view.
 */
function compareWord(buf: Uint8Array, at: number, len: number, word: Uint8Array): number {
  if (len !== 32) return -1;
  for (let i = 0; i < 32; i++) {
    const x = buf[at + i]!;
    if (x !== word[i]) return x < word[i]! ? -1 : 1;
  }
  return 0;
}

// Intrinsic gas schedule (go-ethereum params/protocol_params.go).
/** Yellow Paper G_transaction. */
const TX_GAS = 21000;
/** G_transaction + G_txcreate (Homestead). */
const TX_GAS_CONTRACT_CREATION = 53000;
/** Yellow Paper G_txdatazero. */
const TX_DATA_ZERO_GAS = 4;
/** EIP-2028 G_txdatanonzero. */
const TX_DATA_NON_ZERO_GAS = 16;
/** EIP-3860 per 32-byte word of init code. */
const INIT_CODE_WORD_GAS = 2;
/** EIP-2930 ACCESS_LIST_ADDRESS_COST. */
const ACCESS_LIST_ADDRESS_GAS = 2400;
/** EIP-2930 ACCESS_LIST_STORAGE_KEY_COST. */
const ACCESS_LIST_STORAGE_KEY_GAS = 1900;
/** EIP-7702 PER_EMPTY_ACCOUNT_COST per authorization. */
const AUTHORIZATION_GAS = 25000;
/** EIP-7623 tokens per non-zero calldata byte (a zero byte is one token). */
const TOKENS_PER_NON_ZERO_BYTE = 4;
/** EIP-7623 TOTAL_COST_FLOOR_PER_TOKEN. */
const FLOOR_GAS_PER_TOKEN = 10;

export interface EvmValidationOptions {
  /** The EIP-155 chain id signatures must carry (config `evm.chain_id`). */
  chainId: bigint;
  /** EIP-7825 gas cap; `null` turns it off for chains without Osaka. Default MAX_TX_GAS. */
  maxTxGas?: bigint | null;
}

/** Throws DecodeError with a message naming the first rule `tx` breaks. */
export function validateEvmTransaction(tx: EvmTx, opts: EvmValidationOptions): void {
  const isBlob = tx.type === TX_BLOB;
  const sizeLimit = isBlob ? BLOB_TX_MAX_SIZE : TX_MAX_SIZE;
  if (tx.size > sizeLimit) throw new DecodeError(`transaction size ${tx.size} exceeds limit ${sizeLimit}`);

  const create = tx.toAt < 0;
  if (create && isBlob) throw new DecodeError('blob transaction cannot create a contract (to is empty)');
  if (create && tx.type === TX_SET_CODE) throw new DecodeError('set-code transaction cannot create a contract (to is empty)');
  if (create && tx.dataLen > MAX_INIT_CODE_SIZE) {
    throw new DecodeError(`init code size ${tx.dataLen} exceeds limit ${MAX_INIT_CODE_SIZE}`);
  }
  const gasCap = opts.maxTxGas === undefined ? MAX_TX_GAS : opts.maxTxGas;
  if (gasCap !== null && tx.gasLimit > gasCap) {
    throw new DecodeError(`gas limit ${tx.gasLimit} exceeds the per-transaction cap ${gasCap}`);
  }

  if (tx.maxFeePerGas > MAX_U256) throw new DecodeError('fee cap exceeds 256 bits');
  if (tx.maxPriorityFeePerGas > MAX_U256) throw new DecodeError('tip cap exceeds 256 bits');
  if (tx.maxPriorityFeePerGas > tx.maxFeePerGas) {
    throw new DecodeError(`tip above fee cap: maxPriorityFeePerGas ${tx.maxPriorityFeePerGas} > maxFeePerGas ${tx.maxFeePerGas}`);
  }

  if (tx.yParity !== 0 && tx.yParity !== 1) {
    throw new DecodeError(tx.type === TX_LEGACY ? `invalid v ${tx.v}` : `invalid yParity ${tx.v}`);
  }
  const raw = tx.raw;
  if (tx.rLen === 0 || compareWord(raw, tx.rAt, tx.rLen, N_BYTES) >= 0) throw new DecodeError('invalid signature: r out of range');
  if (tx.sLen === 0 || compareWord(raw, tx.sAt, tx.sLen, N_BYTES) >= 0) throw new DecodeError('invalid signature: s out of range');
  if (compareWord(raw, tx.sAt, tx.sLen, HALF_N_BYTES) > 0) throw new DecodeError('invalid signature: s above n/2 (EIP-2 requires low s)');

  if (tx.chainId === null) throw new DecodeError('unprotected legacy transactions are not accepted');
  if (tx.chainId !== opts.chainId) throw new DecodeError(`wrong chain id ${tx.chainId}, expected ${opts.chainId}`);

  if (tx.nonce >= NONCE_MAX) throw new DecodeError('nonce has reached its maximum 2^64-1 (EIP-2681)');

  const zeros = zeroBytesOf(tx);
  const intrinsic = intrinsicGasOf(tx, zeros);
  if (tx.gasLimit < BigInt(intrinsic)) {
    throw new DecodeError(`intrinsic gas too low: gas ${tx.gasLimit}, minimum needed ${intrinsic}`);
  }
  const floor = floorDataGasOf(tx.dataLen, zeros);
  if (tx.gasLimit < BigInt(floor)) {
    throw new DecodeError(`gas below the EIP-7623 calldata floor: gas ${tx.gasLimit}, minimum needed ${floor}`);
  }

  if (isBlob) validateBlobs(tx);
  if (tx.type === TX_SET_CODE && tx.authorizationCount === 0) {
    throw new DecodeError('set-code transaction must have at least one authorization');
  }
}

function validateBlobs(tx: EvmTx): void {
  const hashes = tx.blobVersionedHashes;
  const n = hashes.length;
  if (n === 0) throw new DecodeError('blob transaction without blobs');
  if (n > MAX_BLOBS_PER_TX) throw new DecodeError(`too many blobs: ${n}, limit ${MAX_BLOBS_PER_TX}`);
  for (let i = 0; i < n; i++) {
    const version = hashes[i]![0]!;
    if (version !== VERSIONED_HASH_VERSION_KZG) {
      throw new DecodeError(`blob versioned hash ${i} has version 0x${version.toString(16).padStart(2, '0')}, expected 0x01`);
    }
  }
  if (tx.maxFeePerBlobGas === null || tx.maxFeePerBlobGas < MIN_BLOB_GAS_PRICE) {
    throw new DecodeError(`maxFeePerBlobGas below the minimum of ${MIN_BLOB_GAS_PRICE} wei`);
  }
  // go-ethereum's pool refuses blob transactions without their blobs.
  if (tx.sidecarVersion < 0) throw new DecodeError('blob transaction without sidecar (send the network form with blobs)');
  if (tx.sidecarBlobs !== n) throw new DecodeError(`sidecar has ${tx.sidecarBlobs} blobs for ${n} blob hashes`);
  const commitments = tx.sidecarCommitments;
  if (commitments.length !== n) {
    throw new DecodeError(`sidecar has ${commitments.length} commitments for ${n} blob hashes`);
  }
  const proofs = tx.sidecarVersion === SIDECAR_VERSION_CELL_PROOFS ? n * CELL_PROOFS_PER_BLOB : n;
  if (tx.sidecarProofs !== proofs) throw new DecodeError(`sidecar has ${tx.sidecarProofs} proofs, expected ${proofs}`);
  // versioned_hash = 0x01 || sha256(commitment)[1:]; binds the sidecar to what was signed.
  for (let i = 0; i < n; i++) {
    const digest = sha256(commitments[i]!);
    const want = hashes[i]!;
    for (let j = 1; j < 32; j++) {
      if (digest[j] !== want[j]) throw new DecodeError(`commitment ${i} does not match blob versioned hash ${i}`);
    }
  }
}

/** Zero bytes in the call data. */
function zeroBytesOf(tx: EvmTx): number {
  const raw = tx.raw;
  let zeros = 0;
  for (let i = tx.dataAt, end = tx.dataAt + tx.dataLen; i < end; i++) if (raw[i] === 0) zeros++;
  return zeros;
}

function intrinsicGasOf(tx: EvmTx, zeros: number): number {
  const len = tx.dataLen;
  const create = tx.toAt < 0;
  let gas = create ? TX_GAS_CONTRACT_CREATION : TX_GAS;
  gas += zeros * TX_DATA_ZERO_GAS + (len - zeros) * TX_DATA_NON_ZERO_GAS;
  if (create) gas += Math.ceil(len / 32) * INIT_CODE_WORD_GAS;
  gas += tx.accessListAddresses * ACCESS_LIST_ADDRESS_GAS + tx.accessListStorageKeys * ACCESS_LIST_STORAGE_KEY_GAS;
  gas += tx.authorizationCount * AUTHORIZATION_GAS;
  return gas;
}

function floorDataGasOf(len: number, zeros: number): number {
  return TX_GAS + (zeros + (len - zeros) * TOKENS_PER_NON_ZERO_BYTE) * FLOOR_GAS_PER_TOKEN;
}

/** go-ethereum core.IntrinsicGas at Prague/Osaka (Homestead, Istanbul and Shanghai rules on). */
export function intrinsicGas(tx: EvmTx): number {
  return intrinsicGasOf(tx, zeroBytesOf(tx));
}

/** EIP-7623 floor: 21000 + 10 * (zero bytes + 4 * non-zero bytes). */
export function floorDataGas(tx: EvmTx): number {
  return floorDataGasOf(tx.dataLen, zeroBytesOf(tx));
}
