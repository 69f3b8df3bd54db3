/**
 * The TPU route's own cost, side by side with an RPC upstream's, in one run
 * (docs/benchmarks.md#tpu). Stand-in leaders (test/helpers/tpu-standin.ts,
 * granting 128 concurrent streams as Agave does an unstaked peer) and an RPC
 * sink (`src/bench/sink.ts`) run in child processes, so the figures are the
 * relay side only.
 *
 * - CPU per transaction forwarded: the lane to one RPC upstream against the
 *   TPU pool to `leaders_ahead` = 2 leaders (one stream each), the same
 *   transactions, rounds alternating; `process.cpuUsage` (every thread);
 *   and the pool as the relay runs it, on a thread of its own (pool-thread.ts):
 *   the whole process's CPU and the main thread's busy time (its event-loop
 *   utilisation), what admission gives up for it;
 * - ack-to-written: from the route's send (right after the acknowledgement)
 *   until every stream of the transaction is handed to the socket, with 1 and
 *   16 concurrent senders (16 transactions in a turn);
 * - warm-up hit rate through a leader rotation: slots of `--slot-ms`, a
 *   leader every 4 slots, the pool's window moved each slot as the tracker
 *   moves it, a transaction every 2 ms; the share of sends that found their
 *   leader's connection already open;
 * - memory per open connection: RSS and V8 heap growth over 64 connections.
 *
 *   node --expose-gc dist/bench/tpu.js [--items 2000] [--rounds 3] [--slot-ms 100]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { loadIdentity } from '../src/tpu/identity.js';
import { TpuPool, type LeaderPool } from '../src/tpu/pool.js';
import { TpuPoolThread } from '../src/tpu/pool-thread.js';
import type { QuicLib } from '../src/tpu/conn.js';
import type { Leader } from '../src/tpu/leaders.js';
import { Lane } from '../src/forward/lane.js';
import { legacyTransfer } from '../test/helpers/solana.js';

const args = process.argv.slice(2);
const arg = (name: string, d: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : d;
};
const here = resolve(fileURLToPath(import.meta.url), '../..');

if (args[0] === '--serve') {
  const { startValidator } = await import('../test/helpers/tpu-standin.js');
  const vs = await Promise.all(Array.from({ length: Number(args[1]) }, () => startValidator()));
  console.log(JSON.stringify(vs.map((v) => ({ identity: v.identity.pubkey, address: v.address }))));
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else {
  await main();
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
function med(xs: number[]): number {
  return pct(xs, 50);
}

async function firstLine(p: ChildProcess): Promise<string> {
  return new Promise<string>((r, j) => {
    createInterface({ input: p.stdout! }).once('line', r);
    p.once('exit', (code) => j(new Error(`child exited with ${code}`)));
  });
}

async function main(): Promise<void> {
  const items = arg('--items', 2000);
  const rounds = arg('--rounds', 3);
  const slotMs = arg('--slot-ms', 100);
  const standins = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', '64'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const sinkJs = pathToFileURL(resolve(here, 'src/bench/sink.js')).href;
  const sink = spawn(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(sinkJs)}); const s = await m.startSink({ port: 0 }); console.log(s.url);`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.once('exit', () => sink.kill());
  const [line, sinkUrl] = await Promise.all([firstLine(standins), firstLine(sink)]);
  const leaders: Leader[] = (JSON.parse(line) as { identity: string; address: string }[]).map((l) => ({ ...l, slot: 0 }));
  const q = await import('@matrixai/quic');
  const silent: Record<string, unknown> = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
  silent.getChild = () => silent;
  const lib: QuicLib = { QUICClient: q.QUICClient, logger: silent as never };
  const txs = Array.from({ length: 256 }, () => Buffer.from(legacyTransfer().bytes));
  const txs64 = txs.map((t) => t.toString('base64'));
  const notWritten = new Map<string, number>();
  console.log(`node ${process.version}; ${txs[0]!.length}-byte transfers; ${items} transactions per run after 500 warm-up; ${rounds} rounds alternating`);

  const sendTo = (pool: LeaderPool, ls: readonly Leader[], tx: Buffer, lat: number[] | null): Promise<void> =>
    new Promise((res) => {
      let left = ls.length;
      const t0 = performance.now();
      for (const l of ls) {
        pool.send(l, tx, (r, why) => {
          if (r !== 'written') notWritten.set(`${r}: ${why}`, (notWritten.get(`${r}: ${why}`) ?? 0) + 1);
          if (--left === 0) {
            lat?.push((performance.now() - t0) * 1000);
            res();
          }
        });
      }
    });

  /** `n` transactions, `conc` of them offered in one turn and waited for; CPU µs per transaction (`main`: the main thread's busy µs). */
  const tpuRun = async (pool: LeaderPool, ls: readonly Leader[], n: number, conc: number, lat: number[] | null, main?: number[]): Promise<number> => {
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    for (let i = 0; i < n; i += conc) {
      const ps: Promise<void>[] = [];
      for (let k = i; k < Math.min(n, i + conc); k++) ps.push(sendTo(pool, ls, txs[k % txs.length]!, lat));
      await Promise.all(ps);
    }
    const c = process.cpuUsage(cpu0);
    main?.push((performance.eventLoopUtilization(elu0).active * 1000) / n);
    return (c.user + c.system) / n;
  };
  const rpcRun = async (lane: Lane<'solana-single'>, n: number, conc: number): Promise<number> => {
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < n; i += conc) {
      for (let k = i; k < Math.min(n, i + conc); k++) if (!lane.offer(txs64[k % txs64.length]!)) throw new Error('offer refused');
      await lane.whenIdle();
    }
    const c = process.cpuUsage(cpu0);
    return (c.user + c.system) / n;
  };

  const ls = leaders.slice(0, 2);
  const rows: Record<string, string | number>[] = [];
  for (const conc of [1, 16]) {
    const pool = new TpuPool(lib, loadIdentity(null), 2000);
    pool.window(ls);
    const threaded = await TpuPoolThread.start(loadIdentity(null), 2000);
    if (typeof threaded === 'string') throw new Error(threaded);
    threaded.window(ls);
    const lane = new Lane('solana-single', { upstreams: [sinkUrl], capacity: 10_000 });
    await tpuRun(pool, ls, 500, conc, null);
    await tpuRun(threaded, ls, 500, conc, null);
    await rpcRun(lane, 500, conc);
    const tpu: number[] = [];
    const rpc: number[] = [];
    const lat: number[] = [];
    const onThread: number[] = [];
    const mainInline: number[] = [];
    const mainThreaded: number[] = [];
    const latThreaded: number[] = [];
    for (let r = 0; r < rounds; r++) {
      rpc.push(await rpcRun(lane, items, conc));
      tpu.push(await tpuRun(pool, ls, items, conc, lat, mainInline));
      onThread.push(await tpuRun(threaded, ls, items, conc, latThreaded, mainThreaded));
    }
    rows.push({
      senders: conc,
      'RPC upstream: CPU µs/tx': med(rpc).toFixed(0),
      'TPU, 2 leaders: CPU µs/tx': med(tpu).toFixed(0),
      'TPU/RPC': med(tpu.map((t, i) => t / rpc[i]!)).toFixed(2),
      'TPU ack-to-written p50 µs': pct(lat, 50).toFixed(0),
      'p99 µs': pct(lat, 99).toFixed(0),
      'main thread busy µs/tx': med(mainInline).toFixed(0),
      'TPU on its thread: CPU µs/tx': med(onThread).toFixed(0),
      'its main thread busy µs/tx': med(mainThreaded).toFixed(0),
      'its ack-to-written p50 / p99 µs': `${pct(latThreaded, 50).toFixed(0)} / ${pct(latThreaded, 99).toFixed(0)}`,
    });
    await lane.close();
    await pool.close();
    await threaded.close();
  }
  console.table(rows);
  if (notWritten.size > 0) console.log('  not written:', JSON.stringify(Object.fromEntries(notWritten)));
  notWritten.clear();

  // Warm-up through a rotation: the tracker's window (the leaders of this slot and the next `ahead`), moved every slot.
  {
    const ahead = 2;
    const pool = new TpuPool(lib, loadIdentity(null), 2000);
    const leaderAt = (slot: number): Leader => ({ ...leaders[Math.floor(slot / 4) % leaders.length]!, slot: Math.floor(slot / 4) * 4 });
    const runOf = (slot: number, n: number): Leader[] => Array.from({ length: n }, (_, i) => leaderAt(slot + 4 * i));
    let slot = 0;
    pool.window(runOf(0, ahead + 1));
    await new Promise((r) => setTimeout(r, 500)); // the first window's handshakes, as at start-up
    pool.stats.warm = pool.stats.cold = 0;
    const tick = setInterval(() => pool.window(runOf(++slot, ahead + 1)), slotMs);
    const t0 = performance.now();
    while (performance.now() - t0 < slotMs * 4 * 16) {
      void sendTo(pool, runOf(slot, ahead), txs[slot % txs.length]!, null);
      await new Promise((r) => setTimeout(r, 2));
    }
    clearInterval(tick);
    const { warm, cold } = pool.stats;
    console.log(
      `warm-up through ${Math.floor(slot / 4)} leader rotations (slots of ${slotMs} ms, window = ${ahead + 1} leaders): ${warm} of ${warm + cold} sends warm (${((100 * warm) / (warm + cold)).toFixed(1)} %)`,
    );
    await pool.close();
  }

  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const pool = new TpuPool(lib, loadIdentity(null), 2000);
  pool.window(leaders);
  await Promise.all(leaders.map((l, i) => sendTo(pool, [l], txs[i % txs.length]!, null)));
  global.gc?.();
  const m = process.memoryUsage();
  console.log(`memory per open connection (${pool.open} open): RSS ${((m.rss - rss0) / leaders.length / 1024).toFixed(0)} KiB, V8 heap ${((m.heapUsed - heap0) / leaders.length / 1024).toFixed(0)} KiB`);
  if (notWritten.size > 0) console.log('  not written:', JSON.stringify(Object.fromEntries(notWritten)));
  await pool.close();
  standins.stdin!.end();
  sink.kill();
}
