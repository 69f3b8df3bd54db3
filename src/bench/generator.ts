/**
 * `runBench`: takes transactions from the cache or signs them, builds every
 * request body up front, drives one door in an open or closed loop and returns
 * the result (report.ts prints it). Requests count when their intended (open)
 * or actual (closed) start falls after the warm-up. A duplicate answer is a
 * 2xx but exercised the dedup fast path, so it is counted and called out.
 */
import { lookup } from 'node:dns/promises';
import dgram from 'node:dgram';
import os from 'node:os';
import { Pool } from 'undici';
import * as hdr from 'hdr-histogram-js';
import { buildTarget, DEFAULT_TIP_LAMPORTS, generateTransactions, isDoor, MAX_BUNDLE, randomTipAccount, scanBatchItems, txsPerRequest, type Door, type GenOptions } from './targets.js';
import { markTxCacheUsed, readTxCache, writeTxCache, type CacheKey } from './txcache.js';
import { LATE_MS, realClock, runClosedLoop, runOpenLoop, type Clock } from './scheduler.js';
import { ed25519SignBackend, secpSignBackend } from './txgen.js';
import { Refusals } from './refusals.js';
import { udpMetrics } from './udp-metrics.js';
import type { LandingResult } from './landed.js';

interface BenchOptions {
  door: Door;
  /** Relay HTTP base, e.g. http://127.0.0.1:8080 (its host is also the UDP target). */
  url: string;
  udpPort?: number;
  /** Account UUID. */
  key: string;
  /** Open loop at this many requests/s; absent: closed loop. */
  rate?: number;
  /** Concurrency bound: open loop default 64, closed loop default 32. */
  connections?: number;
  durationMs: number;
  warmupMs?: number;
  /** Transactions to pre-sign; default: what the run needs. */
  count?: number;
  chainId?: number;
  /** Transactions per bundle (1-4) or EVM batch. */
  batch?: number;
  tipAccount?: string;
  tipLamports?: number;
  /** Solana transactions meant to land (`--landed`): payer, blockhash, lamports; never cached. */
  solana?: GenOptions['solana'];
  /** Each acknowledged request's transactions (2xx, not a duplicate), warm-up included. */
  onAck?: (txs: Buffer[]) => void;
  /** Where signed transactions are cached; null: no cache. */
  cacheDir?: string | null;
  /** Sign new transactions even when a cache file exists. */
  fresh?: boolean;
  /** Relay admin base (for UDP: read txrelay_udp_datagrams_total before and after). */
  adminUrl?: string;
  /** Called once a second with a progress line (no newline). */
  onProgress?: (line: string) => void;
  /** Informational lines (cache, signing time), no newline. */
  onInfo?: (line: string) => void;
  /** Ends the run early (SIGINT). */
  signal?: AbortSignal;
  /** Tests: an injected clock. */
  clock?: Clock;
}

export interface Percentiles {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** One point of a latency percentile curve: `percentile` in %, `us` the latency at it. */
export interface CurvePoint {
  percentile: number;
  us: number;
}

/** One second of the measured window, by completion time: answers that were ok and the others by status or error code. */
export interface SecondBucket {
  /** Seconds from the end of the warm-up. */
  s: number;
  ok: number;
  errors: Record<string, number>;
}

export interface BenchResult {
  params: Record<string, unknown>;
  mode: 'open' | 'closed';
  /** Seconds from the end of the warm-up to the last measured completion. */
  measuredS: number;
  requests: { sent: number; ok: number; errors: number; duplicates: number; late: number; warmup: number };
  txs: { perRequest: number; sent: number; ok: number; duplicates: number; notSent: number };
  throughput: { okPerS: number; totalPerS: number; txOkPerS: number };
  statuses: Record<string, number>;
  /** Status → the relay's first refusal text with it (a JSON-RPC error's message and code, or the plain-text body). */
  refusals: Record<string, string>;
  /** µs; open loop: from the intended start; closed loop: from the actual start. Null for UDP (no answer). */
  latencyUs: Percentiles | null;
  /** Open loop only: µs from the actual start (what a coordinated-omission bench would report). */
  serviceTimeUs: Percentiles | null;
  /** The whole distribution behind latencyUs (and serviceTimeUs), for plotting; null for UDP. */
  curves: { latency: CurvePoint[]; service: CurvePoint[] | null } | null;
  /** Per-second counts over the measured window (the last second may be partial: measuredS says how long it was). */
  perSecond: SecondBucket[];
  schedule: { late: number; lateThresholdMs: number; maxSlipMs: number; maxBacklog: number } | null;
  exhausted: boolean;
  transactions: { count: number; source: 'cache' | 'signed'; signMs: number; file: string | null };
  udp: { sent: number; note: string; relay: Record<string, number> | null } | null;
  warnings: string[];
  /** `--landed`: what became of the acknowledged transactions on chain; null without it. */
  landing: LandingResult | null;
  generator: {
    cpuUserMs: number;
    cpuSystemMs: number;
    /** CPU time over wall time of the run, in percent of one core. */
    cpuPercentOfOneCore: number;
    node: string;
    cpuModel: string;
    cpus: number;
    ed25519: string;
    secp256k1: string;
  };
  startedAt: string;
  finishedAt: string;
}

/** Open loop: connections are the in-flight bound; 64 covers 20k req/s at ~3 ms latency. */
const OPEN_LOOP_CONNECTIONS = 64;
/** Closed loop: enough concurrency to keep a 2-core relay busy without piling up queueing delay. */
const CLOSED_LOOP_CONNECTIONS = 32;
/** Closed loop, no --count: transactions for this many requests per second of run; exhaustion ends the run early and says so. */
const CLOSED_LOOP_DEFAULT_RPS = 10_000;
/** The relay's default dedup.window_s: a cache reused within it sends transactions the relay remembers. */
const DEDUP_WINDOW_S = 120;
/** Requests and answers in flight after the schedule ends get this long to finish. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Open-loop UDP sends in flight (waiting for the kernel); far above what a send's ~10 µs needs. */
const UDP_IN_FLIGHT = 1024;
/** A tip clearly above the default plans' min_tip_lamports (1000). */

interface Outcome {
  /** HTTP status, 'sent' (UDP), or an error code. */
  status: number | string;
  /** Transactions answered as duplicates. */
  dup: number;
  /** Transactions of a 2xx answer that were not sent (EVM batch items). */
  notSent: number;
}

function newHistogram(): hdr.Histogram {
  // µs resolution, 3 significant digits; autoResize keeps multi-second stalls.
  return hdr.build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1, autoResize: true, useWebAssembly: false });
}

function percentiles(h: hdr.Histogram): Percentiles | null {
  if (h.totalCount === 0) return null;
  // A percentile is its bucket's highest equivalent value, which can exceed the exact max: clamp.
  const max = h.maxValue;
  const at = (q: number): number => Math.min(h.getValueAtPercentile(q), max);
  return { count: h.totalCount, mean: Math.round(h.mean), p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max };
}

/** Curve points per decade of 1/(1-p): smooth enough on an HDR plot, ~20 points per "nine". */
const CURVE_STEPS_PER_DECADE = 20;

/**
 * The histogram's percentile curve at x = 1/(1-p) stepping evenly on a log
 * scale, up to where the samples run out (x = count), then the max.
 */
export function percentileCurve(h: hdr.Histogram): CurvePoint[] {
  if (h.totalCount === 0) return [];
  const max = h.maxValue;
  const out: CurvePoint[] = [];
  for (let k = 0; ; k++) {
    const x = 10 ** (k / CURVE_STEPS_PER_DECADE);
    if (x >= h.totalCount) break;
    const percentile = 100 - 100 / x;
    out.push({ percentile: Number(percentile.toPrecision(10)), us: Math.min(h.getValueAtPercentile(percentile), max) });
  }
  out.push({ percentile: Number((100 - 100 / Math.max(h.totalCount, 1)).toPrecision(10)), us: max });
  return out;
}

function validateOptions(o: BenchOptions): void {
  if (!isDoor(o.door)) throw new Error(`unknown door ${String(o.door)}`);
  if (o.rate !== undefined && !(o.rate > 0)) throw new Error('--rate must be positive');
  if (o.connections !== undefined && !(Number.isInteger(o.connections) && o.connections > 0)) throw new Error('--connections must be a positive integer');
  if (!(o.durationMs > 0)) throw new Error('--duration must be positive');
  if (o.door === 'solana-bundle' && o.batch !== undefined && (o.batch < 1 || o.batch > MAX_BUNDLE)) throw new Error(`--batch must be 1 to ${MAX_BUNDLE} for bundles`);
  if (o.batch !== undefined && !(Number.isInteger(o.batch) && o.batch > 0)) throw new Error('--batch must be a positive integer');
  if (!o.key) throw new Error('--key is required');
}

export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  validateOptions(opts);
  const door = opts.door;
  const clock = opts.clock ?? realClock;
  const warmupMs = opts.warmupMs ?? 0;
  const open = opts.rate !== undefined;
  const connections = opts.connections ?? (open ? OPEN_LOOP_CONNECTIONS : CLOSED_LOOP_CONNECTIONS);
  const batch = opts.batch ?? (door === 'solana-bundle' || door === 'evm-batch' ? 4 : 1);
  const per = txsPerRequest(door, batch);
  const chainId = opts.chainId ?? 1;
  const runS = (warmupMs + opts.durationMs) / 1000;
  const scheduled = open ? Math.floor(opts.rate! * runS) : Math.ceil(CLOSED_LOOP_DEFAULT_RPS * runS);
  const count = Math.floor((opts.count ?? scheduled * per) / per) * per;
  if (count < per) throw new Error('--count is smaller than one request');
  const warnings: string[] = [];
  const info = opts.onInfo ?? (() => {});
  const tipAccount = door === 'solana-bundle' ? (opts.tipAccount ?? randomTipAccount()) : undefined;
  if (door === 'solana-bundle' && !opts.tipAccount) {
    warnings.push('no --tip-account: bundles tip a random address, which only a relay without solana.tip_accounts accepts');
  }
  const tipLamports = door === 'solana-bundle' ? (opts.tipLamports ?? DEFAULT_TIP_LAMPORTS) : undefined;

  // ---- transactions ----------------------------------------------------------
  const key: CacheKey = { door, count, chainId, batch: per, tipAccount: opts.tipAccount ? tipAccount : undefined, tipLamports };
  let txs: Buffer[] | null = null;
  let source: 'cache' | 'signed' = 'signed';
  let createdAt = new Date().toISOString();
  let file: string | null = null;
  let signMs = 0;
  const cacheDir = opts.solana ? null : opts.cacheDir; // the cache key does not hold a payer or blockhash
  if (cacheDir && !opts.fresh) {
    const hit = readTxCache(cacheDir, key);
    if (hit) {
      txs = hit.txs;
      source = 'cache';
      createdAt = hit.header.createdAt;
      file = hit.file;
      const last = hit.header.lastUsedAt ? Date.parse(hit.header.lastUsedAt) : NaN;
      const ago = (Date.now() - last) / 1000;
      if (ago < DEDUP_WINDOW_S) {
        warnings.push(
          `cached transactions were last sent ${ago.toFixed(0)} s ago: a relay that still remembers them (dedup.window_s, default ${DEDUP_WINDOW_S} s) answers duplicates; use --fresh to sign new ones`,
        );
      }
      info(`transactions: ${count} from cache ${file}`);
    }
  }
  if (txs === null) {
    const t = performance.now();
    txs = await generateTransactions(door, count, { chainId, batch: per, tipAccount, tipLamports, solana: opts.solana });
    signMs = performance.now() - t;
    info(`transactions: signed ${count} in ${(signMs / 1000).toFixed(2)} s (${ed25519Or(door)})`);
    if (cacheDir) {
      try {
        file = writeTxCache(cacheDir, key, txs, { createdAt });
      } catch (e) {
        warnings.push(`could not write the transaction cache: ${(e as Error).message}`);
      }
    }
  }
  const target = buildTarget(door, txs, opts.key, per);
  const available = target.kind === 'http' ? target.bodies.length : target.datagrams.length;

  // ---- counters ----------------------------------------------------------------
  const latency = newHistogram();
  const service = newHistogram();
  const statuses: Record<string, number> = {};
  const refusals = new Refusals();
  const req = { sent: 0, ok: 0, errors: 0, duplicates: 0, late: 0, warmup: 0 };
  const tx = { perRequest: per, sent: 0, ok: 0, duplicates: 0, notSent: 0 };
  const all = { sent: 0, ok: 0, errors: 0 }; // warm-up included, for the progress line
  const perSecond: SecondBucket[] = [];
  let lastSecondSent = 0;
  let warmupEnd = 0;
  let lastEnd = 0;
  const isOk = (s: number | string): boolean => s === 'sent' || (typeof s === 'number' && s >= 200 && s < 300);

  const signed = txs;
  const onResult = (i: number, intended: number, started: number, ended: number, o: Outcome): void => {
    const ok = isOk(o.status);
    if (ok && o.dup === 0 && opts.onAck) opts.onAck(signed.slice(i * per, (i + 1) * per));
    all.sent++;
    if (ok) all.ok++;
    else all.errors++;
    if (intended < warmupEnd) {
      req.warmup++;
      return;
    }
    req.sent++;
    tx.sent += per;
    statuses[String(o.status)] = (statuses[String(o.status)] ?? 0) + 1;
    // Bucketed by completion: one array slot per second, so recording stays O(1).
    const sec = Math.max(0, Math.floor((ended - warmupEnd) / 1000));
    while (perSecond.length <= sec) perSecond.push({ s: perSecond.length, ok: 0, errors: {} });
    const b = perSecond[sec]!;
    if (ok) b.ok++;
    else b.errors[String(o.status)] = (b.errors[String(o.status)] ?? 0) + 1;
    if (ok) {
      req.ok++;
      tx.ok += per - o.notSent;
      tx.notSent += o.notSent;
    } else {
      req.errors++;
      tx.notSent += per;
    }
    if (o.dup > 0) req.duplicates++;
    tx.duplicates += o.dup;
    if (ended > lastEnd) lastEnd = ended;
    if (target.kind === 'http') {
      latency.recordValue(Math.max(1, Math.round((ended - intended) * 1000)));
      if (open) service.recordValue(Math.max(1, Math.round((ended - started) * 1000)));
    }
  };

  // ---- transport -----------------------------------------------------------------
  let send: (i: number) => Promise<Outcome>;
  let cleanup: () => Promise<void>;
  const udpBefore = target.kind === 'udp' && opts.adminUrl ? await udpMetrics(opts.adminUrl).catch(() => null) : null;
  if (target.kind === 'http') {
    const origin = new URL(opts.url).origin;
    const pool = new Pool(origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    const { path, headers, bodies, readBody } = target;
    send = async (i) => {
      try {
        const res = await pool.request({ origin, path, method: 'POST', headers, body: bodies[i] });
        let dup = res.headers['x-svc-duplicate'] === 'true' ? per : 0;
        let notSent = 0;
        const text = readBody || res.statusCode >= 300 ? await res.body.text() : await res.body.dump().then(() => '');
        if (res.statusCode >= 300) refusals.note(res.statusCode, text);
        if (readBody) ({ duplicate: dup, notSent } = scanBatchItems(text));
        return { status: res.statusCode, dup, notSent };
      } catch (e) {
        return { status: errorCode(e), dup: 0, notSent: 0 };
      }
    };
    cleanup = () => pool.close();
  } else {
    const host = new URL(opts.url).hostname.replace(/^\[|\]$/g, '');
    const { address, family } = await lookup(host); // once, not per send
    const sock = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
    const port = opts.udpPort ?? 16888;
    const { datagrams } = target;
    send = (i) =>
      new Promise<Outcome>((resolve) => {
        sock.send(datagrams[i]!, port, address, (err) => resolve(err ? { status: errorCode(err), dup: 0, notSent: 0 } : { status: 'sent', dup: 0, notSent: 0 }));
      });
    cleanup = () => new Promise<void>((resolve) => sock.close(() => resolve()));
  }

  // ---- run -------------------------------------------------------------------------
  const stopped = (): boolean => opts.signal?.aborted === true;
  const cpu0 = process.cpuUsage();
  const startedAt = new Date();
  const wall0 = performance.now();
  let runStart = clock.now();
  const progress = opts.onProgress
    ? setInterval(() => {
        const elapsed = (clock.now() - runStart) / 1000;
        const p99 = latency.totalCount > 0 ? `${latency.getValueAtPercentile(99)} µs` : target.kind === 'udp' ? 'n/a (udp)' : clock.now() < warmupEnd ? 'warm-up' : '-';
        opts.onProgress!(
          `${elapsed.toFixed(0).padStart(4)} s  sent ${all.sent}  ok ${all.ok}  errors ${all.errors}  rate ${all.sent - lastSecondSent}/s  p99 ${p99}`,
        );
        lastSecondSent = all.sent;
      }, 1000)
    : null;

  // UDP sends complete when the kernel takes the datagram: the bound only caps memory.
  const effConnections = target.kind === 'udp' && open ? Math.max(connections, UDP_IN_FLIGHT) : connections;
  let exhausted = false;
  let schedule: BenchResult['schedule'] = null;
  try {
    if (open) {
      const want = Math.floor(opts.rate! * runS);
      exhausted = want > available;
      const st = await runOpenLoop({
        rate: opts.rate!,
        total: Math.min(want, available),
        connections: effConnections,
        clock,
        send,
        onResult,
        stopped,
        onStart: (t0) => {
          runStart = t0;
          warmupEnd = t0 + warmupMs;
        },
      });
      schedule = { late: st.late, lateThresholdMs: LATE_MS, maxSlipMs: round3(st.maxSlipMs), maxBacklog: st.maxBacklog };
      req.late = st.late;
    } else {
      runStart = clock.now();
      warmupEnd = runStart + warmupMs;
      const r = await runClosedLoop({ connections, total: available, endAt: warmupEnd + opts.durationMs, clock, send, onResult, stopped });
      exhausted = r.exhausted;
    }
  } finally {
    if (progress) clearInterval(progress);
    await cleanup();
  }
  const wallMs = performance.now() - wall0;
  const cpu = process.cpuUsage(cpu0);
  if (cacheDir && txs.length > 0) {
    try {
      markTxCacheUsed(cacheDir, key, txs, createdAt);
    } catch {
      /* the cache is an optimisation */
    }
  }

  // ---- result ------------------------------------------------------------------------
  const measuredS = Math.max(lastEnd - warmupEnd, 1e-3) / 1000;
  if (exhausted) {
    warnings.push(
      `ran out of pre-signed transactions (${count}, ${available} requests): the run ended early instead of resending seen transactions; raise --count`,
    );
  }
  if (tx.duplicates > 0) {
    warnings.push(`${tx.duplicates} transactions were answered as duplicates: those requests measured the relay's dedup fast path, not admission`);
  }
  if (open && req.late > 0.01 * Math.max(req.sent, 1)) {
    warnings.push(
      `${req.late} requests started more than ${LATE_MS} ms behind schedule: the generator (CPU${target.kind === 'http' ? ` or --connections ${connections}` : ''}) limited the offered rate; latency still counts from the intended start`,
    );
  }
  warnings.push(...refusals.warnings(statuses));
  if (stopped()) warnings.push('interrupted: partial results');
  let udp: BenchResult['udp'] = null;
  if (target.kind === 'udp') {
    let relay: Record<string, number> | null = null;
    if (opts.adminUrl && udpBefore) {
      await new Promise((r) => setTimeout(r, 300)); // let the relay drain its socket
      const after = await udpMetrics(opts.adminUrl).catch(() => null);
      if (after) relay = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (udpBefore[k] ?? 0)]));
    }
    udp = { sent: req.sent, note: 'UDP has no answer: counts are datagrams handed to the kernel, not transactions admitted', relay };
  }
  const cpus = os.cpus();
  return {
    params: {
      door,
      url: opts.url,
      udpPort: door === 'solana-udp' ? (opts.udpPort ?? 16888) : undefined,
      rate: opts.rate ?? null,
      connections: effConnections,
      durationS: opts.durationMs / 1000,
      warmupS: warmupMs / 1000,
      count,
      chainId,
      batch: per,
      tipAccount: door === 'solana-bundle' ? tipAccount : undefined,
      tipLamports,
    },
    mode: open ? 'open' : 'closed',
    measuredS: round3(measuredS),
    requests: req,
    txs: tx,
    throughput: {
      okPerS: round1(req.ok / measuredS),
      totalPerS: round1(req.sent / measuredS),
      txOkPerS: round1(tx.ok / measuredS),
    },
    statuses,
    refusals: refusals.texts,
    latencyUs: target.kind === 'http' ? percentiles(latency) : null,
    serviceTimeUs: target.kind === 'http' && open ? percentiles(service) : null,
    curves: target.kind === 'http' && latency.totalCount > 0 ? { latency: percentileCurve(latency), service: open ? percentileCurve(service) : null } : null,
    perSecond,
    schedule,
    exhausted,
    transactions: { count, source, signMs: Math.round(signMs), file },
    udp,
    warnings,
    landing: null,
    generator: {
      cpuUserMs: Math.round(cpu.user / 1000),
      cpuSystemMs: Math.round(cpu.system / 1000),
      cpuPercentOfOneCore: round1(((cpu.user + cpu.system) / 1000 / wallMs) * 100),
      node: process.version,
      cpuModel: cpus[0]?.model ?? 'unknown',
      cpus: cpus.length,
      ed25519: ed25519SignBackend,
      secp256k1: secpSignBackend(),
    },
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
  };
}

function ed25519Or(door: Door): string {
  return door.startsWith('evm-') ? `secp256k1: ${secpSignBackend()}` : `ed25519: ${ed25519SignBackend}`;
}

function errorCode(e: unknown): string {
  const err = e as { code?: unknown; name?: unknown };
  return typeof err?.code === 'string' ? err.code : typeof err?.name === 'string' ? err.name : 'error';
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;
