/**
 * The verification of one micro-batch: pure, over bytes that live in the
 * shared slab. Run by the piscina workers, or on the main thread when the
 * process has a single core (see pool.ts).
 */
import { decodeSolanaTransaction, MAX_V1_TX_SIZE } from '../chains/solana/decode.js';
import { verifySolanaTransaction } from '../chains/solana/verify.js';
import { verifyEvmSignature } from '../chains/evm/verify.js';
import { JOB_WORDS, JobKind, JobResult, type VerifyReply } from './protocol.js';

function verifyOne(bytes: Uint8Array, kind: number, offset: number, length: number): JobResult {
  const tx = bytes.subarray(offset, offset + length);
  try {
    if (kind === JobKind.Solana) {
      // Size was enforced by the door; here only the structure is needed again to find keys and message.
      const view = decodeSolanaTransaction(tx, MAX_V1_TX_SIZE);
      return verifySolanaTransaction(tx, view) ? JobResult.Ok : JobResult.BadSignature;
    }
    if (kind === JobKind.Evm) return verifyEvmSignature(tx) ? JobResult.Ok : JobResult.BadSignature;
  } catch {
    return JobResult.Malformed;
  }
  return JobResult.Malformed;
}

/** One result byte per [kind, offset, length] job, and the time it took. */
export function verifyJobs(bytes: Uint8Array, jobs: Int32Array): VerifyReply {
  const t0 = performance.now();
  const n = jobs.length / JOB_WORDS;
  const results = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const j = i * JOB_WORDS;
    results[i] = verifyOne(bytes, jobs[j]!, jobs[j + 1]!, jobs[j + 2]!);
  }
  // Wall time of a busy thread: Node 20 has no per-thread CPU clock.
  return { results, micros: (performance.now() - t0) * 1000 };
}
