/** The forwarding layer (DECISIONS 8): lanes, upstream clients, circuit breakers. */
export { Forwarder, DRAIN_TIMEOUT_MS, type ForwarderOptions, type ForwarderStats, type DrainResult } from './forwarder.js';
export {
  Lane,
  LANE_NAMES,
  QUEUE_CAPACITY,
  MAX_BATCH,
  MAX_UPSTREAMS,
  LOG_INTERVAL_MS,
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
  MAX_RESPONSE_BYTES,
  type LogLevel,
  type LogSink,
  type PostResult,
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
