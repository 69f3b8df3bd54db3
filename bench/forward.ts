/**
 * Forwarding cost per item: one `Lane` against `txrelay bench sink` running
 * in another process (pinned to another core when `taskset` exists), so the
 * figures are the relay side only: body building, the HTTP client, the answer
 * parsing and the lane's bookkeeping. CPU is `process.cpuUsage()` (every
 * thread of the process: main, libuv, GC helpers); allocation is the V8 heap
 * growth summed over garbage collections (`v8.GCProfiler`), which leaves out
 * Buffer backing stores.
 *
 *   node dist/bench/forward.js                        this build, every mode
 *   node dist/bench/forward.js --vs /other/dist       A/B against another build, run in turns
 *   node dist/bench/forward.js --mode serial --items 20000 --rounds 5
 *
 * Modes: `serial` offers one item and waits for its answer (one request per
 * item, the low-load case); `batch8`/`batch64` offer that many in one turn
 * and wait (one JSON-RPC array per burst, the loaded case); `fanout2` is
 * serial to two upstreams (the same body goes to both).
 * Each variant runs in a fresh process; with --vs the two alternate
 * (A B A B ...) and the ratio is taken pair by pair, then the median.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GCProfiler, getHeapStatistics } from 'node:v8';

const MODES = ['serial', 'batch8', 'batch64', 'fanout2'] as const;
type Mode = (typeof MODES)[number];
/** Bytes of a typical Solana transaction (a transfer with a compute-budget instruction and a tip is 300-500 bytes). */
const TX_BYTES = 400;
/** Items sent before measuring: lets the JIT settle and the keep-alive connections open. */
const WARMUP_ITEMS = 2_000;

interface Result {
  mode: Mode;
  items: number;
  cpuUsPerItem: number;
  sysUsPerItem: number;
  allocBytesPerItem: number;
  wallMs: number;
}

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const here = resolve(fileURLToPath(import.meta.url), '../..');
const hasTaskset = spawnSync('taskset', ['-V']).status === 0;

if (flag('--child') !== undefined) await child(flag('--child')!, flag('--mode') as Mode, Number(flag('--items')), flag('--sink')!.split(','));
else await parent();

async function child(dist: string, mode: Mode, items: number, sinks: string[]): Promise<void> {
  const { Lane } = (await import(pathToFileURL(resolve(dist, 'src/forward/lane.js')).href)) as typeof import('../src/forward/lane.js');
  const upstreams = mode === 'fanout2' ? sinks.slice(0, 2) : sinks.slice(0, 1);
  const lane = new Lane('solana-single', { upstreams, capacity: 10_000 });
  const burst = mode === 'batch64' ? 64 : mode === 'batch8' ? 8 : 1;
  const txs: string[] = [];
  for (let i = 0; i < WARMUP_ITEMS + items; i++) {
    const b = Buffer.alloc(TX_BYTES);
    b.writeUInt32LE(i, 1);
    b.fill(i % 251, 8);
    txs.push(b.toString('base64'));
  }
  const run = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i += burst) {
      const end = Math.min(i + burst, to);
      for (let k = i; k < end; k++) if (!lane.offer(txs[k]!)) throw new Error('offer refused');
      await lane.whenIdle();
    }
  };
  await run(0, WARMUP_ITEMS);
  const gc = new GCProfiler();
  const used0 = getHeapStatistics().used_heap_size;
  gc.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(WARMUP_ITEMS, WARMUP_ITEMS + items);
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const used1 = getHeapStatistics().used_heap_size;
  const prof = gc.stop();
  let alloc = 0;
  let prev = used0;
  for (const s of prof.statistics) {
    alloc += s.beforeGC.heapStatistics.usedHeapSize - prev;
    prev = s.afterGC.heapStatistics.usedHeapSize;
  }
  alloc += used1 - prev;
  const st = lane.stats();
  if (st.forwarded !== WARMUP_ITEMS + items) throw new Error(`forwarded ${st.forwarded} of ${WARMUP_ITEMS + items}`);
  await lane.close();
  const r: Result = { mode, items, cpuUsPerItem: (cpu.user + cpu.system) / items, sysUsPerItem: cpu.system / items, allocBytesPerItem: alloc / items, wallMs };
  process.stdout.write(JSON.stringify(r) + '\n');
}

async function parent(): Promise<void> {
  const modes = (flag('--mode')?.split(',') ?? [...MODES]) as Mode[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m}; one of ${MODES.join(', ')}`);
  const items = Number(flag('--items') ?? 10_000);
  const rounds = Number(flag('--rounds') ?? 3);
  const other = flag('--vs');
  if (other !== undefined && !existsSync(resolve(other, 'src/forward/lane.js'))) throw new Error(`--vs ${other}: no src/forward/lane.js under it`);
  const variants = other === undefined ? [here] : [here, resolve(other)];

  const sinks = [await startSink(), await startSink()];
  try {
    console.log(`node ${process.version}; ${TX_BYTES}-byte transactions; ${items} items per run after ${WARMUP_ITEMS} warm-up; ${rounds} rounds${hasTaskset ? '; lane on cpu 0, sinks on cpu 1' : ''}`);
    if (other !== undefined) console.log(`A = ${here}\nB = ${resolve(other)}`);
    const rows: Record<string, string | number>[] = [];
    for (const mode of modes) {
      const res: Result[][] = variants.map(() => []);
      for (let r = 0; r < rounds; r++) {
        for (let v = 0; v < variants.length; v++) res[v]!.push(await runChild(variants[v]!, mode, items, sinks.map((s) => s.url)));
      }
      const med = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
      const row: Record<string, string | number> = { mode };
      const names = other === undefined ? [''] : ['A ', 'B '];
      variants.forEach((_, v) => {
        row[names[v] + 'cpu µs/item'] = med(res[v]!.map((x) => x.cpuUsPerItem)).toFixed(2);
        row[names[v] + 'of it sys'] = med(res[v]!.map((x) => x.sysUsPerItem)).toFixed(2);
        row[names[v] + 'heap B/item'] = Math.round(med(res[v]!.map((x) => x.allocBytesPerItem)));
      });
      if (other !== undefined) {
        row['cpu A/B'] = med(res[0]!.map((a, i) => a.cpuUsPerItem / res[1]![i]!.cpuUsPerItem)).toFixed(3);
        row['heap A/B'] = med(res[0]!.map((a, i) => a.allocBytesPerItem / res[1]![i]!.allocBytesPerItem)).toFixed(3);
      }
      rows.push(row);
    }
    console.table(rows);
  } finally {
    for (const s of sinks) s.proc.kill();
  }
}

function runChild(dist: string, mode: Mode, items: number, sinks: string[]): Promise<Result> {
  const script = fileURLToPath(import.meta.url);
  const argv = [script, '--child', dist, '--mode', mode, '--items', String(items), '--sink', sinks.join(',')];
  const [cmd, cmdArgs] = hasTaskset ? ['taskset', ['-c', '0', process.execPath, ...argv]] : [process.execPath, argv];
  return new Promise((resolvePromise, reject) => {
    const p = spawn(cmd, cmdArgs as string[], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${mode} in ${dist} exited with ${code}`));
      resolvePromise(JSON.parse(out.trim().split('\n').pop()!) as Result);
    });
  });
}

async function startSink(): Promise<{ url: string; proc: ChildProcess }> {
  const sinkJs = pathToFileURL(resolve(here, 'src/bench/sink.js')).href;
  const code = `const m = await import(${JSON.stringify(sinkJs)}); const s = await m.startSink({ port: 0 }); console.log(s.url);`;
  const argv = ['--input-type=module', '-e', code];
  const [cmd, cmdArgs] = hasTaskset ? ['taskset', ['-c', '1', process.execPath, ...argv]] : [process.execPath, argv];
  const proc = spawn(cmd, cmdArgs as string[], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolvePromise, reject) => {
    let out = '';
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolvePromise(out.slice(0, nl).trim());
    });
    proc.on('exit', (code) => reject(new Error(`sink exited with ${code}`)));
  });
  return { url, proc };
}
