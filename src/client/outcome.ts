/** Outcome types shared by the txrelay clients (docs/protocol.md#statuses). */
import type { Retry } from '../shared/codes.js';

/** The retry advice of the relay's error table. */
export type RetryInstruction = Retry;

/** Family A outcome of one transaction. Only `not-sent` + `retry_safe` may be resent. */
export type TxOutcome =
  | { kind: 'queued'; hash: string }
  | { kind: 'duplicate'; hash: string }
  | { kind: 'not-sent'; hash?: string; retry: RetryInstruction; code: number; message: string; retryAfterMs?: number }
  | { kind: 'uncertain'; hash?: string; reason: string }
  | { kind: 'rejected'; code: number; message: string; status: number };

export interface BatchOutcome {
  /** Id of the first batch receive record (the one holding every item). */
  batchId?: string;
  /** Ids of every batch sent, the first included (retries are new batches). */
  batchIds: string[];
  items: TxOutcome[];
}

export interface RetryBudget {
  maxRetries: number;
  /** Total time spent waiting between attempts, at most. */
  maxWaitMs: number;
}

/** Family B outcomes. */
export type SolanaOutcome =
  | { kind: 'accepted'; signature: string; duplicate: boolean }
  | { kind: 'rejected'; status: number; message: string }
  /** No connection to the relay could be made: nothing was sent, resending is safe. */
  | { kind: 'not-sent'; signature?: string; reason: string; retry: 'retry_safe' }
  | { kind: 'uncertain'; signature?: string; reason: string };

export type BundleOutcome =
  | { kind: 'accepted'; signatures: string[]; duplicate: boolean }
  | { kind: 'rejected'; status: number; message: string }
  | { kind: 'not-sent'; signatures?: string[]; reason: string; retry: 'retry_safe' }
  | { kind: 'uncertain'; signatures?: string[]; reason: string };

export const DEFAULT_RETRY_WAIT_MS = 250;

export function isRetrySafe(o: TxOutcome): o is Extract<TxOutcome, { kind: 'not-sent' }> {
  return o.kind === 'not-sent' && o.retry === 'retry_safe';
}
