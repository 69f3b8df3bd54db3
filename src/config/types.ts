/**
 * The configuration as the loader returns it: validated against
 * src/config/schema.ts with every default filled in. Keep it in step with the
 * schema (a key added there is added here).
 */

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
    max_buffered_body_bytes: number;
    trust_proxy: boolean;
    proxy_hops: number;
    tls_cert_file: string;
    tls_key_file: string;
    acceptor: 'auto' | 'uws' | 'node';
    max_connections: number;
    max_connections_per_ip: number;
    coalesce_answers: boolean;
    ack_first: boolean;
    acceptors: number;
  };
  udp: { enabled: boolean; host: string; port: number; sockets: number; ip_rps: number; ip_burst: number };
  admin: { host: string; port: number; token: string; tls_cert_file: string; tls_key_file: string };
  storage: { data_dir: string };
  database: { url: string };
  registry: { mode: 'embedded' | 'postgres'; poll_interval_ms: number; timeout_ms: number; change_retention_s: number };
  node: { name: string };
  status: { enabled: boolean; retention_s: number; final_retention_s: number; max_tracked: number; reads_per_s: number; reads_burst: number };
  ws: { enabled: boolean; idle_timeout_s: number; max_buffered_bytes: number; max_subscriptions: number; max_account_subscriptions: number };
  limits: { ip_rps: number; ip_burst: number; queue_capacity: number; queue_target_ms: number; queue_max_ms: number; shed_hold_ms: number };
  dedup: { window_s: number; capacity: number };
  evm: { enabled: boolean; chain_id: number; upstreams: { paid: string[]; free: string[] }; max_batch: number; chain_rpc: string; landing_timeout_s: number };
  solana: {
    enabled: boolean;
    rpc_upstreams: string[];
    bundle_upstreams: string[];
    tip_accounts: string[];
    spill_max_age_s: number;
    chain_rpc: string;
    tpu: { enabled: boolean; identity_keypair_file: string; leaders_ahead: number; mode: 'also' | 'only'; slot_ws: string };
    landing_poll_ms: number;
    landing_commitment: 'processed' | 'confirmed' | 'finalized';
  };
  plans: { free: PlanConfig; paid: PlanConfig };
  workers: { threads: number; inline: 'auto' | 'never' };
  log: { level: string; format: 'auto' | 'json' | 'pretty' };
  metrics: { listen: string };
}
