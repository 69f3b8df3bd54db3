/**
 * `txrelay bench --report FILE.html`: a real two-second run of the CLI (a
 * child process) against a real in-process relay whose upstream is the bench
 * sink, with the account's rate limit set so part of the load is refused;
 * then the page, opened from disk in headless Chromium over the DevTools
 * protocol, must render both plots (a screenshot of each has the series'
 * colour and more than a blank page's colours), label its axes in the DOM,
 * fetch nothing, and never show the key, even one typed into --url.
 * And `--report` to a path that cannot be written fails at once, in one line,
 * before any request.
 *
 * The Chromium part needs /usr/bin/chromium and skips with one line without it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { CHROMIUM, decodePng, devToolsPage } from '../helpers/chromium.js';
import { startSink, type Sink } from '../../src/bench/sink.js';
import { PALETTE } from '../../src/bench/svg.js';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

let relay: TestRelay;
let sink: Sink;
let key: string;
let dir: string;
const report = (): string => join(dir, 'run.html');

before(async () => {
  sink = await startSink({ port: 0 });
  relay = await startTestRelay({
    limits: { ip_rps: 1_000_000, ip_burst: 1_000_000 },
    solana: { rpc_upstreams: [sink.url], bundle_upstreams: [sink.url] },
  });
  // 300 requests/s offered against 100/s allowed: about two thirds answered 429, so the refusals line has something to draw.
  const acct = await relay.createAccount({ solana: { tps: 100, burst: 10 } });
  key = (acct as unknown as { uuid: string }).uuid;
  dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-report-'));
});

after(async () => {
  await relay?.stop();
  await sink?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function bench(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, 'bench', ...args], { env: { ...process.env, TXRELAY_BENCH_KEY: '' } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e: any) {
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('bench --report writes one self-contained page with both plots, the settings, and no key (not even one typed into --url)', async () => {
  const admitted0 = await relay.metric('txrelay_admitted_total');
  // The key rides in --url's query too: the page must show the URL without it.
  const r = await bench('solana-v2', '--url', `${relay.base}/?api-key=${key}`, '--key', key, '--rate', '300', '--duration', '2s', '--warmup', '0', '--no-cache', '--report', report());
  assert.equal(r.code, 0, r.stderr);
  assert.ok((await relay.metric('txrelay_admitted_total')) > admitted0, 'the run reached the relay');
  const html = readFileSync(report(), 'utf8');
  assert.ok(!html.includes(key), 'the key is nowhere in the page');
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">/);
  assert.doesNotMatch(html, /<script|<link|<img|url\(|@import|src=/i, 'nothing the page could load');
  assert.match(html, new RegExp(`<dd>${relay.base.replace(/[.]/g, '\\.')}</dd>`), 'the target, without query');
  for (const s of ['solana-v2', 'open loop at 300 req/s', process.version, 'in-flight bound', '429 rate limited']) assert.ok(html.includes(s), `page names ${s}`);
});

test('the page renders in headless Chromium: plots drawn, axes labelled, no network request', async (t) => {
  if (!existsSync(CHROMIUM)) return t.skip(`${CHROMIUM} not installed (scripts/ensure-chromium.sh): skipping the browser check of the report page`);
  const cleanup: (() => Promise<void> | void)[] = [];
  try {
    const page = await devToolsPage(cleanup);
    await page.send('Network.enable');
    await page.send('Page.enable');
    await page.send('Emulation.setDeviceMetricsOverride', { width: 1100, height: 2200, deviceScaleFactor: 1, mobile: false });
    const url = pathToFileURL(report()).href;
    const loaded = page.next('Page.loadEventFired');
    await page.send('Page.navigate', { url });
    await loaded;

    const requests = page.events.filter((e) => e.method === 'Network.requestWillBeSent').map((e) => e.params.request.url as string);
    assert.deepEqual(requests, [url], 'the page itself, nothing else');

    const probe = `JSON.stringify(['latency-plot', 'throughput-plot'].map((id) => {
      const svg = document.getElementById(id);
      const texts = (cls) => [...svg.querySelectorAll('text.' + cls)].map((e) => e.textContent);
      const b = svg.getBoundingClientRect();
      return { id, box: { x: b.x + scrollX, y: b.y + scrollY, width: b.width, height: b.height },
        tickX: texts('tick-x'), tickY: texts('tick-y'), axisX: texts('axis-x')[0], axisY: texts('axis-y')[0], legend: texts('legend'),
        drawn: [...svg.querySelectorAll('path.series')].map((p) => p.getTotalLength()) };
    }))`;
    const plots = JSON.parse((await page.send('Runtime.evaluate', { expression: probe, returnByValue: true })).result.value) as {
      id: string;
      box: { x: number; y: number; width: number; height: number };
      tickX: string[];
      tickY: string[];
      axisX: string;
      axisY: string;
      legend: string[];
      drawn: number[];
    }[];
    const [lat, thr] = plots as [(typeof plots)[0], (typeof plots)[0]];
    for (const p of ['0%', '50%', '90%', '99%']) assert.ok(lat.tickX.includes(p), `percentile tick ${p} in ${lat.tickX}`);
    assert.equal(lat.axisX, 'percentile');
    assert.match(lat.axisY, /^latency \((µs|ms)\)$/);
    assert.ok(lat.tickY.length >= 3 && lat.tickY.every((s) => /^[\d,.]+$/.test(s)), `latency ticks ${lat.tickY}`);
    assert.deepEqual(lat.legend, ['from intended start', 'service time (from actual send)']);
    assert.equal(thr.axisX, 'seconds after warm-up');
    assert.equal(thr.axisY, 'requests/s');
    assert.deepEqual(thr.legend, ['ok', '429 rate limited']);
    for (const p of plots) assert.ok(p.drawn.length > 0 && p.drawn.every((len) => len > 0), `${p.id}: every series has a drawn line`);

    // What the browser painted: each plot's screenshot holds its first series' colour and the many shades of text and lines.
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(PALETTE[0]!.slice(i, i + 2), 16)) as [number, number, number];
    for (const p of plots) {
      const shot = await page.send('Page.captureScreenshot', { format: 'png', clip: { ...p.box, scale: 1 }, captureBeyondViewport: true });
      const img = decodePng(Buffer.from(shot.data, 'base64'));
      assert.ok(img.width >= 600 && img.height >= 300, `${p.id}: ${img.width}x${img.height}`);
      const colours = new Set<number>();
      let series = 0;
      for (let i = 0; i < img.rgba.length; i += 4) {
        const [pr, pg, pb] = [img.rgba[i]!, img.rgba[i + 1]!, img.rgba[i + 2]!];
        colours.add((pr << 16) | (pg << 8) | pb);
        if (Math.abs(pr - r) + Math.abs(pg - g) + Math.abs(pb - b) < 40) series++;
      }
      assert.ok(colours.size > 20, `${p.id}: ${colours.size} distinct colours (a blank plot has one or two)`);
      assert.ok(series > 100, `${p.id}: ${series} pixels of the first series' colour`);
    }
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
});

test('--report to a path that cannot be written fails before the run: one line on stderr, non-zero exit, no request sent', async () => {
  const admitted0 = await relay.metric('txrelay_admitted_total');
  const sunk0 = sink.counts().items;
  const bad = join(dir, 'no-such-dir', 'run.html');
  const r = await bench('solana-v2', '--url', relay.base, '--key', key, '--rate', '300', '--duration', '2s', '--warmup', '0', '--no-cache', '--report', bad);
  assert.notEqual(r.code, 0);
  assert.equal(r.stderr, `txrelay bench: cannot write --report ${bad}: no such directory\n`, 'exactly one line, and nothing of a run (no signing, no progress)');
  assert.equal(r.stdout, '');
  assert.ok(!r.stderr.includes(key));
  // The child has exited: anything it had sent would already be counted.
  assert.equal(await relay.metric('txrelay_admitted_total'), admitted0);
  assert.equal(sink.counts().items, sunk0);
  assert.ok(!existsSync(bad));
});
