/**
 * The contract between the main thread and the verification workers.
 * A task is a micro-batch: one Int32Array of [kind, offset, length] triples
 * pointing into the shared slab, answered by one result byte per job.
 */
export const JOB_WORDS = 3;

export const enum JobKind {
  /** Solana: every ed25519 signature of one serialized transaction. */
  Solana = 1,
  /** EVM: recover the secp256k1 sender of one raw transaction. */
  Evm = 2,
}

export const enum JobResult {
  Ok = 0,
  BadSignature = 1,
  Malformed = 2,
}

export interface VerifyTask {
  jobs: Int32Array;
}

export interface VerifyReply {
  results: Uint8Array;
  /** Worker CPU time spent on the batch, for the queue-time estimate. */
  micros: number;
}

export interface WorkerInit {
  slab: unknown;
}
