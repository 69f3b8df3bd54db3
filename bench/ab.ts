/**
 * Two relays side by side, windows alternating, so a change's effect can be
 * told from the drift of a shared machine (bench:e2e's separate runs of the
 * same code differ by up to ~10% here; a paired comparison does not).
 *
 *   npm run bench:ab -- --base ../txrelay-base      this checkout vs another, built one
 *   npm run bench:coalesce                          http.coalesce_answers on vs off
 *   npm run bench:ab -- --no-upstream               forwarding to the sink vs no upstream at all
 *   npm run bench:ab -- --shed-hold                 door sheds held up to 100 ms (limits.shed_hold_ms) vs written at once
 *   npm run bench:ab -- --status                    status tracing on vs off (status.enabled)
 *   npm run bench:ab -- --landing                   landing tracking on vs off (solana.chain_rpc, evm.chain_rpc)
 *   npm run bench:ab -- --ed25519                   the native ed25519 check vs sodium-native's (TXRELAY_ED25519_BACKEND)
 *
 * Each round starts each relay fresh (dedup state empty), pinned to core 0
 * (`--layout default`: unpinned, workers auto, as a user starts it), warms
 * it, then measures one window; wrk and `txrelay bench sink` run on core 1,
 * as in bench:e2e. Kinds of window (`--runs`):
 *
 *   serial      1 connection, relay CPU per accepted transaction
 *   saturation  16 connections, the same
 *   overload    1024 connections, relay CPU per accepted transaction
 *   refusal     256 connections with `limits.ip_rps = 0`: relay CPU per
 *               answer, every request refused at the gate
 *   shed        256 connections with a 1 ms queue bound and sheds written at
 *               once (bench:e2e's door-shed run): relay CPU per answer,
 *               nearly every request shed at the door
 *   openloop    the open-loop generator offering `--rate` requests per
 *               second (default: twice what A accepted in a 16-connection
 *               calibration window run first) over 2048 connections, as
 *               bench:e2e's 2x open-loop window: goodput, and which share
 *               of the refusals were read, queued, then expired
 *
 * The order of the two relays flips each round; each figure is the median of
 * its rounds, and the ratio is taken of the medians (B ÷ A: above 1, B costs
 * more). Options: --doors (solana-v2; any of bench:e2e's single-transaction
 * doors), --runs (saturation,refusal), --rounds (3), --seconds (5), --smoke
 * (one round of 1 s windows: checks the harness, its figures mean nothing).
 * Needs wrk and taskset; a base checkout needs `npm ci` (which builds it) first.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DOORS, type Door, type DoorName } from './e2e/doors.js';
import { readBodies, writeBodies } from './e2e/bodies.js';
import { DOOR_SHED_ENV, freePort, onCores, startRelay, startSink, stopChild, stopRelay, waitFor, type Relay } from './e2e/relay.js';
import { BLOCKHASHES, solanaPool } from './landing/pool.js';
import { OPEN_CONNECTIONS, OPEN_FACTOR, openLoopGenerator, openLoopSpec, wrkSpec, type WrkResult } from './e2e/generators.js';
import { measureWindow, type RunStats } from './e2e/window.js';
import { evmTransfers, solanaTransfers } from '../src/bench/txgen.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const MAIN = join(HERE, '..', 'src', 'cli', 'main.js');
const LUA = join(ROOT, 'bench', 'e2e', 'wrk', 'bodies.lua');
const RELAY_CORE = '0';
const LOAD_CORE = '1';

const { values: opt } = parseArgs({
  options: {
    base: { type: 'string' },
    coalesce: { type: 'boolean', default: false },
    'no-upstream': { type: 'boolean', default: false },
    'shed-hold': { type: 'boolean', default: false },
    status: { type: 'boolean', default: false },
    landing: { type: 'boolean', default: false },
    ed25519: { type: 'boolean', default: false },
    doors: { type: 'string', default: 'solana-v2' },
    runs: { type: 'string', default: 'saturation,refusal' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    layout: { type: 'string', default: 'pinned' },
    rate: { type: 'string' },
    smoke: { type: 'boolean', default: false },
  },
});
if (opt.layout !== 'pinned' && opt.layout !== 'default') throw new Error('--layout: pinned or default');
const LAYOUT = opt.layout;
const ROUNDS = opt.smoke ? 1 : Number(opt.rounds);
const SECONDS = opt.smoke ? 1 : Number(opt.seconds);
const WARM_SECONDS = opt.smoke ? 1 : 2;
const log = (m: string) => process.stderr.write(`[ab] ${m}\n`);

/** One side of the comparison: which relay build, and what it is started with. */
interface Variant {
  label: string;
  main: string;
  env: Record<string, string>;
}

let variants: [Variant, Variant];
if (opt.coalesce) {
  variants = [
    { label: 'coalescing on', main: MAIN, env: { TXRELAY_HTTP_COALESCE_ANSWERS: 'true' } },
    { label: 'coalescing off', main: MAIN, env: { TXRELAY_HTTP_COALESCE_ANSWERS: 'false' } },
  ];
} else if (opt['no-upstream']) {
  // What forwarding costs: B is the same relay with every lane's upstream list empty, so an admitted
  // transaction is counted and dropped instead of written to the sink and its answer read.
  const none = { TXRELAY_SOLANA_RPC_UPSTREAMS: '', TXRELAY_SOLANA_BUNDLE_UPSTREAMS: '', TXRELAY_EVM_UPSTREAMS_PAID: '', TXRELAY_EVM_UPSTREAMS_FREE: '' };
  variants = [
    { label: 'forwarding to the sink', main: MAIN, env: {} },
    { label: 'no upstream', main: MAIN, env: none },
  ];
} else if (opt['shed-hold']) {
  variants = [
    { label: 'sheds held (limits.shed_hold_ms 100)', main: MAIN, env: { TXRELAY_LIMITS_SHED_HOLD_MS: '100' } },
    { label: 'sheds written at once (limits.shed_hold_ms 0)', main: MAIN, env: { TXRELAY_LIMITS_SHED_HOLD_MS: '0' } },
  ];
} else if (opt.status) {
  // What tracing each transaction for the status API costs admission.
  variants = [
    { label: 'status tracing on (status.enabled true)', main: MAIN, env: { TXRELAY_STATUS_ENABLED: 'true' } },
    { label: 'status tracing off', main: MAIN, env: { TXRELAY_STATUS_ENABLED: 'false' } },
  ];
} else if (opt.landing) {
  // What following every forwarded transaction on chain costs admission. Both relays forward to the
  // stand-in chain (bench/landing/chain.ts, on the load core in place of the sink), which lands what it
  // takes; A also reads it as its chain RPC. CHAIN is filled in once the stand-in is up.
  variants = [
    { label: 'landing tracking on (chain_rpc set)', main: MAIN, env: { TXRELAY_SOLANA_CHAIN_RPC: 'CHAIN', TXRELAY_EVM_CHAIN_RPC: 'CHAIN' } },
    { label: 'landing tracking off (chain_rpc unset)', main: MAIN, env: { TXRELAY_SOLANA_CHAIN_RPC: '', TXRELAY_EVM_CHAIN_RPC: '' } },
  ];
} else if (opt.ed25519) {
  // What the native signature check saves: the same relay, B with libsodium's check (sodium-native).
  variants = [
    { label: 'native ed25519', main: MAIN, env: {} },
    { label: 'sodium-native ed25519 (TXRELAY_ED25519_BACKEND=sodium-native)', main: MAIN, env: { TXRELAY_ED25519_BACKEND: 'sodium-native' } },
  ];
} else if (opt.base) {
  const baseMain = resolve(opt.base, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(baseMain)) throw new Error(`${baseMain} not found: build the base checkout first (npm ci)`);
  variants = [
    { label: 'this checkout', main: MAIN, env: {} },
    { label: `base (${opt.base})`, main: baseMain, env: {} },
  ];
} else {
  throw new Error('say what to compare: --base <other checkout>, --coalesce, --no-upstream, --shed-hold, --status, --landing or --ed25519');
}

type Kind = 'serial' | 'saturation' | 'overload' | 'refusal' | 'shed' | 'openloop';
const KINDS: Record<Kind, { connections: number; env: Record<string, string>; perAnswer: boolean }> = {
  serial: { connections: 1, env: {}, perAnswer: false },
  saturation: { connections: 16, env: {}, perAnswer: false },
  overload: { connections: 1024, env: {}, perAnswer: false },
  refusal: { connections: 256, env: { TXRELAY_LIMITS_IP_RPS: '0', TXRELAY_LIMITS_IP_BURST: '1' }, perAnswer: true },
  shed: { connections: 256, env: DOOR_SHED_ENV, perAnswer: true },
  openloop: { connections: OPEN_CONNECTIONS, env: {}, perAnswer: false },
};
const kinds = opt.runs.split(',') as Kind[];
for (const k of kinds) if (!(k in KINDS)) throw new Error(`--runs: unknown kind ${k} (serial, saturation, overload, refusal, shed, openloop)`);
const doors = opt.doors.split(',').map((n) => {
  const d = DOORS[n as DoorName];
  if (!d || d.txPerRequest !== 1) throw new Error(`--doors: ${n} is not a single-transaction door of bench:e2e`);
  return d;
});

/**
 * Distinct transactions per second of window: above what the relay admits (with the native ed25519
 * check, wrk answered about 55k/s on /v2 here, 38k of them accepted), so wrk never runs out. EVM
 * doors admit under half that, and their pool takes far longer to sign.
 */
const txRate = (d: Door): number => (d.family === 'solana' ? 100_000 : LAYOUT === 'default' ? 60_000 : 40_000);
const dir = mkdtempSync(join(tmpdir(), 'txrelay-ab-'));

/** bench:e2e's signed pool of the family when it exists and is large enough, else freshly signed ones. */
async function pool(d: Door): Promise<Buffer[]> {
  const n = txRate(d) * (WARM_SECONDS + SECONDS);
  // Tracking asks isBlockhashValid per distinct blockhash: the e2e pool's random one per transaction would cost a call each.
  if (opt.landing && d.family === 'solana') {
    log(`signing ${n} solana transactions under ${BLOCKHASHES} recent blockhashes`);
    return solanaPool(n);
  }
  const cached = join(ROOT, 'bench', '.cache', 'e2e', `${d.family}-1500000-chain1.bodies`);
  if (existsSync(cached)) return readBodies(cached);
  log(`signing ${n} ${d.family} transactions`);
  return d.family === 'solana' ? solanaTransfers(n) : evmTransfers(n, { chainId: 1 });
}

const sink = opt.landing ? await startChainStandin(LOAD_CORE) : await startSink(LOAD_CORE, MAIN);
if (opt.landing) for (const v of variants) for (const k of Object.keys(v.env)) if (v.env[k] === 'CHAIN') v.env[k] = sink.url;
const windowEnv = { loadCore: LOAD_CORE, cores: 2, sinkPid: sink.pid };

/** The stand-in chain (upstream and chain read RPC in one), pinned like the sink. */
async function startChainStandin(core: string): Promise<{ child: ReturnType<typeof onCores>; pid: number; url: string }> {
  const port = await freePort();
  const child = onCores(core, [process.execPath, join(HERE, 'landing', 'chain.js'), String(port)]);
  await waitFor(child, 'stdout', 'READY');
  child.stdout!.resume();
  child.stderr!.resume();
  return { child, pid: child.pid!, url: `http://127.0.0.1:${port}/` };
}

/**
 * `cycle`: repeat the bodies when they run out. Only where nothing is admitted: a repeat would be a
 * duplicate, and without cycling wrk sends a 404 probe instead, which costs CPU no answer counts.
 */
async function window(relay: Relay, d: Door, name: string, connections: number, seconds: number, file: string, cycle: boolean): Promise<RunStats> {
  const spec = wrkSpec({ name, what: name, port: relay.port, door: d, uuid: relay.uuid, bodiesFile: file, seconds, connections, cycle, lua: LUA });
  const r = await measureWindow(relay, spec, windowEnv);
  if ((r.generator as unknown as WrkResult).exhausted_threads > 0) log(`${name}: wrk ran out of distinct transactions: this run's figures are not valid`);
  return r;
}

/** The open-loop window: `rate` requests per second on a fixed schedule, whatever the relay answers. */
async function openWindow(relay: Relay, d: Door, name: string, rate: number, file: string): Promise<RunStats> {
  const spec = openLoopSpec(name, name, openLoopGenerator(ROOT, join(HERE, '..'), log), {
    host: '127.0.0.1',
    port: relay.port,
    path: d.path(relay.uuid),
    headers: d.headers(relay.uuid),
    bodiesFile: file,
    rate,
    seconds: SECONDS,
    connections: OPEN_CONNECTIONS,
    okStatus: d.okStatus,
  });
  const r = await measureWindow(relay, spec, windowEnv);
  const g = r.generator as { exhausted?: boolean; maxSendLagMs?: number };
  if (g.exhausted) log(`${name}: the generator ran out of distinct transactions: this run's figures are not valid`);
  if ((g.maxSendLagMs ?? 0) > 100) log(`${name}: the generator fell ${g.maxSendLagMs!.toFixed(0)} ms behind its schedule`);
  return r;
}

/** Requests per second the open-loop windows offer (set once, before the first round). */
let openRate = opt.rate ? Number(opt.rate) : 0;

async function run(v: Variant, d: Door, kind: Kind, warmFile: string, windowFile: string, serialWarmFile: string): Promise<RunStats> {
  const k = KINDS[kind];
  const relay = await startRelay({ layout: LAYOUT, cores: { relay: RELAY_CORE, all: '0-1' }, main: v.main, sinkUrl: sink.url, env: { ...v.env, ...k.env } });
  try {
    await window(relay, d, 'warm-up', 16, WARM_SECONDS, warmFile, k.perAnswer);
    // A serial client's requests are checked inline, a path the 16-connection warm-up leaves cold (bench:e2e warmBoth).
    if (kind === 'serial') await window(relay, d, 'warm-up', 1, WARM_SECONDS, serialWarmFile, false);
    if (kind === 'openloop') return await openWindow(relay, d, `${d.name} ${kind}, ${v.label}`, openRate, windowFile);
    return await window(relay, d, `${d.name} ${kind}, ${v.label}`, k.connections, SECONDS, windowFile, k.perAnswer);
  } finally {
    await stopRelay(relay);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const results = new Map<string, RunStats[]>();
const key = (d: Door, kind: Kind, v: Variant) => `${d.name}|${kind}|${v.label}`;
try {
  for (const d of doors) {
    const txs = await pool(d);
    const warmTxs = txRate(d) * WARM_SECONDS;
    const windowTxs = txRate(d) * SECONDS;
    if (txs.length < warmTxs + windowTxs) throw new Error(`need ${warmTxs + windowTxs} transactions, have ${txs.length}`);
    // Every relay start has fresh dedup state, so every run may send the same transactions.
    const warmFile = join(dir, `${d.name}-warm.bodies`);
    const windowFile = join(dir, `${d.name}-window.bodies`);
    writeBodies(warmFile, txs.slice(0, warmTxs).map((t, i) => d.body([t], i)));
    writeBodies(windowFile, txs.slice(warmTxs, warmTxs + windowTxs).map((t, i) => d.body([t], i)));
    // The serial warm-up (2 s on one connection, up to ~11k tx/s with the native check) takes the window range's tail, which one connection never reaches in a window.
    const serialWarmFile = join(dir, `${d.name}-serial-warm.bodies`);
    const serialWarmTxs = Math.floor(Math.min(40_000, windowTxs / 3));
    writeBodies(serialWarmFile, txs.slice(warmTxs + windowTxs - serialWarmTxs, warmTxs + windowTxs).map((t, i) => d.body([t], i)));
    if (kinds.includes('openloop') && !opt.rate) {
      log(`${d.name}: calibrating the open-loop rate: ${OPEN_FACTOR}x what ${variants[0].label} accepts at 16 connections`);
      const cal = await run(variants[0], d, 'saturation', warmFile, windowFile, serialWarmFile);
      openRate = Math.round(cal.acceptedPerSec * OPEN_FACTOR);
      log(`${d.name}: open loop offers ${openRate} req/s`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? variants : ([variants[1], variants[0]] as const);
      for (const kind of kinds) {
        for (const v of order) {
          log(`${d.name}, round ${r + 1}/${ROUNDS}: ${kind}, ${v.label}`);
          const s = await run(v, d, kind, warmFile, windowFile, serialWarmFile);
          results.set(key(d, kind, v), [...(results.get(key(d, kind, v)) ?? []), s]);
        }
      }
    }
  }
} finally {
  await stopChild(sink.child);
  rmSync(dir, { recursive: true, force: true });
}

const fig = (d: Door, kind: Kind, v: Variant) => {
  const runs = results.get(key(d, kind, v)) ?? [];
  const perAnswer = KINDS[kind].perAnswer;
  const cpu = runs.map((s) => (perAnswer ? s.cpuUsPerAnswer : s.cpuUsPerAccepted));
  const rate = runs.map((s) => (perAnswer ? s.answers / s.windowS : s.acceptedPerSec));
  return {
    cpu: median(cpu),
    rate: median(rate),
    p50: median(runs.map((s) => s.latency.p50Us)),
    p99: median(runs.map((s) => s.latency.p99Us)),
    expired: median(runs.map((s) => (s.refused > 0 ? (s.shed.expired ?? 0) / s.refused : 0))),
    cpuEach: cpu,
    each: cpu.map((x) => x.toFixed(1)).join(', '),
    other: median(runs.map((s) => s.loadPct.rest)),
  };
};
const [A, B] = variants;
const lines: string[] = [];
const print = (line: string) => {
  lines.push(line);
  console.log(line);
};
const where = LAYOUT === 'pinned' ? `relay pinned to core ${RELAY_CORE}` : 'relay in the default layout (all cores, workers auto)';
print(`# ${A.label} (A) vs ${B.label} (B), ${new Date().toISOString()}, Node ${process.version}, ${ROUNDS} rounds of ${SECONDS} s, ${where}`);
if (kinds.includes('openloop')) print(`Open loop: ${openRate} requests per second offered${opt.rate ? ' (--rate)' : ` (${OPEN_FACTOR}x what ${A.label} accepted in a 16-connection calibration window)`}.`);
print('| door | window | relay | relay µs CPU per accepted tx (per answer when refusing), median | each round | accepted per second (answers when refusing), median | p50 / p99 µs, median (wrk: every answer; open loop: accepted ones, from their due time) | refusals that expired after being read, median | other work, % of a core |');
print('|---|---|---|---|---|---|---|---|---|');
for (const d of doors) {
  for (const kind of kinds) {
    const what =
      kind === 'openloop' ? `open loop, ${openRate} req/s over ${OPEN_CONNECTIONS} connections` : `${KINDS[kind].connections} connections${kind === 'refusal' ? ', refused at the gate' : kind === 'shed' ? ', shed at the door' : ''}`;
    for (const v of variants) {
      const f = fig(d, kind, v);
      const pct = `${(f.expired * 100).toFixed(0)}%`;
      print(`| ${d.name} | ${what} | ${v.label} | ${f.cpu.toFixed(1)} | ${f.each} | ${f.rate.toFixed(0)} | ${f.p50.toFixed(0)} / ${f.p99.toFixed(0)} | ${pct} | ${f.other.toFixed(0)} |`);
    }
    const a = fig(d, kind, A);
    const b = fig(d, kind, B);
    // Each round runs A and B back to back, so a round's own ratio cancels the host's slow drift.
    const paired = a.cpuEach.map((x, i) => b.cpuEach[i]! / x);
    const pairedText = paired.length > 1 ? `each round ${paired.map((r) => r.toFixed(2)).join(', ')}; median ${median(paired).toFixed(2)}x` : '';
    print(`| ${d.name} | ${what} | B ÷ A | ${(b.cpu / a.cpu).toFixed(2)}x | ${pairedText} | ${(b.rate / a.rate).toFixed(2)}x | | | |`);
  }
}
// The latest paired run of each comparison is kept: bench/results/ab.md against a base checkout,
// ab-<option>.md for the others (a smoke run's figures mean nothing).
const which = opt.base ? '' : opt.coalesce ? '-coalesce' : opt['no-upstream'] ? '-no-upstream' : opt['shed-hold'] ? '-shed-hold' : opt.landing ? '-landing' : opt.ed25519 ? '-ed25519' : '-status';
if (!opt.smoke) writeFileSync(join(ROOT, 'bench', 'results', `ab${which}.md`), lines.join('\n') + '\n');
