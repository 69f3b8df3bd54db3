/**
 * txrelay bench against a real in-process relay whose upstream is the bench
 * sink: low fixed rates, structural assertions (counts, distinctness,
 * ordering of percentiles, JSON keys), not tight timings.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startSink, type Sink } from '../../src/bench/sink.js';
import { runBench, type BenchResult } from '../../src/bench/generator.js';
import { formatReport, writeJsonReport, JSON_KEYS } from '../../src/bench/report.js';
import { buildTarget, generateTransactions } from '../../src/bench/targets.js';
import { txHashOfRaw } from '../../src/chains/evm/hash.js';

let relay: TestRelay;
let sink: Sink;
let key: string;
let cacheDir: string;

before(async () => {
  sink = await startSink({ port: 0 });
  relay = await startTestRelay({
    limits: { ip_rps: 1_000_000, ip_burst: 1_000_000 },
    solana: { rpc_upstreams: [sink.url], bundle_upstreams: [sink.url] },
    evm: { upstreams: { paid: [sink.url], free: [sink.url] } },
  });
  const acct = await relay.createAccount({ solana: { tps: 100000, burst: 100000 }, evm: { tps: 100000, burst: 100000 } });
  key = (acct as unknown as { uuid: string }).uuid;
  cacheDir = mkdtempSync(join(tmpdir(), 'txrelay-bench-cache-'));
});

after(async () => {
  await relay?.stop();
  await sink?.close();
  if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
});

const RATE = 200;
const DURATION_MS = 1000;

function checkShape(r: BenchResult): void {
  for (const k of JSON_KEYS) assert.ok(k in r, `result has ${k}`);
  assert.equal(r.mode, 'open');
  // Structural: about rate x duration requests, generous bounds.
  assert.ok(r.requests.sent >= RATE * 0.9 && r.requests.sent <= RATE * 1.1, `sent ${r.requests.sent}`);
  assert.equal(r.requests.duplicates, 0);
  assert.equal(r.exhausted, false);
}

/** At 200/s, far below capacity, every request is accepted: nothing shed, nothing limited. */
function answeredSanely(r: BenchResult, okStatus: number): void {
  const st = JSON.stringify(r.statuses);
  assert.equal(r.statuses[String(okStatus)] ?? 0, r.requests.ok, st);
  assert.equal(r.requests.ok, r.requests.sent, st);
}

test('solana-v2: open loop at 200/s, every answer ok, the sink gets them all', async () => {
  const before = sink.counts().byMethod.sendTransaction ?? 0;
  const r = await runBench({ door: 'solana-v2', url: relay.base, key, rate: RATE, durationMs: DURATION_MS, warmupMs: 0, cacheDir });
  checkShape(r);
  answeredSanely(r, 200);
  const l = r.latencyUs!;
  assert.ok(l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max, JSON.stringify(l));
  assert.ok(r.serviceTimeUs !== null);
  await eventually(() => (sink.counts().byMethod.sendTransaction ?? 0) - before >= r.requests.ok, 5000, 'sink to receive');
  const text = formatReport(r);
  assert.match(text, /p99\.9/);
  const file = join(cacheDir, 'out.json');
  writeJsonReport(file, r);
  const json = JSON.parse(readFileSync(file, 'utf8'));
  for (const k of JSON_KEYS) assert.ok(k in json, `json has ${k}`);
  for (const k of ['p50', 'p90', 'p99', 'p999', 'max']) assert.equal(typeof json.latencyUs[k], 'number');
  assert.equal(typeof json.generator.cpuUserMs, 'number');
});

test('evm-text: open loop at 200/s, 202s, forwarded as eth_sendRawTransaction', async () => {
  const before = sink.counts().byMethod.eth_sendRawTransaction ?? 0;
  const r = await runBench({ door: 'evm-text', url: relay.base, key, rate: RATE, durationMs: DURATION_MS, warmupMs: 0, cacheDir: null });
  checkShape(r);
  answeredSanely(r, 202);
  const l = r.latencyUs!;
  assert.ok(l.p50 <= l.p99 && l.p99 <= l.max);
  assert.equal(r.transactions.source, 'signed');
  await eventually(() => (sink.counts().byMethod.eth_sendRawTransaction ?? 0) - before >= r.requests.ok, 5000, 'sink to receive');
});

test('solana-udp: datagrams sent, counted as sent only, admitted by the relay', async () => {
  const admitted0 = await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' });
  const all0 = await relay.metric('txrelay_udp_datagrams_total');
  const sink0 = sink.counts().byMethod.sendTransaction ?? 0;
  const r = await runBench({
    door: 'solana-udp',
    url: relay.base,
    udpPort: relay.udpPort,
    adminUrl: relay.admin,
    key,
    rate: RATE,
    durationMs: DURATION_MS,
    warmupMs: 0,
    cacheDir: null,
  });
  checkShape(r);
  assert.equal(r.latencyUs, null, 'no latency without an answer');
  assert.ok(r.udp !== null && /no answer/.test(r.udp.note));
  assert.deepEqual(Object.keys(r.statuses), ['sent']);
  assert.match(formatReport(r), /UDP has no answer/);
  // Loopback UDP at 200/s: the relay receives (nearly) every datagram (any outcome; it may shed load),
  // and the sink gets every admitted one.
  await eventually(
    async () => (await relay.metric('txrelay_udp_datagrams_total')) - all0 >= r.requests.sent * 0.95,
    5000,
    'relay to count the datagrams',
  );
  const admitted = (await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' })) - admitted0;
  assert.ok(admitted >= r.requests.sent * 0.5, `admitted ${admitted} of ${r.requests.sent}`);
  assert.ok(r.udp.relay !== null && (r.udp.relay.admitted ?? 0) >= 1, 'the bench read the relay metric delta');
  await eventually(() => (sink.counts().byMethod.sendTransaction ?? 0) - sink0 >= admitted, 5000, 'sink to receive');
});

test('closed loop and exhaustion: the run ends when transactions run out, and says so', async () => {
  const r = await runBench({ door: 'solana-v2', url: relay.base, key, connections: 4, durationMs: 5000, warmupMs: 0, count: 300, cacheDir: null });
  assert.equal(r.mode, 'closed');
  assert.equal(r.exhausted, true);
  assert.equal(r.requests.sent, 300);
  assert.equal(r.requests.duplicates, 0);
  assert.ok(r.warnings.some((w) => /ran out of pre-signed transactions/.test(w)));
  assert.equal(r.serviceTimeUs, null);
});

test('generated transactions are all distinct, for every door', async () => {
  const sol = await generateTransactions('solana-v2', 500, { chainId: 1, batch: 1 });
  const sigs = new Set(sol.map((t) => t.subarray(1, 65).toString('hex')));
  assert.equal(sigs.size, 500);
  const evm = await generateTransactions('evm-rpc', 200, { chainId: 1, batch: 1 });
  assert.equal(new Set(evm.map((t) => Buffer.from(txHashOfRaw(t)).toString('hex'))).size, 200);
  const bundle = await generateTransactions('solana-bundle', 40, { chainId: 1, batch: 4, tipAccount: '96gYZGLnJYVFmbjzopPSU6QiEV5fGqZNyN9nmNhvrZU5', tipLamports: 5000 });
  const t = buildTarget('solana-bundle', bundle, key, 4);
  assert.equal(t.kind, 'http');
  if (t.kind === 'http') {
    assert.equal(t.bodies.length, 10);
    assert.equal(new Set(t.bodies.map((b) => b.toString('hex'))).size, 10);
    assert.equal(t.bodies[0]![0], 4);
  }
});
