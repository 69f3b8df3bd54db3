/**
 * Family A (EVM) transaction handling: hex text, strict RLP, the five
 * transaction types, stateless validation, hashing and sender recovery.
 * Pure functions; the pipeline calls them in the order
 * parseHexTransaction -> decodeEvmTransaction -> validateEvmTransaction ->
 * txHash / signingHash -> recovers (the verifier needs only the key;
 * recoverSender also derives the address).
 */

export { parseHexTransaction, toHex } from './hex.js';
export {
  decodeEvmTransaction,
  EvmTx,
  signingHash,
  txHash,
  TX_ACCESS_LIST,
  TX_BLOB,
  TX_DYNAMIC_FEE,
  TX_LEGACY,
  TX_SET_CODE,
} from './decode.js';
export {
  BLOB_TX_MAX_SIZE,
  CELL_PROOFS_PER_BLOB,
  floorDataGas,
  intrinsicGas,
  MAX_BLOBS_PER_TX,
  MAX_INIT_CODE_SIZE,
  MAX_TX_GAS,
  TX_MAX_SIZE,
  validateEvmTransaction,
  VERSIONED_HASH_VERSION_KZG,
  type EvmValidationOptions,
} from './validate.js';
export { initKeccak, keccak256, keccakBackend, txHashOfRaw } from './hash.js';
export { rlpHeadersRead } from './rlp.js';
export { nativeSecpAvailable, recoverSender, recovers, secpBackend, useSecpBackend } from './recover.js';
