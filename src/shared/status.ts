/**
 * The status object of docs/protocol.md#status, as it travels: the server's
 * status reads render it (src/status/view.ts narrows what this node fills
 * in), the client's read it. Kept broad where another node version may say
 * more (`chain`, `upstream_result`).
 */

/** `forwarded` means an upstream accepted it, never that it landed on chain. */
export type StatusState = 'queued' | 'forwarded' | 'upstream_rejected' | 'failed' | 'dropped' | 'duplicate' | 'unknown' | 'expired';

/** `at` is an ISO 8601 time. */
export interface StatusEvent {
  stage: string;
  at: string;
}

/**
 * One request to one upstream (named by its origin); `latency_ms` is null
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
}
