/**
 * The composition root: builds every part from the configuration, starts the
 * listeners, and stops them in the order that loses nothing acknowledged
 * (docs/architecture.md, docs/operations.md).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { availableParallelism, constants as osConstants } from 'node:os';
import type { Config } from './config/schema.js';
import { systemClock, type Clock } from './clock.js';
import { IpLimiter } from './tables/ip-limiter.js';
import { DedupFilter } from './tables/dedup.js';
import { Store } from './store/db.js';
import { AccountStore, type Registry } from './store/accounts.js';
import type { PgRegistry } from './store/pg-registry.js';
import { BatchStore, storedItems } from './store/batches.js';
import type { Uploader } from './store/uploader.js';
import { nextBatchId } from './store/ids.js';
import { adminTokenFile } from './store/admin-token.js';
import type { Pipeline } from './pipeline/admit.js';
import type { BatchRecorder } from './pipeline/evm-batch.js';
import { AccountRegistry } from './pipeline/accounts.js';
import { TipAccounts } from './chains/solana/tip.js';
import { initKeccak } from './chains/evm/hash.js';
import { ed25519Arith, ed25519Backend, ed25519FallbackReason } from './chains/solana/verify.js';
import { loadAcceptor, describeAcceptor, type TemplatedApp, type us_listen_socket } from './ingress/uws.js';
import { attachConnectionCaps, connectionCaps, type ConnectionCaps } from './ingress/conn-caps.js';
import { readTls, uwsTlsOptions, type TlsListener, type TlsPair } from './ingress/tls.js';
import { listenOn, probeListen } from './ingress/listen.js';
import { HttpService, ACCEPT_BUCKETS } from './ingress/service.js';
import { AcceptorThreads } from './ingress/acceptors.js';
import { UdpIngress } from './ingress/udp.js';
import { createAdminApp } from './ingress/admin.js';
import { listenMetrics } from './ingress/metrics-listener.js';
import { Metrics } from './obs/metrics.js';
import { mergeStats, type ServiceStats } from './obs/service-stats.js';
import { registerRelayMetrics } from './obs/relay-metrics.js';
import { silentLogger, scrub, type Logger } from './obs/log.js';
import { DataDirError } from './errors.js';
import { base58Backend } from './native/base58.js';
import { Replay, writeSpill } from './forward/spill.js';
import type { SpillEntry } from './forward/lane.js';
import { nativeUnavailableReason } from './native/addon.js';
import type { LandingService } from './landing/start.js';
import type { TpuRoute } from './tpu/route.js';
import { landingFamilies } from './landing/families.js';

/** Batch records older than the store's retention (7 days) are pruned hourly when no database takes them. */
const PRUNE_INTERVAL_MS = 3600_000;
/** Graceful shutdown: how long in-flight checks and forwarding may take. */
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
  metrics: number | null;
}

interface Parts {
  log: Logger;
  db: Store;
  /** Postgres registry mode: its feed and writer connections close on stop. */
  pgRegistry: PgRegistry | null;
  batches: BatchStore;
  uploader: Uploader | null;
  pruneTimer: NodeJS.Timeout | null;
  /** Serves HTTP with one acceptor, and UDP always. */
  service: HttpService;
  acceptors: AcceptorThreads | null;
  udp: UdpIngress | null;
  listen: us_listen_socket[];
  apps: TemplatedApp[];
  closeListener: (s: us_listen_socket) => void;
  dataDir: string;
  /** The last stop's spill being resent (docs/operations.md#graceful-shutdown). */
  replay: Replay | null;
  landing: LandingService | null;
  /** The listening apps (the HTTP one, the admin one) and what a certificate reload swaps under them. */
  tls: Record<TlsListener, TlsDoor | null>;
}

/** A listener with TLS: its listening app, the app taking its new connections since the last reload, and how to make one. */
interface TlsDoor {
  listener: TemplatedApp;
  /** The child app a reload added (uWS), removed at the next reload; its live connections stay with it. */
  child: TemplatedApp | null;
  pair: TlsPair;
  /** uWS: a new app with every route for this pair. */
  make: (pair: TlsPair) => TemplatedApp;
  caps: ConnectionCaps | null;
}

export class Relay {
  private stopped: Promise<void> | null = null;

  private constructor(
    readonly config: Config,
    readonly ports: RelayPorts,
    readonly adminToken: string,
    /** The main thread's pipeline. */
    readonly pipeline: Pipeline,
    readonly metrics: Metrics,
    readonly acceptor: 'uws' | 'node',
    /** Threads serving HTTP: 1 is the main thread. */
    readonly acceptors: number,
    private readonly parts: Parts,
  ) {}

  /**
   * SIGHUP: each listener's certificate and key are read again from the same
   * paths. New connections get the new pair; live connections keep theirs
   * (node:https swaps its secure context; uWS cannot, so a new app with every
   * route takes the listener's new connections while the old one serves its
   * own until they close). A pair that does not check out is refused and the
   * one in force stays. Resolves to what each listener did.
   */
  reloadTls(): Promise<{ listener: TlsListener; ok: boolean; error?: string }[]> {
    // One at a time: SIGHUPs in quick succession must not interleave their hand-overs.
    const next = this.tlsReload.then(() => this.swapTls());
    this.tlsReload = next.catch(() => {});
    return next;
  }

  private tlsReload: Promise<unknown> = Promise.resolve();

  private async swapTls(): Promise<{ listener: TlsListener; ok: boolean; error?: string }[]> {
    const p = this.parts;
    const out: { listener: TlsListener; ok: boolean; error?: string }[] = [];
    for (const name of ['http', 'admin'] as const) {
      const door = p.tls[name];
      if (door === null) continue;
      let pair: TlsPair;
      try {
        pair = readTls(name, door.pair.certFile, door.pair.keyFile)!;
      } catch (e) {
        const error = (e as Error).message;
        p.log.error({ listener: name, error }, 'TLS reload refused: the certificate in force stays');
        out.push({ listener: name, ok: false, error });
        continue;
      }
      if (door.listener.setTls) {
        door.listener.setTls(uwsTlsOptions(pair));
      } else if (name === 'http' && p.acceptors) {
        await p.acceptors.reloadTls();
      } else if (door.listener.addChildAppDescriptor && door.listener.getDescriptor) {
        const next = door.make(pair);
        if (door.caps) attachConnectionCaps(next, door.caps);
        door.listener.addChildAppDescriptor(next.getDescriptor!());
        if (door.child) door.listener.removeChildAppDescriptor?.(door.child.getDescriptor!());
        // The service closes its own apps; the admin ones close with the relay.
        if (name === 'admin') p.apps.push(next);
        door.child = next;
      } else {
        const error = 'this uWebSockets.js build cannot hand connections to a new app: the new certificate takes effect at the next restart';
        p.log.warn({ listener: name }, error);
        out.push({ listener: name, ok: false, error });
        continue;
      }
      door.pair = pair;
      p.log.info({ listener: name, fingerprint: pair.fingerprint, valid_to: pair.validTo }, 'TLS certificate reloaded: new connections get it, live ones keep theirs');
      out.push({ listener: name, ok: true });
    }
    return out;
  }

  static async start(opts: RelayOptions): Promise<Relay> {
    const cfg = opts.config;
    const log = opts.logger ?? silentLogger;
    const clock = opts.clock ?? systemClock;
    const acceptor = loadAcceptor(cfg.http.acceptor);
    const uws = acceptor.uws;
    // An unasked-for fallback costs CPU per request (docs/operations.md).
    const fellBack = acceptor.kind === 'node' && cfg.http.acceptor === 'auto';
    log[fellBack ? 'warn' : 'info']({ acceptor: acceptor.name, base58: base58Backend, ed25519: ed25519Backend, ...(ed25519Arith !== null ? { ed25519_arith: ed25519Arith } : {}) }, describeAcceptor(acceptor, cfg.http.acceptor));
    if (ed25519Backend !== 'native') log.warn(`Ed25519 signatures are checked by ${ed25519Backend}, not the native addon: ${ed25519FallbackReason ?? 'unavailable'}`);
    if (nativeUnavailableReason !== null) log.warn(`native addon ${nativeUnavailableReason}: base58 and keccak-256 run in JavaScript and WebAssembly`);
    const threads = acceptorThreads(cfg.http.acceptors, uws.App(), acceptor.name, log);
    // Before anything is opened: a missing, unreadable or mismatched pair is one start-up line (docs/operations.md#tls).
    const httpTls = readTls('http', cfg.http.tls_cert_file, cfg.http.tls_key_file);
    const adminTls = readTls('admin', cfg.admin.tls_cert_file, cfg.admin.tls_key_file);
    const dataDir = resolve(cfg.storage.data_dir);
    let adminToken: string;
    try {
      makeDir(dataDir);
      adminToken = cfg.admin.token || adminTokenFile(dataDir);
    } catch (e) {
      throw dataDirError(dataDir, e);
    }
    await initKeccak();
    const storeLog = componentLog(log, 'store');
    let db: Store;
    try {
      db = Store.open(dataDir, { log: storeLog, lock: true });
    } catch (e) {
      throw dataDirError(dataDir, e);
    }
    let pgRegistry: PgRegistry | null = null;
    let accounts: Registry;
    if (cfg.registry.mode === 'postgres') {
      try {
        const { PgRegistry } = await import('./store/pg-registry.js');
        pgRegistry = await PgRegistry.open({
          url: cfg.database.url,
          store: db,
          node: cfg.node.name,
          pollMs: cfg.registry.poll_interval_ms,
          timeoutMs: cfg.registry.timeout_ms,
          retentionS: cfg.registry.change_retention_s,
          log: componentLog(log, 'registry'),
        });
      } catch (e) {
        await db.close();
        throw e;
      }
      accounts = pgRegistry;
    } else {
      accounts = AccountStore.open(db);
    }
    const batches = new BatchStore(db);

    const t0 = clock();
    const ipLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.limits.ip_rps, burst: cfg.limits.ip_burst });
    // Status reads per account, one budget however many threads answer them.
    const statusReads = IpLimiter.create({ nowMs: t0, rate: cfg.status.reads_per_s, burst: cfg.status.reads_burst, capacity: 4096 });
    const udpIpLimiter = IpLimiter.create({ nowMs: t0, rate: cfg.udp.ip_rps, burst: cfg.udp.ip_burst });
    const dedup = DedupFilter.create({ windowMs: cfg.dedup.window_s * 1000, capacity: cfg.dedup.capacity });
    let tips: TipAccounts | null = null;
    if (cfg.solana.tip_accounts.length > 0) tips = new TipAccounts(cfg.solana.tip_accounts);
    else if (cfg.solana.enabled) log.warn('solana.tip_accounts is empty: the bundle tip rule is disabled');

    // Seats every live account the store may hold: start-up never fails on stored state.
    const registry = AccountRegistry.create(accounts, clock);
    if (accounts.live > accounts.maxLive) {
      log.warn({ live: accounts.live, max: accounts.maxLive }, 'more live accounts than the cap: new registrations are refused until some are revoked');
    }
    const recorder: BatchRecorder = {
      newId: nextBatchId,
      persist: (rec) => batches.persist(rec),
      updateOutcome: (id, outcomes) =>
        batches.updateOutcome(id, storedItems(outcomes)).catch((e: unknown) => {
          storeLog.error(`batch outcome could not be made durable; the record keeps its hashes: ${e instanceof Error ? e.message : String(e)}`);
          throw e;
        }),
    };
    // Acceptor threads check inline; the main thread's service is then left UDP.
    const verifyThreads = threads > 1 ? 0 : workerThreads(cfg.workers.threads);
    // No other thread: the main thread is the tables' only user, so their locks are skipped (src/tables/lock.ts).
    if (verifyThreads === 0 && threads === 1) for (const t of [dedup, ipLimiter, udpIpLimiter, statusReads, registry.buckets]) t.soleThread();
    // With acceptor threads, what the main thread traces (UDP) reaches the threads' WebSocket subscribers.
    let threadFeed: AcceptorThreads | null = null;
    // Closed with the solana-single lane it feeds.
    // What only some configurations use loads only for them: a start (a test's, the CLI's) pays for what it runs.
    let tpu: TpuRoute | null = null;
    let registerTpuMetrics: ((m: Metrics) => void) | null = null;
    if (cfg.solana.enabled && cfg.solana.tpu.enabled) {
      const { startTpu, tpuMetrics } = await import('./tpu/start.js');
      const route = await startTpu(cfg, log, { threads });
      if (route) registerTpuMetrics = (m) => tpuMetrics(m, route);
      tpu = route;
    }
    const landing = landingFamilies(cfg).size > 0 ? new (await import('./landing/start.js')).LandingService(cfg, clock) : null;
    const service = await HttpService.start({
      cfg, uws, clock, log, accounts: registry, dedup, ipLimiter, udpIpLimiter, statusReads, tips, batches: recorder, threads: verifyThreads, name: 'main', landing: landing?.landing,
      feedLink: { watch: () => {}, publish: (account, json) => threadFeed?.publish(account, json) },
      tls: httpTls,
      tpu,
    });

    let uploader: Uploader | null = null;
    let pruneTimer: NodeJS.Timeout | null = null;
    if (!cfg.database.url) {
      // Without a database nothing uploads, so nothing would prune: keep the store bounded by retention.
      pruneTimer = setInterval(() => void batches.prune({ includeNotUploaded: true }).catch(() => {}), PRUNE_INTERVAL_MS);
      pruneTimer.unref();
    } else {
      const { Uploader } = await import('./store/uploader.js');
      uploader = new Uploader(batches, { url: cfg.database.url, log: componentLog(log, 'uploader') });
      uploader.start();
    }

    const udp = cfg.solana.enabled && cfg.udp.enabled ? new UdpIngress(service.pipeline) : null;
    // With acceptor threads the listener hands connections over before their handshake: the threads' apps do TLS.
    const listener = threads > 1 ? (httpTls ? uws.SSLApp(uwsTlsOptions(httpTls)) : uws.App()) : service.app;
    const acceptors =
      threads > 1
        ? await AcceptorThreads.start({ n: threads, cfg, listener, registry, batches, dedup, ipLimiter, udpIpLimiter, statusReads, log, localStatuses: service.localStatuses, feed: service.feed, landing: landing?.landing ?? null })
        : null;
    threadFeed = acceptors;
    // A revoked account's WebSockets close (the threads hear of changes through their own messages).
    registry.onSeated(({ rec }) => service.accountChanged(rec));
    // Every service's figures, gathered once per scrape.
    const metrics = new Metrics();
    let services: ServiceStats[] = [];
    let node = mergeStats([]);
    metrics.beforeRender = async () => {
      services = [service.stats(), ...(acceptors ? await acceptors.stats() : [])];
      node = mergeStats(services);
    };
    metrics.histogram('txrelay_accept_seconds', 'Time from the start of a request handler to its answer, by door.', 'door', ACCEPT_BUCKETS, () => node.accept);
    registerTpuMetrics?.(metrics);
    registerRelayMetrics(metrics, { stats: () => node, services: () => services, dedup, udp, batches, node: cfg.node.name, registry: pgRegistry });
    landing?.start(metrics, [service, acceptors]);

    const adminDeps = {
      uws,
      reply: service.reply,
      plans: cfg.plans,
      token: adminToken,
      accounts,
      settled: () => acceptors?.settled() ?? Promise.resolve(),
      batches,
      metrics,
      // Stays 200 while the node admits, however stale its replica: a database outage must not pull every region.
      health: () => ({
        ok: !service.pipeline.draining,
        node: cfg.node.name,
        draining: service.pipeline.draining,
        verify_queue_ms: service.verifier.queueMs(),
        // The replica's state: how far it is and how stale.
        ...(pgRegistry ? { registry: { mode: 'postgres', ...pgRegistry.feed.health() } } : {}),
      }),
    };
    const adminApp = createAdminApp({ ...adminDeps, tls: adminTls });
    // What the last stop wrote down goes out first, on the main thread's lanes.
    const forwardLog = (level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown>): void => log[level]({ ...fields, component: 'forward' }, msg);
    let replay: Replay | null = null;
    try {
      replay = Replay.start({ dataDir, lane: (n) => service.forwarder.lane(n), solanaMaxAgeMs: cfg.solana.spill_max_age_s * 1000, log: forwardLog });
    } catch (e) {
      log.error({ component: 'forward', error: e instanceof Error ? e.message : String(e) }, 'forwarding spill unreadable: left in place, not sent');
    }
    const listen: us_listen_socket[] = [];
    const ports: RelayPorts = { http: 0, udp: null, admin: 0, metrics: null };
    const relay = new Relay(cfg, ports, adminToken, service.pipeline, metrics, acceptor.kind, threads, {
      log,
      db,
      pgRegistry,
      batches,
      uploader,
      pruneTimer,
      service,
      acceptors,
      udp,
      listen,
      apps: [listener, adminApp],
      closeListener: (s) => uws.us_listen_socket_close(s),
      dataDir,
      replay,
      landing,
      tls: {
        http: httpTls && { listener, child: null, pair: httpTls, make: (pair) => service.sslApp(pair), caps: null },
        admin: adminTls && { listener: adminApp, child: null, pair: adminTls, make: (pair) => createAdminApp({ ...adminDeps, tls: pair }), caps: null },
      },
    });
    try {
      // With acceptor threads each takes its share of the caps (acceptor-thread.ts).
      const caps = acceptors ? null : connectionCaps(cfg.http, acceptor, log);
      if (relay.parts.tls.http) relay.parts.tls.http.caps = caps;
      ports.http = await listenOn(uws, listener, cfg.http.host, cfg.http.port, listen, 'http', caps);
      acceptors?.listen(cfg.http.host, ports.http);
      ports.admin = await listenOn(uws, adminApp, cfg.admin.host, cfg.admin.port, listen, 'admin');
      if (cfg.metrics.listen) ports.metrics = await listenMetrics(uws, metrics, service.reply, cfg.metrics.listen, listen, relay.parts.apps);
      if (udp) {
        const u = await udp.listen(cfg.udp.host, cfg.udp.port, cfg.udp.sockets).catch(async (e: unknown) => {
          throw await probeListen('udp', cfg.udp.host, cfg.udp.port, e);
        });
        ports.udp = u.port;
        if (u.sockets === 1 && cfg.udp.sockets !== 1 && !u.reusePort && availableParallelism() > 1) {
          log.info(`UDP: one socket on port ${u.port}: Node ${process.version} cannot share a UDP port (dgram reusePort needs Node >= 22.12)`);
        } else {
          log.info({ udp: u.port, sockets: u.sockets }, `UDP: ${u.sockets} socket(s) on port ${u.port}`);
        }
      }
    } catch (e) {
      // Nothing was admitted yet: stopping releases the workers, sockets, timers and the store's lock on data_dir.
      await relay.stop();
      throw e;
    }

    const at = { http: `${cfg.http.host}:${ports.http}`, admin: `${cfg.admin.host}:${ports.admin}`, udp: ports.udp };
    log.info({ registry: cfg.registry.mode, ...at, acceptors: threads, threads: verifyThreads, acceptor: acceptor.name }, 'txrelay listening');
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
    await p.udp?.close();
    p.landing?.stop();
    const deadline = Date.now() + DRAIN_MS;
    const unsent = p.replay?.stop() ?? [];
    const [mine, theirs] = await Promise.all([p.service.drain(deadline), p.acceptors?.drain(deadline) ?? { abandoned: 0, spill: [] }]);
    if (mine.abandoned + theirs.abandoned > 0) p.log.warn({ abandoned: mine.abandoned + theirs.abandoned }, 'shutdown: forwarding queue not fully drained');
    this.writeSpill([...unsent, ...mine.spill, ...theirs.spill]);
    if (p.pruneTimer) clearInterval(p.pruneTimer);
    // After the threads: their batch records are written here.
    await p.batches.flush();
    await p.uploader?.stop();
    await p.acceptors?.close();
    await p.service.close();
    for (const app of p.apps) app.close();
    await p.pgRegistry?.close();
    await p.db.close();
    p.log.info('txrelay stopped');
  }

  /** What the drain could not send, made durable before the node exits; the last start's spill goes only once this is written. */
  private writeSpill(entries: SpillEntry[]): void {
    const p = this.parts;
    const t0 = performance.now();
    try {
      const file = writeSpill(p.dataDir, entries);
      if (file !== null) {
        p.log.warn(
          { component: 'forward', items: entries.length, evm: entries.filter((e) => e.family === 'evm').length, write_ms: Math.round((performance.now() - t0) * 10) / 10, file },
          'shutdown: acknowledged transactions no upstream accepted are written to the data directory and will be sent by the next start',
        );
      }
      p.replay?.removeFiles();
    } catch (e) {
      p.log.error(
        { component: 'forward', reason: 'shutdown', items: entries.length, error: e instanceof Error ? e.message : String(e) },
        'shutdown: acknowledged transactions could not be written to the data directory: dropped',
      );
    }
  }
}

/**
 * `mkdir -p` one level at a time: Node's recursive mkdirSync loops forever
 * where the file system answers ENOENT for a directory it will never hold
 * (under /proc), so a mistyped data_dir would hang start-up.
 */
function makeDir(dir: string): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDir(parent);
  mkdirSync(dir, { mode: 0o700 });
}

/** File-system refusals become a DataDirError; anything else is not the directory's fault and stays as it is. */
function dataDirError(dir: string, e: unknown): unknown {
  const raw = (e as { code?: unknown })?.code;
  // lmdb reports the system's error number (13), node:fs its name (EACCES).
  const code = typeof raw === 'number' ? Object.entries(osConstants.errno).find(([, n]) => n === raw)?.[0] : raw;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? new DataDirError(dir, code, existsSync(dir), e) : e;
}

/** `workers.threads` 0: one per core beyond the main thread (availableParallelism honours the affinity mask). */
function workerThreads(configured: number): number {
  return configured > 0 ? configured : availableParallelism() - 1;
}

/** `http.acceptors` (0: one per core); more than one needs a uWS build that hands connections to other threads. */
function acceptorThreads(configured: number, probe: TemplatedApp, name: string, log: Logger): number {
  const want = configured > 0 ? configured : availableParallelism();
  const can = typeof probe.getDescriptor === 'function' && typeof probe.addChildAppDescriptor === 'function';
  probe.close();
  if (want > 1 && !can) {
    log.warn(`http.acceptors = ${configured}: ${name} cannot hand connections to other threads; one acceptor serves HTTP`);
    return 1;
  }
  return want;
}

/** Tagged with the part's name and scrubbed of anything that looks like a key. */
function componentLog(log: Logger, component: string): { info(m: string): void; warn(m: string): void; error(m: string): void } {
  return {
    info: (m) => log.info({ component }, scrub(m)),
    warn: (m) => log.warn({ component }, scrub(m)),
    error: (m) => log.error({ component }, scrub(m)),
  };
}
