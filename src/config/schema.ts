/**
 * The configuration schema (docs/configuration.md is generated from it). One JSON Schema is the single source
 * of keys, types, ranges, defaults and descriptions: the loader validates with
 * it, env overrides are derived from it, and docs/configuration.md is
 * generated from it (`npm run docs:config`). The field shapes it reuses are
 * schema-fields.ts; the typed result of loading it is types.ts.
 */
import { BASE58_PATTERN, LISTEN_PATTERN, NODE_NAME_PATTERN, chainRpc, host, plan, port, section, tps, urls } from './schema-fields.js';

// Other modules take the config's type from here, beside the schema it describes.
import { tpuSection } from './schema-tpu.js';
export type { Config, PlanConfig } from './types.js';

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    http: section(
      {
        host: { ...host, default: '127.0.0.1', description: 'Address the HTTP listener binds (every door of both families).' },
        port: { ...port, default: 8080, description: 'Port of the HTTP listener; 0 picks a free port.' },
        max_body_bytes: {
          type: 'integer',
          minimum: 1024,
          maximum: 64 * 1024 * 1024,
          default: 131072,
          description:
            'Largest body of a JSON-RPC request (`POST /`) or a plain-text EVM request; a larger one is answered 413 before the rest is read. The default is geth\'s size limit for one non-blob transaction; hex doubles a transaction\'s size, so raise it for the largest transactions and for blob transactions.',
        },
        max_buffered_body_bytes: {
          type: 'integer',
          minimum: 1_048_576,
          maximum: 17_179_869_184,
          default: 134_217_728,
          description:
            'Request body bytes all requests being read may hold at once, per HTTP thread; a body that would pass it is refused 503 (retry-safe), so clients that send slowly or stop mid-body cannot hold more memory than this. Buffers grow with the bytes that arrive, never to the declared length up front.',
        },
        trust_proxy: {
          type: 'boolean',
          default: false,
          description:
            'Take the client address from `X-Forwarded-For`: the entry the outermost of `http.proxy_hops` trusted proxies appended (entries a client wrote itself never count). Turn it on only behind proxies that append to that header.',
        },
        proxy_hops: {
          type: 'integer',
          minimum: 1,
          maximum: 16,
          default: 1,
          description: 'With `http.trust_proxy`: how many proxies in front of the relay append to `X-Forwarded-For` (1: the relay\'s own proxy appended the client\'s address, the last entry).',
        },
        tls_cert_file: {
          type: 'string',
          default: '',
          description:
            'PEM certificate chain (the server certificate first) for HTTPS and `wss://` on this listener, TLS 1.2 and 1.3, ALPN `http/1.1`. Set with `http.tls_key_file`; empty: plain HTTP. Read again on `SIGHUP`: new connections get the new certificate, live ones keep theirs (docs/operations.md#tls).',
        },
        tls_key_file: {
          type: 'string',
          default: '',
          description: 'PEM private key of `http.tls_cert_file` (unencrypted). Start-up stops when either file is missing or unreadable, or the key is not the certificate\'s.',
        },
        acceptor: {
          enum: ['auto', 'uws', 'node'],
          default: 'auto',
          description: '`auto`: the first uWebSockets.js build that loads, else node:http. `uws`: stop start-up when no uWebSockets.js build loads. `node`: node:http.',
        },
        // The 1024 in the description is FD_RESERVE (src/ingress/conn-caps.ts).
        max_connections: {
          type: 'integer',
          minimum: 0,
          maximum: 10_000_000,
          default: 0,
          description:
            'Most HTTP connections open at once; a connection over it is closed as soon as it is accepted (the node:http acceptor first closes its longest-idle connection to make room). 0: the open-files limit minus 1024 descriptors kept for everything else.',
        },
        max_connections_per_ip: {
          type: 'integer',
          minimum: 0,
          maximum: 10_000_000,
          default: 4096,
          description:
            'Most HTTP connections from one client address; a connection over it is closed as soon as it is accepted. 0: no per-address cap. The default is 4x the 1024 connections one load generator opens in the benchmarks.',
        },
        coalesce_answers: {
          type: 'boolean',
          default: true,
          description:
            'Write the second and later answers of a busy event-loop turn together at the end of the turn, so a client is woken once per turn. `false`: write every answer when it is made.',
        },
        ack_first: {
          type: 'boolean',
          default: true,
          description:
            'Write a WebSocket message\'s answer before the forwarding of its transaction starts. `false`: write to the upstream first. An HTTP answer always goes first: its transaction is queued only once its socket\'s callback returned.',
        },
        acceptors: {
          type: 'integer',
          minimum: 0,
          maximum: 256,
          default: 1,
          description:
            'Threads that serve HTTP, each checking, forwarding and answering its own connections over the node\'s shared tables; the main thread then takes connections and hands them out in turn. 1: the main thread serves HTTP itself, with `workers.threads` verification threads. 0: one per core. More than one needs a uWebSockets.js build that can hand connections to other threads; otherwise start-up says so and uses 1.',
        },
      },
      'The one HTTP listener: every door of both families.',
    ),
    udp: section(
      {
        enabled: { type: 'boolean', default: true, description: 'Listen for Solana UDP datagrams (only when `solana.enabled` is true too).' },
        host: { ...host, default: '127.0.0.1', description: 'Address the UDP sockets bind.' },
        port: { ...port, default: 16888, description: 'Port of the UDP ingress; 0 picks a free port.' },
        sockets: {
          type: 'integer',
          minimum: 0,
          maximum: 64,
          default: 0,
          description:
            'Sockets sharing the UDP port (SO_REUSEPORT), each with its own receive queue. 0: one per core, at most 8. Sharing a UDP port needs Node >= 22.12; on older Node it is one socket.',
        },
        ip_rps: {
          ...tps,
          default: 1000,
          description:
            'Datagrams per second each source address may send. UDP has its own per-source buckets: a source address is easily forged, so a datagram never spends an HTTP client\'s bucket.',
        },
        ip_burst: { type: 'integer', minimum: 1, maximum: 2_000_000, default: 2000, description: 'Burst of the per-source UDP bucket.' },
      },
      'Solana UDP ingress: one datagram is one transaction, and nothing is ever answered.',
    ),
    admin: section(
      {
        host: { ...host, default: '127.0.0.1', description: 'Address the admin listener binds.' },
        port: { ...port, default: 8081, description: 'Port of the admin listener; 0 picks a free port.' },
        token: {
          type: 'string',
          default: '',
          description:
            'Bearer token of the admin API. Empty: one is generated on the first start, written to `<data_dir>/admin.token` (mode 0600) and reused after.',
        }, // empty: generated once into data_dir/admin.token
        tls_cert_file: {
          type: 'string',
          default: '',
          description: 'PEM certificate chain for HTTPS on the admin listener (it carries the admin token); empty: plain HTTP. Reloaded on `SIGHUP` like `http.tls_cert_file`.',
        },
        tls_key_file: {
          type: 'string',
          default: '',
          description: 'PEM private key of `admin.tls_cert_file` (unencrypted).',
        },
      },
      'The admin API, `/metrics` and `/healthz`, on their own listener.',
    ),
    storage: section(
      {
        data_dir: {
          type: 'string',
          minLength: 1,
          default: './data',
          description:
            'Directory of the embedded store: accounts, batch records and the generated admin token. Relative to the working directory. Kept mode 0700, its files 0600.',
        },
      },
      'The embedded store.',
    ),
    database: section(
      {
        url: {
          type: 'string',
          default: '',
          description:
            'PostgreSQL connection URL. When set, batch records are uploaded to table `txrelay_batch_records` in the background. Empty: nothing is uploaded. The embedded store prunes records older than 7 days; with a database, only once they are uploaded.',
        },
      },
      'PostgreSQL: the copy of EVM batch records, and the account registry in `registry.mode = "postgres"`.',
    ),
    registry: section(
      {
        mode: {
          type: 'string',
          enum: ['embedded', 'postgres'],
          default: 'embedded',
          description:
            'Where accounts live. `embedded`: in this node\'s own store, managed through its own admin API. `postgres`: in PostgreSQL at `database.url`, shared by every node; each node serves from its own replica, kept current by a change feed, and admin writes on any node go to PostgreSQL (docs/operations.md#regional-nodes).',
        },
        poll_interval_ms: {
          type: 'integer',
          minimum: 100,
          maximum: 60_000,
          default: 2000,
          description:
            'In postgres mode, how often a node also asks PostgreSQL for changes it has not applied, besides the notifications it listens for: the bound on how long a lost notification delays a change.',
        },
        timeout_ms: {
          type: 'integer',
          minimum: 200,
          maximum: 60_000,
          default: 5000,
          description:
            'In postgres mode, the bound on each connect and query of a node\'s change feed. A connection whose packets vanish without a reset is noticed and replaced within `poll_interval_ms` plus this; past that staleness `/healthz` reports the registry `degraded` (docs/operations.md#when-postgresql-is-down).',
        },
        change_retention_s: {
          type: 'integer',
          minimum: 60,
          maximum: 365 * 86400,
          default: 7 * 86400,
          description:
            'In postgres mode, how long the change log keeps a change. A node that was offline longer than this resyncs from a snapshot of every account instead of replaying changes.',
        },
      },
      'The account registry.',
    ),
    status: section(
      {
        enabled: {
          type: 'boolean',
          default: true,
          description: 'Trace each admitted transaction after its acknowledgement (upstream attempts and answers) for the status API (docs/protocol.md#status). Off: every id reads `unknown`.',
        },
        retention_s: {
          type: 'integer',
          minimum: 10,
          maximum: 86_400,
          default: 900,
          description: 'How long a transaction\'s status is kept; after it, the id reads `expired`. Batch records keep their batches\' history for longer.',
        },
        final_retention_s: {
          type: 'integer',
          minimum: 0,
          maximum: 7 * 86_400,
          default: 86_400,
          description:
            'How long an ended status outlives `retention_s` in a compact form: its state, reason and what the chain said, without the upstream attempts (`"compact": true`), so a late reader still tells landed from rejected. Compact statuses are held within `max_tracked` of them too (about 0.2 KB each). 0: the id reads `expired` once `retention_s` passed.',
        },
        max_tracked: {
          type: 'integer',
          minimum: 1000,
          maximum: 10_000_000,
          default: 200_000,
          description: 'At most this many statuses are held on each HTTP thread; past it the account holding the most loses its oldest early, so one account never pushes out another\'s below an equal share. Each takes about 0.4 KB of heap (more with many upstream attempts): the default holds about 80 MiB, and at high rates this cap, not retention_s, decides how long a status stays.',
        },
        reads_per_s: {
          type: 'integer',
          minimum: 1,
          maximum: 100_000,
          default: 20,
          description: 'Status reads an account may make per second on a node (a request of up to 100 ids is one read); they never take submission quota.',
        },
        reads_burst: { type: 'integer', minimum: 1, maximum: 200_000, default: 40, description: 'Burst of an account\'s status reads.' },
      },
      'The status API: what happened to a transaction after its acknowledgement.',
    ),
    ws: section(
      {
        enabled: { type: 'boolean', default: true, description: 'Serve the WebSocket door `/ws` on the HTTP port (docs/protocol.md#websocket).' },
        idle_timeout_s: {
          type: 'integer',
          minimum: 8,
          maximum: 960,
          default: 120,
          description:
            'A WebSocket from which nothing, not even a pong to the relay\'s ping (sent a few seconds before), arrived for this long is closed. uWebSockets.js takes 8 s at least and rounds to a multiple of 4 s. HTTP connections keep their own ~10 s limit.',
        },
        max_buffered_bytes: {
          type: 'integer',
          minimum: 16_384,
          maximum: 67_108_864,
          default: 1_048_576,
          description:
            'Answers and notifications a socket may have waiting for its client to read; past it the socket is closed with code 4008, so a slow reader never holds more memory than this.',
        },
        max_subscriptions: {
          type: 'integer',
          minimum: 1,
          maximum: 1024,
          default: 16,
          description: 'Status subscriptions one socket may hold (`txrelay_subscribe`).',
        },
        max_account_subscriptions: {
          type: 'integer',
          minimum: 1,
          maximum: 1_048_576,
          default: 64,
          description:
            'Status subscriptions all of one account\'s sockets may hold together, per HTTP thread: each status change of the account is pushed at most this many times per thread, however many sockets it opens. A subscription over it is refused (-32602).',
        },
      },
      'The WebSocket door: JSON-RPC messages of both families and pushed status changes.',
    ),
    node: section(
      {
        name: {
          type: 'string',
          default: '',
          maxLength: 63,
          pattern: NODE_NAME_PATTERN,
          description:
            'This node\'s name, in its start-up line, logs, metrics (`txrelay_node_info`) and the `x-svc-node` response header. Empty: the host name. In postgres mode two live nodes cannot share a name.',
        },
      },
      'This node.',
    ),
    limits: section(
      {
        ip_rps: {
          ...tps,
          default: 1000,
          description:
            'Requests per second each client address may make on the HTTP doors: one credit per request, and one per call of a JSON-RPC array, charged before authentication.',
        },
        ip_burst: { type: 'integer', minimum: 1, maximum: 2_000_000, default: 2000, description: 'Burst of the per-address HTTP bucket.' },
        queue_capacity: {
          type: 'integer',
          minimum: 1,
          maximum: 10_000_000,
          default: 10000,
          description: 'Transactions one forwarding lane holds that no upstream has answered yet; a full lane refuses new transactions with 503.',
        },
        queue_target_ms: {
          type: 'number',
          minimum: 0.5,
          maximum: 1000,
          default: 5,
          description:
            'Wait before a transaction\'s check that the relay tolerates as a standing queue (the CoDel target of RFC 8289). A queue that stays above it is shed, slowly.',
        },
        queue_max_ms: {
          type: 'number',
          minimum: 1,
          maximum: 10000,
          default: 100,
          description:
            'Hard bound on the wait before a check: an arrival whose estimated wait is longer is refused 503 at once, and a transaction that waited longer by the time its check would start is refused 503 unchecked.',
        },
        shed_hold_ms: {
          type: 'number',
          minimum: 0,
          maximum: 10000,
          default: 100,
          description:
            'The longest a door shed (503 for capacity) is held before it is written; it is held about as long as the queue it was turned away from takes to drain. 0: write it at once.',
        },
      },
      'Rate limits, queue bounds and load shedding.',
    ),
    dedup: section(
      {
        window_s: {
          type: 'integer',
          minimum: 1,
          maximum: 86400,
          default: 120,
          description: 'A transaction seen on this node within this many seconds is a duplicate: answered as a success, not forwarded again.',
        },
        capacity: {
          type: 'integer',
          minimum: 1000,
          maximum: 100_000_000,
          default: 10_000_000,
          description:
            'Transactions the duplicate table holds at once, shared by every thread: 19.2 bytes each, reserved and written at start (183 MiB at the default). Size it as peak transactions per second times `window_s`; past it the oldest are forgotten early (`txrelay_dedup_fresh_evictions_total`), so a resend of one is forwarded again.',
        },
      },
      'Duplicate detection.',
    ),
    evm: section(
      {
        enabled: { type: 'boolean', default: true, description: 'Serve the EVM doors.' },
        chain_id: {
          type: 'integer',
          minimum: 1,
          maximum: Number.MAX_SAFE_INTEGER,
          default: 1,
          description: 'The EIP-155 chain id every transaction must be signed for.',
        },
        upstreams: section(
          {
            paid: {
              ...urls,
              description: 'JSON-RPC endpoints of the paid lane (accounts on plan `paid`). Empty: the lane runs dry, counting and dropping what it admits.',
            },
            free: {
              ...urls,
              description: 'JSON-RPC endpoints of the free lane (accounts on plan `free`). Empty: the lane runs dry, counting and dropping what it admits.',
            },
          },
          'Where EVM transactions are forwarded, by the account\'s plan.',
        ),
        max_batch: {
          type: 'integer',
          minimum: 1,
          maximum: 10000,
          default: 64,
          description: 'Most transactions in one `svc_sendRawTransactionBatch`, and most calls in one JSON-RPC array.',
        },
        chain_rpc: chainRpc('EVM', 'http://127.0.0.1:8545'),
        landing_timeout_s: {
          type: 'integer',
          minimum: 10,
          maximum: 86400,
          default: 180,
          description: 'A forwarded EVM transaction not seen in a block within this many seconds ends `not_landed`, reason `timeout` (it may still land later; the relay stops looking). Blocks are read once each, whatever the number followed.',
        },
      },
      'EVM transactions: JSON-RPC, plain text and batches.',
    ),
    solana: section(
      {
        enabled: { type: 'boolean', default: true, description: 'Serve the Solana doors: JSON-RPC `sendTransaction`, `/v2`, `/v2/batch` and UDP.' },
        rpc_upstreams: {
          ...urls,
          description: 'JSON-RPC endpoints that single transactions are forwarded to (`sendTransaction`). Empty: the lane runs dry.',
        },
        bundle_upstreams: {
          ...urls,
          description: 'JSON-RPC endpoints that bundles are forwarded to (`sendBundle`, as Jito block engines take it). Empty: the lane runs dry.',
        },
        tip_accounts: {
          type: 'array',
          items: { type: 'string', pattern: BASE58_PATTERN },
          default: [],
          description: 'Base58 addresses of the tip accounts that bundles must pay. Empty: the tip rule is off, and start-up says so.',
        },
        spill_max_age_s: {
          type: 'integer',
          minimum: 1,
          maximum: 3600,
          default: 60,
          description:
            'Solana transactions (single and bundles) that a stop could not forward are written to the data directory and sent by the next start while younger than this many seconds since they were acknowledged; older ones are counted (`txrelay_lane_dropped_total` reason `expired_after_restart`) and logged, not sent: their blockhash has expired. EVM transactions written down are always sent.',
        },
        chain_rpc: chainRpc('Solana', 'http://127.0.0.1:8899'),
        tpu: tpuSection,
        landing_poll_ms: {
          type: 'integer',
          minimum: 100,
          maximum: 60_000,
          default: 400,
          description: 'How often followed signatures are asked about (one `getSignatureStatuses` per 256 of them, one `isBlockhashValid` per distinct recent blockhash): about a slot.',
        },
        landing_commitment: {
          enum: ['processed', 'confirmed', 'finalized'],
          default: 'confirmed',
          description: 'The confirmation level at which a landed signature stops being followed; each level reached before it is a status change too.',
        },
      },
      'Solana transactions: JSON-RPC, raw bytes, bundles and UDP.',
    ),
    plans: section({ free: plan('free', 5), paid: plan('paid', 50) }, 'Limits a new account gets.'),
    workers: section(
      {
        threads: {
          type: 'integer',
          minimum: 0,
          maximum: 256,
          default: 0,
          description:
            'Verification worker threads. 0: one per core beyond the main thread, so none on a single core (or a one-CPU affinity mask), where the main thread checks every transaction.',
        },
        inline: {
          enum: ['auto', 'never'],
          default: 'auto',
          description:
            '`auto`: the acceptor checks transactions itself while it has room, and hands them to the workers when it is busy. `never`: every check goes to a worker (when there are any).',
        },
      },
      'Where signatures are checked.',
    ),
    log: section(
      {
        level: {
          enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
          default: 'info',
          description: 'Log level; `silent` turns logging off.',
        },
        format: {
          enum: ['auto', 'json', 'pretty'],
          default: 'auto',
          description:
            'How log lines are written to standard output. `json`: one JSON object per line (pino). `pretty`: one readable line per event (pino-pretty), for people. `auto`: `pretty` when standard output is a terminal, else `json`.',
        },
      },
      'Logging.',
    ),
    metrics: section(
      {
        listen: {
          type: 'string',
          pattern: LISTEN_PATTERN,
          default: '',
          description:
            '`host:port` of a plain-HTTP listener that serves only `GET /metrics`: no admin API, no token, nothing else. Open this one, never the admin port, to a Prometheus on another host. Empty: none (`/metrics` stays on the admin listener either way).',
        },
      },
      'A metrics-only listener for a remote Prometheus (docs/operations.md#prometheus-across-regions).',
    ),
  },
} as const;
