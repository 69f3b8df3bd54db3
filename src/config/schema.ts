/**
 * The configuration schema (DECISIONS 2). One JSON Schema is the single source
 * of keys, types, ranges and defaults: the loader validates with it, env
 * overrides are derived from it, and the README table mirrors it.
 */

const port = { type: 'integer', minimum: 0, maximum: 65535 } as const;
const host = { type: 'string', minLength: 1 } as const;
const url = { type: 'string', pattern: '^https?://' } as const;
const urls = { type: 'array', items: url, default: [] as string[] } as const;
// TPS up to 1M and burst up to 2M keep milli-token fixed point inside an i32.
const tps = { type: 'integer', minimum: 0, maximum: 1_000_000 } as const;
const lamports = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

function section(properties: Record<string, object>): object {
  const defaults: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(properties)) {
    if ('default' in v) defaults[k] = (v as { default: unknown }).default;
    else if ((v as { type?: string }).type === 'object') defaults[k] = {};
  }
  return { type: 'object', additionalProperties: false, properties, default: defaults };
}

const plan = (evmTps: number) =>
  section({
    evm_tps: { ...tps, default: evmTps },
    solana_tps: { ...tps, default: 2 }, // SPEC 1.5: registration enables family B at 2 TPS
    min_tip_lamports: { ...lamports, default: 1000 },
  });

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    http: section({
      host: { ...host, default: '127.0.0.1' },
      port: { ...port, default: 8080 },
      // 128 KiB: geth's txMaxSize for one non-blob transaction, hex-encoded it needs ~2x; raise it for blob txs.
      max_body_bytes: { type: 'integer', minimum: 1024, maximum: 64 * 1024 * 1024, default: 131072 },
      trust_proxy: { type: 'boolean', default: false },
      // auto: the first uWebSockets.js build that loads, else node:http; uws: fail start-up without one; node: node:http.
      acceptor: { enum: ['auto', 'uws', 'node'], default: 'auto' },
      // 0: the open-files limit minus 1024 descriptors for everything else (src/ingress/conn-caps.ts).
      max_connections: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 0 },
      // 4x the 1024 connections one load generator opens in the benchmarks; 0: no per-IP cap.
      max_connections_per_ip: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 4096 },
      // Later answers of a busy event-loop turn written together at its end (README, "Answer coalescing").
      coalesce_answers: { type: 'boolean', default: true },
      // A request's acknowledgement leaves before the forwarding it admitted (README, "Acknowledge first").
      ack_first: { type: 'boolean', default: true },
    }),
    udp: section({
      enabled: { type: 'boolean', default: true },
      host: { ...host, default: '127.0.0.1' },
      port: { ...port, default: 16888 }, // SPEC 4.8
      // Sockets sharing the port (SO_REUSEPORT, Node >= 22.12); 0: one per core, at most 8. One where the runtime cannot.
      sockets: { type: 'integer', minimum: 0, maximum: 64, default: 0 },
      // UDP's own per-source buckets: a source address is trivially spoofed, so UDP must not share HTTP's.
      ip_rps: { ...tps, default: 1000 },
      ip_burst: { type: 'integer', minimum: 1, maximum: 2_000_000, default: 2000 },
    }),
    admin: section({
      host: { ...host, default: '127.0.0.1' },
      port: { ...port, default: 8081 },
      token: { type: 'string', default: '' }, // empty: generated once into data_dir/admin.token
    }),
    storage: section({
      data_dir: { type: 'string', minLength: 1, default: './data' },
    }),
    database: section({
      url: { type: 'string', default: '' },
    }),
    limits: section({
      ip_rps: { ...tps, default: 1000 },
      ip_burst: { type: 'integer', minimum: 1, maximum: 2_000_000, default: 2000 },
      queue_capacity: { type: 'integer', minimum: 1, maximum: 10_000_000, default: 10000 },
      // RFC 8289's CoDel target: the verification queueing delay the relay tolerates as a standing queue.
      queue_target_ms: { type: 'number', minimum: 0.5, maximum: 1000, default: 5 },
      // Hard bound for open-loop overload: an arrival that would wait longer for its check is shed at once.
      queue_max_ms: { type: 'number', minimum: 1, maximum: 10000, default: 100 },
      // The longest a door shed (503 for capacity) is held before it is written (about the queue's wait); 0 writes it at once.
      shed_hold_ms: { type: 'number', minimum: 0, maximum: 10000, default: 100 },
    }),
    dedup: section({
      window_s: { type: 'integer', minimum: 1, maximum: 86400, default: 120 },
    }),
    evm: section({
      enabled: { type: 'boolean', default: true },
      chain_id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 },
      upstreams: section({ paid: urls, free: urls }),
      max_batch: { type: 'integer', minimum: 1, maximum: 10000, default: 64 },
    }),
    solana: section({
      enabled: { type: 'boolean', default: true },
      rpc_upstreams: urls,
      bundle_upstreams: urls,
      tip_accounts: { type: 'array', items: { type: 'string', pattern: '^[1-9A-HJ-NP-Za-km-z]{32,44}$' }, default: [] },
    }),
    plans: section({ free: plan(5), paid: plan(50) }),
    workers: section({
      // 0: one verification thread per core beyond the main thread; none on one core (verified inline).
      threads: { type: 'integer', minimum: 0, maximum: 256, default: 0 },
      // auto: check inline on the acceptor while it has headroom; never: always on the workers (when there are any).
      inline: { enum: ['auto', 'never'], default: 'auto' },
    }),
    log: section({
      level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    }),
  },
} as const;

export interface PlanConfig {
  evm_tps: number;
  solana_tps: number;
  min_tip_lamports: number;
}

export interface Config {
  http: {
    host: string;
    port: number;
    max_body_bytes: number;
    trust_proxy: boolean;
    acceptor: 'auto' | 'uws' | 'node';
    max_connections: number;
    max_connections_per_ip: number;
    coalesce_answers: boolean;
    ack_first: boolean;
  };
  udp: { enabled: boolean; host: string; port: number; sockets: number; ip_rps: number; ip_burst: number };
  admin: { host: string; port: number; token: string };
  storage: { data_dir: string };
  database: { url: string };
  limits: { ip_rps: number; ip_burst: number; queue_capacity: number; queue_target_ms: number; queue_max_ms: number; shed_hold_ms: number };
  dedup: { window_s: number };
  evm: { enabled: boolean; chain_id: number; upstreams: { paid: string[]; free: string[] }; max_batch: number };
  solana: { enabled: boolean; rpc_upstreams: string[]; bundle_upstreams: string[]; tip_accounts: string[] };
  plans: { free: PlanConfig; paid: PlanConfig };
  workers: { threads: number; inline: 'auto' | 'never' };
  log: { level: string };
}
