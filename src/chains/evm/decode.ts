/**
 * Decoder for signed transactions as `eth_sendRawTransaction` takes them:
 *
 *   type 0  legacy            rlp([nonce, gasPrice, gas, to, value, data, v, r, s]), EIP-155 v
 *   type 1  EIP-2930          0x01 || rlp([chainId, nonce, gasPrice, gas, to, value, data, accessList, yParity, r, s])
 *   type 2  EIP-1559          0x02 || rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data,
 *                                          accessList, yParity, r, s])
 *   type 3  EIP-4844          0x03 || rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data,
 *                                          accessList, maxFeePerBlobGas, blobVersionedHashes, yParity, r, s])
 *           network form      0x03 || rlp([tx_payload_body, blobs, commitments, proofs])
 *           EIP-7594 form     0x03 || rlp([tx_payload_body, wrapper_version = 1, blobs, commitments, cell_proofs])
 *   type 4  EIP-7702          0x04 || rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, destination, value,
 *                                          data, accessList, authorizationList, yParity, r, s])
 *
 * Field widths follow go-ethereum's types, so what decodes here decodes there,
 * with two deliberate differences: integers over 256 bits are refused even in
 * legacy transactions (go-ethereum refuses them a step later,
 * ErrFeeCapVeryHigh), and an empty `to` in types 3 and 4 decodes to null so
 * validate.ts can name the rule. The result holds offsets into the input, not
 * copies, including the ranges that `txHash` and `signingHash` (hash.ts,
 * re-exported here) hash without re-encoding.
 */

import { DecodeError } from '../../errors.js';
import { bytesToBigInt, RlpReader } from './rlp.js';

export { signingHash, txHash } from './hash.js';

export const TX_LEGACY = 0;
const TX_ACCESS_LIST = 1; // EIP-2930
const TX_DYNAMIC_FEE = 2; // EIP-1559
export const TX_BLOB = 3; // EIP-4844
export const TX_SET_CODE = 4; // EIP-7702

/** EIP-4844: 4096 field elements of 32 bytes. */
const BYTES_PER_BLOB = 131072;
/** EIP-4844: a KZG commitment and a KZG proof are compressed BLS12-381 G1 points. */
const BYTES_PER_COMMITMENT = 48;
const BYTES_PER_PROOF = 48;
/** EIP-7594 network wrapper version that carries cell proofs. */
export const SIDECAR_VERSION_CELL_PROOFS = 1;

const ADDRESS_BYTES = 20;
const HASH_BYTES = 32;
/** uint64 fields (nonce, gas) in go-ethereum's types. */
const U64_BYTES = 8;
/** uint256 fields (chain id, fees, value, signature values). */
const U256_BYTES = 32;
/** EIP-7702 authorization y_parity is a uint8 in go-ethereum. */
const U8_BYTES = 1;

const EMPTY = new Uint8Array(0);
const NO_HASHES: readonly Uint8Array[] = Object.freeze([]);

/**
 * A decoded transaction. A class with every field initialised in the same
 * order keeps V8's hidden class monomorphic across all five types.
 */
export class EvmTx {
  type = 0;
  /** Typed: the chainId field. Legacy: derived from EIP-155 v, or null when unprotected. */
  chainId: bigint | null = null;
  nonce = 0n;
  gasLimit = 0n;
  /** Legacy and EIP-2930 gasPrice; for later types go-ethereum's GasPrice(), i.e. maxFeePerGas. */
  gasPrice = 0n;
  /** Fee cap; equals gasPrice for legacy and EIP-2930. */
  maxFeePerGas = 0n;
  /** Tip cap; equals gasPrice for legacy and EIP-2930. */
  maxPriorityFeePerGas = 0n;
  /** EIP-4844 only. */
  maxFeePerBlobGas: bigint | null = null;
  /** The input the offsets below point into. */
  raw: Uint8Array = EMPTY;
  /** Offset of the 20-byte recipient in `raw`, or -1 for contract creation. */
  toAt = -1;
  value = 0n;
  /** The call data: raw[dataAt, dataAt + dataLen). */
  dataAt = 0;
  dataLen = 0;
  accessListAddresses = 0;
  accessListStorageKeys = 0;
  blobVersionedHashes: readonly Uint8Array[] = NO_HASHES;
  /** -1: no sidecar (canonical form); 0: EIP-4844 network form; 1: EIP-7594 cell-proof form. */
  sidecarVersion = -1;
  sidecarBlobs = 0;
  sidecarCommitments: readonly Uint8Array[] = NO_HASHES;
  sidecarProofs = 0;
  authorizationCount = 0;
  /** The raw v value (legacy) or the yParity field (typed). */
  v = 0n;
  /** Recovery id 0 or 1; -1 when v / yParity is not a valid value. */
  yParity = -1;
  /** Minimal big-endian bytes of r and s as they appear in the input (canonical: no leading zero, at most 32): raw[rAt, rAt + rLen). */
  rAt = 0;
  rLen = 0;
  sAt = 0;
  sLen = 0;
  /** Length of the whole input, sidecar included. */
  size = 0;
  /** The canonical RLP list: the transaction hash is keccak(type byte, if typed || input[bodyStart, bodyEnd)). */
  bodyStart = 0;
  bodyEnd = 0;
  /** The signed fields (everything before v / yParity), re-wrapped for the signing hash. */
  unsignedStart = 0;
  unsignedEnd = 0;

  // Made on request: the checks read the offsets, so the hot path builds no view (~100 B each) or BigInt.

  /** 20-byte view, or null for contract creation. */
  get to(): Uint8Array | null {
    return this.toAt < 0 ? null : this.raw.subarray(this.toAt, this.toAt + 20);
  }

  get data(): Uint8Array {
    return this.raw.subarray(this.dataAt, this.dataAt + this.dataLen);
  }

  get rBytes(): Uint8Array {
    return this.raw.subarray(this.rAt, this.rAt + this.rLen);
  }

  get sBytes(): Uint8Array {
    return this.raw.subarray(this.sAt, this.sAt + this.sLen);
  }

  get r(): bigint {
    return this.rLen === 0 ? 0n : bytesToBigInt(this.raw, this.rAt, this.rLen);
  }

  get s(): bigint {
    return this.sLen === 0 ? 0n : bytesToBigInt(this.raw, this.sAt, this.sLen);
  }

  /** Back to a fresh instance's values, so one instance can be decoded into again. */
  reset(raw: Uint8Array): this {
    this.type = 0;
    this.chainId = null;
    this.nonce = 0n;
    this.gasLimit = 0n;
    this.gasPrice = 0n;
    this.maxFeePerGas = 0n;
    this.maxPriorityFeePerGas = 0n;
    this.maxFeePerBlobGas = null;
    this.raw = raw;
    this.toAt = -1;
    this.value = 0n;
    this.dataAt = 0;
    this.dataLen = 0;
    this.accessListAddresses = 0;
    this.accessListStorageKeys = 0;
    this.blobVersionedHashes = NO_HASHES;
    this.sidecarVersion = -1;
    this.sidecarBlobs = 0;
    this.sidecarCommitments = NO_HASHES;
    this.sidecarProofs = 0;
    this.authorizationCount = 0;
    this.v = 0n;
    this.yParity = -1;
    this.rAt = 0;
    this.rLen = 0;
    this.sAt = 0;
    this.sLen = 0;
    this.size = raw.length;
    this.bodyStart = 0;
    this.bodyEnd = 0;
    this.unsignedStart = 0;
    this.unsignedEnd = 0;
    return this;
  }
}

/** One reader per thread: decoding is synchronous, so it is never shared by two calls at once. */
const reader = new RlpReader();

/** Decodes one signed transaction; DecodeError names the field. `into` is reused (reset) to save an allocation. */
export function decodeEvmTransaction(raw: Uint8Array, into?: EvmTx): EvmTx {
  const n = raw.length;
  if (n === 0) throw new DecodeError('empty transaction');
  const first = raw[0]!;
  const tx = (into ?? new EvmTx()).reset(raw);
  if (first >= 0xc0) {
    decodeLegacy(raw, tx);
  } else if (first >= TX_ACCESS_LIST && first <= TX_SET_CODE) {
    decodeTyped(raw, tx, first);
  } else if (first >= 0x80) {
    throw new DecodeError('malformed transaction: expected a list or a transaction type byte');
  } else {
    throw new DecodeError(`unsupported transaction type 0x${first.toString(16).padStart(2, '0')}`);
  }
  return tx;
}

function decodeLegacy(raw: Uint8Array, tx: EvmTx): void {
  const r = reader.reset(raw, 0);
  const end = r.list(raw.length, 'transaction');
  if (end !== raw.length) throw new DecodeError('trailing bytes after transaction');
  tx.type = TX_LEGACY;
  tx.bodyStart = 0;
  tx.bodyEnd = end;
  tx.unsignedStart = r.pos;
  tx.nonce = r.uint(end, U64_BYTES, 'nonce');
  tx.gasPrice = r.uint(end, U256_BYTES, 'gasPrice');
  tx.maxFeePerGas = tx.gasPrice;
  tx.maxPriorityFeePerGas = tx.gasPrice;
  tx.gasLimit = r.uint(end, U64_BYTES, 'gas');
  tx.toAt = readTo(r, end);
  tx.value = r.uint(end, U256_BYTES, 'value');
  tx.dataLen = r.string(end, 'data');
  tx.dataAt = r.start;
  tx.unsignedEnd = r.pos;
  readSignature(r, end, tx, 'v');
  r.finish(end, 'transaction');

  // EIP-155: v = chainId * 2 + 35 + yParity; 27 / 28 are pre-EIP-155 (no chain id).
  const v = tx.v;
  if (v === 27n || v === 28n) {
    tx.yParity = Number(v - 27n);
  } else if (v >= 35n) {
    tx.chainId = (v - 35n) >> 1n;
    tx.yParity = Number((v - 35n) & 1n);
  } else {
    tx.yParity = -1;
  }
}

function decodeTyped(raw: Uint8Array, tx: EvmTx, type: number): void {
  const r = reader.reset(raw, 1);
  const outerEnd = r.list(raw.length, 'transaction');
  if (outerEnd !== raw.length) throw new DecodeError('trailing bytes after transaction');
  tx.type = type;
  let end = outerEnd;
  const network = type === TX_BLOB && r.nextIsList(outerEnd, 'transaction');
  if (network) {
    tx.bodyStart = r.pos;
    end = r.list(outerEnd, 'tx_payload_body');
    tx.bodyEnd = end;
  } else {
    tx.bodyStart = 1;
    tx.bodyEnd = outerEnd;
  }

  tx.unsignedStart = r.pos;
  tx.chainId = r.uint(end, U256_BYTES, 'chainId');
  tx.nonce = r.uint(end, U64_BYTES, 'nonce');
  if (type === TX_ACCESS_LIST) {
    tx.gasPrice = r.uint(end, U256_BYTES, 'gasPrice');
    tx.maxFeePerGas = tx.gasPrice;
    tx.maxPriorityFeePerGas = tx.gasPrice;
  } else {
    tx.maxPriorityFeePerGas = r.uint(end, U256_BYTES, 'maxPriorityFeePerGas');
    tx.maxFeePerGas = r.uint(end, U256_BYTES, 'maxFeePerGas');
    tx.gasPrice = tx.maxFeePerGas;
  }
  tx.gasLimit = r.uint(end, U64_BYTES, 'gas');
  tx.toAt = readTo(r, end);
  tx.value = r.uint(end, U256_BYTES, 'value');
  tx.dataLen = r.string(end, 'data');
  tx.dataAt = r.start;
  readAccessList(r, end, tx);
  if (type === TX_BLOB) {
    tx.maxFeePerBlobGas = r.uint(end, U256_BYTES, 'maxFeePerBlobGas');
    tx.blobVersionedHashes = readFixedList(r, end, raw, HASH_BYTES, 'blobVersionedHashes');
  } else if (type === TX_SET_CODE) {
    tx.authorizationCount = readAuthorizationList(r, end);
  }
  tx.unsignedEnd = r.pos;
  readSignature(r, end, tx, 'yParity');
  r.finish(end, 'transaction');
  tx.yParity = tx.v === 0n ? 0 : tx.v === 1n ? 1 : -1;

  if (network) readSidecar(r, outerEnd, raw, tx);
}

/** The recipient's offset, or -1 when empty (contract creation). */
function readTo(r: RlpReader, end: number): number {
  const len = r.string(end, 'to');
  if (len === 0) return -1;
  if (len !== ADDRESS_BYTES) throw new DecodeError('to: must be 20 bytes or empty');
  return r.start;
}

function readSignature(r: RlpReader, end: number, tx: EvmTx, vName: string): void {
  tx.v = r.uint(end, U256_BYTES, vName);
  r.skipUint(end, U256_BYTES, 'r');
  tx.rAt = r.start;
  tx.rLen = r.pos - r.start;
  r.skipUint(end, U256_BYTES, 's');
  tx.sAt = r.start;
  tx.sLen = r.pos - r.start;
}

/** EIP-2930 access list: [[address, [storageKey, ...]], ...]; only the counts matter here (intrinsic gas). */
function readAccessList(r: RlpReader, end: number, tx: EvmTx): void {
  const listEnd = r.list(end, 'accessList');
  let addresses = 0;
  let keys = 0;
  while (r.pos < listEnd) {
    const tupleEnd = r.list(listEnd, 'accessList entry');
    r.fixed(tupleEnd, ADDRESS_BYTES, 'accessList address');
    const keysEnd = r.list(tupleEnd, 'accessList storageKeys');
    while (r.pos < keysEnd) {
      r.fixed(keysEnd, HASH_BYTES, 'accessList storageKey');
      keys++;
    }
    r.finish(tupleEnd, 'accessList entry');
    addresses++;
  }
  tx.accessListAddresses = addresses;
  tx.accessListStorageKeys = keys;
}

/** EIP-7702 authorization list: [[chainId, address, nonce, yParity, r, s], ...]; returns its length. */
function readAuthorizationList(r: RlpReader, end: number): number {
  const listEnd = r.list(end, 'authorizationList');
  let count = 0;
  while (r.pos < listEnd) {
    const tupleEnd = r.list(listEnd, 'authorization');
    r.skipUint(tupleEnd, U256_BYTES, 'authorization chainId');
    r.fixed(tupleEnd, ADDRESS_BYTES, 'authorization address');
    r.skipUint(tupleEnd, U64_BYTES, 'authorization nonce');
    r.skipUint(tupleEnd, U8_BYTES, 'authorization yParity');
    r.skipUint(tupleEnd, U256_BYTES, 'authorization r');
    r.skipUint(tupleEnd, U256_BYTES, 'authorization s');
    r.finish(tupleEnd, 'authorization');
    count++;
  }
  return count;
}

/** A list of fixed-size strings, returned as views (blob versioned hashes, commitments). */
function readFixedList(r: RlpReader, end: number, raw: Uint8Array, size: number, what: string): Uint8Array[] {
  const listEnd = r.list(end, what);
  const out: Uint8Array[] = [];
  while (r.pos < listEnd) {
    const at = r.fixed(listEnd, size, what);
    out.push(raw.subarray(at, at + size));
  }
  return out;
}

/** Counts a list of fixed-size strings without keeping them (blobs, proofs). */
function countFixedList(r: RlpReader, end: number, size: number, what: string): number {
  const listEnd = r.list(end, what);
  let count = 0;
  while (r.pos < listEnd) {
    r.fixed(listEnd, size, what);
    count++;
  }
  return count;
}

/** The network wrapper: a list as second element means version 0 (blobs), a byte means EIP-7594 (as go-ethereum tells them apart). */
function readSidecar(r: RlpReader, end: number, raw: Uint8Array, tx: EvmTx): void {
  if (r.nextIsList(end, 'blob sidecar')) {
    tx.sidecarVersion = 0;
  } else {
    const version = r.uint(end, U8_BYTES, 'sidecar version');
    if (version !== BigInt(SIDECAR_VERSION_CELL_PROOFS)) {
      throw new DecodeError(`unsupported blob sidecar version ${version}`);
    }
    tx.sidecarVersion = SIDECAR_VERSION_CELL_PROOFS;
  }
  tx.sidecarBlobs = countFixedList(r, end, BYTES_PER_BLOB, 'blob');
  tx.sidecarCommitments = readFixedList(r, end, raw, BYTES_PER_COMMITMENT, 'commitment');
  tx.sidecarProofs = countFixedList(r, end, BYTES_PER_PROOF, 'proof');
  r.finish(end, 'blob transaction wrapper');
}
