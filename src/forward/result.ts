/** What one upstream request came to: the HTTP client's answer to the lane, classified once. */

export const PostStatus = {
  /** A JSON-RPC answer arrived; per-item verdicts are in `accepted`. */
  OK: 0,
  /** 5xx, 408 or 429: the upstream is failing or asks to come back later. */
  HTTP_ERROR: 1,
  /** 2xx with a body that is not a JSON-RPC answer, or an answer that breaks HTTP framing or size limits. */
  BAD_RESPONSE: 2,
  /** No full answer within the time-out (connect included). */
  TIMEOUT: 3,
  /** Refused, reset, closed by the other side, TLS failure. */
  CONN_ERROR: 4,
  /** Cut off by our own shutdown; not the upstream's fault. */
  ABORTED: 5,
  /** Any other 4xx: the upstream is up and will not take this request as it is (bad key, too large, bad request). */
  REFUSED: 6,
} as const;
export type PostStatus = (typeof PostStatus)[keyof typeof PostStatus];

/** A request's result. The object is reused per connection: read it inside the callback, do not keep it. */
export interface PostResult {
  outcome: PostStatus;
  /** Per item, 1 when answered with a result; null when the request failed as a whole. */
  accepted: Uint8Array | null;
  okCount: number;
  /** For logs only; long hex/base64 runs are cut to a prefix. */
  reason: string;
  /** A batch array answered by a single error object: this upstream does not take JSON-RPC batches. */
  batchRefused: boolean;
  /** The answer's HTTP status; 0 when there was none (a transport failure). */
  httpStatus: number;
}

export type PostDone = (r: PostResult) => void;

/** A request that failed as a whole: no per-item verdicts. */
export function failed(r: PostResult, outcome: PostStatus, reason: string, httpStatus = 0): PostResult {
  r.outcome = outcome;
  r.httpStatus = httpStatus;
  r.accepted = null;
  r.okCount = 0;
  r.reason = reason;
  r.batchRefused = false;
  return r;
}
