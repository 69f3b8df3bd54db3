/** The end-to-end report's shape and its Markdown rendering (bench/results/*.md). */
import type { OpenLoopResult } from './openloop.js';
import type { ProfileSummary } from './profile.js';

export interface RunReport {
  fraction: number;
  tool: string;
  cpuUsPerAccepted: number;
  accepted: number;
  rssPeakKb: number;
  rejected: Record<string, number>;
  otherOnCorePct: number;
  /** From the relay's txrelay_accept_seconds histogram: handler start to answer, every answer (admitted and shed). */
  relaySide?: { count: number; p50UpperMs: number; p99UpperMs: number };
  load: OpenLoopResult;
}

export interface DoorReport {
  door: string;
  label: string;
  acceptor: { tool: string; requestsPerSec: number; cpuUsPerRequest: number; lat_p50_us: number; lat_p99_us: number };
  crypto: { tool: string; n: number; cpuUsPerTx: number; wallUsPerTx: number; backend: string };
  sumUs: number;
  relay: {
    capacity: {
      tool: string;
      acceptedPerSec: number;
      requestsPerSec: number;
      cpuUsPerAccepted: number;
      wrk: { lat_p50_us: number; lat_p99_us: number; status_err: number; requests: number };
      rejected: Record<string, number>;
      rssPeakKb: number;
      otherOnCorePct: number;
    };
    rssIdleKb: number;
    runs: RunReport[];
  };
  notes: string[];
  profile: ProfileSummary[] | null;
  evaluation?: Record<string, { value: number; limit: number; met: boolean | null }>;
}

export interface Report {
  date: string;
  durationS: number;
  hardware: { loadAvg: string; cpu: string; cores: number; node: string; os: string };
  placement: { relayCore: string; loadCore: string; verifyThreads: number };
  settings: Record<string, number | string>;
  targets: Record<string, number>;
  doors: DoorReport[];
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const k = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
const ms = (us: number) => (us > 0 ? (us / 1000).toFixed(2) : '–');
const mb = (kb: number) => (kb > 0 ? (kb / 1024).toFixed(0) : '–');

function verdict(e: { value: number; limit: number; met: boolean | null } | undefined, unit: string, lowerIsBetter = true): string {
  if (!e || e.met === null) return 'n/a';
  if (e.met) return `met (${f2(e.value)}${unit} vs ${e.limit}${unit})`;
  const by = lowerIsBetter ? e.value / e.limit : e.limit / e.value;
  return `**missed** (${f2(e.value)}${unit} vs ${e.limit}${unit}: ${f2(by)}x the limit)`;
}

export function renderMarkdown(r: Report): string {
  const L: string[] = [];
  L.push(`# txrelay end-to-end benchmark — ${r.date.slice(0, 16).replace('T', ' ')} UTC`, '');
  L.push(
    `${r.hardware.cpu}, ${r.hardware.cores} cores (shared VM), ${r.hardware.os}, Node ${r.hardware.node}. Whole run ${r.durationS.toFixed(0)} s, ` +
      `measured windows of ${r.settings.seconds} s after ${r.settings.warmSeconds} s of warm-up; every figure below comes from this one run. ` +
      `Other work shared the machine (load average ${r.hardware.loadAvg}); each run below says how much of the relay's core other processes took.`,
    '',
  );
  L.push(
    `**Placement.** txrelay (${
      r.placement.verifyThreads === 0
        ? '`workers.threads = 0`: on its one-core affinity mask it verifies inline on the main thread'
        : `main thread + \`workers.threads = ${r.placement.verifyThreads}\` verify worker`
    }) is pinned to core ${r.placement.relayCore} with \`taskset\`, ` +
      `and so are the two ceilings (bare uWS server, crypto loop); wrk, the Node open-loop generator, the sink (${r.settings.sink}) and the orchestrator run on core ${r.placement.loadCore}. ` +
      `One core carries all of the relay's work exactly as it carries all of each ceiling's, so CPU per transaction compares like with like, ` +
      `and no load generator steals cycles from the measured process. Capacity is therefore one core's worth.`,
    '',
  );
  L.push(
    '**Sources.** CPU: `/proc/<pid>/stat` utime+stime of the measured process (all threads), divided by txrelay\'s own `txrelay_admitted_total` delta ' +
      '(bare server: its own request count; crypto loop: `process.cpuUsage`). Capacity and the bare server\'s rate: wrk ' +
      `(${r.settings.wrkThreads} threads, closed loop, distinct transactions from a Lua script; ${r.settings.wrkConnections} connections against the bare server, ` +
      `${r.settings.relayWrkConnections} against txrelay so its verify-queue budget does not shed and bill shed answers to accepted ones). ` +
      'Latency at 50%/90%/200% of capacity: the Node open-loop generator (`bench/e2e/openloop.ts`, fixed rate, latency from each request\'s due time, ' +
      `${r.settings.openConnections} connections, ${r.settings.overloadConnections} at 200%). RSS: \`/proc/<pid>/status\` VmRSS sampled every 100 ms.`,
    '',
  );

  L.push('## CPU per transaction (µs of one core)', '');
  L.push('| door | acceptor ceiling (bare uWS) | crypto ceiling | sum | txrelay at capacity | ratio to sum | txrelay at 90% | capacity, accepted tx/s (wrk) | bare uWS req/s (wrk) |');
  L.push('|---|---|---|---|---|---|---|---|---|');
  for (const d of r.doors) {
    const r90 = d.relay.runs.find((x) => x.fraction === 0.9);
    L.push(
      `| ${d.door} | ${f1(d.acceptor.cpuUsPerRequest)} | ${f1(d.crypto.cpuUsPerTx)} | ${f1(d.sumUs)} | ${f1(d.relay.capacity.cpuUsPerAccepted)} | ` +
        `**${f2(d.relay.capacity.cpuUsPerAccepted / d.sumUs)}x** | ${r90 ? f1(r90.cpuUsPerAccepted) : '–'} | ${k(d.relay.capacity.acceptedPerSec)} | ${k(d.acceptor.requestsPerSec)} |`,
    );
  }
  L.push('');

  L.push('## Accept latency under fixed-rate load (open loop, ms)', '');
  L.push('| door | 50%: rate → p50 / p90 / p99 | 90%: rate → p50 / p90 / p99 | 200%: offered → answered/s, accepted/s | 200%: admitted p50 / p99 | 200%: shed (503/429) count, p50 / p99 | relay-side p99 at 50% / 90% / 200% (histogram bound) | RSS idle → peak at 200% (MiB) |');
  L.push('|---|---|---|---|---|---|---|---|');
  for (const d of r.doors) {
    const cell = (fr: number) => {
      const x = d.relay.runs.find((y) => y.fraction === fr);
      if (!x) return '–';
      const a = x.load.accepted;
      return `${k(x.load.targetRate)}/s → ${ms(a.p50_us)} / ${ms(a.p90_us)} / ${ms(a.p99_us)}`;
    };
    const o = d.relay.runs.find((y) => y.fraction === 2);
    const win = o ? o.load.sent / o.load.targetRate : 1;
    L.push(
      `| ${d.door} | ${cell(0.5)} | ${cell(0.9)} | ${o ? `${k(o.load.targetRate)}/s → ${k(o.load.achievedRate)}/s, ${k(o.accepted / win)}/s` : '–'} | ` +
        `${o ? `${ms(o.load.accepted.p50_us)} / ${ms(o.load.accepted.p99_us)}` : '–'} | ${o ? `${k(o.load.shed.count)}, ${ms(o.load.shed.p50_us)} / ${ms(o.load.shed.p99_us)}` : '–'} | ` +
        `${[0.5, 0.9, 2].map((fr) => d.relay.runs.find((y) => y.fraction === fr)?.relaySide?.p99UpperMs ?? NaN).map((v) => (Number.isFinite(v) ? `≤ ${v}` : '–')).join(' / ')} ms | ` +
        `${mb(d.relay.rssIdleKb)} → ${o ? mb(o.rssPeakKb) : '–'} |`,
    );
  }
  L.push('');

  L.push('## Targets (issue item 5)', '');
  L.push(`| door | CPU ≤ ${r.targets.cpuRatio}x sum of ceilings | p99 < ${r.targets.p99At50Ms} ms at 50% | admitted p99 < ${r.targets.p99AdmittedAt2xMs} ms at 2x | shed p99 ≤ ${r.targets.p99ShedAt2xMs} ms at 2x |`);
  L.push('|---|---|---|---|---|');
  for (const d of r.doors) {
    const e = d.evaluation ?? {};
    L.push(`| ${d.door} | ${verdict(e.cpuRatio, 'x')} | ${verdict(e.p99At50Ms, ' ms')} | ${verdict(e.p99AdmittedAt2xMs, ' ms')} | ${verdict(e.p99ShedAt2xMs, ' ms')} |`);
  }
  L.push('', 'The CPU target applies to the Solana `/v2` and EVM plain-text doors; the other doors are reported with the same method.', '');

  L.push('## Details', '');
  for (const d of r.doors) {
    L.push(`### ${d.label} (\`${d.door}\`)`, '');
    L.push(`- crypto ceiling: ${f1(d.crypto.cpuUsPerTx)} µs CPU/tx (${f1(d.crypto.wallUsPerTx)} µs wall) over ${k(d.crypto.n)} distinct transactions, ${d.crypto.backend}`);
    L.push(`- bare uWS: ${k(d.acceptor.requestsPerSec)} req/s, wrk p50 ${ms(d.acceptor.lat_p50_us)} ms / p99 ${ms(d.acceptor.lat_p99_us)} ms`);
    const c = d.relay.capacity;
    L.push(
      `- txrelay flat out (wrk): ${k(c.requestsPerSec)} req/s answered, ${k(c.acceptedPerSec)} tx/s accepted, non-2xx ${k(c.wrk.status_err)}, ` +
        `wrk p50 ${ms(c.wrk.lat_p50_us)} ms / p99 ${ms(c.wrk.lat_p99_us)} ms, rejections ${JSON.stringify(c.rejected)}, other processes on the relay's core ${c.otherOnCorePct.toFixed(0)}%`,
    );
    for (const x of d.relay.runs) {
      const l = x.load;
      L.push(
        `- ${x.fraction * 100}% (${k(l.targetRate)}/s offered, open loop): statuses ${JSON.stringify(l.byStatus)}, ${f1(x.cpuUsPerAccepted)} µs CPU per accepted tx, ` +
          `accepted p50/p90/p99/max ${ms(l.accepted.p50_us)}/${ms(l.accepted.p90_us)}/${ms(l.accepted.p99_us)}/${ms(l.accepted.max_us)} ms ` +
          `(service time from the socket write: p99 ${ms(l.acceptedService.p99_us)} ms), generator's worst send lag ${l.maxSendLagMs.toFixed(2)} ms, RSS peak ${mb(x.rssPeakKb)} MiB, other processes on the relay's core ${x.otherOnCorePct.toFixed(0)}%` +
          (x.relaySide ? `; relay-side (its accept histogram, all answers): p50 ≤ ${x.relaySide.p50UpperMs} ms, p99 ≤ ${x.relaySide.p99UpperMs} ms` : '') +
          (l.errors ? `, ${l.errors} socket errors` : ''),
      );
    }
    for (const n of d.notes) L.push(`- note: ${n}`);
    if (d.profile) {
      L.push(
        '',
        'CPU profile of one flat-out window (`node --cpu-prof`, separate relay start, same load as the capacity run), self time by function, one table per thread. ' +
          'The profiler samples each thread\'s wall time: in the verify worker `atomicsWaitLoop` is piscina blocked in `Atomics.wait` for the next task (off CPU), not work.',
        '',
      );
      for (const p of d.profile) {
        if (p.busyMs < 1) continue;
        L.push(`*${p.file}*: busy ${p.busyMs.toFixed(0)} ms of ${p.totalMs.toFixed(0)} ms`, '');
        L.push('| self ms | % of busy | function |', '|---|---|---|');
        for (const t of p.top) L.push(`| ${t.selfMs.toFixed(0)} | ${t.pct.toFixed(1)} | \`${t.fn}\` |`);
        L.push('');
      }
    }
    L.push('');
  }
  return L.join('\n');
}
