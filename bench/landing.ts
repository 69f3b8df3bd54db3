/**
 * `npm run bench:landing`: what following forwarded transactions on chain
 * costs (docs/benchmarks.md#landing). A real relay (its own process, pinned
 * to core 0 as bench:ab pins it) forwards 10,000 transactions per family to a
 * stand-in chain (bench/landing/chain.ts) that is also its chain read RPC;
 * this process sends them (solana-v2, evm-rpc) and runs the stand-in on core 1.
 *
 * Each run: send the 10,000 while the stand-in holds them (nothing lands), a
 * hold of `--hold` seconds with all 10,000 followed, then release: Solana
 * signatures land in the next slot (400 ms slots), EVM hashes in the next
 * block (2 s blocks), and the run waits until every one is reported landed.
 * The same run with `chain_rpc` unset is the baseline; the two alternate,
 * `--rounds` times each (the medians are reported).
 *
 * - chain RPC requests per 1,000 followed per minute: the calls the stand-in
 *   got during the hold, by method, per minute, per 1,000 followed;
 * - relay CPU (/proc, every thread): the hold's, per 1,000 followed per
 *   minute, tracking on minus off; and the rest of the run's (send, land,
 *   status updates), tracking on minus off, per tracked transaction;
 * - memory: the relay's RSS and V8 heap (its /metrics) at the end of the hold,
 *   on minus off, per followed transaction (no forced GC: noisy), and the
 *   landing service's own heap per followed transaction, measured in this
 *   process with forced GCs (exact: what a tracked entry holds).
 *
 *   node --expose-gc dist/bench/landing.js [--count 10000] [--hold 20] [--rounds 3] [--smoke]
 */
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import bs58 from 'bs58';
import { DOORS, type Door } from './e2e/doors.js';
import { startRelay, stopRelay, type Relay } from './e2e/relay.js';
import { cpuModel, cpuSeconds, rssKb } from './e2e/proc.js';
import { startStandinChain, type StandinChain } from './landing/chain.js';
import { BLOCKHASHES, solanaPool } from './landing/pool.js';
import { evmTransfers } from '../src/bench/txgen.js';
import { Landing } from '../src/landing/landing.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const MAIN = join(HERE, '..', 'src', 'cli', 'main.js');

const { values: opt } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    hold: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    smoke: { type: 'boolean', default: false },
  },
});
const N = opt.smoke ? 300 : Number(opt.count);
const HOLD_S = opt.smoke ? 2 : Number(opt.hold);
const ROUNDS = opt.smoke ? 1 : Number(opt.rounds);
const SLOT_MS = 400;
const BLOCK_MS = 2000;
const log = (m: string): void => void process.stderr.write(`[landing] ${m}\n`);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:landing does)');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Sums of the relay's metrics this bench reads. */
async function metrics(r: Relay): Promise<{ tracked: number; landed: number; heap: number; rss: number }> {
  const text = await (await fetch(`http://127.0.0.1:${r.adminPort}/metrics`)).text();
  const sum = (re: RegExp): number => text.split('\n').reduce((a, l) => (re.test(l) ? a + Number(l.slice(l.lastIndexOf(' ') + 1)) : a), 0);
  return {
    tracked: sum(/^txrelay_landing_tracked /),
    landed: sum(/^txrelay_landed_total\{.*result="landed"/),
    heap: sum(/^txrelay_process_nodejs_heap_size_used_bytes /),
    rss: rssKb(r.pid) * 1024,
  };
}

async function until(what: string, ms: number, cond: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(100);
  }
}

/**
 * Every body, 16 in flight, until each is acknowledged: one shed (503) on a
 * busy shared host is sent again (it was not admitted, so it is no duplicate).
 */
async function sendAll(r: Relay, d: Door, bodies: Buffer[]): Promise<void> {
  const origin = `http://127.0.0.1:${r.port}`;
  const pool = new Pool(origin, { connections: 16 });
  const path = d.path(r.uuid);
  const headers = d.headers(r.uuid);
  let todo = bodies;
  for (let attempt = 0; todo.length > 0; attempt++) {
    if (attempt === 5) throw new Error(`${d.name}: ${todo.length} of ${bodies.length} not acknowledged after ${attempt} tries`);
    if (attempt > 0) await sleep(500);
    const again: Buffer[] = [];
    let next = 0;
    const list = todo;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < list.length) {
          const body = list[next++]!;
          const res = await pool.request({ origin, path, method: 'POST', headers, body });
          await res.body.dump();
          if (res.statusCode !== d.okStatus) again.push(body);
        }
      }),
    );
    todo = again;
  }
  await pool.close();
}

interface Run {
  on: boolean;
  holdS: number;
  holdCpuS: number;
  restCpuS: number;
  /** Calls during the hold, by method. */
  holdCalls: Record<string, number>;
  /** Calls from the release until all landed, by method. */
  landCalls: Record<string, number>;
  heapDelta: number;
  rssDelta: number;
  landed: number;
}

async function oneRun(d: Door, bodies: Buffer[], on: boolean): Promise<Run> {
  const chain: StandinChain = await startStandinChain({ slotMs: SLOT_MS, blockMs: BLOCK_MS });
  const rpc = on ? chain.url : '';
  const relay = await startRelay({
    layout: 'pinned',
    cores: { relay: '0', all: '0-1' },
    main: MAIN,
    sinkUrl: chain.url,
    env: { TXRELAY_SOLANA_CHAIN_RPC: rpc, TXRELAY_EVM_CHAIN_RPC: rpc, TXRELAY_STATUS_READS_PER_S: '1000' },
  });
  try {
    await sleep(500);
    const m0 = await metrics(relay);
    chain.hold();
    const cpu0 = cpuSeconds(relay.pid);
    await sendAll(relay, d, bodies);
    // Followed once the upstream's answer came back; without tracking, once forwarded.
    await until('every transaction followed', 60_000, async () => (on ? (await metrics(relay)).tracked >= N : chain.calls()[d.family === 'solana' ? 'sendTransaction' : 'eth_sendRawTransaction']! >= N));
    const cpu1 = cpuSeconds(relay.pid);
    const calls1 = chain.calls();
    const t1 = performance.now();
    await sleep(HOLD_S * 1000);
    const cpu2 = cpuSeconds(relay.pid);
    const calls2 = chain.calls();
    const holdS = (performance.now() - t1) / 1000;
    const m2 = await metrics(relay);
    chain.release();
    if (on) await until('every transaction landed', 60_000, async () => (await metrics(relay)).landed >= N);
    // Without tracking, the same time after the release as with it: the two runs' rest spans match.
    else await sleep(d.family === 'solana' ? 2 * SLOT_MS + 800 : BLOCK_MS + 1200);
    const cpu3 = cpuSeconds(relay.pid);
    const calls3 = chain.calls();
    const holdCalls: Record<string, number> = {};
    const landCalls: Record<string, number> = {};
    // This family's reads only (the other family's watcher polls its head with nothing to follow).
    const mine = (k: string): boolean => k.startsWith('eth_') === (d.family === 'evm') && !k.startsWith('send') && k !== 'eth_sendRawTransaction';
    for (const [k, v] of Object.entries(calls2)) if (mine(k)) holdCalls[k] = v - (calls1[k] ?? 0);
    for (const [k, v] of Object.entries(calls3)) if (mine(k)) landCalls[k] = v - (calls2[k] ?? 0);
    return {
      on,
      holdS,
      holdCpuS: cpu2 - cpu1,
      restCpuS: cpu1 - cpu0 + (cpu3 - cpu2),
      holdCalls,
      landCalls,
      heapDelta: m2.heap - m0.heap,
      rssDelta: m2.rss - m0.rss,
      landed: (await metrics(relay)).landed,
    };
  } finally {
    await stopRelay(relay);
    await chain.close();
  }
}

/** The landing service alone: heap per followed transaction, in this process, GC forced before each reading. */
function servicePerTracked(family: 'solana' | 'evm', ids: string[]): number {
  const heap = (): number => {
    gc!();
    gc!();
    return process.memoryUsage().heapUsed;
  };
  const l = new Landing({
    solana: family === 'solana' ? { rpc: 'http://127.0.0.1:9/', pollMs: 400, commitment: 'confirmed', timeoutMs: 180_000 } : undefined,
    evm: family === 'evm' ? { rpc: 'http://127.0.0.1:9/', pollMs: 1000, timeoutMs: 180_000 } : undefined,
    clock: () => Date.now(),
    onLanding: () => {},
  });
  const before = heap();
  // Solana: spread over BLOCKHASHES recent blockhashes, as sent; EVM: one sender, nonces in order.
  const hashes = Array.from({ length: BLOCKHASHES }, (_, i) => bs58.encode(Buffer.alloc(32, i + 1)));
  ids.forEach((id, i) => {
    if (family === 'solana') l.followSolana(id, hashes[i % BLOCKHASHES]!, 'solana-single', Date.now());
    else l.followEvm(id, '0x' + '11'.repeat(20), BigInt(i), 'evm-paid', Date.now());
  });
  const per = (heap() - before) / ids.length;
  if (l.size !== ids.length) throw new Error('not every id followed');
  return per;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const lines: string[] = [];
const print = (l: string): void => {
  lines.push(l);
  console.log(l);
};
const started = new Date().toISOString();
const rows: string[] = [];
const detail: string[] = [];
for (const d of [DOORS['solana-v2'], DOORS['evm-rpc']]) {
  log(`${d.family}: signing ${N}`);
  const txs = d.family === 'solana' ? solanaPool(N) : await evmTransfers(N, { chainId: 1 });
  const bodies = txs.map((t, i) => d.body([t], i));
  const ids = d.family === 'solana' ? txs.map((t) => bs58.encode(t.subarray(1, 65))) : txs.map((_, i) => '0x' + i.toString(16).padStart(64, '0'));
  const runs: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const on of r % 2 === 0 ? [true, false] : [false, true]) {
      log(`${d.family}, round ${r + 1}/${ROUNDS}: tracking ${on ? 'on' : 'off'}`);
      const x = await oneRun(d, bodies, on);
      if (on && x.landed < N) throw new Error(`${d.family}: ${x.landed} of ${N} reported landed`);
      runs.push(x);
    }
  }
  const on = runs.filter((x) => x.on);
  const off = runs.filter((x) => !x.on);
  const perMin = (x: Run, v: number): number => v / (x.holdS / 60) / (N / 1000);
  const callsPer = on.map((x) => perMin(x, Object.values(x.holdCalls).reduce((a, b) => a + b, 0)));
  const methods = [...new Set(on.flatMap((x) => Object.keys(x.holdCalls)))].sort();
  const byMethod = methods.map((m) => `${m} ${median(on.map((x) => perMin(x, x.holdCalls[m] ?? 0))).toFixed(1)}`).join(', ');
  const landMethods = [...new Set(on.flatMap((x) => Object.keys(x.landCalls)))].sort();
  const landPer = median(on.map((x) => Object.values(x.landCalls).reduce((a, b) => a + b, 0) / N));
  const landBy = landMethods.map((m) => `${m} ${median(on.map((x) => (x.landCalls[m] ?? 0) / N)).toFixed(3)}`).join(', ');
  // Paired by round: each round's on and off ran back to back.
  const holdCpu = on.map((x, i) => (perMin(x, x.holdCpuS) - perMin(off[i]!, off[i]!.holdCpuS)) * 1000); // ms per 1,000 per minute
  const restCpu = on.map((x, i) => ((x.restCpuS - off[i]!.restCpuS) / N) * 1e6); // µs per tracked
  const heap = on.map((x, i) => (x.heapDelta - off[i]!.heapDelta) / N);
  const rss = on.map((x, i) => (x.rssDelta - off[i]!.rssDelta) / N);
  const service = servicePerTracked(d.family, ids);
  const each = (xs: number[], f = 0): string => xs.map((x) => x.toFixed(f)).join(', ');
  rows.push(
    `| ${d.family} (${d.name}, stand-in ${d.family === 'solana' ? `${SLOT_MS} ms slots` : `${BLOCK_MS} ms blocks`}) | ${median(callsPer).toFixed(1)} (${byMethod}) | ${median(holdCpu).toFixed(1)} ms (rounds ${each(holdCpu, 1)}) | ${landPer.toFixed(3)} (${landBy}) | ${median(restCpu).toFixed(1)} µs (rounds ${each(restCpu, 1)}) | ${Math.round(service)} B | heap ${Math.round(median(heap))} B (rounds ${each(heap)}), RSS ${Math.round(median(rss))} B (rounds ${each(rss)}) |`,
  );
  detail.push(`${d.family}: hold ${median(on.map((x) => x.holdS)).toFixed(1)} s; relay CPU over the hold, on ${each(on.map((x) => x.holdCpuS), 3)} s, off ${each(off.map((x) => x.holdCpuS), 3)} s; rest of the run, on ${each(on.map((x) => x.restCpuS), 3)} s, off ${each(off.map((x) => x.restCpuS), 3)} s.`);
}

print(`<!-- npm run bench:landing${opt.smoke ? ' -- --smoke' : ''} -->`);
print(`# Landing: ${N.toLocaleString('en')} followed transactions per family, ${started}, Node ${process.version}, ${cpuModel()}, relay pinned to core 0, ${ROUNDS} rounds (medians; each round's tracking-on run paired with its tracking-off run)`);
print('');
print(`Stand-in chain: bench/landing/chain.ts (upstream and chain read RPC in one; Solana getSignatureStatuses and isBlockhashValid, EVM eth_blockNumber, eth_getBlockByNumber, eth_getTransactionReceipt); ${HOLD_S} s hold with all ${N.toLocaleString('en')} followed and none landed, then all land. Solana transactions signed under ${BLOCKHASHES} distinct recent blockhashes (the most that are valid at once). Relay poll intervals: Solana solana.landing_poll_ms 400 (default), EVM 1 s.`);
print('');
print('| family | chain RPC requests per 1,000 followed per minute (hold; by method) | relay CPU per 1,000 followed per minute (hold, on − off) | chain RPC requests per transaction from the release until all landed (by method) | relay CPU per tracked transaction (send, land, status updates; on − off) | landing service heap per followed (forced GC, in-process) | relay memory per followed at the hold (on − off, no forced GC) |');
print('|---|---|---|---|---|---|---|');
for (const r of rows) print(r);
print('');
for (const l of detail) print(l);
if (!opt.smoke) writeFileSync(join(ROOT, 'bench', 'results', 'landing.md'), lines.join('\n') + '\n');
else log('smoke run: nothing written');
