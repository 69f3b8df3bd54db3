/**
 * `npm run bench:coalesce`: answer coalescing (`http.coalesce_answers`) on
 * and off, side by side, so the README's "Answer coalescing" figures can be
 * rerun. Solana `POST /v2`, the relay pinned to core 0 (so it checks inline),
 * wrk and `txrelay bench sink` on core 1, as in bench:e2e:
 *
 *   - saturation: 16 connections, relay CPU per accepted transaction;
 *   - refusal: 256 connections with `limits.ip_rps = 0`, relay CPU per
 *     answer (every request refused at the gate).
 *
 * The two settings alternate run by run, the order flipped each round, so
 * drift on a shared machine falls on both; each figure is the median of its
 * rounds, and the ratio off ÷ on is taken of the medians.
 * Env: COALESCE_ROUNDS (3), COALESCE_SECONDS (5). Needs wrk and taskset.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOORS } from './e2e/doors.js';
import { readBodies, writeBodies } from './e2e/bodies.js';
import { startRelay, startSink, stopChild, stopRelay, type Relay } from './e2e/relay.js';
import { wrkSpec, type WrkResult } from './e2e/generators.js';
import { measureWindow, type RunStats } from './e2e/window.js';
import { solanaTransfers } from '../src/bench/txgen.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const MAIN = join(HERE, '..', 'src', 'cli', 'main.js');
const LUA = join(ROOT, 'bench', 'e2e', 'wrk', 'bodies.lua');
/** bench:e2e's signed pool, reused when it exists (signing 600k takes ~20 s). */
const E2E_POOL = join(ROOT, 'bench', '.cache', 'e2e', 'solana-600000-chain1.bodies');
const ROUNDS = Number(process.env.COALESCE_ROUNDS ?? 3);
const SECONDS = Number(process.env.COALESCE_SECONDS ?? 5);
const WARM_SECONDS = 2;
/** Distinct transactions per window: above what one core admits in SECONDS (~8k/s here), so wrk never runs out. */
const WINDOW_TXS = 25_000 * SECONDS;
const WARM_TXS = 30_000;
const door = DOORS['solana-v2'];
const RELAY_CORE = '0';
const LOAD_CORE = '1';

type Mode = 'on' | 'off';
const log = (m: string) => process.stderr.write(`[coalesce] ${m}\n`);

const txs = existsSync(E2E_POOL) ? readBodies(E2E_POOL) : solanaTransfers(WARM_TXS + WINDOW_TXS);
if (txs.length < WARM_TXS + WINDOW_TXS) throw new Error(`need ${WARM_TXS + WINDOW_TXS} transactions, have ${txs.length}`);
const dir = mkdtempSync(join(tmpdir(), 'txrelay-coalesce-'));
const warmFile = join(dir, 'warm.bodies');
const windowFile = join(dir, 'window.bodies');
// Every relay start has fresh dedup state, so every run may send the same transactions.
writeBodies(warmFile, txs.slice(0, WARM_TXS).map((t, i) => door.body([t], i)));
writeBodies(windowFile, txs.slice(WARM_TXS, WARM_TXS + WINDOW_TXS).map((t, i) => door.body([t], i)));

const sink = await startSink(LOAD_CORE, MAIN);
const windowEnv = { loadCore: LOAD_CORE, cores: 2, sinkPid: sink.pid };

/**
 * `cycle`: repeat the bodies when they run out. Only where nothing is admitted: a repeat would be a
 * duplicate, and without cycling wrk sends a 404 probe instead, which costs CPU no answer counts.
 */
async function window(relay: Relay, name: string, connections: number, seconds: number, file: string, cycle: boolean): Promise<RunStats> {
  const spec = wrkSpec({ name, what: name, port: relay.port, door, uuid: relay.uuid, bodiesFile: file, seconds, connections, cycle, lua: LUA });
  const r = await measureWindow(relay, spec, windowEnv);
  if ((r.generator as unknown as WrkResult).exhausted_threads > 0) log(`${name}: wrk ran out of distinct transactions: this run's figures are not valid`);
  return r;
}

async function run(mode: Mode, kind: 'saturation' | 'refusal'): Promise<RunStats> {
  const env: Record<string, string> = { TXRELAY_HTTP_COALESCE_ANSWERS: mode === 'on' ? 'true' : 'false' };
  if (kind === 'refusal') Object.assign(env, { TXRELAY_LIMITS_IP_RPS: '0', TXRELAY_LIMITS_IP_BURST: '1' });
  const relay = await startRelay({ layout: 'pinned', cores: { relay: RELAY_CORE, all: '0-1' }, main: MAIN, sinkUrl: sink.url, env });
  try {
    const refusing = kind === 'refusal';
    await window(relay, 'warm-up', 16, WARM_SECONDS, warmFile, refusing);
    return await window(relay, `${kind}, coalescing ${mode}`, refusing ? 256 : 16, SECONDS, windowFile, refusing);
  } finally {
    await stopRelay(relay);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const results: Record<string, RunStats[]> = {};
try {
  for (let r = 0; r < ROUNDS; r++) {
    const order: Mode[] = r % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
    for (const kind of ['saturation', 'refusal'] as const) {
      for (const mode of order) {
        log(`round ${r + 1}/${ROUNDS}: ${kind}, coalescing ${mode}`);
        const s = await run(mode, kind);
        (results[`${kind} ${mode}`] ??= []).push(s);
      }
    }
  }
} finally {
  await stopChild(sink.child);
  rmSync(dir, { recursive: true, force: true });
}

const rows: string[] = [];
const fig = (kind: 'saturation' | 'refusal', mode: Mode) => {
  const runs = results[`${kind} ${mode}`] ?? [];
  const cpu = runs.map((s) => (kind === 'saturation' ? s.cpuUsPerAccepted : s.cpuUsPerAnswer));
  const rate = runs.map((s) => (kind === 'saturation' ? s.acceptedPerSec : s.answers / s.windowS));
  const p50 = runs.map((s) => s.latency.p50Us);
  return { cpu: median(cpu), rate: median(rate), p50: median(p50), each: cpu.map((x) => x.toFixed(1)).join(', '), other: median(runs.map((s) => s.loadPct.rest)) };
};
console.log(`# answer coalescing on vs off, ${new Date().toISOString()}, Node ${process.version}, ${ROUNDS} rounds of ${SECONDS} s`);
console.log('| run | coalescing | relay µs CPU per tx (16) / per answer (256), median | each run | per second, median | wrk p50 µs, median | other work, % of a core |');
console.log('|---|---|---|---|---|---|---|');
for (const kind of ['saturation', 'refusal'] as const) {
  for (const mode of ['on', 'off'] as const) {
    const f = fig(kind, mode);
    rows.push(`| ${kind === 'saturation' ? '16 connections, accepted' : '256 connections, refused at the gate'} | ${mode} | ${f.cpu.toFixed(1)} | ${f.each} | ${f.rate.toFixed(0)} | ${f.p50.toFixed(0)} | ${f.other.toFixed(0)} |`);
  }
  const on = fig(kind, 'on');
  const off = fig(kind, 'off');
  rows.push(`| ${kind}: off ÷ on | | ${(off.cpu / on.cpu).toFixed(2)}x | | ${(off.rate / on.rate).toFixed(2)}x | | |`);
}
console.log(rows.join('\n'));
