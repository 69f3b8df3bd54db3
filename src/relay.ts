/**
 * The composition root: builds every part from the configuration, starts the
 * listeners, and stops them in the order that loses nothing acknowledged.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { Config } from './config/schema.js';
import { systemClock, type Clock } from './clock.js';
import { initKeyedHash } from './tables/keyed-hash.js';
import { setAckFirst } from './ingress/ack-first.js';
import { IpLimiter } from './tables/ip-limiter.js';
import { DedupFilter } from './tables/dedup.js';
import { Slab } from './tables/slab.js';
import { Store, restrictToOwner, DATA_FILE_MODE } from './store/db.js';
import { AccountStore } from './store/accounts.js';
import { BatchStore } from './store/batches.js';
import { Uploader } from './store/uploader.js';
import { nextBatchId } from './store/ids.js';
import { Verifier } from './exec/verifier.js';
import { JobTable } from './exec/jobs.js';
import { Forwarder } from './forward/forwarder.js';
import { Admission } from './pipeline/admission.js';
import { AccountRegistry } from './pipeline/accounts.js';
import { TipAccounts } from './chains/solana/tip.js';
import { initKeccak } from './chains/evm/hash.js';
import { loadAcceptor, describeAcceptor, LISTEN_EXCLUSIVE_PORT, type TemplatedApp, type Uws, type us_listen_socket } from './ingress/uws.js';
import { attachConnectionCaps, connectionCaps, type ConnectionCaps } from './ingress/conn-caps.js';
import { clientIp, flushHeldAnswers, heldRefusals, holdAnswers, releaseHeldRefusals, setAnswerCoalescing } from './ingress/http.js';
import { RpcDispatcher } from './ingress/doors/jsonrpc.js';
import { registerSolanaDoors } from './ingress/doors/solana.js';
import { registerEvmDoors, type BatchRecorder } from './ingress/doors/evm.js';
import { UdpIngress } from './ingress/udp.js';
import { createAdminApp } from './ingress/admin.js';
import { Metrics, labelled } from './obs/metrics.js';
import { silentLogger, scrub, type Logger } from './obs/log.js';
import { base58Backend } from './native/base58.js';

/**
 * Bytes of transactions in flight (received, not yet verified and encoded for
 * forwarding). 32 MiB holds ~27k maximum-size Solana transactions; when it is
 * full new work is refused with 503 at once.
 */
const SLAB_BYTES = 32 * 1024 * 1024;
/** Batch records older than the store's retention (7 days) are pruned hourly when no database takes them. */
const PRUNE_INTERVAL_MS = 3600_000;
/** Graceful shutdown: how long in-flight verification and forwarding may take. */
const DRAIN_MS = 5000;

export interface RelayOptions {
  config: Config;
  logger?: Logger;
  clock?: Clock;
}

export interface RelayPorts {
  http: number;
  udp: number | null;
  admin: number;
}

export class Relay {
  private stopped: Promise<void> | null = null;
  /** Which HTTP acceptor serves: uWebSockets.js, or the node:http fallback. */
  acceptor: 'uws' | 'node' = 'uws';

  private constructor(
    readonly config: Config,
    readonly ports: RelayPorts,
    readonly adminToken: string,
    readonly admission: Admission,
    readonly metrics: Metrics,
    private readonly parts: {
      log: Logger;
      db: Store;
      batches: BatchStore;
      uploader: Uploader | null;
      pruneTimer: NodeJS.Timeout | null;
      pool: Verifier;
      forwarder: Forwarder;
      udp: UdpIngress | null;
      listen: us_listen_socket[];
      apps: TemplatedApp[];
      uwsClose: (s: us_listen_socket) => void;
    },
  ) {}

  static async start(opts: RelayOptions): Promise<Relay> {
    const cfg = opts.config;
    const log = opts.logger ?? silentLogger;
    const clock = opts.clock ?? systemClock;
    const acceptor = loadAcceptor(cfg.http.acceptor);
    const uws = acceptor.uws;
    // A fallback nobody asked for is worth a warning: it costs CPU per request (README, "HTTP acceptor").
    const fellBack = acceptor.kind === 'node' && cfg.http.acceptor === 'auto';
    log[fellBack ? 'warn' : 'info']({ acceptor: acceptor.name, base58: base58Backend }, describeAcceptor(acceptor, cfg.http.acceptor));
    const caps = connectionCaps(cfg.http, acceptor, log);

    const dataDir = resolve(cfg.storage.data_dir);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const adminToken = cfg.admin.token || adminTokenFile(dataDir);

    await Promise.all([initKeyedHash(), initKeccak()]);
    const storeLog = {
      info: (m: string) => log.info({ component: 'store' }, scrub(m)),
      warn: (m: string) => log.warn({ component: 'store' }, scrub(m)),
      error: (m: string) => log.error({ component: 'store' }, scrub(m)),
    };
    const db = Store.open(dataDir, { log: storeLog });
    const accounts = AccountStore.open(db);
    const batches = new BatchStore(db);

    const t0 = clock();
    const ipLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.limits.ip_rps, burst: cfg.limits.ip_burst });
    const udpIpLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.udp.ip_rps, burst: cfg.udp.ip_burst });
    const dedup = DedupFilter.create({ windowMs: cfg.dedup.window_s * 1000 });
    const slab = Slab.create({ capacity: SLAB_BYTES });
    const jobs = JobTable.create();
    const pool = new Verifier({
      threads: verifyThreads(cfg.workers.threads),
      jobs,
      slab,
      dedup,
      chainId: BigInt(cfg.evm.chain_id),
      clock,
      controller: { targetMs: cfg.limits.queue_target_ms, maxMs: cfg.limits.queue_max_ms },
      inline: cfg.workers.inline,
      beforeAnswers: holdAnswers,
      afterAnswers: flushHeldAnswers,
      onWorkerError: (index, err) =>
        log.error({ worker: index, error: scrub(err instanceof Error ? err.message : String(err)) }, 'verification worker stopped; restarting it'),
    });
    await pool.start();

    const fwdLog = (level: 'info' | 'warn' | 'error' | 'debug', msg: string, fields?: Record<string, unknown>) =>
      log[level]({ ...fields, component: 'forward' }, scrub(msg));
    const forwarder = new Forwarder({
      lanes: {
        'evm-paid': cfg.evm.upstreams.paid,
        'evm-free': cfg.evm.upstreams.free,
        'solana-single': cfg.solana.rpc_upstreams,
        'solana-bundle': cfg.solana.bundle_upstreams,
      },
      queueCapacity: cfg.limits.queue_capacity,
      log: fwdLog,
    });

    let tips: TipAccounts | null = null;
    if (cfg.solana.tip_accounts.length > 0) tips = new TipAccounts(cfg.solana.tip_accounts);
    else if (cfg.solana.enabled) log.warn('solana.tip_accounts is empty: the bundle tip rule is disabled');

    // Seats every live account the store may hold: start-up never fails on stored state (issue 8).
    const registry = AccountRegistry.create(accounts, clock);
    // No workers: the main thread is the tables' only user, so their locks are skipped (src/tables/lock.ts).
    if (pool.threads === 0) for (const t of [dedup, ipLimiter, udpIpLimiter, registry.buckets]) t.soleThread();
    if (accounts.live > accounts.maxLive) {
      log.warn({ live: accounts.live, max: accounts.maxLive }, 'more live accounts than the cap: new registrations are refused until some are revoked');
    }
    const admission = new Admission({
      clock,
      accounts: registry,
      ipLimiter,
      ipRps: cfg.limits.ip_rps,
      udpIpLimiter,
      udpIpRps: cfg.udp.ip_rps,
      dedup,
      slab,
      jobs,
      verifier: pool,
      forwarder,
      tips,
      evmChainId: BigInt(cfg.evm.chain_id),
      enabled: { evm: cfg.evm.enabled, solana: cfg.solana.enabled },
      shedHoldMs: cfg.limits.shed_hold_ms,
      heldRefusals,
    });

    let outcomeFailures = 0;
    const recorder: BatchRecorder = {
      newId: () => nextBatchId(),
      // Items without bytes (not even hex) have no hash: recorded as null.
      persist: (rec) => batches.persist({ ...rec, tx_hashes: rec.tx_hashes as string[] }),
      updateOutcome: (id, items) =>
        batches
          .updateOutcome(
            id,
            items.map((x) => ({ status: x.status, duplicate: x.duplicate, ...(x.error ? { error_code: x.error.code } : {}) })),
          )
          .catch((e: unknown) => {
            outcomeFailures++;
            log.error({ component: 'store', error: scrub(e instanceof Error ? e.message : String(e)) }, 'batch outcome could not be made durable; the record keeps its hashes');
            throw e;
          }),
    };

    const metrics = new Metrics();
    // Accept latency per door, from the handler's start to the answer: 50 µs to 1 s.
    const accept = metrics.histogram('txrelay_accept_seconds', 'Time from the start of a request handler to its answer, by door.', 'door', [
      0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1,
    ]);
    setAnswerCoalescing(cfg.http.coalesce_answers);
    setAckFirst(cfg.http.ack_first);
    const app = uws.App();
    const ip = (res: Parameters<typeof clientIp>[0], req: Parameters<typeof clientIp>[1]) => clientIp(res, req, cfg.http.trust_proxy);
    const rpc = new RpcDispatcher(
      cfg.http.max_body_bytes,
      cfg.evm.max_batch,
      (ip, n) => admission.limitIp(ip, n),
      () => admission.shed(),
    );
    const ctx = { app, admission, rpc, config: cfg, ip, batches: recorder, timer: (door: string) => accept.labels(door) };
    if (cfg.solana.enabled) registerSolanaDoors(ctx);
    else app.get('/ping', (res) => void res.cork(() => res.writeStatus('200 OK').end('pong')));
    if (cfg.evm.enabled) registerEvmDoors(ctx);
    rpc.mount(app, ip, accept.labels('jsonrpc'));
    app.any('/*', (res) => {
      res.cork(() => res.writeStatus('404 Not Found').writeHeader('content-type', 'text/plain; charset=utf-8').end('Not Found'));
    });

    let uploader: Uploader | null = null;
    let pruneTimer: NodeJS.Timeout | null = null;
    if (!cfg.database.url) {
      // Without a database nothing uploads, and so nothing would ever prune: keep the store bounded by retention.
      pruneTimer = setInterval(() => void batches.prune({ includeNotUploaded: true }).catch(() => {}), PRUNE_INTERVAL_MS);
      pruneTimer.unref();
    } else {
      uploader = new Uploader(batches, {
        url: cfg.database.url,
        log: {
          info: (m: string) => log.info({ component: 'uploader' }, scrub(m)),
          warn: (m: string) => log.warn({ component: 'uploader' }, scrub(m)),
          error: (m: string) => log.error({ component: 'uploader' }, scrub(m)),
        },
      });
      uploader.start();
    }

    const udp = cfg.solana.enabled && cfg.udp.enabled ? new UdpIngress(admission) : null;
    registerMetrics(metrics, { admission, pool, forwarder, dedup, slab, udp, batches, uploader, registry, outcomeFailures: () => outcomeFailures });

    const adminApp = createAdminApp({
      uws,
      config: cfg,
      token: adminToken,
      accounts,
      batches,
      metrics,
      health: () => ({ ok: !admission.draining, draining: admission.draining, verify_queue_ms: pool.queueMs() }),
    });
    const listen: us_listen_socket[] = [];
    const ports: RelayPorts = { http: 0, udp: null, admin: 0 };
    const relay = new Relay(cfg, ports, adminToken, admission, metrics, {
      log,
      db,
      batches,
      uploader,
      pruneTimer,
      pool,
      forwarder,
      udp,
      listen,
      apps: [app, adminApp],
      uwsClose: (s) => uws.us_listen_socket_close(s),
    });
    relay.acceptor = acceptor.kind;
    try {
      ports.http = await listenOn(uws, app, cfg.http.host, cfg.http.port, listen, 'http', caps);
      ports.admin = await listenOn(uws, adminApp, cfg.admin.host, cfg.admin.port, listen, 'admin');
      if (udp) {
        const u = await udp.listen(cfg.udp.host, cfg.udp.port, cfg.udp.sockets);
        ports.udp = u.port;
        if (u.sockets === 1 && cfg.udp.sockets !== 1 && !u.reusePort && availableParallelism() > 1) {
          log.info(`UDP: one socket on port ${u.port}: Node ${process.version} cannot share a UDP port (dgram reusePort needs Node >= 22.12)`);
        } else {
          log.info({ udp: u.port, sockets: u.sockets }, `UDP: ${u.sockets} socket(s) on port ${u.port}`);
        }
      }
    } catch (e) {
      // A port that cannot be had (in use, not permitted): nothing was admitted yet, so stopping at once
      // releases the workers, the lanes' sockets, the timers and the store (and its lock on data_dir).
      await relay.stop();
      throw e;
    }

    log.info(
      { http: `${cfg.http.host}:${ports.http}`, admin: `${cfg.admin.host}:${ports.admin}`, udp: ports.udp, threads: pool.threads, acceptor: acceptor.name },
      'txrelay listening',
    );
    return relay;
  }

  /**
   * Graceful stop: refuse new work (503 retry_safe), stop listening, let
   * in-flight verification finish and the lanes drain, flush batch outcomes,
   * give the uploader a last try, then close the store.
   */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    const p = this.parts;
    this.admission.draining = true;
    for (const s of p.listen) p.uwsClose(s);
    // Refusals held for pacing are answered now: the connections close before their hold would end.
    releaseHeldRefusals();
    await p.udp?.close();
    const deadline = Date.now() + DRAIN_MS;
    while (p.pool.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const drained = await p.forwarder.drain(Math.max(0, deadline - Date.now()));
    if (drained.abandoned > 0) p.log.warn({ abandoned: drained.abandoned }, 'shutdown: forwarding queue not fully drained');
    if (p.pruneTimer) clearInterval(p.pruneTimer);
    await p.batches.flush();
    await p.uploader?.stop();
    await p.pool.close();
    for (const app of p.apps) app.close();
    await p.db.close();
    p.log.info('txrelay stopped');
  }
}

/**
 * `workers.threads` 0 (auto): one verification thread per core beyond the
 * main thread — none on a single core (or a one-CPU affinity mask, which
 * availableParallelism honours), where the main thread verifies inline.
 */
export function verifyThreads(configured: number): number {
  return configured > 0 ? configured : availableParallelism() - 1;
}

/** Listens, with the connection caps in front of accept when given; resolves to the port. */
function listenOn(
  uws: Uws,
  app: TemplatedApp,
  host: string,
  port: number,
  sockets: us_listen_socket[],
  what: string,
  caps: ConnectionCaps | null = null,
): Promise<number> {
  if (caps) attachConnectionCaps(app, caps);
  return new Promise((resolve, reject) => {
    app.listen(host, port, LISTEN_EXCLUSIVE_PORT, (s) => {
      if (!s) return reject(new Error(`${what}: cannot listen on ${host}:${port} (in use or not permitted)`));
      sockets.push(s);
      const bound = uws.us_socket_local_port(s);
      caps?.listening(host, bound);
      resolve(bound);
    });
  });
}

/**
 * The admin token: generated once into data_dir/admin.token (mode 0600), then
 * reused. Created 0600 minus the umask (never readable by others, even
 * briefly), then made exactly 0600; an existing file of ours left looser is
 * tightened (another user's is covered by Store.open's warning on the directory).
 */
function adminTokenFile(dataDir: string): string {
  const file = join(dataDir, 'admin.token');
  if (existsSync(file)) {
    restrictToOwner(file, DATA_FILE_MODE);
    return readFileSync(file, 'utf8').trim();
  }
  const token = randomBytes(24).toString('base64url');
  // 'wx': a file that appeared meanwhile is never overwritten (nor its token silently replaced).
  writeFileSync(file, token + '\n', { mode: DATA_FILE_MODE, flag: 'wx' });
  chmodSync(file, DATA_FILE_MODE);
  return token;
}

function registerMetrics(
  m: Metrics,
  p: {
    admission: Admission;
    pool: Verifier;
    forwarder: Forwarder;
    dedup: DedupFilter;
    slab: Slab;
    udp: UdpIngress | null;
    batches: BatchStore;
    uploader: Uploader | null;
    registry: AccountRegistry;
    outcomeFailures: () => number;
  },
): void {
  m.counter('txrelay_admitted_total', 'Transactions admitted and queued for forwarding, by lane.', ['lane'], () => labelled(p.admission.admitted, 'lane'));
  m.counter('txrelay_duplicates_total', 'Submissions recognised as duplicates on this node, by lane.', ['lane'], () => labelled(p.admission.duplicates, 'lane'));
  m.counter('txrelay_rejected_total', 'Submissions rejected, by error code.', ['code'], () => labelled(p.admission.rejected, 'code'));
  m.counter('txrelay_udp_datagrams_total', 'UDP datagrams by outcome (everything but admitted/duplicate was dropped).', ['outcome'], () =>
    p.udp ? labelled(p.udp.outcomes, 'outcome') : [],
  );
  m.gauge('txrelay_udp_sockets', 'UDP sockets bound to the UDP port (more than one only where the runtime has SO_REUSEPORT).', [], () => [[{}, p.udp ? p.udp.received.length : 0]]);
  m.counter('txrelay_udp_socket_datagrams_total', 'UDP datagrams received by each socket of the SO_REUSEPORT pool.', ['socket'], () =>
    p.udp ? p.udp.received.map((n, i) => [{ socket: String(i) }, n] as [Record<string, string>, number]) : [],
  );
  m.counter('txrelay_verify_jobs_total', 'Transaction checks by the thread that ran them: the acceptor (inline, or at the end of its event-loop turn) or a verification worker.', ['where'], () => [
    [{ where: 'acceptor' }, p.pool.stats.acceptor],
    [{ where: 'worker' }, p.pool.stats.workers],
  ]);
  m.counter('txrelay_verify_failed_total', 'Checks that failed on this node rather than on the transaction (answered 503 retry-safe).', [], () => [[{}, p.pool.stats.internal]]);
  m.counter('txrelay_verify_worker_restarts_total', 'Verification workers restarted after dying.', [], () => [[{}, p.pool.stats.workerRestarts]]);
  m.counter('txrelay_shed_total', 'Arrivals shed by the queue controller, by reason (standing queue: CoDel control law; over_max: estimated wait over limits.queue_max_ms; expired: admitted, then waited past it before its check).', ['reason'], () => [
    [{ reason: 'standing' }, p.pool.controller.shedStanding],
    [{ reason: 'over_max' }, p.pool.controller.shedOverMax],
    [{ reason: 'expired' }, p.pool.stats.expired],
  ]);
  m.gauge('txrelay_verify_queue_ms', 'Estimated time a check submitted now would wait for a verifier, in milliseconds.', [], () => [[{}, p.pool.queueMs()]]);
  m.gauge('txrelay_slab_bytes_used', 'Bytes of in-flight transactions in the shared slab.', [], () => [[{}, p.slab.used]]);
  m.counter('txrelay_batch_records_refused_total', 'Family A batches refused with 429 before a receive record was written: the account\'s record budget was spent.', [], () => [
    [{}, p.registry.refusedRecords],
  ]);
  m.counter('txrelay_batch_outcome_failures_total', 'Batch outcomes that could not be made durable (the record keeps its hashes; the answer was sent).', [], () => [[{}, p.outcomeFailures()]]);
  m.gauge('txrelay_batch_upload_backlog', 'Batch records not yet uploaded to PostgreSQL.', [], () => [[{}, p.batches.backlog()]]);
  m.counter('txrelay_dedup_fresh_evictions_total', 'Dedup entries evicted while still inside the window (table overflow).', [], () => [
    [{}, p.dedup.freshEvictions],
  ]);
  m.gauge('txrelay_lane_depth', 'Transactions waiting in each forwarding lane.', ['lane'], () =>
    Object.entries(p.forwarder.stats().lanes).map(([lane, s]) => [{ lane }, (s as { depth: number }).depth]),
  );
  m.counter('txrelay_lane_forwarded_total', 'Transactions forwarded, by lane.', ['lane'], () =>
    Object.entries(p.forwarder.stats().lanes).map(([lane, s]) => [{ lane }, (s as { forwarded: number }).forwarded]),
  );
  m.counter(
    'txrelay_lane_dropped_total',
    'Admitted transactions that ended with no upstream accepting them, by reason (rejected: refused by every upstream that answered; expired: maximum age reached; shutdown: drain time-out).',
    ['lane', 'reason'],
    () =>
      Object.values(p.forwarder.stats().lanes).flatMap((s) =>
        Object.entries(s.droppedBy).map(([reason, v]) => [{ lane: s.lane, reason }, v] as [Record<string, string>, number]),
      ),
  );
  // Per upstream (labelled by origin only: a path or query may carry an API key), DECISIONS 8.
  const upstreamItems = () =>
    Object.values(p.forwarder.stats().lanes).flatMap((s) =>
      s.upstreams.flatMap((u) =>
        (
          [
            ['ok', u.ok],
            ['rpc_error', u.rpcErrors],
            ['http_error', u.httpErrors],
            ['timeout', u.timeouts],
            ['connection_error', u.connErrors],
            ['retried', u.retried],
            ['overrun', u.overrun],
            ['expired', u.expired],
          ] as const
        ).map(([outcome, v]) => [{ lane: s.lane, upstream: u.upstream, outcome }, v] as [Record<string, string>, number]),
      ),
    );
  m.counter('txrelay_upstream_items_total', 'Forwarded items per upstream by outcome (retried: put back for a resend after a transport failure; overrun: given up after falling a whole queue behind another upstream; expired: given up at the maximum age).', ['lane', 'upstream', 'outcome'], upstreamItems);
  m.gauge('txrelay_upstream_breaker_open', 'Whether an upstream\'s circuit breaker is open (1) or not (0).', ['lane', 'upstream'], () =>
    Object.values(p.forwarder.stats().lanes).flatMap((s) =>
      s.upstreams.map((u) => [{ lane: s.lane, upstream: u.upstream }, u.breaker === 'closed' ? 0 : 1] as [Record<string, string>, number]),
    ),
  );
  m.counter('txrelay_lane_discarded_total', 'Admitted transactions dropped because the lane has no upstream (dry run).', ['lane'], () =>
    Object.entries(p.forwarder.stats().lanes).map(([lane, s]) => [{ lane }, (s as { discarded: number }).discarded]),
  );
}
