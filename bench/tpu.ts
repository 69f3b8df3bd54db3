/**
 * The TPU route's own cost (docs/benchmarks.md#tpu): stand-in leaders
 * (test/helpers/tpu-standin.ts) run in a child process, so the figures are
 * the relay side only: the pool and its QUIC connections (@matrixai/quic).
 *
 * - send-to-written: from `pool.send` (the route's send, right after the
 *   acknowledgement) until the stream is written and finished, one
 *   transaction at a time, to 1 leader and to 16 at once (the last of the 16);
 * - CPU per transaction sent to one leader (`process.cpuUsage`, every thread);
 * - memory per open connection: RSS and V8 heap growth over 64 connections.
 *
 *   node dist/bench/tpu.js [--items 2000]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { loadIdentity } from '../src/tpu/identity.js';
import { TpuPool } from '../src/tpu/pool.js';
import type { QuicLib } from '../src/tpu/conn.js';
import { legacyTransfer } from '../test/helpers/solana.js';

const args = process.argv.slice(2);
const arg = (name: string, d: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : d;
};

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

async function main(): Promise<void> {
  const items = arg('--items', 2000);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', '64'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((r) => createInterface({ input: child.stdout! }).once('line', r));
  const leaders = (JSON.parse(line) as { identity: string; address: string }[]).map((l) => ({ ...l, slot: 0 }));
  const q = await import('@matrixai/quic');
  const silent: Record<string, unknown> = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
  silent.getChild = () => silent;
  const lib: QuicLib = { QUICClient: q.QUICClient, logger: silent as never };
  const txs = Array.from({ length: 256 }, () => Buffer.from(legacyTransfer().bytes));

  const notWritten = new Map<string, number>();
  const sendTo = (pool: TpuPool, ls: typeof leaders, tx: Buffer): Promise<void> =>
    new Promise((resolve) => {
      let left = ls.length;
      for (const l of ls) {
        pool.send(l, tx, (r, why) => {
          if (r !== 'written') notWritten.set(`${r}: ${why}`, (notWritten.get(`${r}: ${why}`) ?? 0) + 1);
          if (--left === 0) resolve();
        });
      }
    });

  for (const fan of [1, 16]) {
    const pool = new TpuPool(lib, loadIdentity(null), 2000);
    const ls = leaders.slice(0, fan);
    pool.window(ls);
    for (let i = 0; i < 200; i++) await sendTo(pool, ls, txs[i % txs.length]!); // warm-up: handshakes, JIT
    const lat: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < items; i++) {
      const t0 = performance.now();
      await sendTo(pool, ls, txs[i % txs.length]!);
      lat.push((performance.now() - t0) * 1000);
    }
    const cpu = process.cpuUsage(cpu0);
    console.log(
      `${fan} leader(s): send-to-written p50 ${pct(lat, 50).toFixed(0)} µs, p99 ${pct(lat, 99).toFixed(0)} µs; CPU ${((cpu.user + cpu.system) / (items * fan)).toFixed(1)} µs per stream (${items} transactions)`,
    );
    if (notWritten.size > 0) console.log('  not written:', JSON.stringify(Object.fromEntries(notWritten)));
    notWritten.clear();
    await pool.close();
  }

  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const pool = new TpuPool(lib, loadIdentity(null), 2000);
  pool.window(leaders);
  await Promise.all(leaders.map((l, i) => sendTo(pool, [l], txs[i % txs.length]!)));
  global.gc?.();
  const m = process.memoryUsage();
  console.log(`memory per open connection (${pool.open} open): RSS ${((m.rss - rss0) / leaders.length / 1024).toFixed(0)} KiB, V8 heap ${((m.heapUsed - heap0) / leaders.length / 1024).toFixed(0)} KiB`);
  await pool.close();
  child.stdin!.end();
}
