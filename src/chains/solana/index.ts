/** Solana (family B) wire format, signature verification and tip rule: pure functions over bytes. */

export {
  PACKET_DATA_SIZE,
  MAX_V1_TX_SIZE,
  V1_VERSION_BYTE,
  MAX_SIGNATURES,
  IX_STRIDE,
  IX_PROGRAM,
  IX_ACCOUNTS_OFFSET,
  IX_ACCOUNTS_LENGTH,
  IX_DATA_OFFSET,
  IX_DATA_LENGTH,
  SolanaTxView,
  type SolanaTxVersion,
  maxSizeFor,
  decodeSolanaTransaction,
  firstSignature,
  firstSignatureBase58,
  signatureAt,
  accountKeyAt,
  messageBytes,
} from './decode.js';
export { TipAccounts, sumTips, sumBundleTips, bundleTips, type TipSum } from './tip.js';
export { ed25519Backend, verifySolanaTransaction, verifyWith, type Ed25519Backend } from './verify.js';
