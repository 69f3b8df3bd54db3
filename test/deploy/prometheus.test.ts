/**
 * The operator's kit against real tools (docs/operations.md#alerts,
 * #dashboard): deploy/prometheus/alerts.yml passes `promtool check rules` and
 * its unit tests (alerts.test.yml, one firing case per rule); then a real
 * relay, forwarding to a stand-in upstream, is scraped every second by a
 * private Prometheus loaded with the rules. So that the Landing and TPU rows
 * have data, the relay follows what it forwards on stand-in chains
 * (`solana.chain_rpc`: litesvm, test/helpers/svm-rpc.ts, behind the leader
 * schedule of test/helpers/tpu-standin.ts; `evm.chain_rpc`: ganache, also the
 * EVM upstream) and sends Solana transactions to stand-in TPU leaders too,
 * which run them on litesvm, where they land. Its /metrics passes `promtool
 * check metrics` (Prometheus naming conventions), every query of
 * deploy/grafana/txrelay.json returns data after a short load, and stopping
 * the upstream makes the forwarding alerts fire.
 *
 * The rules Prometheus loads are alerts.yml with every `for:` set to 0s and
 * nothing else changed, so a rule fires on the first evaluation where its
 * expression holds. The relay runs in postgres registry mode (so the registry
 * panel has data) where TXRELAY_TEST_PG answers, else in embedded mode
 * without that one panel; where litesvm or QUIC does not load, the Landing
 * or TPU panels are left out the same way. Skips with one line where prometheus or promtool is
 * missing (scripts/ensure-prometheus.sh installs them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';
import { SVM_SKIP, startSvmRpc } from '../helpers/svm-rpc.js';
import { startChain } from '../helpers/ganache.js';
import { QUIC_SKIP, startScheduleRpc, startValidator } from '../helpers/tpu-standin.js';
import { signed1559 } from '../helpers/evm.js';
import { freshDatabase, pgSkip } from '../helpers/pg.js';
import { freePorts } from '../../bench/e2e/relay.js';

const DEPLOY = new URL('../../../deploy/', import.meta.url).pathname;
const RULES = join(DEPLOY, 'prometheus/alerts.yml');
const RULE_TESTS = join(DEPLOY, 'prometheus/alerts.test.yml');
const DASHBOARD = join(DEPLOY, 'grafana/txrelay.json');
const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';

const missing = [PROMTOOL, PROMETHEUS].filter((p) => !existsSync(p));
const skipPromtool = existsSync(PROMTOOL) ? false : `${PROMTOOL} not found (scripts/ensure-prometheus.sh installs it): skipping`;
const skipLive = missing.length === 0 ? false : `${missing.join(' and ')} not found (scripts/ensure-prometheus.sh installs them): skipping`;

function promtool(args: string[], input?: string): { ok: boolean; out: string } {
  const r = spawnSync(PROMTOOL, args, { encoding: 'utf8', input });
  return { ok: r.status === 0 && r.error === undefined, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ?? ''}`.trim() };
}

function alertNames(): string[] {
  return [...readFileSync(RULES, 'utf8').matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]!);
}

test('promtool check rules accepts alerts.yml', { skip: skipPromtool }, () => {
  const r = promtool(['check', 'rules', RULES]);
  assert.ok(r.ok, r.out);
});

test('a rule file that does not parse fails with promtool\'s own message', { skip: skipPromtool }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-rules-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken = join(dir, 'alerts.yml');
  // An unbalanced parenthesis in the first rule's expression.
  writeFileSync(broken, readFileSync(RULES, 'utf8').replace(/^(\s+expr: .*)$/m, '$1)'));
  const r = promtool(['check', 'rules', broken]);
  assert.equal(r.ok, false);
  assert.match(r.out, /parse error|unexpected/i, r.out);
});

test('promtool test rules: every alert has a case in which it fires, and the cases pass', { skip: skipPromtool }, () => {
  const names = alertNames();
  assert.ok(names.length >= 8, `alerts found: ${names.join(', ')}`);
  const cases = readFileSync(RULE_TESTS, 'utf8');
  const untested = names.filter((n) => !new RegExp(`alertname: ${n}\\n\\s+exp_alerts:\\n\\s+- exp_labels`).test(cases));
  assert.deepEqual(untested, [], 'alerts without a firing case in alerts.test.yml');
  const r = promtool(['test', 'rules', RULE_TESTS]);
  assert.ok(r.ok, r.out);
});

/** The test-time copy of the rules: every `for:` is 0s, nothing else changes. */
function immediateRules(): string {
  const text = readFileSync(RULES, 'utf8');
  const out = text.replace(/^(\s+for: )\S+$/gm, '$10s');
  assert.equal((out.match(/^\s+for: 0s$/gm) ?? []).length, alertNames().length, 'one `for:` per rule');
  return out;
}

interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

/** Each panel's queries with Grafana's variables as the test's Prometheus needs them. */
function dashboardQueries(): { panel: string; expr: string }[] {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; schemaVersion: number };
  assert.ok(dash.schemaVersion >= 36, `schemaVersion ${dash.schemaVersion}`);
  const flat = dash.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return flat.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: p.title,
      // Windows of a minute hold the whole load at a 1 s scrape interval; $instance "All" is `.*`.
      expr: t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '15s').replaceAll('$instance', '.*'),
    })),
  );
}

interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

/** A private Prometheus: its own port and storage, killed (and its files removed) by `defer`'s callback. */
async function startPrometheus(defer: (f: () => Promise<void>) => void, target: string, rules: string): Promise<{ api: (path: string) => Promise<any> }> {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-prometheus-'));
  const [port] = (await freePorts(1)) as [number];
  writeFileSync(join(dir, 'alerts.yml'), rules);
  // JSON is YAML.
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: [join(dir, 'alerts.yml')],
    scrape_configs: [{ job_name: 'txrelay', static_configs: [{ targets: [target] }] }],
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config));
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  defer(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${log}`);
      return (await fetch(base + '/-/ready').catch(() => null))?.status === 200;
    },
    20_000,
    'prometheus to be ready',
  );
  return {
    api: async (path) => {
      const r = await fetch(base + path);
      const body = (await r.json()) as any;
      if (body.status !== 'success') throw new Error(`${path}: ${JSON.stringify(body)}`);
      return body.data;
    },
  };
}

test('a real Prometheus: the metrics lint clean, every dashboard query has data, an upstream outage fires the forwarding alerts', { skip: skipLive }, async (t) => {
  // Everything started here stops in reverse order, failed or not, before the test database is dropped.
  const started: (() => Promise<void>)[] = [];
  const defer = (f: () => Promise<void>) => void started.push(f);
  t.after(async () => {
    for (const f of started.reverse()) await f().catch(() => {});
  });
  const up = await startUpstream();
  let upOpen = true;
  defer(async () => void (upOpen ? await up.close() : undefined));
  const pg = (await pgSkip()) === false ? await freshDatabase(t, 'txrelay_prom') : null;
  if (pg === null) t.diagnostic('PostgreSQL not reachable: the relay runs in embedded mode and the registry panel is not checked');
  // The chains: what the relay forwards lands on them, and it follows it there.
  const svm = SVM_SKIP ? null : await startSvmRpc({ slotMs: 100 });
  defer(async () => svm?.close());
  const payer = newKeypair();
  svm?.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
  const ganache = await startChain();
  defer(() => ganache.close());
  let chainRpc = svm?.url ?? '';
  let tpu = false;
  if (!QUIC_SKIP) {
    // Two stand-in leaders, taking turns every 4 slots, run what they read on litesvm; the schedule RPC passes every other method to litesvm.
    const run = (tx: Buffer): void => void svm?.call('sendTransaction', [tx.toString('base64'), { encoding: 'base64' }]).catch(() => {});
    const [a, b] = await Promise.all([startValidator(run), startValidator(run)]);
    defer(() => a.stop());
    defer(() => b.stop());
    const schedule = await startScheduleRpc({
      epochLength: 12,
      leaderOf: (_e, r) => (r % 2 === 0 ? a : b).identity.pubkey,
      nodes: () => ({ [a.identity.pubkey]: a.address, [b.identity.pubkey]: b.address }),
      fallback: svm?.url,
    });
    defer(() => schedule.close());
    chainRpc = schedule.url;
    tpu = true;
  } else t.diagnostic(`${QUIC_SKIP}: the TPU panels are not checked`);
  if (svm === null) t.diagnostic(`${SVM_SKIP}: the Solana landing series are not checked`);
  const relay: TestRelay = await startTestRelay({
    // The TPU route runs on the main thread only (docs/operations.md#sending-to-leaders-over-quic).
    ...(tpu ? { http: { acceptors: 1 } } : {}),
    solana: { rpc_upstreams: [up.url], chain_rpc: chainRpc, landing_poll_ms: 100, ...(tpu ? { tpu: { enabled: true, leaders_ahead: 2 } } : {}) },
    evm: { upstreams: { free: [ganache.url], paid: [ganache.url] }, chain_rpc: ganache.url },
    limits: { ip_rps: 100000, ip_burst: 100000 },
    ...(pg !== null ? { registry: { mode: 'postgres', poll_interval_ms: 500 }, database: { url: pg } } : {}),
  });
  defer(() => relay.stop());
  const sol = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
  const evm = (await relay.createAccount({ evm: { tps: 1000, burst: 1000 } })).uuid;
  // A funded transfer under litesvm's blockhash: it lands.
  const landing = (): Uint8Array => legacyTransfer(svm ? { from: payer, lamports: 1_000_000, blockhash: svm.blockhash() } : {}).bytes;
  const sendSolana = async (bytes: Uint8Array = landing()) => {
    const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': sol }, body: bytes });
    await r.arrayBuffer();
    return r.status;
  };
  let nonce = 0;
  const sendEvm = async () => {
    const r = await fetch(relay.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${evm}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [(await signed1559({ nonce: nonce++ })).hex] }),
    });
    await r.arrayBuffer();
    return r.status;
  };
  if (tpu) await eventually(async () => (await relay.metric('txrelay_tpu_connections')) >= 1, 10_000, 'a TPU connection open');
  const prom = await startPrometheus(defer, new URL(relay.admin).host, immediateRules());
  const query = async (expr: string): Promise<unknown[]> => (await prom.api(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result;

  // A short load, in rounds, so that several scrapes see the counters move.
  for (let round = 0; round < 5; round++) {
    const statuses = await Promise.all([...Array.from({ length: 4 }, () => sendSolana()), ...Array.from({ length: 2 }, sendEvm)]);
    assert.deepEqual(
      statuses.filter((s) => s < 200 || s > 299),
      [],
      'every submission admitted',
    );
    await new Promise((r) => setTimeout(r, 300));
  }
  // Solana to the stand-in upstream (EVM goes to ganache); then each family's transactions landed.
  await up.waitForCalls(20);
  // Summed over the family's lanes (an account's plan picks the EVM lane).
  const landed = async (family: string): Promise<number> => {
    const lines = (await (await fetch(relay.admin + '/metrics')).text()).split('\n');
    const mine = lines.filter((l) => l.startsWith('txrelay_landed_total{') && l.includes(`lane="${family}`) && l.includes('result="landed"'));
    return mine.reduce((a, l) => a + Number(l.split(' ').pop()), 0);
  };
  for (const family of [...(svm ? ['solana-'] : []), 'evm-']) await eventually(async () => (await landed(family)) >= 1, 15_000, `${family} landed`);
  // A duplicate and a refusal, so that their panels have something to show.
  const again = legacyTransfer().bytes;
  assert.equal(await sendSolana(again), 200);
  assert.equal(await sendSolana(again), 200);
  assert.equal((await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': sol }, body: 'xx' })).status, 400);

  const text = await (await fetch(relay.admin + '/metrics')).text();
  const lint = promtool(['check', 'metrics'], text);
  assert.ok(lint.ok, `promtool check metrics:\n${lint.out}`);

  // Every panel's query answers with data once Prometheus holds a few scrapes of the load.
  await eventually(async () => (await query('sum(txrelay_rejected_total) > 0 and on () count_over_time(up{job="txrelay"}[1m]) > 3')).length > 0, 20_000, 'prometheus to scrape the load');
  const empty: string[] = [];
  for (const q of dashboardQueries()) {
    if (pg === null && q.expr.includes('txrelay_registry_')) continue;
    if (!tpu && q.expr.includes('txrelay_tpu_')) continue;
    if ((await query(q.expr)).length === 0) empty.push(`${q.panel}: ${q.expr}`);
  }
  assert.deepEqual(empty, [], 'dashboard queries without data');

  // The outage: the upstream goes away. Transactions admitted now fail to forward until the breaker opens.
  upOpen = false;
  await up.close();
  await eventually(
    async () => {
      await Promise.all([sendSolana(), sendSolana()]);
      return (await relay.metric('txrelay_upstream_breaker_open', { lane: 'solana-single' })) === 1;
    },
    15_000,
    'the breaker to open',
  );
  const want = ['TxrelayUpstreamBreakerOpen', 'TxrelayLaneUnavailable', 'TxrelayForwardFailuresRising'];
  let seen: PromAlert[] = [];
  await eventually(
    async () => {
      seen = ((await prom.api('/api/v1/alerts')).alerts as PromAlert[]).filter((a) => a.labels['lane'] === 'solana-single');
      return want.every((name) => seen.some((a) => a.labels['alertname'] === name));
    },
    15_000,
    'the forwarding alerts',
  ).catch((e: Error) => {
    throw new Error(`${e.message}; alerts seen: ${JSON.stringify(seen.map((a) => [a.labels['alertname'], a.state]))}`);
  });
  for (const a of seen.filter((x) => want.includes(x.labels['alertname']!))) {
    assert.ok(a.state === 'firing' || a.state === 'pending', `${a.labels['alertname']} ${a.state}`);
    assert.equal(a.labels['upstream'] ?? new URL(up.url).origin, new URL(up.url).origin);
  }
});
