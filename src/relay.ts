/**
 * The composition root: builds every part from the configuration, starts the
 * listeners, and stops them in the order that loses nothing acknowledged
 * (docs/architecture.md, docs/operations.md).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import type { Config } from './config/schema.js';
import { systemClock, type Clock } from './clock.js';
import { IpLimiter } from './tables/ip-limiter.js';
import { DedupFilter } from './tables/dedup.js';
import { Slab } from './tables/slab.js';
import { Store } from './store/db.js';
import { AccountStore } from './store/accounts.js';
import { BatchStore, storedItems } from './store/batches.js';
import { Uploader } from './store/uploader.js';
import { nextBatchId } from './store/ids.js';
import { adminTokenFile } from './store/admin-token.js';
import { Verifier } from './exec/verifier.js';
import { JobTable } from './exec/jobs.js';
import { Forwarder } from './forward/forwarder.js';
import { Pipeline } from './pipeline/admit.js';
import type { BatchRecorder } from './pipeline/evm-batch.js';
import { AccountRegistry } from './pipeline/accounts.js';
import { TipAccounts } from './chains/solana/tip.js';
import { initKeccak } from './chains/evm/hash.js';
import { ed25519Backend } from './chains/solana/verify.js';
import { loadAcceptor, describeAcceptor, type TemplatedApp, type us_listen_socket } from './ingress/uws.js';
import { connectionCaps } from './ingress/conn-caps.js';
import { listenOn } from './ingress/listen.js';
import { AckFirst } from './ingress/ack-first.js';
import { Replier, TEXT_TYPE } from './ingress/reply.js';
import { clientIp } from './ingress/client-ip.js';
import type { DoorContext } from './ingress/doors/context.js';
import { registerJsonRpcDoor } from './ingress/doors/jsonrpc.js';
import { registerPing, registerSolanaDoors } from './ingress/doors/solana.js';
import { registerEvmTextDoor } from './ingress/doors/evm.js';
import { UdpIngress } from './ingress/udp.js';
import { createAdminApp } from './ingress/admin.js';
import { Metrics } from './obs/metrics.js';
import { registerRelayMetrics } from './obs/relay-metrics.js';
import { silentLogger, scrub, type Logger } from './obs/log.js';
import { base58Backend } from './native/base58.js';
import { nativeUnavailableReason } from './native/addon.js';

/**
 * Bytes of transactions in flight (received, not yet checked and encoded for
 * forwarding). 32 MiB holds ~27k maximum-size Solana transactions; when it is
 * full new work is refused with 503 at once.
 */
const SLAB_BYTES = 32 * 1024 * 1024;
/** Batch records older than the store's retention (7 days) are pruned hourly when no database takes them. */
const PRUNE_INTERVAL_MS = 3600_000;
/** Graceful shutdown: how long in-flight checks and forwarding may take. */
const DRAIN_MS = 5000;
/** Accept latency per door, from the handler's start to the answer: 50 µs to 1 s. */
const ACCEPT_BUCKETS = [0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];

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

interface Parts {
  log: Logger;
  db: Store;
  batches: BatchStore;
  uploader: Uploader | null;
  pruneTimer: NodeJS.Timeout | null;
  verifier: Verifier;
  forwarder: Forwarder;
  reply: Replier;
  udp: UdpIngress | null;
  listen: us_listen_socket[];
  apps: TemplatedApp[];
  closeListener: (s: us_listen_socket) => void;
}

export class Relay {
  private stopped: Promise<void> | null = null;

  private constructor(
    readonly config: Config,
    readonly ports: RelayPorts,
    readonly adminToken: string,
    readonly pipeline: Pipeline,
    readonly metrics: Metrics,
    /** Which HTTP acceptor serves: uWebSockets.js, or the node:http fallback. */
    readonly acceptor: 'uws' | 'node',
    private readonly parts: Parts,
  ) {}

  static async start(opts: RelayOptions): Promise<Relay> {
    const cfg = opts.config;
    const log = opts.logger ?? silentLogger;
    const clock = opts.clock ?? systemClock;
    const acceptor = loadAcceptor(cfg.http.acceptor);
    const uws = acceptor.uws;
    // A fallback nobody asked for is worth a warning: it costs CPU per request (docs/operations.md).
    const fellBack = acceptor.kind === 'node' && cfg.http.acceptor === 'auto';
    log[fellBack ? 'warn' : 'info']({ acceptor: acceptor.name, base58: base58Backend, ed25519: ed25519Backend }, describeAcceptor(acceptor, cfg.http.acceptor));
    if (ed25519Backend !== 'sodium-native') log.warn('sodium-native did not load: Ed25519 signatures are checked by node:crypto, about 1.5x slower');
    if (nativeUnavailableReason !== null) log.warn(`native addon ${nativeUnavailableReason}: base58 and keccak-256 run in JavaScript and WebAssembly`);
    const caps = connectionCaps(cfg.http, acceptor, log);

    const dataDir = resolve(cfg.storage.data_dir);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const adminToken = cfg.admin.token || adminTokenFile(dataDir);

    await initKeccak();
    const db = Store.open(dataDir, { log: componentLog(log, 'store') });
    const accounts = AccountStore.open(db);
    const batches = new BatchStore(db);

    const t0 = clock();
    const ipLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.limits.ip_rps, burst: cfg.limits.ip_burst });
    const udpIpLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.udp.ip_rps, burst: cfg.udp.ip_burst });
    const dedup = DedupFilter.create({ windowMs: cfg.dedup.window_s * 1000 });
    const slab = Slab.create({ capacity: SLAB_BYTES });
    const jobs = JobTable.create();
    const ack = new AckFirst(cfg.http.ack_first);
    const reply = new Replier({ coalesce: cfg.http.coalesce_answers, ack });
    const verifier = new Verifier({
      threads: verifyThreads(cfg.workers.threads),
      jobs,
      slab,
      dedup,
      chainId: BigInt(cfg.evm.chain_id),
      clock,
      controller: { targetMs: cfg.limits.queue_target_ms, maxMs: cfg.limits.queue_max_ms },
      inline: cfg.workers.inline,
      beforeAnswers: reply.holdAnswers,
      afterAnswers: reply.flushHeld,
      onWorkerError: (index, err) =>
        log.error({ worker: index, error: scrub(err instanceof Error ? err.message : String(err)) }, 'verification worker stopped; restarting it'),
    });
    await verifier.start();

    const fwdLog = (level: 'info' | 'warn' | 'error' | 'debug', msg: string, fields?: Record<string, unknown>) => log[level]({ ...fields, component: 'forward' }, scrub(msg));
    const forwarder = new Forwarder({
      lanes: {
        'evm-paid': cfg.evm.upstreams.paid,
        'evm-free': cfg.evm.upstreams.free,
        'solana-single': cfg.solana.rpc_upstreams,
        'solana-bundle': cfg.solana.bundle_upstreams,
      },
      queueCapacity: cfg.limits.queue_capacity,
      log: fwdLog,
      schedule: ack.after,
    });

    let tips: TipAccounts | null = null;
    if (cfg.solana.tip_accounts.length > 0) tips = new TipAccounts(cfg.solana.tip_accounts);
    else if (cfg.solana.enabled) log.warn('solana.tip_accounts is empty: the bundle tip rule is disabled');

    // Seats every live account the store may hold: start-up never fails on stored state.
    const registry = AccountRegistry.create(accounts, clock);
    // No workers: the main thread is the tables' only user, so their locks are skipped (src/tables/lock.ts).
    if (verifier.threads === 0) for (const t of [dedup, ipLimiter, udpIpLimiter, registry.buckets]) t.soleThread();
    if (accounts.live > accounts.maxLive) {
      log.warn({ live: accounts.live, max: accounts.maxLive }, 'more live accounts than the cap: new registrations are refused until some are revoked');
    }
    const storeLog = componentLog(log, 'store');
    const recorder: BatchRecorder = {
      newId: nextBatchId,
      persist: (rec) => batches.persist(rec),
      updateOutcome: (id, outcomes) =>
        batches.updateOutcome(id, storedItems(outcomes)).catch((e: unknown) => {
          storeLog.error(`batch outcome could not be made durable; the record keeps its hashes: ${e instanceof Error ? e.message : String(e)}`);
          throw e;
        }),
    };
    const pipeline = new Pipeline({
      clock,
      accounts: registry,
      ipLimiter,
      ipRps: cfg.limits.ip_rps,
      udpIpLimiter,
      udpIpRps: cfg.udp.ip_rps,
      dedup,
      slab,
      jobs,
      verifier,
      forwarder,
      tips,
      evmChainId: BigInt(cfg.evm.chain_id),
      enabled: { evm: cfg.evm.enabled, solana: cfg.solana.enabled },
      shedHoldMs: cfg.limits.shed_hold_ms,
      heldRefusals: reply.heldRefusals,
      batches: recorder,
      maxBody: cfg.http.max_body_bytes,
    });

    const metrics = new Metrics();
    const accept = metrics.histogram('txrelay_accept_seconds', 'Time from the start of a request handler to its answer, by door.', 'door', ACCEPT_BUCKETS);
    const app = uws.App();
    const doors: DoorContext = {
      app,
      pipeline,
      reply,
      ack,
      ip: (res, req) => clientIp(res, req, cfg.http.trust_proxy),
      maxBody: cfg.http.max_body_bytes,
      maxBatch: cfg.evm.max_batch,
      enabled: { evm: cfg.evm.enabled, solana: cfg.solana.enabled },
      timer: (door) => accept.labels(door),
    };
    registerPing(doors);
    if (cfg.solana.enabled) registerSolanaDoors(doors);
    if (cfg.evm.enabled) registerEvmTextDoor(doors);
    registerJsonRpcDoor(doors);
    app.any('/*', (res) => {
      res.cork(() => res.writeStatus('404 Not Found').writeHeader('content-type', TEXT_TYPE).end('Not Found'));
    });

    let uploader: Uploader | null = null;
    let pruneTimer: NodeJS.Timeout | null = null;
    if (!cfg.database.url) {
      // Without a database nothing uploads, and so nothing would ever prune: keep the store bounded by retention.
      pruneTimer = setInterval(() => void batches.prune({ includeNotUploaded: true }).catch(() => {}), PRUNE_INTERVAL_MS);
      pruneTimer.unref();
    } else {
      uploader = new Uploader(batches, { url: cfg.database.url, log: componentLog(log, 'uploader') });
      uploader.start();
    }

    const udp = cfg.solana.enabled && cfg.udp.enabled ? new UdpIngress(pipeline) : null;
    registerRelayMetrics(metrics, { pipeline, verifier, forwarder, dedup, slab, udp, batches, registry });

    const adminApp = createAdminApp({
      uws,
      reply,
      plans: cfg.plans,
      token: adminToken,
      accounts,
      batches,
      metrics,
      health: () => ({ ok: !pipeline.draining, draining: pipeline.draining, verify_queue_ms: verifier.queueMs() }),
    });
    const listen: us_listen_socket[] = [];
    const ports: RelayPorts = { http: 0, udp: null, admin: 0 };
    const relay = new Relay(cfg, ports, adminToken, pipeline, metrics, acceptor.kind, {
      log,
      db,
      batches,
      uploader,
      pruneTimer,
      verifier,
      forwarder,
      reply,
      udp,
      listen,
      apps: [app, adminApp],
      closeListener: (s) => uws.us_listen_socket_close(s),
    });
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
      { http: `${cfg.http.host}:${ports.http}`, admin: `${cfg.admin.host}:${ports.admin}`, udp: ports.udp, threads: verifier.threads, acceptor: acceptor.name },
      'txrelay listening',
    );
    return relay;
  }

  /**
   * Graceful stop: refuse new work (503 retry_safe), stop listening, let
   * in-flight checks finish and the lanes drain, flush batch outcomes, give
   * the uploader a last try, then close the store.
   */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    const p = this.parts;
    this.pipeline.draining = true;
    for (const s of p.listen) p.closeListener(s);
    // Refusals held for pacing are answered now: the connections close before their hold would end.
    p.reply.releaseHeld();
    await p.udp?.close();
    const deadline = Date.now() + DRAIN_MS;
    while (p.verifier.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const drained = await p.forwarder.drain(Math.max(0, deadline - Date.now()));
    if (drained.abandoned > 0) p.log.warn({ abandoned: drained.abandoned }, 'shutdown: forwarding queue not fully drained');
    if (p.pruneTimer) clearInterval(p.pruneTimer);
    await p.batches.flush();
    await p.uploader?.stop();
    await p.verifier.close();
    for (const app of p.apps) app.close();
    await p.db.close();
    p.log.info('txrelay stopped');
  }
}

/**
 * `workers.threads` 0 (auto): one verification thread per core beyond the
 * main thread; none on a single core (or a one-CPU affinity mask, which
 * availableParallelism honours), where the main thread checks inline.
 */
function verifyThreads(configured: number): number {
  return configured > 0 ? configured : availableParallelism() - 1;
}

/** A part's log lines, tagged with its name and scrubbed of anything that looks like a key. */
function componentLog(log: Logger, component: string): { info(m: string): void; warn(m: string): void; error(m: string): void } {
  return {
    info: (m) => log.info({ component }, scrub(m)),
    warn: (m) => log.warn({ component }, scrub(m)),
    error: (m) => log.error({ component }, scrub(m)),
  };
}
