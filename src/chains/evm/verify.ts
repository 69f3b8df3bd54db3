/**
 * The worker-side EVM signature check: decode again in place (the main
 * thread already validated the fields), build the signing hash, recover the
 * sender with libsecp256k1 (noble fallback). A transaction whose signature
 * recovers no key is rejected; the recovered address itself is not needed.
 */
import { decodeEvmTransaction } from './decode.js';
import { signingHash } from './hash.js';
import { recovers } from './recover.js';

export function verifyEvmSignature(raw: Uint8Array): boolean {
  try {
    const tx = decodeEvmTransaction(raw);
    return recovers(tx, signingHash(raw, tx));
  } catch {
    return false;
  }
}
