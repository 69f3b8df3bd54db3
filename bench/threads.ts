/**
 * What a hand-off to a verification worker costs, by mechanism
 * (docs/architecture.md#threads): a piscina task per job, the job table
 * (src/exec/jobs.ts: a SharedArrayBuffer ring, Atomics.wait / notify), a
 * piscina task per wake-up that drains the job table, and the relay's own
 * workers (src/exec/workers.ts: a piscina task per wake-up after a second
 * idle, serving the job table; each job is an empty transaction, refused at
 * once). The other workers do no work,
 * so the figures are the mechanism alone: the round trip with one job in
 * flight, and with 64 in flight the main thread's busy time per job (event
 * loop utilisation), which is what the acceptor pays.
 *
 *   npm run build && node dist/bench/threads.js [--jobs 20000] [--rounds 3]
 */
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { JobTable, JobKind, type JobTableHandle } from '../src/exec/jobs.js';
import { VerifyWorkers } from '../src/exec/workers.js';
import { Slab } from '../src/tables/slab.js';
import { DedupFilter } from '../src/tables/dedup.js';
import { systemClock } from '../src/clock.js';

type Mode = { mode: 'noop' } | { mode: 'table'; jobs: JobTableHandle } | { mode: 'drain'; jobs: JobTableHandle };

/** The worker side of every scenario (piscina's default export, or a plain Worker's loop). */
export default function task(): number {
  const d = workerData as Mode;
  if (d.mode !== 'drain') return 0;
  const jobs = JobTable.attach(d.jobs);
  let n = 0;
  for (let s = jobs.claim(0, systemClock()); s >= 0; s = jobs.claim(0, systemClock())) {
    jobs.complete(s, systemClock());
    n++;
  }
  jobs.announce();
  return n;
}

if (!isMainThread && (workerData as Mode).mode === 'table' && !(workerData as { piscina?: boolean }).piscina) {
  const jobs = JobTable.attach((workerData as { jobs: JobTableHandle }).jobs);
  for (;;) {
    const s = jobs.claim(0, systemClock());
    if (s >= 0) {
      jobs.complete(s, systemClock());
      if (jobs.waiting() === 0) jobs.announce();
      continue;
    }
    if (jobs.stopping) break;
    jobs.park(1000);
  }
  process.exit(0);
}

const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;
const C_COMPLETED = 4;

interface Result {
  /** Jobs per second. */
  rate: number;
  /** Main-thread busy µs per job. */
  mainUs: number;
}

async function measure(jobs: number, run: () => Promise<void>): Promise<Result> {
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  const elu = performance.eventLoopUtilization(elu0);
  return { rate: (jobs / ms) * 1000, mainUs: (elu.active * 1000) / jobs };
}

/** `n` submissions, `inFlight` at a time: each of `inFlight` lanes sends its next once its last is answered. */
async function spread(n: number, inFlight: number, one: () => Promise<void>): Promise<void> {
  let sent = 0;
  const lane = async () => {
    while (sent < n) {
      sent++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

async function piscinaPerJob(n: number, inFlight: number): Promise<Result> {
  const p = new Piscina({ filename: import.meta.url, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, workerData: { mode: 'noop' }, recordTiming: false });
  await p.run({});
  const r = await measure(n, () => spread(n, inFlight, () => p.run({}).then(() => {})));
  await p.destroy();
  return r;
}

/** Main side of the job table: submit, wake a parked consumer, collect done entries on COMPLETED. */
function tableDriver(t: JobTable, kick: () => void) {
  let done = 0;
  const waiters: (() => void)[] = [];
  let watching = false;
  const collect = (): void => {
    for (let s = t.nextDone(); s >= 0; s = t.nextDone()) {
      t.release(s);
      done++;
      waiters.shift()?.();
    }
  };
  const watch = (): void => {
    if (watching) return;
    watching = true;
    const seen = Atomics.load(t.ctrl, C_COMPLETED);
    collect();
    const w = waitAsync(t.ctrl, C_COMPLETED, seen);
    const again = () => {
      watching = false;
      collect();
      if (waiters.length > 0) watch();
    };
    if (w.async) void (w.value as Promise<string>).then(again);
    else queueMicrotask(again);
  };
  return {
    get done() {
      return done;
    },
    submit(): Promise<void> {
      const s = t.acquire();
      t.set(s, JobKind.SolanaTx, 0, 0, 0);
      const p = new Promise<void>((resolve) => waiters.push(resolve));
      if (t.submit(s, systemClock())) t.wake(1);
      kick();
      watch();
      return p;
    },
  };
}

async function tablePerJob(n: number, inFlight: number): Promise<Result> {
  const t = JobTable.create(1024);
  const w = new Worker(new URL(import.meta.url), { workerData: { mode: 'table', jobs: t.handle() } });
  await new Promise((r) => setTimeout(r, 200));
  const d = tableDriver(t, () => {});
  const r = await measure(n, () => spread(n, inFlight, () => d.submit()));
  t.stop();
  await new Promise((res) => w.once('exit', res));
  return r;
}

/** A piscina task per wake-up: started when jobs wait and no drain task runs; it returns once the table is empty. */
async function piscinaDrain(n: number, inFlight: number): Promise<Result & { tasks: number }> {
  const t = JobTable.create(1024);
  const p = new Piscina({ filename: import.meta.url, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, workerData: { mode: 'drain', jobs: t.handle() }, recordTiming: false });
  await p.run({});
  let running: Promise<void> | null = null;
  let tasks = 0;
  const kick = (): void => {
    if (running) return;
    tasks++;
    running = p.run({}).then(() => {
      running = null;
      // Submitted after the task's last claim: another task takes them.
      if (t.waiting() > 0) kick();
    });
  };
  const d = tableDriver(t, kick);
  const r = await measure(n, () => spread(n, inFlight, () => d.submit()));
  while (running) await running;
  await p.destroy();
  return { ...r, tasks };
}

/** The relay's verification workers as they run, one thread. */
async function shipped(n: number, inFlight: number): Promise<Result & { tasks: number }> {
  const t = JobTable.create(1024);
  const slab = Slab.create({ capacity: 1 << 20 });
  const dedup = DedupFilter.create({ windowMs: 60_000, capacity: 1000 });
  const w = new VerifyWorkers({
    threads: 1,
    filename: new URL('../src/exec/verify-worker.js', import.meta.url),
    data: { slab: slab.handle(), jobs: t.handle(), dedup: dedup.handle(), chainId: '1', maxWaitMs: 60_000 },
    onDeath: () => {},
  });
  await w.start();
  const before = w.tasks;
  const d = tableDriver(t, () => {});
  const r = await measure(n, () => spread(n, inFlight, () => d.submit()));
  const tasks = w.tasks - before;
  t.stop();
  await w.stop();
  return { ...r, tasks };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

if (isMainThread) {
  const arg = (k: string, d: number) => {
    const i = process.argv.indexOf(k);
    return i > 0 ? Number(process.argv[i + 1]) : d;
  };
  const n = arg('--jobs', 20000);
  const rounds = arg('--rounds', 3);
  const rows: string[] = [];
  for (const inFlight of [1, 64]) {
    const scen: [string, () => Promise<Result & { tasks?: number }>][] = [
      ['piscina.run per job', () => piscinaPerJob(n, inFlight)],
      ['job table (Atomics)', () => tablePerJob(n, inFlight)],
      ['piscina task per wake-up, draining the job table', () => piscinaDrain(n, inFlight)],
      ['relay workers: piscina task per wake-up after 1 s idle, serving the job table', () => shipped(n, inFlight)],
    ];
    for (const [name, f] of scen) {
      const rs: (Result & { tasks?: number })[] = [];
      for (let i = 0; i < rounds; i++) rs.push(await f());
      const rate = median(rs.map((r) => r.rate));
      const main = median(rs.map((r) => r.mainUs));
      const tasks = rs[0]!.tasks;
      rows.push(`| ${name} | ${inFlight} | ${(1e6 / rate).toFixed(1)} | ${Math.round(rate)} | ${main.toFixed(2)} | ${tasks === undefined ? '' : (tasks / n).toFixed(3)} |`);
      console.error(rows.at(-1));
    }
  }
  console.log(`Node ${process.version}, ${n} jobs per round, median of ${rounds} rounds`);
  console.log('| mechanism | in flight | µs per job (wall) | jobs/s | main-thread µs per job | tasks per job |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}
