/**
 * The report page states what happened: a run that ended early has its
 * measured duration in the title, and the percentile axis's last label
 * ("99.9999%") is drawn whole inside its plot (checked in headless Chromium,
 * which skips with one line where it is not installed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestRelay } from '../helpers/relay.js';
import { startSink } from '../../src/bench/sink.js';
import { runBench } from '../../src/bench/generator.js';
import { renderHtmlReport } from '../../src/bench/html.js';
import { linePlot, percentileTicks } from '../../src/bench/svg.js';
import { CHROMIUM, devToolsPage } from '../helpers/chromium.js';

test('a run that ran out of transactions has its measured duration in the page title, not the one asked', { timeout: 60_000 }, async (t) => {
  const sink = await startSink({ port: 0 });
  t.after(() => sink.close());
  const relay = await startTestRelay({ limits: { ip_rps: 1_000_000, ip_burst: 1_000_000 }, evm: { upstreams: { paid: [sink.url], free: [sink.url] } } });
  t.after(() => relay.stop());
  const { uuid } = (await relay.createAccount({ evm: { tps: 100_000, burst: 100_000 } })) as unknown as { uuid: string };
  const r = await runBench({ door: 'evm-rpc', url: relay.base, key: uuid, rate: 100, count: 50, durationMs: 3000, warmupMs: 0, cacheDir: null });
  assert.equal(r.exhausted, true);
  const title = /<title>([^<]*)<\/title>/.exec(renderHtmlReport(r))![1]!;
  assert.match(title, /, \d+\.\d s \(ended early; 3 s asked\)$/, title);
  assert.ok(!title.endsWith(', 3 s'), title);
});

test('the last percentile label, 99.9999%, is drawn inside its plot', { timeout: 60_000 }, async (t) => {
  if (!existsSync(CHROMIUM)) return t.skip(`${CHROMIUM} not installed (scripts/ensure-chromium.sh): skipping the browser check of the axis labels`);
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-axis-'));
  const cleanup: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
  try {
    const ticks = percentileTicks(900_000);
    assert.equal(ticks.at(-1)!.label, '99.9999%');
    const pts = [1, 10, 100, 1000, 10_000, 100_000, 900_000].map((x, i) => [x, 100 + i * 50] as const);
    const plots = [
      linePlot({ id: 'one', title: 'one series', x: { label: 'percentile', log: true, ticks }, y: { label: 'µs' }, series: [{ name: 'a', points: pts }] }),
      linePlot({ id: 'two', title: 'two series', x: { label: 'percentile', log: true, ticks }, y: { label: 'µs' }, series: [{ name: 'from intended start', points: pts }, { name: 'service time', points: pts, dashed: true }] }),
    ];
    const file = join(dir, 'axis.html');
    writeFileSync(file, `<!doctype html><html><body style="margin:0">${plots.join('')}</body></html>`);
    const page = await devToolsPage(cleanup);
    await page.send('Page.enable');
    const loaded = page.next('Page.loadEventFired');
    await page.send('Page.navigate', { url: pathToFileURL(file).href });
    await loaded;
    const probe = `JSON.stringify(['one', 'two'].map((id) => {
      const svg = document.getElementById(id).getBoundingClientRect();
      const last = [...document.getElementById(id).querySelectorAll('text.tick-x')].pop();
      const b = last.getBoundingClientRect();
      return { id, text: last.textContent, left: b.left, right: b.right, svgLeft: svg.left, svgRight: svg.right };
    }))`;
    const boxes = JSON.parse((await page.send('Runtime.evaluate', { expression: probe, returnByValue: true })).result.value) as { id: string; text: string; left: number; right: number; svgLeft: number; svgRight: number }[];
    for (const b of boxes) {
      assert.equal(b.text, '99.9999%');
      assert.ok(b.right <= b.svgRight && b.left >= b.svgLeft, `${b.id}: the label spans ${b.left}-${b.right}, the plot ${b.svgLeft}-${b.svgRight}`);
    }
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
});
