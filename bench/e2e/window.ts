/**
 * One measured window: a load generator runs against a target process, and
 * the window is exactly the generator's timed phase. wrk prints "Running …"
 * when its threads start and "N requests in …" when they stop (line-buffered
 * through `stdbuf -oL`); the open-loop generator prints E2E_START / E2E_END.
 * At each marker the orchestrator snapshots, from outside the measured
 * process: its CPU (all threads and each thread, /proc), its counters
 * (/metrics or the bare server's count), every core's busy time, the CPU of
 * the generator, the sink and itself, and where its GC trace stands. So set-up
 * (wrk's Lua building requests, connecting) and tear-down stay out of every
 * figure.
 */
import { spawn } from 'node:child_process';
import { histogramQuantiles } from './histogram.js';
import { summariseGc, type GcSummary } from './gc.js';
import { coresBusySeconds, cpuSecondsOrNaN, RssSampler, threadSeconds } from './proc.js';
import type { Counts, Target } from './relay.js';

interface Snap {
  t: number;
  cpu: number;
  threads: Map<number, number>;
  cores: number[];
  aux: Record<string, number>;
  counts: Counts;
  gcAt: number;
}

/**
 * /proc first, synchronously, at the marker: a generator may exit right after
 * printing its end line. Counters follow over HTTP (a millisecond or two).
 * `last` holds each helper's latest periodic reading, used if it has exited.
 */
async function snap(target: Target, aux: Record<string, number>, last: Record<string, number>, cores: number): Promise<Snap> {
  const a: Record<string, number> = {};
  for (const [k, pid] of Object.entries(aux)) {
    const v = cpuSecondsOrNaN(pid);
    a[k] = Number.isFinite(v) ? v : (last[k] ?? NaN);
  }
  const t = performance.now();
  const cpu = cpuSecondsOrNaN(target.pid);
  const threads = threadSeconds(target.pid);
  const busy = coresBusySeconds(cores);
  const gcAt = target.gc ? target.gc.events.length : 0;
  return { t, cpu, threads, cores: busy, aux: a, counts: await target.counts(), gcAt };
}

/** Reads the helpers' CPU every 50 ms, so a generator that exits before its end snapshot is still accounted (within 50 ms). */
const AUX_SAMPLE_MS = 50;

export interface ThreadShare {
  /** "main" (tid = pid) or "thread k", k by CPU rank: Node names every thread "node", so the busiest non-main one at saturation is the verify worker. */
  label: string;
  cpuUsPerAccepted: number;
  /** Share of one core over the window, %. */
  corePct: number;
}

export interface RunStats {
  name: string;
  what: string;
  tool: string;
  connections: number;
  windowS: number;
  /** Answers the target counted: bare server requests; relay admissions + refusals. */
  answers: number;
  accepted: number;
  acceptedPerSec: number;
  refused: number;
  rejected: Record<string, number>;
  /** Of the capacity refusals, the queue controller's by reason (txrelay_shed_total deltas; empty for the bare server). */
  shed: Record<string, number>;
  cpuS: number;
  cpuUsPerAccepted: number;
  cpuUsPerAnswer: number;
  /** Target CPU ÷ window: cores it kept busy. */
  cores: number;
  threads: ThreadShare[];
  /** Client-side latency of accepted answers (wrk: all answers), µs. */
  latency: { p50Us: number; p99Us: number; maxUs: number };
  /** The relay's own accept-latency histogram over the window (bucket upper bounds, ms). */
  relaySide: { count: number; p50UpperMs: number; p99UpperMs: number } | null;
  /** % of one core over the window: the generator, the sink, the orchestrator, and everything else on the machine. */
  loadPct: { generator: number; sink: number; orchestrator: number; rest: number };
  /** How busy each CPU was over the window, % (index = CPU): with the target's own share, whether others crowded its core. */
  coreBusyPct: number[];
  gc: GcSummary[] | null;
  /** JS heap bytes allocated per accepted tx, all isolates (see gc.ts). */
  gcBytesPerAccepted: number;
  rssPeakKb: number;
  /** Status counts as the generator saw them (wrk: 2xx/3xx vs other; open loop: by status). */
  statuses: Record<string, number>;
  generator: Record<string, unknown>;
  notes: string[];
}

export interface LoadSpec {
  name: string;
  what: string;
  tool: string;
  connections: number;
  /** argv after `taskset -c <core>`. */
  argv: string[];
  env?: NodeJS.ProcessEnv;
  startMarker: string;
  endMarker: string;
  /** Parses the generator's output into latency, statuses and its raw result. */
  parse(out: string): { latency: RunStats['latency']; statuses: Record<string, number>; generator: Record<string, unknown> };
}

export interface WindowEnv {
  loadCore: string;
  cores: number;
  sinkPid: number | null;
}

/** Runs one generator against `target` and measures exactly its timed phase. */
export async function measureWindow(target: Target, spec: LoadSpec, env: WindowEnv): Promise<RunStats> {
  const child = spawn('taskset', ['-c', env.loadCore, ...spec.argv], { env: { ...process.env, ...spec.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const aux: Record<string, number> = { generator: child.pid!, orchestrator: process.pid };
  if (env.sinkPid !== null) aux.sink = env.sinkPid;
  let out = '';
  let err = '';
  let a: Promise<Snap> | null = null;
  let b: Promise<Snap> | null = null;
  let rss: RssSampler | null = null;
  let rssPeakKb = -1;
  const last: Record<string, number> = {};
  const sampler = setInterval(() => {
    for (const [k, pid] of Object.entries(aux)) {
      const v = cpuSecondsOrNaN(pid);
      if (Number.isFinite(v)) last[k] = v;
    }
  }, AUX_SAMPLE_MS);
  child.stderr!.on('data', (d) => (err += d));
  child.stdout!.on('data', (d) => {
    out += d;
    if (a === null && out.includes(spec.startMarker)) {
      a = snap(target, aux, last, env.cores);
      rss = new RssSampler(target.pid, 100);
    }
    if (a !== null && b === null && out.includes(spec.endMarker)) {
      b = snap(target, aux, last, env.cores);
      rssPeakKb = rss ? rss.stop() : -1;
    }
  });
  const code = await new Promise<number | null>((r) => child.on('close', r));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`${spec.tool} failed (${code}): ${err || out.slice(-2000)}`);
  if (a === null || b === null) throw new Error(`${spec.tool}: no "${spec.startMarker}" / "${spec.endMarker}" in its output:\n${out.slice(-2000)}`);
  const s0: Snap = await a;
  const s1: Snap = await b;
  const parsed = spec.parse(out);
  return stats(target, spec, s0, s1, parsed, rssPeakKb);
}

function stats(target: Target, spec: LoadSpec, s0: Snap, s1: Snap, parsed: ReturnType<LoadSpec['parse']>, rssPeakKb: number): RunStats {
  const windowS = (s1.t - s0.t) / 1000;
  const accepted = s1.counts.admitted - s0.counts.admitted;
  const rejected: Record<string, number> = {};
  let refused = 0;
  for (const [k, v] of Object.entries(s1.counts.rejected)) {
    const dv = v - (s0.counts.rejected[k] ?? 0);
    if (dv > 0) {
      rejected[k] = dv;
      refused += dv;
    }
  }
  const shed: Record<string, number> = {};
  for (const [k, v] of Object.entries(s1.counts.shed)) {
    const dv = v - (s0.counts.shed[k] ?? 0);
    if (dv > 0) shed[k] = dv;
  }
  const cpuS = s1.cpu - s0.cpu;
  const per = (s: number) => (accepted > 0 ? (s * 1e6) / accepted : NaN);
  const threads: ThreadShare[] = [];
  const others: { tid: number; s: number }[] = [];
  for (const [tid, t1] of s1.threads) {
    const d = t1 - (s0.threads.get(tid) ?? 0);
    if (tid === target.pid) threads.push({ label: 'main', cpuUsPerAccepted: per(d), corePct: (100 * d) / windowS });
    else others.push({ tid, s: d });
  }
  others.sort((x, y) => y.s - x.s);
  // Threads below 2% of a core (idle helpers) are summed, not listed.
  let rest = 0;
  others.forEach((o, i) => {
    if ((100 * o.s) / windowS >= 2) threads.push({ label: `thread ${i + 1}`, cpuUsPerAccepted: per(o.s), corePct: (100 * o.s) / windowS });
    else rest += o.s;
  });
  if (rest > 0) threads.push({ label: 'other threads', cpuUsPerAccepted: per(rest), corePct: (100 * rest) / windowS });
  const pct = (k: string) => (100 * ((s1.aux[k] ?? NaN) - (s0.aux[k] ?? NaN))) / windowS;
  const busy = s1.cores.reduce((x, v, i) => x + v - s0.cores[i]!, 0);
  const generator = pct('generator');
  const sink = 'sink' in s0.aux ? pct('sink') : 0;
  const orchestrator = pct('orchestrator');
  const restPct = (100 * busy) / windowS - (100 * cpuS) / windowS - generator - sink - orchestrator;
  let gc: GcSummary[] | null = null;
  let gcBytes = NaN;
  if (target.gc) {
    gc = summariseGc(target.gc.events.slice(s0.gcAt, s1.gcAt), target.gc.order);
    gcBytes = gc.reduce((x, g) => x + g.allocatedBytes, 0) / Math.max(1, accepted);
  }
  return {
    name: spec.name,
    what: spec.what,
    tool: spec.tool,
    connections: spec.connections,
    windowS,
    answers: accepted + refused,
    accepted,
    acceptedPerSec: accepted / windowS,
    refused,
    rejected,
    shed,
    cpuS,
    cpuUsPerAccepted: per(cpuS),
    cpuUsPerAnswer: (cpuS * 1e6) / Math.max(1, accepted + refused),
    cores: cpuS / windowS,
    threads,
    latency: parsed.latency,
    relaySide: s1.counts.accept.size ? histogramQuantiles(s0.counts.accept, s1.counts.accept) : null,
    loadPct: { generator, sink, orchestrator, rest: Math.max(0, restPct) },
    coreBusyPct: s1.cores.map((v, i) => (100 * (v - s0.cores[i]!)) / windowS),
    gc,
    gcBytesPerAccepted: gcBytes,
    rssPeakKb,
    statuses: parsed.statuses,
    generator: parsed.generator,
    notes: [],
  };
}
