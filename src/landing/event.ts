/**
 * What the chain said about a forwarded transaction: the landing half of a
 * status (docs/protocol.md#status). Both families' watchers emit these; the
 * status tracker turns them into transitions.
 */

export type LandingState = 'landed' | 'landed_failed' | 'not_landed';

/** Why a transaction will not land, or why the relay stopped waiting for it. */
export type NotLandedReason = 'blockhash_expired' | 'replaced' | 'timeout';

export type SolanaCommitment = 'processed' | 'confirmed' | 'finalized';

export interface ChainFacts {
  /** Solana: the slot it landed in. */
  slot?: number;
  /** EVM: the block number and hash it was mined in. */
  block?: number;
  block_hash?: string;
  /** Solana: the cluster's confirmation level when the relay saw it. */
  confirmation?: SolanaCommitment;
  /** EVM: blocks on top of and including its own when the relay saw it. */
  confirmations?: number;
  /** The execution error as the chain's RPC gives it (Solana `err`; EVM: `"reverted"`); null when it executed. */
  err?: unknown;
  reason?: NotLandedReason;
  /** EVM `replaced`: the transaction that took its nonce. */
  replaced_by?: string;
}

export interface LandingEvent {
  /** The transaction id: a base58 signature or a 0x hash, as tracked. */
  readonly id: string;
  readonly state: LandingState;
  readonly chain: ChainFacts;
  /** True when the watcher stops following it (final state, or the configured commitment reached). */
  readonly final: boolean;
  /** When the relay saw it (the watcher's clock). */
  readonly at: number;
}

export type LandingListener = (e: LandingEvent) => void;
