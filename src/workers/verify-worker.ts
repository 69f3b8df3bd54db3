/**
 * Piscina task: verifies a micro-batch of transactions that live in the
 * shared slab, read in place (no copy crosses the thread boundary).
 */
import { workerData } from 'piscina';
import { Slab } from '../shared/slab.js';
import { decodeSolanaTransaction, MAX_V1_TX_SIZE } from '../chains/solana/decode.js';
import { verifySolanaTransaction } from '../chains/solana/verify.js';
import { verifyEvmSignature } from '../chains/evm/verify.js';
import { initKeccak } from '../chains/evm/hash.js';
import { JOB_WORDS, JobKind, JobResult, type VerifyReply, type VerifyTask } from './protocol.js';

// Signing hashes use keccak; compile its WebAssembly once per worker.
await initKeccak();

const slab = Slab.attach((workerData as { slab: any }).slab);
const bytes = slab.bytes;

function verifyOne(kind: number, offset: number, length: number): JobResult {
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

export default function verifyBatch(task: VerifyTask): VerifyReply {
  // Wall time of a busy worker: Node 20 has no per-thread CPU clock.
  const t0 = performance.now();
  const jobs = task.jobs;
  const n = jobs.length / JOB_WORDS;
  const results = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const j = i * JOB_WORDS;
    results[i] = verifyOne(jobs[j]!, jobs[j + 1]!, jobs[j + 2]!);
  }
  return { results, micros: (performance.now() - t0) * 1000 };
}
