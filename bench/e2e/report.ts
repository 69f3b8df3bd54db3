/** The end-to-end report's shape and its Markdown rendering (bench/results/*.md). */
import { openLoopCeiling, type Goal, type GoalName, type Verdict } from './goals.js';
import type { ProfileSummary } from './profile.js';
import type { GcSummary } from './gc.js';
import type { RunStats } from './window.js';

export interface CryptoCeiling {
  tool: string;
  n: number;
  cpuUsPerTx: number;
  wallUsPerTx: number;
  backend: string;
  /** The measurements this one is the mean of (bench:e2e: before a door's windows and after its pinned ones). */
  runs?: { cpuUsPerTx: number; wallUsPerTx: number }[];
}

/**
 * One crypto ceiling from several runs of the loop: the mean per-transaction
 * CPU and wall time, with the runs kept. A door's windows take minutes on a
 * shared VM whose speed drifts; its ratios divide by the mean of loops run
 * on either side of the windows they are about.
 */
export function meanCrypto(runs: readonly CryptoCeiling[]): CryptoCeiling {
  if (runs.length === 0) throw new Error('meanCrypto: no runs');
  const mean = (f: (c: CryptoCeiling) => number) => runs.reduce((a, c) => a + f(c), 0) / runs.length;
  return {
    tool: runs[0]!.tool,
    backend: runs[0]!.backend,
    n: runs.reduce((a, c) => a + c.n, 0),
    cpuUsPerTx: mean((c) => c.cpuUsPerTx),
    wallUsPerTx: mean((c) => c.wallUsPerTx),
    runs: runs.map((c) => ({ cpuUsPerTx: c.cpuUsPerTx, wallUsPerTx: c.wallUsPerTx })),
  };
}

/** A door whose crypto loops lie further apart than this share of their mean gets a note in the report. */
export const CRYPTO_DRIFT_NOTE = 0.05;

/** How far the runs of a crypto ceiling lie apart, as a share of their mean (0 for one run). */
export function cryptoDrift(c: CryptoCeiling): number {
  const r = c.runs ?? [];
  if (r.length < 2) return 0;
  const cpu = r.map((x) => x.cpuUsPerTx);
  return (Math.max(...cpu) - Math.min(...cpu)) / c.cpuUsPerTx;
}

export interface ProfileRun {
  layout: string;
  window: string;
  /** One summary per thread (file = "main thread" / "worker thread N"). */
  threads: ProfileSummary[];
}

type Runs<K extends string> = Record<K, RunStats | null>;

export interface DoorReport {
  door: string;
  label: string;
  family: string;
  /** Transactions per request, and admitted units per request (bench/e2e/doors.ts): per-tx figures are per unit. */
  txPerRequest: number;
  unitsPerRequest: number;
  crypto: CryptoCeiling;
  /**
   * checkSerial / check16: the bare server checking each transaction inline (BARE_CHECK=1), 1 and 16
   * connections: the in-process floor. checkTurn16: checking a turn's transactions together at its end
   * (BARE_CHECK=turn), 16 connections: the floor of a relay that batches per turn.
   */
  bare: Runs<'serial' | 'c16' | 'c256'> & { checkSerial?: RunStats | null; check16?: RunStats | null; checkTurn16?: RunStats | null };
  pinned: Runs<'serial' | 'c16' | 'c256' | 'c1024' | 'open2x' | 'refusal' | 'shed'>;
  defaultLayout: Runs<'serial' | 'c16' | 'c256'>;
  /** Every core, 16 connections: one acceptor with every check offloaded, and one acceptor thread per core. */
  cores?: Runs<'offloaded' | 'acceptors'>;
  /** Relay CPU µs per door shed, from the door-shed run (goals.ts shedCpuUs), null when it did not run or refused too few. */
  shedCpuUs: number | null;
  goals: Record<GoalName, Verdict>;
  profiles: ProfileRun[];
  notes: string[];
}

export interface Report {
  date: string;
  durationS: number;
  smoke: boolean;
  hardware: { loadAvg: string; cpu: string; cores: number; node: string; os: string };
  placement: { relayCore: string; loadCore: string; allCores: string };
  settings: Record<string, number | string>;
  goals: Record<GoalName, Goal>;
  doors: DoorReport[];
}

const fin = (x: number | null | undefined): x is number => typeof x === 'number' && Number.isFinite(x);
const f0 = (x: number | null | undefined) => (fin(x) ? Math.round(x).toLocaleString('en-US') : '–');
const f1 = (x: number | null | undefined) => (fin(x) ? x.toFixed(1) : '–');
const f2 = (x: number | null | undefined) => (fin(x) ? x.toFixed(2) : '–');
const kb = (bytes: number | null | undefined) => (fin(bytes) ? (bytes / 1024).toFixed(2) : '–');
const mib = (k: number | null | undefined) => (fin(k) && k > 0 ? (k / 1024).toFixed(0) : '–');

/** "**1.84x** missed" / "1.10x met" / "n/a". */
export function verdictCell(v: Verdict | undefined): string {
  if (!v || v.met === null) return 'n/a';
  return v.met ? `${f2(v.value)}x met` : `**${f2(v.value)}x** missed`;
}

const cmp = (g: Goal) => `${g.better === 'lower' ? '≤' : '≥'} ${g.limit}`;

function runRow(r: RunStats | null, name: string): string {
  if (!r) return `| ${name} | not measured (see notes) ||||||||||||||`;
  const shed = Object.entries(r.shed ?? {})
    .map(([k, v]) => `${k} ${f0(v)}`)
    .join(', ');
  const rej =
    Object.entries(r.rejected)
      .map(([k, v]) => `${k} ${f0(v)}`)
      .join(', ') + (shed ? ` (shed: ${shed})` : '');
  const st = Object.entries(r.statuses)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k}: ${f0(v)}`)
    .join(', ');
  // A quantile beyond the last finite bucket has no upper bound to print.
  const bound = (ms: number) => (Number.isFinite(ms) ? `≤ ${ms}` : '> last bucket');
  const rs = r.relaySide && r.relaySide.count > 0 ? `${bound(r.relaySide.p50UpperMs)} / ${bound(r.relaySide.p99UpperMs)}` : '–';
  const load = `${f0(r.loadPct.generator)} / ${f0(r.loadPct.sink)} / ${f0(r.loadPct.orchestrator)} / ${f0(r.loadPct.rest)}`;
  const busy = r.coreBusyPct.map((x) => f0(Math.min(100, x))).join(' / ');
  return (
    `| ${name} | ${r.tool} | ${f1(r.windowS)} | ${f0(r.answers)} | ${f0(r.accepted)} | ${f0(r.acceptedPerSec)} | ${rej || '–'} | ${st || '–'} | ` +
    `${f2(r.cores)} | ${r.accepted > 0 ? f1(r.cpuUsPerAccepted) : '–'} / ${f1(r.cpuUsPerAnswer)} | ${f0(r.latency.p50Us)} / ${f0(r.latency.p99Us)} | ${rs} | ${load} | ${busy} | ${mib(r.rssPeakKb)} |` +
    (r.notes.length ? ` ${r.notes.join('; ')} |` : ' |')
  );
}

function gcCells(g: GcSummary[] | null, which: 'main' | 'workers'): string {
  if (!g) return '–';
  const sel = g.filter((x) => (which === 'main' ? x.isolate === 'main' : x.isolate !== 'main'));
  if (sel.length === 0) return '–';
  return sel
    .map((x) => `${x.scavenges} scav., p99 ${f2(x.scavengeP99Ms)} / max ${f2(x.scavengeMaxMs)} ms; ${x.fullGcs} full${x.fullGcs ? `, max ${f1(x.fullMaxMs)} ms` : ''}`)
    .join('<br>');
}

export function renderMarkdown(r: Report): string {
  const L: string[] = [];
  const h = r.hardware;
  L.push(`# txrelay end-to-end benchmark — ${r.date.slice(0, 16).replace('T', ' ')} UTC`, '');
  if (r.smoke) L.push('**Smoke run** (`--smoke`: 1 s windows, no warm-up, small pool): it checks that the harness works end to end; its figures mean nothing.', '');
  L.push(
    `${h.cpu}, ${h.cores} cores (shared VM), ${h.os}, Node ${h.node}; load average ${h.loadAvg}. Whole run ${r.durationS.toFixed(0)} s; ` +
      `every window lasts ${r.settings.seconds} s after a warm-up (a relay: ${r.settings.warmSeconds} s at 16 connections, and ${r.settings.warmSeconds} s more at one before its serial windows), and every ratio below divides two figures from this one run.`,
    '',
  );
  L.push(
    `**Placement.** The measured process is on core ${r.placement.relayCore}: the bare uWS server, the crypto loop, and txrelay "pinned" ` +
      `(\`taskset\`; on a one-core mask \`workers.threads\` auto verifies inline on the main thread). The "default layout" is txrelay as a user starts it: ` +
      `no pinning (cores ${r.placement.allCores}), \`workers.threads\` auto (one verify worker per core beyond the main thread). ` +
      `Load generators (wrk; the open-loop generator, bench/e2e/openloop.c, or openloop.ts where no C compiler runs: each window's tool says which), the upstream (\`${r.settings.sink}\`, its own process) and the orchestrator run on core ${r.placement.loadCore} in every run, ` +
      `so in the default layout the relay shares that core with them: each run says what share of a core they took ("load %").`,
    '',
  );
  L.push(
    '**Sources.** A window is exactly the generator\'s timed phase (wrk\'s "Running" to "requests in" lines, the open-loop schedule). ' +
      'CPU: `/proc/<pid>/stat` utime+stime of the measured process, all threads, and `/proc/<pid>/task/<tid>/stat` per thread (main thread: tid = pid). ' +
      'Accepted and refused: the relay\'s `txrelay_admitted_total` and `txrelay_rejected_total{code}` deltas (bare server: its own count); "shed" splits the queue controller\'s refusals by `txrelay_shed_total{reason}` (`standing`, `over_max`: at the door, before the body is read; `expired`: read, then waited past `limits.queue_max_ms` before its check). ' +
      'Latency: wrk\'s percentiles (all answers) or the open-loop generator\'s (accepted answers, from each request\'s due time). ' +
      'Allocation and pauses: the relay runs under `--trace-gc-nvp`; heap bytes allocated in a window are the sum of `allocated=` over its collections (JS heap only: Buffer contents are off-heap).',
    '',
  );

  const G = r.goals;
  L.push('## Goals', '');
  L.push(
    `| door | serial latency ${cmp(G.serialLatency)} | serial CPU ${cmp(G.serialCpu)} | saturation CPU ${cmp(G.saturationCpu)} | goodput 256 ÷ 16 ${cmp(G.goodput256)} | two cores ÷ one ${cmp(G.multiCore)} |`,
    '|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    const g = d.goals;
    L.push(`| ${d.door} | ${verdictCell(g.serialLatency)} | ${verdictCell(g.serialCpu)} | ${verdictCell(g.saturationCpu)} | ${verdictCell(g.goodput256)} | ${verdictCell(g.multiCore)} |`);
  }
  L.push('');
  for (const [name, goal] of Object.entries(G) as [GoalName, Goal][]) {
    if (goal.item !== 5) continue;
    L.push(`- **${name}**: ${goal.label}. ${r.doors.map((d) => `${d.door}: ${d.goals[name].why}`).join('; ')}.`);
  }
  L.push('');

  L.push('## Overload', '');
  L.push(
    `| door | goodput 1024 ÷ 16 ${cmp(G.goodput1024)} | goodput, ${r.settings.openFactor}x offered open loop ${cmp(G.goodputOpen2x)} | shed answer ÷ bare uWS ${cmp(G.shedCost)} | refused at 256 connections | ` +
      `door shed, µs CPU/shed | gate refusal, µs CPU/answer | bare uWS at 256, µs CPU/req | ${r.settings.openFactor}x open loop: accepted p50 / p99 µs | ${r.settings.openFactor}x open loop: answered ÷ offered | ${r.settings.openFactor}x open loop: ceiling if each refusal costs a bare uWS request |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    const c256 = d.pinned.c256;
    const o = d.pinned.open2x;
    L.push(
      `| ${d.door} | ${verdictCell(d.goals.goodput1024)} | ${verdictCell(d.goals.goodputOpen2x)} | ${verdictCell(d.goals.shedCost)} | ` +
        `${c256 ? `${f0((100 * c256.refused) / Math.max(1, c256.answers))}% of ${f0(c256.answers)}` : '–'} | ${f1(d.shedCpuUs ?? undefined)} | ${f1(d.pinned.refusal?.cpuUsPerAnswer)} | ${f1(d.bare.c256?.cpuUsPerAnswer)} | ` +
        `${o ? `${f0(o.latency.p50Us)} / ${f0(o.latency.p99Us)}` : '–'} | ${f2(answeredShare(o))} | ${f2(openLoopCeiling(Number(r.settings.openFactor), d.bare.c256?.cpuUsPerAnswer, d.pinned.c16?.cpuUsPerAccepted))} |`,
    );
  }
  L.push(
    '',
    'Door shed: a relay started with `limits.queue_max_ms` 1 and `limits.shed_hold_ms` 0, 256 connections, so nearly every request is shed (503) at the door before anything of it is read, and written at once; ' +
      "its CPU beyond the few transactions it accepted (priced at the 16-connection run's µs per accepted tx) divided by its refused answers (the few read and then expired included). " +
      'Ceiling: on one core, accepted µs (16 connections) and refused µs (bare uWS at 256) must add up to one core, so at 2x offered goodput can be no more than (1 − 2r) ÷ (1 − r) of capacity, r = refusal ÷ accepted µs (bench/e2e/goals.ts `openLoopCeiling`). Answered ÷ offered: answers per second the open-loop generator got, over its schedule and the drain after it, ÷ the rate of its schedule; under 1, the relay answered slower than requests were offered and the rest waited, unread in the kernel or for a connection of the generator (the relay reads no faster than it can answer; the ceiling assumes every offered request is answered). Gate refusal: a relay started with `limits.ip_rps = 0`, so every request is refused (429) by the per-IP bucket before its body is looked at (a door shed comes before that bucket). ' +
      `Default layout at 256 connections: ${r.doors.map((d) => `${d.door} ${f0(d.defaultLayout.c256?.acceptedPerSec)} tx/s (${f2((d.defaultLayout.c256?.acceptedPerSec ?? NaN) / (d.defaultLayout.c16?.acceptedPerSec ?? NaN))}x its 16-connection rate)`).join(', ')}.`,
    '',
  );

  L.push('## One connection, serial requests', '');
  L.push(
    'The goal ratios divide by the sum of two ceilings each measured in its own hot loop. The last two columns add ' +
      'the floor measured as one process: the bare uWS server checking each transaction inline before answering ' +
      '(no relay logic at all), and the relay pinned divided by it.',
    '',
    '| door | bare uWS p50 / p99 µs | crypto wall µs/tx | relay pinned p50 / p99 µs | default layout p50 / p99 µs | bare uWS µs CPU/req | crypto µs CPU/tx | relay pinned µs CPU/tx | default layout µs CPU/tx (main thread) | bare uWS checking inline: p50 µs, µs CPU/tx | relay pinned ÷ that: p50, CPU |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    const b = d.bare.serial;
    const k = d.bare.checkSerial ?? null;
    const p = d.pinned.serial;
    const q = d.defaultLayout.serial;
    const main = q?.threads.find((t) => t.label === 'main');
    L.push(
      `| ${d.door} | ${f0(b?.latency.p50Us)} / ${f0(b?.latency.p99Us)} | ${f1(d.crypto.wallUsPerTx)} | ${f0(p?.latency.p50Us)} / ${f0(p?.latency.p99Us)} | ${f0(q?.latency.p50Us)} / ${f0(q?.latency.p99Us)} | ` +
        `${f1(b?.cpuUsPerAnswer)} | ${f1(d.crypto.cpuUsPerTx)} | ${f1(p?.cpuUsPerAccepted)} | ${f1(q?.cpuUsPerAccepted)} (${f1(main?.cpuUsPerAccepted)}) | ` +
        `${f0(k?.latency.p50Us)}, ${f1(k?.cpuUsPerAnswer)} | ${f2((p?.latency.p50Us ?? NaN) / (k?.latency.p50Us ?? NaN))}x, ${f2((p?.cpuUsPerAccepted ?? NaN) / (k?.cpuUsPerAnswer ?? NaN))}x |`,
    );
  }
  L.push('');

  L.push('## Saturation, 16 connections', '');
  L.push(
    'The in-process floor again: the bare uWS server checking each transaction inline at 16 connections, and checking each event-loop turn\'s transactions together at its end (as a busy txrelay does), and the relay pinned divided by each.',
    '',
    '| door | bare uWS µs CPU/req | crypto µs CPU/tx | relay pinned µs CPU/tx | pinned tx/s | default layout tx/s | default µs CPU/tx, whole process | default main thread µs/tx | default: cores used by the relay | default: load side % of a core (generator + sink + orchestrator) | bare uWS checking inline: µs CPU/tx, tx/s | relay pinned ÷ that: CPU | bare uWS checking per turn: µs CPU/tx, tx/s | relay pinned ÷ that: CPU |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    const p = d.pinned.c16;
    const q = d.defaultLayout.c16;
    const main = q?.threads.find((t) => t.label === 'main');
    L.push(
      `| ${d.door} | ${f1(d.bare.c16?.cpuUsPerAnswer)} | ${f1(d.crypto.cpuUsPerTx)} | ${f1(p?.cpuUsPerAccepted)} | ${f0(p?.acceptedPerSec)} | ${f0(q?.acceptedPerSec)} | ${f1(q?.cpuUsPerAccepted)} | ${f1(main?.cpuUsPerAccepted)} | ${f2(q?.cores)} | ` +
        `${q ? f0(q.loadPct.generator + q.loadPct.sink + q.loadPct.orchestrator) : '–'} | ` +
        `${f1(d.bare.check16?.cpuUsPerAnswer)}, ${f0(d.bare.check16?.acceptedPerSec)} | ${f2((p?.cpuUsPerAccepted ?? NaN) / (d.bare.check16?.cpuUsPerAnswer ?? NaN))}x | ` +
        `${f1(d.bare.checkTurn16?.cpuUsPerAnswer)}, ${f0(d.bare.checkTurn16?.acceptedPerSec)} | ${f2((p?.cpuUsPerAccepted ?? NaN) / (d.bare.checkTurn16?.cpuUsPerAnswer ?? NaN))}x |`,
    );
  }
  L.push('');
  L.push('Per thread in the default layout at 16 connections (Node names every thread "node"; "thread k" ranks the others by CPU, the first is the verify worker when one is busy):', '');
  L.push('| door | thread | µs CPU per accepted tx | % of a core |', '|---|---|---|---|');
  for (const d of r.doors) for (const t of d.defaultLayout.c16?.threads ?? []) L.push(`| ${d.door} | ${t.label} | ${f1(t.cpuUsPerAccepted)} | ${f0(t.corePct)} |`);
  L.push('');

  L.push('## Cores', '');
  L.push(
    'How many cores a node can use. With one acceptor, every transaction passes through the main thread: its CPU per transaction, with every check offloaded to the verify workers (`workers.inline = never`), is the serial part, and the whole process\'s CPU per transaction divided by it is how many cores that one thread can keep busy. ' +
      'With acceptor threads (`http.acceptors`, one per core here) the main thread only hands connections out, and each thread serves its own connections whole. Same load, same cores, side by side with the default layout (one acceptor and one verify worker).',
    '',
    '| door | layout | tx/s | whole process µs CPU/tx | main thread µs/tx | busiest other thread µs/tx | cores used | cores the main thread can feed (whole ÷ main) |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    for (const [name, run] of [
      ['default: 1 acceptor + verify worker', d.defaultLayout.c16],
      ['1 acceptor, checks offloaded', d.cores?.offloaded],
      [`acceptor threads`, d.cores?.acceptors],
    ] as const) {
      const main = run?.threads.find((t) => t.label === 'main');
      const other = run?.threads.find((t) => t.label !== 'main' && t.label !== 'other threads');
      L.push(
        `| ${d.door} | ${name} | ${f0(run?.acceptedPerSec)} | ${f1(run?.cpuUsPerAccepted)} | ${f2(main?.cpuUsPerAccepted)} | ${f1(other?.cpuUsPerAccepted)} | ${f2(run?.cores)} | ${f0((run?.cpuUsPerAccepted ?? NaN) / (main?.cpuUsPerAccepted ?? NaN))} |`,
      );
    }
  }
  L.push('');
  L.push(
    'Projection for larger hosts, from the figures above: one acceptor is bound by its main thread (1 s ÷ its µs per transaction, whatever the core count); with acceptor threads the main thread\'s part per transaction is the connection hand-off only, and each core adds one thread\'s worth at the whole-process CPU per transaction. ' +
      'This assumes the shared tables and the kernel keep scaling past the two cores measured here, which this host cannot show.',
    '',
    '| door | layout | 2 cores (measured) | 8 cores | 16 cores | 32 cores |',
    '|---|---|---|---|---|---|',
  );
  for (const d of r.doors) {
    const off = d.cores?.offloaded;
    const acc = d.cores?.acceptors;
    const offMain = off?.threads.find((t) => t.label === 'main')?.cpuUsPerAccepted ?? NaN;
    const accMain = acc?.threads.find((t) => t.label === 'main')?.cpuUsPerAccepted ?? NaN;
    const proj = (perTx: number, mainUs: number, n: number) => f0(Math.min((n * 1e6) / perTx, 1e6 / mainUs));
    L.push(`| ${d.door} | 1 acceptor | ${f0(d.defaultLayout.c16?.acceptedPerSec)} | ${[8, 16, 32].map((n) => proj(off?.cpuUsPerAccepted ?? NaN, offMain, n)).join(' | ')} |`);
    L.push(`| ${d.door} | acceptor threads | ${f0(acc?.acceptedPerSec)} | ${[8, 16, 32].map((n) => proj(acc?.cpuUsPerAccepted ?? NaN, accMain, n)).join(' | ')} |`);
  }
  L.push('');

  L.push('## Allocation and GC pauses', '');
  L.push('| door | run | JS heap KB allocated per accepted tx (all isolates) | main thread: scavenges, p99 / max pause; full GCs | verify workers |', '|---|---|---|---|---|');
  for (const d of r.doors) {
    for (const [name, run] of [
      ['pinned, 16 connections', d.pinned.c16],
      ['default layout, 16 connections', d.defaultLayout.c16],
      ['pinned, 256 connections', d.pinned.c256],
    ] as const) {
      if (!run) continue;
      L.push(`| ${d.door} | ${name} | ${kb(run.gcBytesPerAccepted)} | ${gcCells(run.gc, 'main')} | ${gcCells(run.gc, 'workers')} |`);
    }
  }
  L.push('');

  L.push('## Every window', '');
  L.push(
    'Cores used: the measured process\'s CPU ÷ the window. Load % = share of one core taken by the generator / the sink / the orchestrator / everything else on the machine. ' +
      'CPUs busy % = each CPU\'s busy time over the window (all processes): on a pinned run, CPU 0 busy beyond the relay\'s own share is other work crowding it. ' +
      'Latency: wrk, all answers; open loop, accepted answers. Relay side: its `txrelay_accept_seconds` histogram (bucket upper bounds, ms).',
    '',
  );
  for (const d of r.doors) {
    L.push(`### ${d.label} (\`${d.door}\`)`, '');
    const runs = d.crypto.runs ?? [];
    L.push(
      `- crypto ceiling: ${f1(d.crypto.cpuUsPerTx)} µs CPU/tx (${f1(d.crypto.wallUsPerTx)} µs wall) over ${f0(d.crypto.n)} transactions, ${d.crypto.backend}` +
        (runs.length > 1 ? `; the mean of ${runs.map((x) => f1(x.cpuUsPerTx)).join(' and ')} µs CPU/tx, before this door's windows and after its pinned serial and 16-connection ones` : ''),
    );
    if (d.txPerRequest > 1)
      L.push(
        `- ${d.txPerRequest} transactions per request, admitted as ${d.unitsPerRequest === 1 ? 'one unit' : `${d.unitsPerRequest} units`}: this door's per-tx figures and goals are per admitted unit ` +
          `(the crypto floor is ${d.txPerRequest / d.unitsPerRequest}x the per-transaction figure, the bare uWS floor 1/${d.unitsPerRequest} of a request)`,
      );
    if (cryptoDrift(d.crypto) > CRYPTO_DRIFT_NOTE) {
      L.push(`- note: the host's speed drifted under this door: its two crypto loops are ${f0(100 * cryptoDrift(d.crypto))}% apart, and its ratios divide by their mean`);
    }
    for (const n of d.notes) L.push(`- note: ${n}`);
    L.push('');
    L.push(
      '| run | generator | window s | answers | accepted | accepted/s | refused by code | generator statuses | cores used | µs CPU per accepted / per answer | p50 / p99 µs | relay side p50 / p99 ms | load % | CPUs busy % | RSS peak MiB | notes |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    const rows: [string, RunStats | null][] = [
      ['bare uWS, 1 connection', d.bare.serial],
      ['bare uWS checking inline, 1', d.bare.checkSerial ?? null],
      ['bare uWS checking inline, 16', d.bare.check16 ?? null],
      ['bare uWS checking per turn, 16', d.bare.checkTurn16 ?? null],
      ['bare uWS, 16', d.bare.c16],
      ['bare uWS, 256', d.bare.c256],
      ['pinned, 1', d.pinned.serial],
      ['pinned, 16', d.pinned.c16],
      ['pinned, 256', d.pinned.c256],
      ['pinned, 1024', d.pinned.c1024],
      [`pinned, ${r.settings.openFactor}x open loop`, d.pinned.open2x],
      ['pinned, all refused at the gate, 256', d.pinned.refusal],
      ['pinned, nearly all shed at the door, 256', d.pinned.shed ?? null],
      ['default, 1', d.defaultLayout.serial],
      ['default, 16', d.defaultLayout.c16],
      ['default, 256', d.defaultLayout.c256],
    ];
    for (const [name, run] of rows) L.push(runRow(run, name));
    L.push('');
  }

  if (r.doors.some((d) => d.profiles.length)) {
    L.push('## CPU profiles', '');
    L.push(
      '`node --cpu-prof` in a separate relay start per layout (warm-up plus one 16-connection window; the profile covers the whole process lifetime, start-up included), ' +
        'self time by function, one table per thread. The profiler samples wall time: in a verify worker `atomicsWaitLoop` is piscina blocked in `Atomics.wait` for work (off CPU).',
      '',
    );
    for (const d of r.doors) {
      for (const p of d.profiles) {
        L.push(`### ${d.door}, ${p.layout} layout`, '');
        for (const t of p.threads) {
          if (t.busyMs < 1) continue;
          L.push(`*${t.file}*: busy ${t.busyMs.toFixed(0)} ms of ${t.totalMs.toFixed(0)} ms`, '');
          L.push('| self ms | % of busy | function |', '|---|---|---|');
          for (const e of t.top) L.push(`| ${e.selfMs.toFixed(0)} | ${e.pct.toFixed(1)} | \`${e.fn}\` |`);
          L.push('');
        }
      }
    }
  }
  return L.join('\n') + '\n';
}

/** The open-loop generator's answers per second ÷ the rate its schedule offered. */
function answeredShare(o: { generator?: Record<string, unknown> } | null): number {
  const g = o?.generator as { achievedRate?: number; targetRate?: number } | undefined;
  return g?.achievedRate !== undefined && g.targetRate ? g.achievedRate / g.targetRate : NaN;
}
