/**
 * `npm run bench:e2e`: the end-to-end benchmark report (issue items 4 and 5).
 *
 * For each entry point, in one run and with one CPU placement:
 *   - acceptor ceiling: a bare uWS server answering the same requests (bench/e2e/bare-server.ts), driven flat out by wrk;
 *   - crypto ceiling:   the same per-transaction checks in a tight loop (bench/e2e/crypto-loop.ts);
 *   - txrelay itself, sink as upstream: capacity (wrk flat out), then fixed rates of 50%, 90% and 200%
 *     of that capacity (Node open-loop generator, bench/e2e/openloop.ts).
 * Relay CPU comes from /proc/<pid>/stat (all threads), accepted counts from
 * its own /metrics, so neither depends on the load generator.
 *
 * Placement (2 cores): relay (main thread + its one verify worker) and the
 * ceilings on core 0; every load generator, the sink and this orchestrator
 * on core 1. So CPU per transaction compares like with like (one core does
 * all of the relay's work, as it does all of each ceiling's), and no
 * generator competes with the measured process.
 *
 * Writes bench/results/e2e-<date>.{json,md} and latest.{json,md}.
 * Env: E2E_SECONDS (measured window, default 5), E2E_DOORS (comma list),
 * E2E_PROFILE=always|never|auto (CPU profile when a target is missed).
 */
import { histogramQuantiles } from './e2e/histogram.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOORS, type Door, type DoorName, type Family } from './e2e/doors.js';
import { decodeBodies, encodeBodies, writeBodies } from './e2e/bodies.js';
import { coreBusySeconds, cpuModel, cpuSeconds, loadAvg, RssSampler, rssKb } from './e2e/proc.js';
import { startE2eSink, type E2eSink } from './e2e/sink.js';
import { summariseProfiles, type ProfileSummary } from './e2e/profile.js';
import { renderMarkdown, type DoorReport, type Report } from './e2e/report.js';
import type { OpenLoopOpts, OpenLoopResult } from './e2e/openloop.js';
import { solanaTransfers, evmTransfers } from '../src/bench/txgen.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const DIST = resolve(HERE, '..');
const CACHE = join(ROOT, 'bench', '.cache', 'e2e');
const RESULTS = join(ROOT, 'bench', 'results');
const LUA = join(ROOT, 'bench', 'e2e', 'wrk', 'bodies.lua');

const SECONDS = Number(process.env.E2E_SECONDS ?? 5);
const WARM_SECONDS = 2;
const CRYPTO_SECONDS = 3;
const DOOR_LIST = (process.env.E2E_DOORS ?? 'solana-v2,evm-text,solana-rpc,evm-rpc').split(',').map((s) => s.trim()) as DoorName[];
const PROFILE = process.env.E2E_PROFILE ?? 'auto';
const RELAY_CORE = '0';
/**
 * `workers.threads` for the relay: 0 (auto) on a one-core affinity mask
 * verifies inline on the main thread; BENCH_VERIFY_THREADS=1 measures the
 * worker hand-off on the same core instead.
 */
const VERIFY_THREADS = Number(process.env.BENCH_VERIFY_THREADS ?? 0);
const LOAD_CORE = '1';
const WRK_THREADS = 2;
const WRK_CONNECTIONS = 64;
/**
 * Connections for the relay's flat-out run. Closed loop with 64 in flight,
 * the verify queue's 3 ms budget sheds a large share of requests with 503
 * (see the 200% run for overload), and the shed answers' CPU would be billed
 * to the accepted ones; 16 keeps the queue inside the budget, so capacity is
 * the rate the relay sustains while accepting.
 */
const RELAY_WRK_CONNECTIONS = 16;
const OPEN_CONNECTIONS = 64;
const OVERLOAD_CONNECTIONS = 256;
/** Transactions signed per family and cached; each relay start gets fresh dedup state, so doors reuse the pool. */
const POOL = Number(process.env.E2E_POOL ?? 600_000);
const CHAIN_ID = 1;
/**
 * wrk's share of the pool, as a multiple of (one-core estimate from the
 * ceilings x seconds): the relay accepts less than the estimate and answers
 * its shed excess cheaply, so 1.3x leaves margin without starving the
 * fixed-rate runs. Exhaustion is detected and reported, never papered over.
 */
const WRK_SLICE = 1.3;

/** Issue item 5. */
export const TARGETS = { cpuRatio: 1.25, p99At50Ms: 2, p99AdmittedAt2xMs: 5, p99ShedAt2xMs: 1 };

const log = (m: string) => process.stderr.write(`[e2e] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- preflight -------------------------------------------------------------------

function preflight(): void {
  if (spawnSync('wrk', ['-v']).error) {
    log('wrk not found: install it with `apt-get install wrk` (Debian package) and run again');
    process.exit(2);
  }
  if (spawnSync('taskset', ['-V']).error) {
    log('taskset not found (util-linux): install it with `apt-get install util-linux`');
    process.exit(2);
  }
  // This process (sink, samplers) lives on the load core with every generator.
  spawnSync('taskset', ['-a', '-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => res(p));
    });
  });
}

// ---- transaction pools -------------------------------------------------------------

/** Raw signed transactions of a family, cached under bench/.cache/e2e (git-ignored). */
async function pool(family: Family): Promise<Buffer[]> {
  mkdirSync(CACHE, { recursive: true });
  const file = join(CACHE, `${family}-${POOL}-chain${CHAIN_ID}.bodies`);
  if (existsSync(file)) {
    const txs = decodeBodies(readFileSync(file));
    if (txs.length === POOL) return txs;
  }
  log(`signing ${POOL} ${family} transactions (cached afterwards in ${file})`);
  const t = performance.now();
  const txs = family === 'solana' ? solanaTransfers(POOL) : await evmTransfers(POOL, { chainId: CHAIN_ID });
  writeFileSync(file + '.tmp', encodeBodies(txs));
  spawnSync('mv', [file + '.tmp', file]);
  log(`signed in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return txs;
}

/** Hands out disjoint ranges of a pool, so no transaction reaches one relay twice. */
class Cursor {
  private at = 0;
  constructor(readonly txs: Buffer[]) {}
  take(n: number): Buffer[] {
    const end = Math.min(this.txs.length, this.at + Math.max(0, Math.floor(n)));
    const out = this.txs.slice(this.at, end);
    this.at = end;
    return out;
  }
  get left(): number {
    return this.txs.length - this.at;
  }
}

let bodyFiles = 0;
function bodiesFile(dir: string, door: Door, txs: Buffer[]): string {
  const f = join(dir, `${door.name}-${bodyFiles++}.bodies`);
  writeBodies(
    f,
    txs.map((t, i) => door.body(t, i)),
  );
  return f;
}

// ---- child processes ---------------------------------------------------------------

function pinned(core: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn('taskset', ['-c', core, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function collect(child: ChildProcess): Promise<{ out: string; err: string; code: number | null }> {
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((r) => child.on('close', (code) => r({ out, err, code })));
}

function waitLine(child: ChildProcess, prefix: string, ms = 15_000): Promise<string> {
  return new Promise((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error(`no "${prefix}" from child within ${ms} ms`)), ms);
    child.stdout!.on('data', (d) => {
      buf += d;
      const line = buf.split('\n').find((l) => l.startsWith(prefix));
      if (line) {
        clearTimeout(timer);
        res(line);
      }
    });
    child.once('exit', (c) => rej(new Error(`child exited (${c}) before "${prefix}"`)));
  });
}

async function stopChild(child: ChildProcess, ms = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await done;
  clearTimeout(timer);
}

function jsonLine<T>(out: string, what: string): T {
  const line = out.split('\n').find((l) => l.startsWith('E2E_JSON '));
  if (!line) throw new Error(`${what}: no result line in its output:\n${out.slice(-2000)}`);
  return JSON.parse(line.slice('E2E_JSON '.length)) as T;
}

// ---- wrk ---------------------------------------------------------------------------

export interface WrkResult {
  tool: string;
  requests: number;
  duration_us: number;
  connect_err: number;
  read_err: number;
  write_err: number;
  status_err: number;
  timeout_err: number;
  lat_p50_us: number;
  lat_p90_us: number;
  lat_p99_us: number;
  lat_max_us: number;
  exhausted_threads: number;
}

async function wrk(port: number, door: Door, uuid: string, file: string, seconds: number, cycle: boolean, connections = WRK_CONNECTIONS): Promise<WrkResult> {
  const headers = Object.entries(door.headers(uuid))
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  const child = spawn(
    'taskset',
    ['-c', LOAD_CORE, 'wrk', `-t${WRK_THREADS}`, `-c${connections}`, `-d${Math.max(1, Math.round(seconds))}s`, '-s', LUA, `http://127.0.0.1:${port}`],
    {
      env: { ...process.env, E2E_BODIES: file, E2E_THREADS: String(WRK_THREADS), E2E_PATH: door.path(uuid), E2E_HEADERS: headers, E2E_CYCLE: cycle ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const r = await collect(child);
  if (r.code !== 0) throw new Error(`wrk failed (${r.code}): ${r.err || r.out}`);
  return { tool: `wrk ${WRK_THREADS} threads, ${connections} connections (closed loop)`, ...jsonLine<Omit<WrkResult, 'tool'>>(r.out, 'wrk') };
}

async function openLoop(o: OpenLoopOpts): Promise<OpenLoopResult> {
  const child = pinned(LOAD_CORE, [process.execPath, join(DIST, 'bench', 'e2e', 'openloop.js'), JSON.stringify(o)]);
  const r = await collect(child);
  if (r.code !== 0) throw new Error(`open-loop generator failed (${r.code}): ${r.err}`);
  return jsonLine<OpenLoopResult>(r.out, 'open-loop generator');
}

// ---- ceilings ------------------------------------------------------------------------

interface AcceptorCeiling {
  tool: string;
  requestsPerSec: number;
  cpuUsPerRequest: number;
  lat_p50_us: number;
  lat_p99_us: number;
}

async function acceptorCeiling(door: Door, txs: Buffer[], dir: string): Promise<AcceptorCeiling> {
  const port = await freePort();
  const child = pinned(RELAY_CORE, [process.execPath, join(DIST, 'bench', 'e2e', 'bare-server.js'), String(port)]);
  try {
    await waitLine(child, 'READY');
    const file = bodiesFile(dir, door, txs);
    const uuid = randomUUID();
    await wrk(port, door, uuid, file, WARM_SECONDS, true);
    const count0 = await bareCount(port);
    const cpu0 = cpuSeconds(child.pid!);
    const w = await wrk(port, door, uuid, file, SECONDS, true);
    const cpu1 = cpuSeconds(child.pid!);
    const n = (await bareCount(port)) - count0;
    return {
      tool: w.tool,
      requestsPerSec: n / (w.duration_us / 1e6),
      cpuUsPerRequest: ((cpu1 - cpu0) * 1e6) / n,
      lat_p50_us: w.lat_p50_us,
      lat_p99_us: w.lat_p99_us,
    };
  } finally {
    await stopChild(child);
  }
}

async function bareCount(port: number): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/__count`);
  return Number(await r.text());
}

interface CryptoCeiling {
  tool: string;
  n: number;
  cpuUsPerTx: number;
  wallUsPerTx: number;
  backend: string;
}

async function cryptoCeiling(family: Family, txs: Buffer[], dir: string): Promise<CryptoCeiling> {
  const file = join(dir, `crypto-${family}.bodies`);
  writeBodies(file, family === 'evm' ? txs.map((t) => Buffer.from('0x' + t.toString('hex'), 'latin1')) : txs);
  const child = pinned(RELAY_CORE, [process.execPath, join(DIST, 'bench', 'e2e', 'crypto-loop.js'), family, file, String(CRYPTO_SECONDS)]);
  const r = await collect(child);
  if (r.code !== 0) throw new Error(`crypto loop failed: ${r.err}`);
  return { tool: 'tight loop, own process (bench/e2e/crypto-loop.ts)', ...(JSON.parse(r.out.trim()) as Omit<CryptoCeiling, 'tool'>) };
}

// ---- the relay -------------------------------------------------------------------------

interface Relay {
  child: ChildProcess;
  pid: number;
  port: number;
  adminPort: number;
  token: string;
  uuid: string;
  dir: string;
}

async function startRelay(sink: E2eSink, profileDir: string | null): Promise<Relay> {
  const port = await freePort();
  const adminPort = await freePort();
  const token = randomBytes(24).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-e2e-'));
  const high = '1000000';
  const env = {
    TXRELAY_HTTP_PORT: String(port),
    TXRELAY_ADMIN_PORT: String(adminPort),
    TXRELAY_ADMIN_TOKEN: token,
    TXRELAY_UDP_ENABLED: 'false',
    TXRELAY_STORAGE_DATA_DIR: dir,
    TXRELAY_LIMITS_IP_RPS: high,
    TXRELAY_LIMITS_IP_BURST: '2000000',
    TXRELAY_WORKERS_THREADS: String(VERIFY_THREADS),
    TXRELAY_LOG_LEVEL: 'warn',
    TXRELAY_SOLANA_RPC_UPSTREAMS: sink.url,
    TXRELAY_SOLANA_BUNDLE_UPSTREAMS: sink.url,
    TXRELAY_EVM_UPSTREAMS_PAID: sink.url,
    TXRELAY_EVM_UPSTREAMS_FREE: sink.url,
    TXRELAY_PLANS_PAID_EVM_TPS: high,
    TXRELAY_PLANS_PAID_SOLANA_TPS: high,
  };
  const node = profileDir ? [process.execPath, '--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [process.execPath];
  const child = pinned(RELAY_CORE, [...node, join(DIST, 'src', 'cli', 'main.js'), 'serve'], env);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.resume();
  const base = `http://127.0.0.1:${adminPort}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`relay exited at start-up: ${stderr}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 150) throw new Error(`relay not healthy after 15 s: ${stderr}`);
    await sleep(100);
  }
  const res = await fetch(`${base}/admin/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'paid', evm: { tps: 1_000_000, burst: 2_000_000 }, solana: { tps: 1_000_000, burst: 2_000_000, min_tip_lamports: 0 } }),
  });
  if (res.status !== 201) throw new Error(`account creation answered ${res.status}: ${await res.text()}`);
  const uuid = ((await res.json()) as { uuid: string }).uuid;
  return { child, pid: child.pid!, port, adminPort, token, uuid, dir };
}

async function stopRelay(r: Relay): Promise<void> {
  await stopChild(r.child, 30_000);
  rmSync(r.dir, { recursive: true, force: true });
}

interface Counters {
  admitted: number;
  rejected: Record<string, number>;
  /** txrelay_accept_seconds cumulative bucket counts by upper bound (all doors summed: one door runs at a time). */
  accept: Map<number, number>;
}

async function counters(r: Relay): Promise<Counters> {
  const text = await (await fetch(`http://127.0.0.1:${r.adminPort}/metrics`)).text();
  let admitted = 0;
  const rejected: Record<string, number> = {};
  const accept = new Map<number, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('txrelay_admitted_total')) admitted += Number(line.slice(line.lastIndexOf(' ') + 1));
    const h = /^txrelay_accept_seconds_bucket\{.*le="([^"]+)".*\} (\S+)/.exec(line);
    if (h) {
      const le = h[1] === '+Inf' ? Infinity : Number(h[1]);
      accept.set(le, (accept.get(le) ?? 0) + Number(h[2]));
    }
    const m = /^txrelay_rejected_total\{code="([^"]+)"\} (\S+)/.exec(line);
    if (m) rejected[m[1]!] = Number(m[2]);
  }
  return { admitted, rejected, accept };
}

function diffRejected(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) if (v - (a[k] ?? 0) > 0) out[k] = v - (a[k] ?? 0);
  return out;
}

/** CPU, admissions and peak RSS of the relay around one load run. */
async function measured<T>(
  r: Relay,
  run: () => Promise<T>,
): Promise<{
  result: T;
  cpuUsPerAccepted: number;
  accepted: number;
  cpuSeconds: number;
  rssPeakKb: number;
  rejected: Record<string, number>;
  otherOnCorePct: number;
  relaySide: ReturnType<typeof histogramQuantiles>;
}> {
  const c0 = await counters(r);
  const cpu0 = cpuSeconds(r.pid);
  const core0 = coreBusySeconds(Number(RELAY_CORE));
  const t0 = performance.now();
  const rss = new RssSampler(r.pid, 100);
  const result = await run();
  const rssPeakKb = rss.stop();
  const cpu1 = cpuSeconds(r.pid);
  const otherOnCorePct = (100 * (coreBusySeconds(Number(RELAY_CORE)) - core0 - (cpu1 - cpu0))) / ((performance.now() - t0) / 1000);
  const c1 = await counters(r);
  const accepted = c1.admitted - c0.admitted;
  return {
    result,
    accepted,
    cpuSeconds: cpu1 - cpu0,
    cpuUsPerAccepted: ((cpu1 - cpu0) * 1e6) / Math.max(1, accepted),
    rssPeakKb,
    rejected: diffRejected(c0.rejected, c1.rejected),
    otherOnCorePct,
    relaySide: histogramQuantiles(c0.accept, c1.accept),
  };
}

// ---- one door ------------------------------------------------------------------------------

async function runDoor(door: Door, txs: Buffer[], crypto: CryptoCeiling, sink: E2eSink, dir: string): Promise<DoorReport> {
  log(`${door.name}: acceptor ceiling (bare uWS, wrk flat out)`);
  const acceptor = await acceptorCeiling(door, txs.slice(0, 100_000), dir);
  const sumUs = acceptor.cpuUsPerRequest + crypto.cpuUsPerTx;
  const estimate = 1e6 / sumUs;
  log(`${door.name}: acceptor ${acceptor.cpuUsPerRequest.toFixed(1)} µs/req + crypto ${crypto.cpuUsPerTx.toFixed(1)} µs/tx → about ${estimate.toFixed(0)} tx/s on one core`);

  const cur = new Cursor(txs);
  const relay = await startRelay(sink, null);
  const note: string[] = [];
  try {
    log(`${door.name}: relay warm-up and capacity (wrk flat out)`);
    // Closed-loop flat out: at most ~2x the estimate can be answered (shed answers are cheap but not free).
    await wrk(relay.port, door, relay.uuid, bodiesFile(dir, door, cur.take(estimate * WARM_SECONDS * WRK_SLICE)), WARM_SECONDS, false, RELAY_WRK_CONNECTIONS);
    const rssIdleKb = rssKb(relay.pid);
    const capRun = await measured(relay, async () => wrk(relay.port, door, relay.uuid, bodiesFile(dir, door, cur.take(estimate * SECONDS * WRK_SLICE)), SECONDS, false, RELAY_WRK_CONNECTIONS));
    if (capRun.result.exhausted_threads > 0) note.push('capacity run: wrk ran out of distinct transactions before the end (capacity under-stated)');
    const capacity = capRun.accepted / (capRun.result.duration_us / 1e6);
    log(`${door.name}: capacity ${capacity.toFixed(0)} accepted tx/s, ${capRun.cpuUsPerAccepted.toFixed(1)} µs CPU per accepted tx`);

    const fixed = async (fraction: number, connections: number) => {
      const want = Math.round(capacity * fraction);
      // Shorten rather than repeat a transaction when the pool runs low.
      const seconds = Math.min(SECONDS, cur.left / Math.max(1, want));
      if (seconds < SECONDS) note.push(`${fraction * 100}% run shortened to ${seconds.toFixed(1)} s (transaction pool)`);
      const file = bodiesFile(dir, door, cur.take(want * seconds));
      log(`${door.name}: ${Math.round(fraction * 100)}% of capacity = ${want} req/s for ${seconds.toFixed(1)} s (open loop)`);
      const m = await measured(relay, () =>
        openLoop({ host: '127.0.0.1', port: relay.port, path: door.path(relay.uuid), headers: door.headers(relay.uuid), bodiesFile: file, rate: want, seconds, connections, okStatus: door.okStatus }),
      );
      return { fraction, ...m };
    };
    const at50 = await fixed(0.5, OPEN_CONNECTIONS);
    const at90 = await fixed(0.9, OPEN_CONNECTIONS);
    const at200 = await fixed(2, OVERLOAD_CONNECTIONS);
    return {
      door: door.name,
      label: door.label,
      acceptor,
      crypto,
      sumUs,
      relay: {
        capacity: { tool: capRun.result.tool, acceptedPerSec: capacity, requestsPerSec: capRun.result.requests / (capRun.result.duration_us / 1e6), cpuUsPerAccepted: capRun.cpuUsPerAccepted, wrk: capRun.result, rejected: capRun.rejected, rssPeakKb: capRun.rssPeakKb, otherOnCorePct: capRun.otherOnCorePct },
        rssIdleKb,
        runs: [at50, at90, at200].map((m) => ({
          fraction: m.fraction,
          tool: m.result.tool,
          cpuUsPerAccepted: m.cpuUsPerAccepted,
          accepted: m.accepted,
          rssPeakKb: m.rssPeakKb,
          rejected: m.rejected,
          otherOnCorePct: m.otherOnCorePct,
          relaySide: m.relaySide,
          load: m.result,
        })),
      },
      notes: note,
      profile: null,
    };
  } finally {
    await stopRelay(relay);
  }
}

/** A separate relay start under `node --cpu-prof`, one flat-out window, profiles summarised. */
async function profileDoor(door: Door, txs: Buffer[], sink: E2eSink, dir: string, estimate: number): Promise<ProfileSummary[]> {
  const profDir = mkdtempSync(join(tmpdir(), 'txrelay-e2e-prof-'));
  const relay = await startRelay(sink, profDir);
  try {
    const cur = new Cursor(txs);
    await wrk(relay.port, door, relay.uuid, bodiesFile(dir, door, cur.take(estimate * WARM_SECONDS * WRK_SLICE)), WARM_SECONDS, false, RELAY_WRK_CONNECTIONS);
    await wrk(relay.port, door, relay.uuid, bodiesFile(dir, door, cur.take(estimate * SECONDS * WRK_SLICE)), SECONDS, false, RELAY_WRK_CONNECTIONS);
  } finally {
    await stopRelay(relay);
  }
  const files = readdirSync(profDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(profDir, f));
  const out = summariseProfiles(files);
  rmSync(profDir, { recursive: true, force: true });
  return out;
}

// ---- main ----------------------------------------------------------------------------------------

function targetsMissed(d: DoorReport): boolean {
  const t = evaluate(d);
  return Object.values(t).some((x) => x.met === false);
}

export function evaluate(d: DoorReport): Record<string, { value: number; limit: number; met: boolean | null }> {
  const r50 = d.relay.runs.find((r) => r.fraction === 0.5);
  const r200 = d.relay.runs.find((r) => r.fraction === 2);
  const p99 = (r: (typeof d.relay.runs)[number] | undefined) => (r && r.load.accepted.count > 0 ? r.load.accepted.p99_us : NaN);
  const ratio = d.relay.capacity.cpuUsPerAccepted / d.sumUs;
  const cpuTarget = d.door === 'solana-v2' || d.door === 'evm-text';
  return {
    cpuRatio: { value: ratio, limit: TARGETS.cpuRatio, met: cpuTarget ? ratio <= TARGETS.cpuRatio : null },
    p99At50Ms: { value: p99(r50) / 1000, limit: TARGETS.p99At50Ms, met: r50?.load.accepted.count ? p99(r50) / 1000 < TARGETS.p99At50Ms : false },
    p99AdmittedAt2xMs: { value: p99(r200) / 1000, limit: TARGETS.p99AdmittedAt2xMs, met: r200?.load.accepted.count ? p99(r200) / 1000 < TARGETS.p99AdmittedAt2xMs : false },
    p99ShedAt2xMs: {
      value: (r200?.load.shed.p99_us ?? NaN) / 1000,
      limit: TARGETS.p99ShedAt2xMs,
      // No shed answers at all means the relay absorbed 2x: nothing to time.
      met: r200 && r200.load.shed.count > 0 ? r200.load.shed.p99_us / 1000 <= TARGETS.p99ShedAt2xMs : null,
    },
  };
}

async function main(): Promise<void> {
  preflight();
  const started = new Date();
  const loadBefore = loadAvg();
  const t0 = performance.now();
  const runDir = mkdtempSync(join(tmpdir(), 'txrelay-e2e-run-'));
  const sink = await startE2eSink();
  const doors = DOOR_LIST.map((n) => {
    const d = DOORS[n];
    if (!d) throw new Error(`unknown door ${n} (known: ${Object.keys(DOORS).join(', ')})`);
    return d;
  });
  const families = [...new Set(doors.map((d) => d.family))];
  const pools = new Map<Family, Buffer[]>();
  const cryptos = new Map<Family, CryptoCeiling>();
  for (const f of families) pools.set(f, await pool(f));
  for (const f of families) {
    log(`${f}: crypto ceiling (${CRYPTO_SECONDS} s tight loop on core ${RELAY_CORE})`);
    cryptos.set(f, await cryptoCeiling(f, pools.get(f)!.slice(0, 200_000), runDir));
  }
  const reports: DoorReport[] = [];
  try {
    for (const door of doors) {
      const txs = pools.get(door.family)!;
      const rep = await runDoor(door, txs, cryptos.get(door.family)!, sink, runDir);
      if (PROFILE === 'always' || (PROFILE === 'auto' && targetsMissed(rep))) {
        log(`${door.name}: CPU profile of one flat-out window (node --cpu-prof)`);
        rep.profile = await profileDoor(door, txs, sink, runDir, 1e6 / rep.sumUs);
      }
      reports.push(rep);
    }
  } finally {
    await sink.close();
    rmSync(runDir, { recursive: true, force: true });
  }
  const report: Report = {
    date: started.toISOString(),
    durationS: (performance.now() - t0) / 1000,
    hardware: { loadAvg: `${loadBefore} at start, ${loadAvg()} at end`, cpu: cpuModel(), cores: Number(spawnSync('nproc', ['--all'], { encoding: 'utf8' }).stdout.trim()), node: process.version, os: osRelease() },
    placement: { relayCore: RELAY_CORE, loadCore: LOAD_CORE, verifyThreads: VERIFY_THREADS },
    settings: { seconds: SECONDS, warmSeconds: WARM_SECONDS, wrkThreads: WRK_THREADS, wrkConnections: WRK_CONNECTIONS, relayWrkConnections: RELAY_WRK_CONNECTIONS, openConnections: OPEN_CONNECTIONS, overloadConnections: OVERLOAD_CONNECTIONS, sink: sink.impl },
    targets: TARGETS,
    doors: reports.map((d) => ({ ...d, evaluation: evaluate(d) })),
  };
  mkdirSync(RESULTS, { recursive: true });
  const stamp = started.toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
  const json = JSON.stringify(report, null, 2) + '\n';
  const md = renderMarkdown(report);
  writeFileSync(join(RESULTS, `e2e-${stamp}.json`), json);
  writeFileSync(join(RESULTS, `e2e-${stamp}.md`), md);
  writeFileSync(join(RESULTS, 'latest.json'), json);
  writeFileSync(join(RESULTS, 'latest.md'), md);
  process.stdout.write(md);
  log(`written bench/results/e2e-${stamp}.{json,md} and latest.{json,md} in ${report.durationS.toFixed(0)} s`);
}

function osRelease(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]+)/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'Linux';
  } catch {
    return 'Linux';
  }
}

main().catch((e) => {
  log(`failed: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
