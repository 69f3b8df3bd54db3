/** Human table (stdout) and JSON file of a BenchResult; claiming output files up front. */
import { closeSync, existsSync, openSync, unlinkSync, writeFileSync } from 'node:fs';
import type { BenchResult, Percentiles } from './generator.js';
import { refusalLines } from './refusals.js';
import { landingHeadline, landingRows } from './landed.js';

/** Keys every JSON report has (tests check them; documented in `txrelay bench --help`). */
export const JSON_KEYS = [
  'params',
  'mode',
  'measuredS',
  'requests',
  'txs',
  'throughput',
  'statuses',
  'refusals',
  'latencyUs',
  'serviceTimeUs',
  'curves',
  'perSecond',
  'schedule',
  'exhausted',
  'transactions',
  'udp',
  'warnings',
  'landing',
  'generator',
  'startedAt',
  'finishedAt',
] as const;

/**
 * Claims an output file before a run, so a path that cannot be written fails
 * in the first instant, not after the whole run. Returns a function that
 * removes the file again if it did not exist before (for a run that fails).
 */
export function claimOutputFile(file: string): () => void {
  const existed = existsSync(file);
  // 'a': creates it, or checks an existing one is writable, without truncating it yet.
  closeSync(openSync(file, 'a'));
  return () => {
    if (!existed) {
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
    }
  };
}

export function writeJsonReport(file: string, r: BenchResult): void {
  writeFileSync(file, JSON.stringify(r, null, 2) + '\n');
}

function table(rows: string[][], alignLeft = 1): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((cell, c) => (c < alignLeft ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ').trimEnd()).join('\n');
}

const PCTS: (keyof Percentiles)[] = ['p50', 'p90', 'p99', 'p999', 'max'];
const fmtN = (n: number): string => n.toLocaleString('en-US');

export function formatReport(r: BenchResult): string {
  const p = r.params;
  const out: string[] = [];
  const udp = r.udp !== null;
  const loop = r.mode === 'open' ? `open loop at ${p.rate} req/s, up to ${p.connections} in flight` : `closed loop, ${p.connections} ${udp ? 'senders' : 'connections'} flat out`;
  out.push(`txrelay bench ${p.door}: ${loop}, ${p.durationS} s measured after ${p.warmupS} s warm-up`);
  const src = r.transactions.source === 'cache' ? 'from cache' : `signed in ${(r.transactions.signMs / 1000).toFixed(2)} s`;
  out.push(`transactions: ${fmtN(r.transactions.count)} distinct, ${src}${r.txs.perRequest > 1 ? `, ${r.txs.perRequest} per request` : ''}`);
  out.push('');

  const per = r.txs.perRequest > 1;
  const rows: string[][] = [['', 'requests', ...(per ? ['transactions'] : [])]];
  rows.push(['sent', fmtN(r.requests.sent), ...(per ? [fmtN(r.txs.sent)] : [])]);
  if (!udp) {
    rows.push(['ok (2xx)', fmtN(r.requests.ok), ...(per ? [fmtN(r.txs.ok)] : [])]);
    rows.push(['errors', fmtN(r.requests.errors), ...(per ? [fmtN(r.txs.notSent)] : [])]);
    rows.push(['duplicates', fmtN(r.requests.duplicates), ...(per ? [fmtN(r.txs.duplicates)] : [])]);
    rows.push(['ok/s', r.throughput.okPerS.toFixed(1), ...(per ? [r.throughput.txOkPerS.toFixed(1)] : [])]);
  }
  rows.push([udp ? 'sent/s' : 'total/s', r.throughput.totalPerS.toFixed(1), ...(per ? [''] : [])]);
  if (r.schedule) rows.push([`late (> ${r.schedule.lateThresholdMs} ms)`, fmtN(r.schedule.late), ...(per ? [''] : [])]);
  out.push(table(rows));
  out.push(`(over ${r.measuredS.toFixed(3)} s; ${fmtN(r.requests.warmup)} warm-up requests not counted)`);
  out.push('');

  if (udp) {
    out.push(r.udp!.note + '.');
    if (r.udp!.relay) {
      const rel = Object.entries(r.udp!.relay).filter(([, v]) => v !== 0);
      out.push(table([['relay txrelay_udp_datagrams_total, whole run (delta)', 'count'], ...rel.map(([k, v]) => [k, fmtN(v)])]));
    } else out.push('Pass --admin-url to read what the relay counted (txrelay_udp_datagrams_total).');
    out.push('');
  } else {
    const st = Object.entries(r.statuses).sort(([a], [b]) => a.localeCompare(b));
    out.push(table([['status', 'count'], ...st.map(([k, v]) => [k, fmtN(v)])]));
    out.push('');
    if (Object.keys(r.refusals).length > 0) out.push('first refusal text by status:', ...refusalLines(r.refusals), '');
    const lrows: string[][] = [['latency (µs)', ...PCTS.map((k) => (k === 'p999' ? 'p99.9' : k))]];
    const row = (name: string, x: Percentiles | null): void => {
      if (x) lrows.push([name, ...PCTS.map((k) => fmtN(x[k]))]);
    };
    row(r.mode === 'open' ? 'from intended start' : 'from send', r.latencyUs);
    row('service time (from actual send)', r.serviceTimeUs);
    if (lrows.length > 1) out.push(table(lrows));
    else out.push('latency: no completed requests');
    out.push('');
  }
  if (r.landing) {
    const l = r.landing;
    out.push(landingHeadline(l));
    out.push(table([['result', 'transactions', '%'], ...landingRows(l).map(([k, v, pct]) => [k, fmtN(v), pct])]));
    const a = l.ackToLandedMs;
    if (a) out.push(table([[`ack to landed (ms), ${fmtN(a.count)} landed`, 'p50', 'p90', 'p99', 'max'], ['', ...[a.p50, a.p90, a.p99, a.max].map(fmtN)]]));
    else out.push('ack to landed: nothing landed');
    out.push('');
  }
  const g = r.generator;
  out.push(`generator: ${g.cpuUserMs + g.cpuSystemMs} ms CPU (${g.cpuPercentOfOneCore}% of one core), node ${g.node}, ${g.cpus} x ${g.cpuModel}`);
  for (const w of r.warnings) out.push(`WARNING: ${w}`);
  return out.join('\n') + '\n';
}
