/**
 * What the chain said about a forwarded transaction: the landing half of a
 * status (docs/protocol.md#status). Both families' watchers emit these; the
 * status tracker turns them into transitions.
 */

import type { ChainFacts, Commitment, LandingState } from '../shared/status.js';

export type { ChainFacts, LandingState, NotLandedReason } from '../shared/status.js';
export type SolanaCommitment = Commitment;

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
