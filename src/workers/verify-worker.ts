/**
 * Piscina task: verifies a micro-batch of transactions that live in the
 * shared slab, read in place (no copy crosses the thread boundary).
 */
import { workerData } from 'piscina';
import { Slab } from '../shared/slab.js';
import { initKeccak } from '../chains/evm/hash.js';
import { verifyJobs } from './verify.js';
import type { VerifyReply, VerifyTask } from './protocol.js';

// Signing hashes use keccak; compile its WebAssembly once per worker.
await initKeccak();

const bytes = Slab.attach((workerData as { slab: any }).slab).bytes;

export default function verifyBatch(task: VerifyTask): VerifyReply {
  return verifyJobs(bytes, task.jobs);
}
