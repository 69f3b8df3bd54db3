/**
 * Solana transactions signed as real traffic carries them: under a few
 * recent blockhashes, not a random one each. The relay asks isBlockhashValid
 * once per distinct blockhash it follows (docs/protocol.md#status), so the
 * bench's usual random blockhash per transaction would cost a call per
 * transaction, which no real traffic does.
 */
import { solanaTransfers } from '../../src/bench/txgen.js';

/** As many as the chain holds valid at once (one a slot for ~60 s): the most distinct ones traffic can carry. */
export const BLOCKHASHES = 150;

/** `n` transfers, in turn under BLOCKHASHES stand-in blockhashes (32 bytes of h + 1 each). */
export function solanaPool(n: number): Buffer[] {
  const out: Buffer[] = [];
  for (let h = 0; h < BLOCKHASHES; h++) {
    const k = Math.floor((n * (h + 1)) / BLOCKHASHES) - Math.floor((n * h) / BLOCKHASHES);
    if (k > 0) out.push(...solanaTransfers(k, { blockhash: Buffer.alloc(32, h + 1) }));
  }
  return out;
}
