/**
 * Static SVG line plots for the bench reports (`txrelay bench --report`,
 * bench:e2e's bench/results/*.svg): axes, ticks, labels, a legend, linear or
 * log scales. Hand-written on purpose: the charting libraries that emit SVG
 * in Node either need a DOM (d3 + jsdom) or bring dozens of packages and
 * megabytes (vega), for what is a few hundred lines of text output here.
 * Output is deterministic (same data, same bytes), so committed plots diff
 * cleanly.
 */

interface Tick {
  value: number;
  label: string;
}

interface Axis {
  label: string;
  /** Base-10 log scale; values <= 0 are left out. */
  log?: boolean;
  /** Explicit ticks (e.g. percentiles); otherwise nice round numbers over the data. */
  ticks?: Tick[];
  /** Linear axes start at 0 unless this is false. */
  zero?: boolean;
  min?: number;
  max?: number;
  format?: (v: number) => string;
}

export interface Series {
  name: string;
  points: readonly (readonly [number, number])[];
  dashed?: boolean;
  /** A dot on every point: for series of a few measured points, where the line between them is only a guide. */
  markers?: boolean;
  /** Palette index; default: the series' position. Series drawn as pairs (solid/dashed) share one. */
  color?: number;
}

interface Plot {
  title: string;
  x: Axis;
  y: Axis;
  series: Series[];
  width?: number;
  height?: number;
  /** Shown under the plot area, e.g. what the data is and where it comes from. */
  note?: string;
  /** For the <svg> element, so a page can address the plot. */
  id?: string;
}

/** Okabe-Ito: distinguishable with the common colour-vision deficiencies. */
export const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

/** Text and attribute values: the five XML specials. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** Maps a domain onto a pixel range, linearly or by log10. */
export function scale(domain: readonly [number, number], range: readonly [number, number], log = false): (v: number) => number {
  const f = log ? Math.log10 : (v: number) => v;
  const d0 = f(domain[0]);
  const span = f(domain[1]) - d0 || 1;
  return (v) => range[0] + ((f(v) - d0) / span) * (range[1] - range[0]);
}

/** Round steps (1, 2, 5 x 10^k) covering [min, max] with about `count` ticks; ends on a tick at or beyond max. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const out: number[] = [];
  const first = Math.floor(min / step) * step;
  for (let i = 0; ; i++) {
    // From integer multiples, so 0.1 + 0.2 never prints as 0.30000000000000004.
    const v = Number((first + i * step).toPrecision(12));
    out.push(v);
    if (v >= max) break;
  }
  return out;
}

/** Powers of ten from the one at or below min to the one at or above max; with less than two decades, 2 and 5 between. */
export function logTicks(min: number, max: number): number[] {
  const lo = Math.floor(Math.log10(min));
  const hi = Math.max(Math.ceil(Math.log10(max)), lo + 1);
  const out: number[] = [];
  for (let k = lo; k <= hi; k++) {
    const p = Number((10 ** k).toPrecision(12));
    out.push(p);
    if (hi - lo <= 2 && k < hi) out.push(Number((2 * p).toPrecision(12)), Number((5 * p).toPrecision(12)));
  }
  return out;
}

/**
 * HDR-style percentile axis: x = 1 / (1 − p), so each "nine" takes the same
 * width on a log scale. 50% is x = 2, 99% is x = 100, 99.99% is x = 10,000.
 */
export function percentileToX(percent: number): number {
  return 1 / (1 - percent / 100);
}

/** Ticks 0%, 50%, 90%, 99%, 99.9%, ... up to the first one at or beyond maxX. */
export function percentileTicks(maxX: number): Tick[] {
  const out: Tick[] = [
    { value: 1, label: '0%' },
    { value: 2, label: '50%' },
  ];
  for (let k = 1; ; k++) {
    const x = 10 ** k;
    out.push({ value: x, label: `${(100 - 100 / x).toFixed(Math.max(0, k - 2))}%` });
    if (x >= maxX) break;
  }
  return out;
}

/** Latencies in µs shown in µs below 10 ms, else in ms: the unit and the factor to divide by. */
export function latencyUnit(maxUs: number): { unit: 'µs' | 'ms'; div: number } {
  return maxUs < 10_000 ? { unit: 'µs', div: 1 } : { unit: 'ms', div: 1000 };
}

const defaultFormat = (v: number): string => v.toLocaleString('en-US', { maximumFractionDigits: 3 });
const r1 = (v: number): string => String(Math.round(v * 10) / 10);

interface Resolved {
  domain: [number, number];
  ticks: Tick[];
}

function resolveAxis(a: Axis, values: number[]): Resolved {
  const fmt = a.format ?? defaultFormat;
  const vs = a.log ? values.filter((v) => v > 0) : values;
  let lo = a.min ?? (vs.length ? Math.min(...vs) : a.log ? 1 : 0);
  let hi = a.max ?? (vs.length ? Math.max(...vs) : lo + 1);
  if (a.ticks) {
    const tv = a.ticks.map((t) => t.value);
    return { domain: [a.min ?? Math.min(lo, ...tv), a.max ?? Math.max(hi, ...tv)], ticks: a.ticks };
  }
  if (a.log) {
    const t = logTicks(lo, hi);
    if (a.min === undefined) lo = t[0]!;
    if (a.max === undefined) hi = t[t.length - 1]!;
    return { domain: [lo, hi], ticks: t.filter((v) => v >= lo && v <= hi).map((v) => ({ value: v, label: fmt(v) })) };
  }
  if (a.zero !== false && a.min === undefined) lo = Math.min(0, lo);
  const t = niceTicks(lo, hi);
  if (a.min === undefined) lo = t[0]!;
  if (a.max === undefined) hi = t[t.length - 1]!;
  return { domain: [lo, hi], ticks: t.filter((v) => v >= lo && v <= hi).map((v) => ({ value: v, label: fmt(v) })) };
}

/** One line plot as a standalone <svg> element (valid as a .svg file and inline in HTML). */
export function linePlot(p: Plot): string {
  const W = p.width ?? 760;
  const H = p.height ?? 380;
  const legendW = p.series.length > 1 ? Math.min(260, 34 + 6.6 * Math.max(...p.series.map((s) => s.name.length))) : 0;
  const keep = (a: Axis) => (v: number) => Number.isFinite(v) && (!a.log || v > 0);
  const pts = p.series.map((s) => s.points.filter(([x, y]) => keep(p.x)(x) && keep(p.y)(y)));
  const xr = resolveAxis(p.x, pts.flat().map(([x]) => x));
  const yr = resolveAxis(p.y, pts.flat().map(([, y]) => y));
  // The last x tick's label is centred on the plot's right edge: room for its half ("99.9999%" at 12 px: ~31 px in Chromium, 36 kept) past the edge.
  const overhang = Math.ceil(4.2 * (xr.ticks.at(-1)?.label.length ?? 0)) + 2;
  const m = { left: 76, right: Math.max(16, overhang) + legendW, top: 36, bottom: p.note ? 64 : 48 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const sx = scale(xr.domain, [m.left, m.left + pw], p.x.log);
  const sy = scale(yr.domain, [m.top + ph, m.top], p.y.log);
  const out: string[] = [];
  const title = escapeXml(p.title);
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" ${p.id ? `id="${escapeXml(p.id)}" ` : ''}width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" ${FONT} font-size="12">`,
    `<title>${title}</title>`,
    // Opaque: a transparent plot is unreadable on a dark page.
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text class="plot-title" x="${m.left}" y="22" font-size="14" font-weight="600" fill="#222">${title}</text>`,
  );
  // Grid and ticks.
  for (const t of xr.ticks) {
    const x = r1(sx(t.value));
    out.push(
      `<line x1="${x}" y1="${m.top}" x2="${x}" y2="${m.top + ph}" stroke="#e4e4e4"/>`,
      `<text class="tick-x" x="${x}" y="${m.top + ph + 16}" text-anchor="middle" fill="#444">${escapeXml(t.label)}</text>`,
    );
  }
  for (const t of yr.ticks) {
    const y = r1(sy(t.value));
    out.push(
      `<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#e4e4e4"/>`,
      `<text class="tick-y" x="${m.left - 6}" y="${y}" dy="0.32em" text-anchor="end" fill="#444">${escapeXml(t.label)}</text>`,
    );
  }
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`,
    `<text class="axis-x" x="${r1(m.left + pw / 2)}" y="${m.top + ph + 36}" text-anchor="middle" fill="#222">${escapeXml(p.x.label)}</text>`,
    `<text class="axis-y" transform="translate(16 ${r1(m.top + ph / 2)}) rotate(-90)" text-anchor="middle" fill="#222">${escapeXml(p.y.label)}</text>`,
  );
  if (p.note) out.push(`<text class="note" x="${m.left}" y="${H - 8}" fill="#666" font-size="11">${escapeXml(p.note)}</text>`);
  // Series.
  p.series.forEach((s, i) => {
    const color = PALETTE[(s.color ?? i) % PALETTE.length]!;
    const ps = pts[i]!;
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    if (ps.length > 1) {
      const d = ps.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${r1(sx(x))} ${r1(sy(y))}`).join(' ');
      out.push(`<path class="series" d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash} stroke-linejoin="round"><title>${escapeXml(s.name)}</title></path>`);
    }
    if (s.markers || ps.length === 1) for (const [x, y] of ps) out.push(`<circle cx="${r1(sx(x))}" cy="${r1(sy(y))}" r="3" fill="${color}"/>`);
  });
  // Legend, right of the plot area.
  if (legendW > 0) {
    const lx = m.left + pw + 14;
    p.series.forEach((s, i) => {
      const color = PALETTE[(s.color ?? i) % PALETTE.length]!;
      const y = m.top + 8 + i * 18;
      out.push(
        `<line x1="${lx}" y1="${y}" x2="${lx + 22}" y2="${y}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
        `<text class="legend" x="${lx + 28}" y="${y}" dy="0.32em" fill="#222">${escapeXml(s.name)}</text>`,
      );
    });
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
