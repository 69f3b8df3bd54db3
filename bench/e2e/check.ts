/**
 * The per-transaction check of the crypto ceiling, as the body of each door
 * carries the transaction: shared by the crypto loop (bench/e2e/crypto-loop.ts,
 * raw transactions / hex texts) and the checking bare server (bare-server.ts
 * with BARE_CHECK=1, request bodies). Solana: decode + ed25519 verification of
 * every signature (sodium-native). EVM: hex decode (as the doors do it) + strict decode + stateless
 * validation + tx hash + signing hash + public-key recovery (libsecp256k1;
 * the address is not derived from the key, as in the relay).
 * Returns whether the transaction passed.
 */
import { decodeSolanaTransaction, maxSizeFor } from '../../src/chains/solana/decode.js';
import { verifySolanaTransaction } from '../../src/chains/solana/verify.js';
import { decodeHexInto, hexTransactionLength, parseHexTransaction } from '../../src/chains/evm/hex.js';
import { decodeEvmTransaction } from '../../src/chains/evm/decode.js';
import { validateEvmTransaction } from '../../src/chains/evm/validate.js';
import { txHashAt, signingHashAt } from '../../src/chains/evm/hash.js';
import { recovers } from '../../src/chains/evm/recover.js';

// As the verifier (src/exec/check.ts): both hashes written into scratch, the sender's key recovered.
const hash32 = new Uint8Array(32);
const msg32 = new Uint8Array(32);

const EVM_OPTS = { chainId: 1n };

export function checkSolana(tx: Uint8Array): boolean {
  return verifySolanaTransaction(tx, decodeSolanaTransaction(tx, maxSizeFor(tx, false)));
}

// As the EVM doors: the hex digits decoded natively into one buffer, the table only when that refuses.
const hexScratch = Buffer.alloc(128 * 1024);

function hexBytes(text: string): Uint8Array {
  const len = hexTransactionLength(text);
  if (len <= hexScratch.length && decodeHexInto(text, hexScratch, 0, len)) return hexScratch.subarray(0, len);
  return parseHexTransaction(text);
}

export function checkEvmHex(text: string): boolean {
  const raw = hexBytes(text);
  const tx = decodeEvmTransaction(raw);
  validateEvmTransaction(tx, EVM_OPTS);
  txHashAt(raw, tx, hash32, 0);
  signingHashAt(raw, tx, msg32, 0);
  return recovers(tx, msg32);
}

/** The check on a door's request body (single-transaction doors). */
export function checkTx(door: 'solana-v2' | 'solana-rpc' | 'evm-text' | 'evm-rpc', body: Buffer): boolean {
  if (door === 'solana-v2') return checkSolana(body);
  if (door === 'evm-text') return checkEvmHex(body.toString('latin1').trim());
  const params = (JSON.parse(body.toString('utf8')) as { params: string[] }).params;
  return door === 'solana-rpc' ? checkSolana(Buffer.from(params[0]!, 'base64')) : checkEvmHex(params[0]!);
}
