/** The forwarding layer (DECISIONS 8): lanes, upstream clients, circuit breakers. */
export { ResponseParser, Parse, HttpError, MAX_HEAD_BYTES } from './http1.js';
export { readAnswer, MAX_DEPTH, type AnswerScan } from './answer.js';
export { Forwarder, DRAIN_TIMEOUT_MS, type ForwarderOptions, type ForwarderStats, type DrainResult } from './forwarder.js';
export {
  Lane,
  LANE_NAMES,
  QUEUE_CAPACITY,
  MAX_BATCH,
  MAX_UPSTREAMS,
  LOG_INTERVAL_MS,
  MAX_AGE_MS,
  RETRY_BACKOFF_MS,
  RETRY_BACKOFF_MAX_MS,
  DROP_REASONS,
  type DropReason,
  type LaneName,
  type LaneItem,
  type LaneOptions,
  type LaneStats,
  type LaneUpstreamStats,
} from './lane.js';
export {
  UpstreamClient,
  ForwardConfigError,
  Outcome,
  evmCall,
  solanaCall,
  bundleCall,
  upstreamLabel,
  parseUpstreamUrl,
  UPSTREAM_CONNECTIONS,
  UPSTREAM_TIMEOUT_MS,
  KEEP_ALIVE_MS,
  KEEP_ALIVE_MARGIN_MS,
  MAX_RESPONSE_BYTES,
  type LogLevel,
  type LogSink,
  type PostResult,
  type PostDone,
  type UpstreamStats,
  type UpstreamOptions,
} from './upstream.js';
export {
  Breaker,
  Permit,
  BREAKER_THRESHOLD,
  BREAKER_COOLDOWN_MS,
  BREAKER_MAX_COOLDOWN_MS,
  type BreakerOptions,
  type BreakerState,
} from './breaker.js';
