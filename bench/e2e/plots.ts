/**
 * bench:e2e's pictures, drawn from its report with the same SVG writer as
 * `txrelay bench --report` (src/bench/svg.ts): the client-side latency
 * percentile curve per door (relay pinned to one core, at one and at 16
 * connections) and accepted transactions per second against connections.
 * wrk reports p50, p90, p99 and the max, so each curve is those points; the
 * max sits at x = answers in the window, where an HDR curve reaches it.
 *
 * Also a script: `node dist/bench/e2e/plots.js [dir]` redraws them from
 * <dir>/e2e.json (default bench/results) without rerunning the benchmark.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { linePlot, percentileTicks, type Series } from '../../src/bench/svg.js';
import type { Report } from './report.js';
import type { RunStats } from './window.js';

/** File name → SVG text. */
export function renderE2ePlots(report: Report): Record<string, string> {
  const when = `${report.date.slice(0, 10)}, ${report.hardware.cores} x ${report.hardware.cpu}, Node ${report.hardware.node}${report.smoke ? ' (smoke run: figures mean nothing)' : ''}`;
  return {
    'e2e-latency.svg': latencyPlot(report, 'serial', 'one connection', when),
    'e2e-latency-16.svg': latencyPlot(report, 'c16', '16 connections', when),
    'e2e-throughput.svg': throughputPlot(report, when),
  };
}

export function writeE2ePlots(report: Report, dir: string): string[] {
  const files = renderE2ePlots(report);
  for (const [name, svg] of Object.entries(files)) writeFileSync(join(dir, name), svg);
  return Object.keys(files);
}

/** p50, p90 (when the generator gave it), p99 and the max, as (1/(1-p), µs) points. */
function curve(run: RunStats): [number, number][] {
  const p90 = run.generator['lat_p90_us'];
  const pts: [number, number][] = [[2, run.latency.p50Us]];
  if (typeof p90 === 'number') pts.push([10, p90]);
  pts.push([100, run.latency.p99Us]);
  if (run.answers > 100) pts.push([run.answers, run.latency.maxUs]);
  return pts;
}

function latencyPlot(report: Report, run: 'serial' | 'c16', what: string, when: string): string {
  const series: Series[] = report.doors.flatMap((d, i) => {
    const r = d.pinned[run];
    return r ? [{ name: d.door, points: curve(r), markers: true, color: i }] : [];
  });
  const maxX = Math.max(100, ...series.flatMap((s) => s.points.map(([x]) => x)));
  return linePlot({
    title: `Latency by percentile at the client, relay pinned to one core, ${what}`,
    x: { label: 'percentile (the last point of each line is its max)', log: true, ticks: percentileTicks(maxX) },
    y: { label: 'latency (µs, log scale)', log: true },
    series,
    note: `dots: what wrk measured (p50, p90, p99, max); lines only join them. npm run bench:e2e, ${when}`,
  });
}

const CONNECTIONS = [1, 16, 256, 1024];

function throughputPlot(report: Report, when: string): string {
  const at = (runs: Record<string, RunStats | null>, keys: [number, string][]): [number, number][] =>
    keys.flatMap(([c, k]) => (runs[k] ? [[c, runs[k]!.acceptedPerSec] as [number, number]] : []));
  const series: Series[] = report.doors.flatMap((d, i) => [
    { name: `${d.door}, pinned`, points: at(d.pinned, [[1, 'serial'], [16, 'c16'], [256, 'c256'], [1024, 'c1024']]), markers: true, color: i },
    { name: `${d.door}, default`, points: at(d.defaultLayout, [[1, 'serial'], [16, 'c16'], [256, 'c256']]), markers: true, dashed: true, color: i },
  ]);
  return linePlot({
    title: 'Accepted transactions per second by connections (closed loop)',
    x: { label: 'connections', log: true, ticks: CONNECTIONS.map((c) => ({ value: c, label: String(c) })) },
    y: { label: 'accepted tx/s' },
    series,
    note: `pinned: one core; default: every core, workers.threads auto; ${when}`,
  });
}

// As a script: redraw from a saved report.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bench', 'results'));
  const report = JSON.parse(readFileSync(join(dir, 'e2e.json'), 'utf8')) as Report;
  for (const f of writeE2ePlots(report, dir)) process.stderr.write(`written ${join(dir, f)}\n`);
}
