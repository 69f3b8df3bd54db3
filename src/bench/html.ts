/**
 * `txrelay bench --report FILE.html`: one self-contained page of a run, the
 * latency percentile curve, throughput and refusals per second, the figures
 * and the settings. Inline SVG (svg.ts) and CSS only; a Content-Security-Policy
 * of `default-src 'none'` makes any fetch the page might attempt fail, so it
 * opens the same offline, from a mail attachment or a CI artifact.
 */
import { writeFileSync } from 'node:fs';
import type { BenchResult, CurvePoint, Percentiles } from './generator.js';
import { landingHeadline, landingRows } from './landed.js';
import { escapeXml, latencyUnit, linePlot, percentileTicks, percentileToX, type Series } from './svg.js';

const CSP = "default-src 'none'; style-src 'unsafe-inline'";

/** The relay's URL as the page shows it: no user info, query or fragment (a key may ride in any of them). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.origin + (u.pathname === '/' ? '' : u.pathname);
  } catch {
    return '(not a URL)';
  }
}

const fmtN = (n: number): string => n.toLocaleString('en-US');

function percentilePlot(r: BenchResult): string {
  const c = r.curves!;
  const maxUs = Math.max(...c.latency.map((p) => p.us), ...(c.service ?? []).map((p) => p.us));
  const { unit, div } = latencyUnit(maxUs);
  const pts = (curve: CurvePoint[]) => curve.map((p) => [percentileToX(p.percentile), p.us / div] as const);
  const series: Series[] = [{ name: r.mode === 'open' ? 'from intended start' : 'from send', points: pts(c.latency) }];
  if (c.service) series.push({ name: 'service time (from actual send)', points: pts(c.service), dashed: true });
  const maxX = Math.max(...series.flatMap((s) => s.points.map(([x]) => x)));
  return linePlot({
    id: 'latency-plot',
    title: `Latency by percentile, ${fmtN(r.latencyUs!.count)} answers`,
    x: { label: 'percentile', log: true, ticks: percentileTicks(maxX) },
    y: { label: `latency (${unit})` },
    series,
    note: 'x: 1/(1 − percentile) on a log scale, so every "nine" gets the same width; the line ends at the max',
  });
}

/** Answers per second by completion time: ok, and one line per refusal or error kind. */
function throughputPlot(r: BenchResult): string {
  const kinds = [...new Set(r.perSecond.flatMap((b) => Object.keys(b.errors)))].sort();
  // The last bucket holds only what completed in the window's last fraction of a second: scaled to a rate, and left out if too short to mean anything.
  const len = (s: number) => Math.min(1, r.measuredS - s);
  const buckets = r.perSecond.filter((b) => len(b.s) >= 0.5);
  const at = (b: { s: number }) => b.s + len(b.s);
  const udp = r.udp !== null;
  const series: Series[] = [
    { name: udp ? 'sent' : 'ok', points: buckets.map((b) => [at(b), b.ok / len(b.s)] as const), markers: buckets.length < 3 },
    ...kinds.map((k) => ({ name: kindName(k), points: buckets.map((b) => [at(b), (b.errors[k] ?? 0) / len(b.s)] as const), markers: buckets.length < 3 })),
  ];
  return linePlot({
    id: 'throughput-plot',
    title: udp ? 'Datagrams sent per second' : 'Answers per second, ok and refused',
    x: { label: 'seconds after warm-up', min: 0, max: Math.max(1, Math.ceil(r.measuredS)) },
    y: { label: udp ? 'datagrams/s' : 'requests/s' },
    series,
    note: 'each point: the second ending there, by completion time',
  });
}

function kindName(k: string): string {
  const names: Record<string, string> = { '429': '429 rate limited', '503': '503 at capacity', '400': '400 rejected', '401': '401 unauthorized', '403': '403 forbidden' };
  return names[k] ?? (/^\d+$/.test(k) ? `HTTP ${k}` : k);
}

function dl(rows: [string, string][]): string {
  return `<dl>${rows.map(([k, v]) => `<dt>${escapeXml(k)}</dt><dd>${escapeXml(v)}</dd>`).join('')}</dl>`;
}

function latencyTable(r: BenchResult): string {
  const rows: [string, Percentiles | null][] = [
    [r.mode === 'open' ? 'from intended start' : 'from send', r.latencyUs],
    ['service time (from actual send)', r.serviceTimeUs],
  ];
  const head = ['latency (µs)', 'p50', 'p90', 'p99', 'p99.9', 'max', 'mean'];
  const body = rows
    .filter(([, p]) => p !== null)
    .map(([name, p]) => `<tr><th>${escapeXml(name)}</th>${[p!.p50, p!.p90, p!.p99, p!.p999, p!.max, p!.mean].map((v) => `<td>${fmtN(v)}</td>`).join('')}</tr>`);
  return `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body.join('')}</tbody></table>`;
}

/** `--landed`: the result counts and the ack-to-landed percentiles. */
function landingSection(r: BenchResult): string {
  const l = r.landing;
  if (!l) return '';
  const rows = landingRows(l).map(([k, v, pct]) => `<tr><th>${escapeXml(k)}</th><td>${fmtN(v)}</td><td>${pct}</td></tr>`);
  const a = l.ackToLandedMs;
  const ack = a
    ? `<table><thead><tr><th>ack to landed (ms), ${fmtN(a.count)} landed</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead><tbody><tr><th></th>${[a.p50, a.p90, a.p99, a.max].map((v) => `<td>${fmtN(v)}</td>`).join('')}</tr></tbody></table>`
    : '<p>Nothing landed: no ack-to-landed time.</p>';
  return `<section id="landing"><h2>Landing</h2><p>${escapeXml(landingHeadline(l))}</p><table><thead><tr><th>result</th><th>transactions</th><th>%</th></tr></thead><tbody>${rows.join('')}</tbody></table>${ack}</section>`;
}

/** The page. The result holds no key; the URL is shown through displayUrl. */
export function renderHtmlReport(r: BenchResult): string {
  const p = r.params;
  const g = r.generator;
  const loop = r.mode === 'open' ? `open loop at ${fmtN(p.rate as number)} req/s` : 'closed loop';
  const settings = dl([
    ['door', String(p.door)],
    ['mode', loop],
    ['rate', r.mode === 'open' ? `${fmtN(p.rate as number)} requests/s` : 'as fast as answers come (closed loop)'],
    ['connections', `${p.connections}${r.mode === 'open' ? ' (in-flight bound)' : ''}`],
    ['duration', `${p.durationS} s measured after ${p.warmupS} s warm-up (${r.measuredS} s to the last answer)`],
    ['transactions per request', String(r.txs.perRequest)],
    ['target', displayUrl(String(p.url)) + (p.udpPort !== undefined ? ` (UDP port ${p.udpPort})` : '')],
    ['date', `${r.startedAt} to ${r.finishedAt}`],
    ['node', g.node],
    ['host CPU', `${g.cpus} x ${g.cpuModel}`],
    ['generator CPU', `${g.cpuUserMs + g.cpuSystemMs} ms (${g.cpuPercentOfOneCore}% of one core)`],
  ]);
  const counts = dl([
    ['sent', fmtN(r.requests.sent)],
    ...(r.udp
      ? ([['sent/s', r.throughput.totalPerS.toFixed(1)]] as [string, string][])
      : ([
          ['ok (2xx)', fmtN(r.requests.ok)],
          ['errors', fmtN(r.requests.errors)],
          ['duplicates', fmtN(r.requests.duplicates)],
          ['ok/s', r.throughput.okPerS.toFixed(1)],
          ['statuses', Object.entries(r.statuses).map(([k, v]) => `${k}: ${fmtN(v)}`).join(', ') || 'none'],
        ] as [string, string][])),
    ...(r.schedule ? ([[`late (> ${r.schedule.lateThresholdMs} ms)`, fmtN(r.schedule.late)]] as [string, string][]) : []),
  ]);
  const latency = r.curves
    ? `${percentilePlot(r)}${latencyTable(r)}`
    : `<p>${r.udp ? 'UDP has no answer: no latency to plot.' : 'No completed request: no latency to plot.'}</p>`;
  const warnings = r.warnings.length ? `<section><h2>Warnings</h2><ul>${r.warnings.map((w) => `<li>${escapeXml(w)}</li>`).join('')}</ul></section>` : '';
  // A run that ended early (out of transactions, interrupted) says how long it measured, not what was asked.
  const early = r.exhausted || r.measuredS < Number(p.durationS) - 0.5;
  const title = `txrelay bench ${String(p.door)}: ${loop}, ${early ? `${r.measuredS.toFixed(1)} s (ended early; ${p.durationS} s asked)` : `${p.durationS} s`}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(title)}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; max-width: 1040px; margin: 24px auto; padding: 0 16px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; } dt { color: #555; } dd { margin: 0; }
table { border-collapse: collapse; margin-top: 8px; } th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; } th:first-child { text-align: left; }
svg { display: block; max-width: 100%; height: auto; margin-top: 8px; border: 1px solid #eee; }
</style>
</head>
<body>
<h1>${escapeXml(title)}</h1>
<section><h2>Settings</h2>${settings}</section>
<section><h2>Counts</h2>${counts}</section>
<section><h2>Latency</h2>${latency}</section>
<section><h2>Throughput and refusals</h2>${throughputPlot(r)}</section>
${landingSection(r)}
${warnings}
</body>
</html>
`;
}

/** Writes the page; `key` is checked for and masked, as a last guard for a key typed into --url. */
export function writeHtmlReport(file: string, r: BenchResult, key: string): void {
  let html = renderHtmlReport(r);
  if (key && html.includes(key)) html = html.split(key).join('[key]');
  writeFileSync(file, html);
}
