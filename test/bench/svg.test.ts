/**
 * The SVG plot writer behind `txrelay bench --report` and bench:e2e's plots:
 * tick choice, the log and percentile scales, and that text from the data
 * (door names, error codes) cannot break out of the markup.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeXml, latencyUnit, linePlot, logTicks, niceTicks, percentileTicks, percentileToX, scale } from '../../src/bench/svg.js';
import { percentileCurve } from '../../src/bench/generator.js';
import { displayUrl } from '../../src/bench/html.js';
import * as hdr from 'hdr-histogram-js';

test('nice ticks are 1, 2 or 5 x 10^k steps from a multiple at or below the minimum to one at or beyond the maximum', () => {
  assert.deepEqual(niceTicks(0, 317), [0, 100, 200, 300, 400]);
  assert.deepEqual(niceTicks(0, 9.3), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(0, 0.3), [0, 0.1, 0.2, 0.3], 'no 0.30000000000000004');
  assert.deepEqual(niceTicks(1200, 1900), [1200, 1400, 1600, 1800, 2000]);
  assert.deepEqual(niceTicks(5, 5), [5, 5.2, 5.4, 5.6, 5.8, 6], 'an empty range still gets an axis');
});

test('log ticks are the powers of ten around the data, with 2 and 5 between when it spans under two decades', () => {
  assert.deepEqual(logTicks(3, 45_000), [1, 10, 100, 1000, 10_000, 100_000]);
  assert.deepEqual(logTicks(1, 16), [1, 2, 5, 10, 20, 50, 100]);
});

test('a log scale gives each decade the same width; a linear one maps proportionally', () => {
  const lx = scale([1, 10_000], [0, 400], true);
  assert.equal(lx(1), 0);
  assert.equal(lx(10), 100);
  assert.equal(lx(100), 200);
  assert.equal(lx(10_000), 400);
  const ly = scale([0, 200], [300, 100]);
  assert.equal(ly(0), 300);
  assert.equal(ly(50), 250);
  assert.equal(ly(200), 100);
});

test('percentile axis: x = 1/(1-p), so 50% is 2, 99% is 100, 99.99% is 10,000; ticks run to the first beyond the data', () => {
  assert.equal(percentileToX(0), 1);
  assert.equal(percentileToX(50), 2);
  assert.ok(Math.abs(percentileToX(99) - 100) < 1e-9);
  assert.ok(Math.abs(percentileToX(99.99) - 10_000) < 1e-6);
  assert.deepEqual(
    percentileTicks(2500).map((t) => [t.value, t.label]),
    [
      [1, '0%'],
      [2, '50%'],
      [10, '90%'],
      [100, '99%'],
      [1000, '99.9%'],
      [10_000, '99.99%'],
    ],
  );
});

test('latency unit: µs below 10 ms, ms above', () => {
  assert.deepEqual(latencyUnit(9_999), { unit: 'µs', div: 1 });
  assert.deepEqual(latencyUnit(250_000), { unit: 'ms', div: 1000 });
});

test('text from the data is escaped: a hostile series name stays text', () => {
  assert.equal(escapeXml(`<a href="x">&'`), '&lt;a href=&quot;x&quot;&gt;&amp;&apos;');
  const svg = linePlot({
    title: 'T <script>',
    x: { label: 'x & y' },
    y: { label: 'y' },
    series: [
      { name: '</text><script>alert(1)</script>', points: [[0, 1], [1, 2]] },
      { name: 'b', points: [[0, 2], [1, 3]] },
    ],
  });
  assert.ok(!svg.includes('<script'), 'no element from the data');
  assert.ok(svg.includes('&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(svg.includes('>x &amp; y</text>'));
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, 'valid as a standalone .svg file');
});

test('a plot places its points on the scales and labels its ticks; log axes drop values <= 0', () => {
  const svg = linePlot({
    title: 't',
    width: 576,
    height: 284,
    x: { label: 'percentile', log: true, ticks: percentileTicks(100) },
    y: { label: 'latency (µs)' },
    series: [{ name: 'only', points: [[0, 5], [1, 100], [100, 400]] }],
  });
  // Plot area: left 76 .. 576-16 = 560 (484 px), top 36 .. 284-48 = 236 (200 px); x domain 1..100 (two decades); y 0..400.
  assert.match(svg, /<path class="series" d="M76 186 L560 36"/, 'x 0 dropped; (1, 100) and (100, 400) mapped');
  const ticks = [...svg.matchAll(/class="tick-x"[^>]*>([^<]*)</g)].map((m) => m[1]);
  assert.deepEqual(ticks, ['0%', '50%', '90%', '99%']);
  const yt = [...svg.matchAll(/class="tick-y"[^>]*>([^<]*)</g)].map((m) => m[1]);
  assert.deepEqual(yt, ['0', '100', '200', '300', '400']);
});

test('the percentile curve of a histogram climbs monotonically from the minimum and ends at the max, at x = count', () => {
  const h = hdr.build({ numberOfSignificantValueDigits: 3, useWebAssembly: false });
  for (let i = 1; i <= 1000; i++) h.recordValue(i);
  const c = percentileCurve(h);
  assert.equal(c[0]!.percentile, 0);
  assert.ok(c.every((p, i) => i === 0 || (p.percentile > c[i - 1]!.percentile && p.us >= c[i - 1]!.us)));
  const p90 = c.find((p) => p.percentile === 90);
  assert.ok(p90 && Math.abs(p90.us - 900) <= 1, `p90 ${JSON.stringify(p90)}`);
  assert.deepEqual(c.at(-1), { percentile: 99.9, us: 1000 });
  assert.equal(c.length, 61, '20 points per decade over three decades, then the max');
});

test('the page shows the relay URL without user info, query or fragment', () => {
  assert.equal(displayUrl('http://u:secret@127.0.0.1:8080/?api-key=abc#k'), 'http://127.0.0.1:8080');
  assert.equal(displayUrl('https://relay.example/base?auth=abc'), 'https://relay.example/base');
});
