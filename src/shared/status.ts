/**
 * The status object of docs/protocol.md#status, as it travels: the server's
 * status reads render it (src/status/view.ts narrows what this node fills
 * in), the client's read it. Kept broad where another node version may say
 * more (`chain`, `upstream_result`).
 */

/** What the chain said about a forwarded transaction. */
export type LandingState = 'landed' | 'landed_failed' | 'not_landed';

/** Why a transaction will not land, or why the node stopped waiting for it. */
export type NotLandedReason = 'blockhash_expired' | 'replaced' | 'timeout';

/** Solana confirmation levels. */
export type Commitment = 'processed' | 'confirmed' | 'finalized';

/**
 * `forwarded` means an upstream accepted it; `landed`, `landed_failed` and
 * `not_landed` are what the chain said, where the node follows its family
 * on chain (`landing`).
 */
export type StatusState = 'queued' | 'forwarded' | 'upstream_rejected' | 'failed' | 'dropped' | 'duplicate' | 'unknown' | 'expired' | LandingState;

/** What the chain's RPC said about a transaction. */
export interface ChainFacts {
  /** Solana: the slot it landed in, and the cluster's confirmation level when the node saw it. */
  slot?: number;
  confirmation?: Commitment;
  /** EVM: the block it was mined in, and blocks on top of and including it when the node saw it. */
  block?: number;
  block_hash?: string;
  confirmations?: number;
  /** The execution error as the chain's RPC gives it (Solana `err`; EVM `"reverted"`); null when it executed. */
  err?: unknown;
  reason?: NotLandedReason;
  /** EVM `replaced`: the transaction that took its nonce. */
  replaced_by?: string;
}

/** The chain's side of a status: where and how it landed, or why it will not. */
export interface OnChain extends ChainFacts {
  landed_at: string;
  ack_to_landed_ms: number | null;
  /** A bundle's members, in order. */
  transactions?: { id: string; state: LandingState; chain: ChainFacts }[];
}

/** `at` is an ISO 8601 time. */
export interface StatusEvent {
  stage: string;
  at: string;
}

/**
 * One request to one upstream (named by its origin), or one send to a
 * leader's TPU (named `tpu:<identity>`); `latency_ms` is null
 * until it answers, `http_status` when no answer came. `upstream_error.code`
 * is the upstream's JSON-RPC code, null for a transport failure.
 */
export interface Forward {
  upstream: string;
  attempt: number;
  sent_at: string;
  latency_ms: number | null;
  http_status: number | null;
  upstream_result?: unknown;
  upstream_error?: { code: number | null; message: string };
  /** A send to a leader's TPU (`upstream` `tpu:<identity>`): the slot it was sent for and the leader's QUIC address. */
  slot?: number;
  address?: string | null;
}

/**
 * `id` is the transaction's own id (hash, first signature or batch id) even
 * when it was looked up by request id. For `unknown` and `expired`, only `id`,
 * `state` and `node` are filled in.
 */
export interface StatusObject {
  id: string;
  request_id: string | null;
  chain: string | null;
  door: string | null;
  node: string | null;
  received_at: string | null;
  state: StatusState;
  reason: string | null;
  events: StatusEvent[];
  forwards: Forward[];
  /** An EVM batch's item ids, in request order. */
  items?: readonly string[];
  /**
   * Once forwarded: `not_tracked` (the node has no chain RPC for its family),
   * `following`, `behind` (following, but the chain RPC is slow or down), `done`.
   */
  landing?: 'not_tracked' | 'following' | 'behind' | 'done';
  onchain?: OnChain;
  /** Past `status.retention_s`, kept for `status.final_retention_s`: its end and what the chain said; `forwards` is empty. */
  compact?: true;
}
