/**
 * One HTTP service: a uWS app with every door, the pipeline, the checks, the
 * lanes and the answers. The main thread runs one, or each acceptor thread
 * its own, over the node's shared tables, so limits and duplicates stay per
 * node (docs/architecture.md).
 */
import type { Config } from '../config/schema.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../obs/log.js';
import { scrub } from '../obs/log.js';
import { LabelledHistogram } from '../obs/metrics.js';
import type { ServiceStats } from '../obs/service-stats.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { IpLimiter } from '../tables/ip-limiter.js';
import { Slab } from '../tables/slab.js';
import { JobTable } from '../exec/jobs.js';
import { Verifier } from '../exec/verifier.js';
import { Forwarder } from '../forward/forwarder.js';
import type { LaneTap } from '../forward/tap.js';
import type { SpillEntry } from '../forward/lane.js';
import type { TipAccounts } from '../chains/solana/tip.js';
import { Pipeline } from '../pipeline/admit.js';
import { Outcome } from '../pipeline/outcome.js';
import { Tracker, mergeStatuses, unknownStatus, type LandingHost, type StatusView } from '../status/tracker.js';
import type { Landed } from '../status/trace.js';
import { E, RelayError } from '../errors.js';
import type { AccountRecord } from '../store/accounts.js';
import type { Accounts } from '../pipeline/accounts.js';
import type { BatchRecorder } from '../pipeline/evm-batch.js';
import type { TemplatedApp, Uws } from './uws.js';
import { uwsTlsOptions, type TlsPair } from './tls.js';
import { AckFirst } from './ack-first.js';
import { BodyBudget } from './body.js';
import { Replier, TEXT_TYPE } from './reply.js';
import { clientIp } from './client-ip.js';
import type { DoorContext } from './doors/context.js';
import { registerJsonRpcDoor } from './doors/jsonrpc.js';
import { registerStatusDoor } from './doors/status.js';
import { registerPing, registerSolanaDoors } from './doors/solana.js';
import { registerEvmTextDoor } from './doors/evm.js';
import { registerWsDoor, type WsDoor } from './doors/ws.js';
import { StatusFeed, type FeedLink } from '../status/feed.js';

/** Transaction bytes in flight per service (~27k maximum-size Solana transactions); full means 503 at once. */
const SLAB_BYTES = 32 * 1024 * 1024;
/** Accept latency per door, handler start to answer. */
export const ACCEPT_BUCKETS = [0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];

interface ServiceDeps {
  cfg: Config;
  uws: Uws;
  clock: Clock;
  log: Logger;
  accounts: Accounts;
  dedup: DedupFilter;
  ipLimiter: IpLimiter;
  udpIpLimiter: IpLimiter;
  /** Status reads per account (`status.reads_per_s`), shared by every thread. */
  statusReads: IpLimiter;
  tips: TipAccounts | null;
  batches: BatchRecorder;
  /** Verification worker threads; 0 checks inline. */
  threads: number;
  worker?: { filename: URL; data?: Record<string, unknown> };
  /** `main`, or an acceptor thread's index. */
  name: string;
  /** Acceptor threads: the statuses the node's other trackers hold for these ids (docs/protocol.md#status). */
  statusesElsewhere?: (accountId: number, ids: readonly string[], done: (lists: StatusView[][]) => void) => void;
  /** Acceptor threads: how pushed status changes reach the other threads' WebSocket subscribers. */
  feedLink?: FeedLink;
  /** HTTPS and wss:// with this pair (docs/operations.md#tls). */
  tls?: TlsPair | null;
  /** The main thread's TPU route, when on (src/tpu/start.ts). */
  tpu?: LaneTap | null;
  /** Where forwarded transactions are followed on chain (the main thread's landing, or a thread's link to it); null: not followed. */
  landing?: LandingHost | null;
}

export class HttpService {
  /** The statuses this service's tracker holds for an account's ids (the others' asked for them). */
  localStatuses: (accountId: number, ids: readonly string[]) => StatusView[] = () => [];
  /** What the chain said about transaction `id`, for this service's traces of it. */
  landed: (id: string, l: Landed) => void = () => {};

  private constructor(
    readonly name: string,
    readonly app: TemplatedApp,
    readonly pipeline: Pipeline,
    readonly verifier: Verifier,
    readonly forwarder: Forwarder,
    readonly reply: Replier,
    private readonly slab: Slab,
    private readonly accounts: Accounts & { refusedRecords: number },
    private readonly accept: LabelledHistogram,
    /** Pushed status changes for the WebSocket door's subscribers. */
    readonly feed: StatusFeed,
    private readonly ws: WsDoor | null,
    private readonly bodies: BodyBudget,
    private readonly uws: Uws,
    /** Every door on another app (a certificate reload's). */
    private readonly mount: (app: TemplatedApp) => WsDoor | null,
  ) {}

  /** Apps made after the first, for a new certificate, and their WebSocket doors. */
  private readonly reloaded: { app: TemplatedApp; ws: WsDoor | null }[] = [];

  /**
   * uWS cannot change an app's certificate: a new SSLApp with every door
   * takes the new connections (the listener hands them over) while the old
   * one keeps serving its live connections (docs/operations.md#tls).
   */
  sslApp(pair: TlsPair): TemplatedApp {
    const app = this.uws.SSLApp(uwsTlsOptions(pair));
    this.reloaded.push({ app, ws: this.mount(app) });
    return app;
  }

  private get wsDoors(): WsDoor[] {
    return [this.ws, ...this.reloaded.map((r) => r.ws)].filter((w): w is WsDoor => w !== null);
  }

  static async start(d: ServiceDeps & { accounts: Accounts & { refusedRecords: number } }): Promise<HttpService> {
    const { cfg, log, clock } = d;
    const slab = Slab.create({ capacity: SLAB_BYTES });
    const jobs = JobTable.create();
    const ack = new AckFirst(cfg.http.ack_first);
    const reply = new Replier({ coalesce: cfg.http.coalesce_answers, ack, node: cfg.node.name });
    const verifier = new Verifier({
      threads: d.threads,
      jobs,
      slab,
      dedup: d.dedup,
      chainId: BigInt(cfg.evm.chain_id),
      clock,
      controller: { targetMs: cfg.limits.queue_target_ms, maxMs: cfg.limits.queue_max_ms },
      inline: cfg.workers.inline,
      worker: d.worker,
      // The scheduler runs the verifier's turn ends and takes its answers (reply.ts).
      owner: { settled: reply.commits, turn: reply.turn, wake: reply.wake },
      onWorkerError: (index, err) =>
        log.error({ worker: index, error: scrub(err instanceof Error ? err.message : String(err)) }, 'verification worker stopped; restarting it'),
    });
    await verifier.start();
    const forwarder = new Forwarder({
      lanes: {
        'evm-paid': cfg.evm.upstreams.paid,
        'evm-free': cfg.evm.upstreams.free,
        // `solana.tpu.mode = "only"`: the TPU route alone (docs/protocol.md#forwarding).
        'solana-single': d.tpu && cfg.solana.tpu.mode === 'only' ? [] : cfg.solana.rpc_upstreams,
        'solana-bundle': cfg.solana.bundle_upstreams,
      },
      queueCapacity: cfg.limits.queue_capacity,
      log: (level, msg, fields) => log[level]({ ...fields, component: 'forward' }, scrub(msg)),
      schedule: ack.after,
      tap: d.tpu,
      // What every service would say alike is said once, by the main thread's.
      warnDry: d.name === 'main',
    });
    const feed = new StatusFeed(d.feedLink ?? null);
    const tracker = cfg.status.enabled ? new Tracker({ retentionMs: cfg.status.retention_s * 1000, finalRetentionMs: cfg.status.final_retention_s * 1000, maxEntries: cfg.status.max_tracked, node: cfg.node.name, feed, landing: d.landing }) : null;
    const local = (accountId: number, ids: readonly string[]): StatusView[] => ids.map((id) => tracker?.status(id, accountId) ?? unknownStatus(id, cfg.node.name));
    const statuses = (account: AccountRecord, ids: readonly string[], done: (o: Outcome) => void): void => {
      const wait = d.statusReads.tryTake(`account ${account.id}`, 1, clock());
      if (wait > 0) return done(Outcome.refused(new RelayError(E.RATE_ACCOUNT, String(cfg.status.reads_per_s), wait)));
      const mine = local(account.id, ids);
      // No ids (a WebSocket upgrade or subscription): only the read's limit applies.
      if (d.statusesElsewhere === undefined || ids.length === 0) return done(Outcome.answered(mine));
      d.statusesElsewhere(account.id, ids, (lists) => done(Outcome.answered(mergeStatuses([mine, ...lists]))));
    };
    const pipeline = new Pipeline({
      clock,
      accounts: d.accounts,
      ipLimiter: d.ipLimiter,
      ipRps: cfg.limits.ip_rps,
      udpIpLimiter: d.udpIpLimiter,
      udpIpRps: cfg.udp.ip_rps,
      dedup: d.dedup,
      slab,
      jobs,
      verifier,
      forwarder,
      tips: d.tips,
      evmChainId: BigInt(cfg.evm.chain_id),
      enabled: { evm: cfg.evm.enabled, solana: cfg.solana.enabled },
      shedHoldMs: cfg.limits.shed_hold_ms,
      heldRefusals: reply.heldRefusals,
      batches: d.batches,
      maxBody: cfg.http.max_body_bytes,
      tracker,
      statuses,
      turn: reply,
    });
    reply.drive({ verifier, checked: pipeline.onChecked });
    const accept = new LabelledHistogram(ACCEPT_BUCKETS);
    const bodies = new BodyBudget(cfg.http.max_buffered_body_bytes);
    const app = d.tls ? d.uws.SSLApp(uwsTlsOptions(d.tls)) : d.uws.App();
    const doors: DoorContext = {
      app,
      pipeline,
      reply,
      ack,
      ip: (res, req) => clientIp(res, req, cfg.http.trust_proxy ? cfg.http.proxy_hops : 0),
      maxBody: cfg.http.max_body_bytes,
      maxBatch: cfg.evm.max_batch,
      enabled: { evm: cfg.evm.enabled, solana: cfg.solana.enabled },
      timer: (door) => accept.labels(door),
      node: cfg.node.name,
      bodies,
      tipAccounts: cfg.solana.tip_accounts,
    };
    const mount = (on: TemplatedApp): WsDoor | null => {
      const ctx: DoorContext = { ...doors, app: on };
      registerPing(ctx);
      if (cfg.solana.enabled) registerSolanaDoors(ctx);
      if (cfg.evm.enabled) registerEvmTextDoor(ctx);
      const rpcMessage = registerJsonRpcDoor(ctx);
      registerStatusDoor(ctx);
      const wsDoor = cfg.ws.enabled
        ? registerWsDoor(ctx, rpcMessage, feed, { idleTimeoutS: cfg.ws.idle_timeout_s, maxBufferedBytes: cfg.ws.max_buffered_bytes, maxSubscriptions: cfg.ws.max_subscriptions, maxAccountSubscriptions: cfg.ws.max_account_subscriptions })
        : null;
      on.any('/*', (res) => {
        res.cork(() => res.writeStatus('404 Not Found').writeHeader('content-type', TEXT_TYPE).writeHeader('x-svc-node', cfg.node.name).end('Not Found'));
      });
      return wsDoor;
    };
    const ws = mount(app);
    const service = new HttpService(d.name, app, pipeline, verifier, forwarder, reply, slab, d.accounts, accept, feed, ws, bodies, d.uws, mount);
    service.localStatuses = local;
    if (tracker) service.landed = (id, l) => tracker.landed(id, l);
    return service;
  }

  stats(): ServiceStats {
    const p = this.pipeline;
    const v = this.verifier;
    const counts = (c: { values: Map<string, number> }) => Object.fromEntries(c.values);
    return {
      name: this.name,
      admitted: counts(p.admitted),
      duplicates: counts(p.duplicates),
      rejected: counts(p.rejected),
      rejectedByDoor: counts(p.rejectedByDoor),
      verify: { acceptor: v.stats.acceptor, workers: v.stats.workers, internal: v.stats.internal, expired: v.stats.expired, restarts: v.workerRestarts, workerBusyMs: v.stats.workerBusyMs },
      shed: { standing: v.controller.shedStanding, overMax: v.controller.shedOverMax },
      queueMs: v.queueMs(),
      slabUsed: this.slab.used,
      refusedRecords: this.accounts.refusedRecords,
      sockets: this.sockets,
      bodyBytes: this.bodies.used,
      lanes: Object.values(this.forwarder.stats().lanes),
      accept: this.accept.snapshot(),
    };
  }

  /**
   * Graceful stop, first half: refuse new work, answer held refusals, let
   * checks and lanes drain by `deadline` (Date.now() scale). Resolves to the
   * transactions no upstream accepted in time: `spill` is for the data
   * directory (docs/operations.md#graceful-shutdown).
   */
  async drain(deadline: number): Promise<{ abandoned: number; spill: SpillEntry[] }> {
    this.pipeline.draining = true;
    // The connections close before their hold would end.
    this.reply.releaseHeld();
    while (this.verifier.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const { abandoned, spill } = await this.forwarder.drain(Math.max(0, deadline - Date.now()));
    return { abandoned, spill };
  }

  /** An account changed (admin API, registry feed): a revoked account's WebSockets close. */
  accountChanged(rec: AccountRecord): void {
    for (const w of this.wsDoors) w.accountChanged(rec);
  }

  /** Open WebSockets. */
  get sockets(): number {
    return this.wsDoors.reduce((n, w) => n + w.size, 0);
  }

  async close(): Promise<void> {
    // Sockets get a close frame (1001) before the app closes their connections.
    for (const w of this.wsDoors) w.closeAll();
    await this.verifier.close();
    // What the verifier answered as it closed is resumed now, before the listeners go.
    this.reply.runCommits();
    this.app.close();
    for (const r of this.reloaded) r.app.close();
  }
}
