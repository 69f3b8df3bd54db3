/**
 * Smoke runs of the benchmark harnesses (`npm run test:bench`, also in
 * `.ci/run`): each starts real relays, wrk and the sink for a second per
 * window. Their figures mean nothing; that every phase runs and renders does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SMOKE_TIMEOUT_MS, smokeRun } from '../helpers/smoke.js';

/**
 * The whole harness, end to end, at the smallest scale: `node dist/bench/e2e.js
 * --smoke` starts the real relay, bare server, sink and wrk for every phase
 * with 1 s windows, and must produce a report with every figure. Its numbers
 * mean nothing; that it runs and renders does.
 */
const WRK_TOOLS = ['wrk', 'taskset', 'stdbuf'];
const WRK_HINT = ' (apt-get install wrk)';

test('bench:e2e --smoke measures every phase and reports the five goals and the overload figures', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { loadAcceptor } = await import('../../src/ingress/uws.js');
  if (loadAcceptor('auto').kind !== 'uws') return t.skip(`no uWebSockets.js build loads for Node ${process.versions.node} here: skipping the bench:e2e smoke run (it measures against bare uWS)`);
  const out = mkdtempSync(join(tmpdir(), 'txrelay-e2e-smoke-'));
  try {
    const run = await smokeRun(t, 'bench:e2e', 'e2e.js', [], { tools: WRK_TOOLS, hint: WRK_HINT, oneCore: 'bench:e2e needs 2 cores: skipping its smoke run', env: { ...process.env, E2E_OUT: out } });
    if (run === null) return;
    const report = JSON.parse(readFileSync(join(out, 'e2e.json'), 'utf8'));
    const md = readFileSync(join(out, 'e2e.md'), 'utf8');
    assert.equal(report.smoke, true);
    const [door] = report.doors;
    assert.equal(door.door, 'solana-v2');
    assert.deepEqual(door.notes, [], 'no phase failed');
    for (const layout of ['bare', 'pinned', 'defaultLayout']) for (const [name, run] of Object.entries(door[layout])) assert.ok(run, `${layout}.${name} measured`);
    // Every goal has a value, the shed cost's from the door-shed run.
    for (const [name, v] of Object.entries(door.goals) as [string, { value: number | null; met: boolean | null }][]) {
      assert.equal(typeof v.value, 'number', `${name} has a value`);
      assert.equal(typeof v.met, 'boolean', `${name} is judged`);
    }
    assert.ok(Array.isArray(door.pinned.c16.gc), 'the relay ran under --trace-gc-nvp');
    assert.equal(door.crypto.runs.length, 2, 'the crypto loop ran on either side of the windows');
    if (!spawnSync(process.env.CC || 'cc', ['--version']).error) assert.match(door.pinned.open2x.tool, /^C open loop/);
    assert.ok(door.defaultLayout.c16.threads.some((x: { label: string }) => x.label === 'main'), 'per-thread CPU has the main thread');
    assert.match(md, /^\| solana-v2 \| (\*\*)?\d+\.\d\dx(\*\*)? (met|missed) \|/m);
    assert.match(md, /^## Overload$/m);
    for (const f of ['e2e-latency.svg', 'e2e-latency-16.svg', 'e2e-throughput.svg']) assert.match(readFileSync(join(out, f), 'utf8'), /^<svg [^]*<path class="series"/, `${f} has a drawn line`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

/** Runs bench/ab.js with `args` at low priority; null (the test skipped, with its line) where wrk or two cores are missing. */
async function abSmoke(t: { skip(msg: string): void }, what: string, args: string[]): Promise<string | null> {
  const run = await smokeRun(t, what, 'ab.js', args, { tools: WRK_TOOLS, hint: WRK_HINT, oneCore: `bench:ab needs 2 cores: skipping its ${what} smoke run` });
  if (run === null) return null;
  assert.doesNotMatch(run.err, /ran out of distinct transactions/);
  return run.out;
}

test('bench:ab --smoke runs both relays through every kind of window and prints the paired table', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const out = await abSmoke(t, 'bench:ab', ['--coalesce', '--runs', 'serial,saturation,refusal,shed']);
  if (out === null) return;
  for (const what of ['1 connections', '16 connections', '256 connections, refused at the gate', '256 connections, shed at the door']) {
    for (const relay of ['coalescing on', 'coalescing off']) assert.match(out, new RegExp(`^\\| solana-v2 \\| ${what} \\| ${relay} \\| \\d+\\.\\d \\|`, 'm'), `${what}, ${relay}`);
    assert.match(out, new RegExp(`^\\| solana-v2 \\| ${what} \\| B ÷ A \\| \\d+\\.\\d\\dx \\|`, 'm'), `${what}: the ratio`);
  }
});

test('bench:ab --no-upstream pairs a relay forwarding to the sink with the same relay admitting and dropping', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const out = await abSmoke(t, 'bench:ab --no-upstream', ['--no-upstream', '--runs', 'saturation']);
  if (out === null) return;
  for (const relay of ['forwarding to the sink', 'no upstream']) {
    // | door | window | relay | CPU per accepted tx | each round | accepted per second | …: both relays admit.
    const m = new RegExp(`^\\| solana-v2 \\| 16 connections \\| ${relay} \\| \\d+\\.\\d \\| [^|]+ \\| (\\d+) \\|`, 'm').exec(out);
    assert.ok(m, `${relay}: a row`);
    assert.ok(Number(m[1]) > 0, `${relay}: transactions admitted`);
  }
});

test('bench:ab --landing pairs a relay following its transactions on the stand-in chain with one that does not', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const out = await abSmoke(t, 'bench:ab --landing', ['--landing', '--doors', 'solana-v2,evm-rpc', '--runs', 'saturation']);
  if (out === null) return;
  for (const door of ['solana-v2', 'evm-rpc']) {
    for (const relay of ['landing tracking on \\(chain_rpc set\\)', 'landing tracking off \\(chain_rpc unset\\)']) {
      const m = new RegExp(`^\\| ${door} \\| 16 connections \\| ${relay} \\| \\d+\\.\\d \\| [^|]+ \\| (\\d+) \\|`, 'm').exec(out);
      assert.ok(m, `${door}, ${relay}: a row`);
      assert.ok(Number(m[1]) > 0, `${door}, ${relay}: transactions admitted`);
    }
  }
});

test('bench:registry --smoke runs every measurement against real nodes and PostgreSQL and prints its summary', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const pg = (await import('pg')).default;
  const url = process.env['TXRELAY_TEST_PG'] || 'postgres://postgres@127.0.0.1:5432/test';
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on('error', () => {});
  const up = await c.connect().then(
    () => true,
    () => false,
  );
  await c.end().catch(() => {});
  if (!up) return t.skip(`PostgreSQL not reachable at ${new URL(url).host}: skipping the bench:registry smoke run`);
  const run = await smokeRun(t, 'bench:registry', 'registry.js', [], { tools: [], env: { ...process.env, TXRELAY_BENCH_PG: url } });
  if (run === null) return;
  const { out } = run;
  for (const row of ['1. revocation reaches the other nodes', '2. lost notification', '3. catch-up of', '4. 10,000 accounts: first sync', '5. admin write while stopped']) {
    assert.ok(out.includes(`| ${row}`), `summary row "${row}"`);
  }
  assert.match(out, /503 TXR_REGISTRY_UNAVAILABLE/);
});
