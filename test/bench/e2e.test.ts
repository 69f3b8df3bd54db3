/**
 * The end-to-end benchmark's pure parts: /proc parsing (a wrong field index
 * would silently report nonsense CPU figures), the bodies file format shared
 * with the wrk Lua script, and the CPU profile summary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseProcStat, parseVmRssKb, cpuSeconds } from '../../bench/e2e/proc.js';
import { decodeBodies, encodeBodies } from '../../bench/e2e/bodies.js';
import { summariseProfile } from '../../bench/e2e/profile.js';

test('parseProcStat reads utime and stime (fields 14, 15) even when the command name holds spaces and parentheses', () => {
  const line = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 731 52 0 0 20 0 11 0 98765 1234567 8910 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0';
  assert.deepEqual(parseProcStat(line), { utime: 731, stime: 52 });
  assert.throws(() => parseProcStat('garbage'));
});

test('parseProcStat agrees with this process\'s own CPU clock', () => {
  const t = performance.now();
  while (performance.now() - t < 120); // burn ~120 ms of CPU
  const fromProc = cpuSeconds(process.pid);
  const own = (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
  // Clock ticks are 10 ms; allow for them and for the time between the two reads.
  assert.ok(Math.abs(fromProc - own) < 0.05, `proc ${fromProc} s vs cpuUsage ${own} s`);
});

test('parseVmRssKb', () => {
  assert.equal(parseVmRssKb('Name:\tnode\nVmPeak:\t  999 kB\nVmRSS:\t   51234 kB\nThreads:\t11\n'), 51234);
  assert.equal(parseVmRssKb('Name:\tkthreadd\n'), -1);
});

test('bodies file round-trips (u16 LE length + bytes, the layout bench/e2e/wrk/bodies.lua reads)', () => {
  const bodies = [Buffer.from('0xabc'), Buffer.alloc(0), Buffer.alloc(300, 7)];
  const enc = encodeBodies(bodies);
  assert.equal(enc.readUInt16LE(0), 5);
  assert.deepEqual(decodeBodies(enc).map((b) => b.toString('hex')), bodies.map((b) => b.toString('hex')));
  assert.throws(() => decodeBodies(enc.subarray(0, enc.length - 1)), /truncated/);
  assert.throws(() => encodeBodies([Buffer.alloc(70_000)]), /u16/);
});

test('summariseProfile sums self time per function and leaves idle out of the busy share', () => {
  const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });
  const p = {
    nodes: [
      { id: 1, callFrame: frame('(root)') },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('verify', 'file:///x/dist/src/chains/solana/verify.js', 9) },
      { id: 4, callFrame: frame('gate', 'file:///x/dist/src/pipeline/admission.js', 99) },
    ],
    startTime: 0,
    endTime: 1000,
    samples: [3, 3, 4, 2, 3],
    timeDeltas: [0, 100, 100, 100, 500, 100],
  };
  const s = summariseProfile(p, 5);
  assert.equal(s.totalMs, 0.9);
  assert.equal(s.busyMs, 0.4);
  assert.equal(s.top[0]!.fn, 'verify src/chains/solana/verify.js:10');
  assert.equal(s.top[0]!.selfMs, 0.3);
  assert.equal(Math.round(s.top[0]!.pct), 75);
  assert.equal(s.top[1]!.fn, 'gate src/pipeline/admission.js:100');
});

test('relay-side quantiles come from the difference of two histogram scrapes, as bucket upper bounds', async () => {
  const { histogramQuantiles } = await import('../../bench/e2e/histogram.js');
  const before = new Map([[0.001, 10], [0.002, 10], [0.005, 10], [Infinity, 10]]);
  // 100 new answers: 90 within 1 ms, 9 more within 2 ms, the last within 5 ms.
  const after = new Map([[0.001, 100], [0.002, 109], [0.005, 110], [Infinity, 110]]);
  const q = histogramQuantiles(before, after);
  assert.equal(q.count, 100);
  assert.equal(q.p50UpperMs, 1);
  assert.equal(q.p99UpperMs, 2);
});

// ---- goal figures ----------------------------------------------------------------

test('a --trace-gc-nvp line yields its isolate, kind, pause and allocated bytes; other lines yield nothing', async () => {
  const { parseGcLine } = await import('../../bench/e2e/gc.js');
  const line =
    '[4242:0x5581e0a0]     1234 ms: pause=2.5 mutator=17.0 gc=s reduce_memory=0 time_to_safepoint=0.00 scavenge=0.37 ' +
    'total_size_before=4074320 total_size_after=3154128 allocated=123456 promoted=0 new_space_survived=106704';
  assert.deepEqual(parseGcLine(line), { isolate: '0x5581e0a0', kind: 's', pauseMs: 2.5, allocated: 123456 });
  assert.equal(parseGcLine('{"level":40,"msg":"lane solana-bundle runs dry"}'), null);
  assert.equal(parseGcLine(line.replace('gc=s', 'gc=mc'))!.kind, 'mc');
});

test('GC summary: per isolate, the first isolate to report is the main thread; scavenge p99 and max, full GCs apart', async () => {
  const { summariseGc } = await import('../../bench/e2e/gc.js');
  const ev = (isolate: string, kind: string, pauseMs: number, allocated: number) => ({ isolate, kind, pauseMs, allocated });
  const events = [
    ...Array.from({ length: 99 }, () => ev('0xa', 's', 1, 1000)),
    ev('0xa', 's', 9, 1000),
    ev('0xa', 'mc', 6.5, 500),
    ev('0xb', 's', 0.5, 200),
  ];
  const [main, worker] = summariseGc(events, ['0xa', '0xb']);
  assert.equal(main!.isolate, 'main');
  assert.equal(main!.scavenges, 100);
  assert.equal(main!.scavengeP99Ms, 1, 'the 99th of 100 sorted pauses');
  assert.equal(main!.scavengeMaxMs, 9);
  assert.equal(main!.fullGcs, 1);
  assert.equal(main!.fullMaxMs, 6.5);
  assert.equal(main!.allocatedBytes, 100_500);
  assert.equal(worker!.isolate, 'worker 1');
  assert.equal(worker!.allocatedBytes, 200);
});

test('each goal is a ratio of two figures of the same run, judged against its limit in the right direction', async () => {
  const { evaluateGoals, GOALS } = await import('../../bench/e2e/goals.js');
  const g = evaluateGoals({
    crypto: { cpuUsPerTx: 40, wallUsPerTx: 41 },
    bare: { serial: { p50Us: 80, cpuUsPerAnswer: 38 }, c16: { cpuUsPerAnswer: 10 }, c256: { cpuUsPerAnswer: 8 } },
    pinned: {
      serial: { p50Us: 160, cpuUsPerAccepted: 117 },
      c16: { acceptedPerSec: 10_000, cpuUsPerAccepted: 60 },
      c256: { acceptedPerSec: 9_400 },
      c1024: { acceptedPerSec: 9_600 },
      open2x: null,
    },
    defaultLayout: { c16: { acceptedPerSec: 15_000 } },
    shedCpuUs: 12,
  });
  assert.equal(g.serialLatency.value, 160 / (80 + 41));
  assert.equal(g.serialLatency.met, false, '1.32 > 1.3');
  assert.equal(g.serialCpu.value, 117 / 78);
  assert.equal(g.serialCpu.met, true, '1.5 <= 1.5');
  assert.equal(g.saturationCpu.value, 1.2);
  assert.equal(g.saturationCpu.met, false);
  assert.equal(g.goodput256.value, 0.94);
  assert.equal(g.goodput256.met, false, 'higher is better: 0.94 < 0.95');
  assert.equal(g.goodput1024.met, true);
  assert.equal(g.multiCore.value, 1.5);
  assert.equal(g.multiCore.met, true);
  assert.equal(g.shedCost.value, 1.5);
  assert.equal(g.shedCost.met, false);
  assert.equal(g.goodputOpen2x.met, null, 'a run that did not happen is n/a, never met');
  assert.ok(Number.isNaN(g.goodputOpen2x.value));
  assert.equal(g.serialCpu.limit, GOALS.serialCpu.limit);
});

test('a shed answer is priced from a run that refuses: its CPU beyond the accepted transactions, per refusal', async () => {
  const { shedCpuUs } = await import('../../bench/e2e/goals.js');
  // 1 s of CPU; 5,000 accepted at 100 µs = 0.5 s; the other 0.5 s over 50,000 refusals = 10 µs each.
  assert.equal(shedCpuUs({ cpuS: 1, accepted: 5_000, refused: 50_000 }, 100), 10);
  assert.equal(shedCpuUs({ cpuS: 1, accepted: 10_000, refused: 100 }, 100), null, 'refusals under 5% of the answers are noise');
  assert.equal(shedCpuUs(null, 100), null);
});

test('a door\'s crypto ceiling is the mean of the loops run on either side of its windows, and their spread is its drift', async () => {
  const { meanCrypto, cryptoDrift } = await import('../../bench/e2e/report.js');
  const run = (cpu: number, wall: number) => ({ tool: 'loop', backend: 'native', n: 1000, cpuUsPerTx: cpu, wallUsPerTx: wall });
  const c = meanCrypto([run(40, 41), run(50, 52)]);
  assert.equal(c.cpuUsPerTx, 45);
  assert.equal(c.wallUsPerTx, 46.5);
  assert.equal(c.n, 2000);
  assert.deepEqual(c.runs, [{ cpuUsPerTx: 40, wallUsPerTx: 41 }, { cpuUsPerTx: 50, wallUsPerTx: 52 }]);
  assert.ok(Math.abs(cryptoDrift(c) - 10 / 45) < 1e-12);
  assert.equal(cryptoDrift(meanCrypto([run(40, 41)])), 0);
  assert.throws(() => meanCrypto([]));
});

test('the open-loop ceiling: accepted and refused CPU add up to one core', async () => {
  const { openLoopCeiling } = await import('../../bench/e2e/goals.js');
  // Free refusals: all of capacity. A refusal at 1/6 of an accepted tx, 2x offered: g + (2 - g)/6 = 1, g = 0.8.
  assert.equal(openLoopCeiling(2, 0, 80), 1);
  assert.ok(Math.abs(openLoopCeiling(2, 80 / 6, 80) - 0.8) < 1e-12);
  // Check the balance directly for an arbitrary case: 1.5x offered, refusal 20 µs, accepted 100 µs.
  const g = openLoopCeiling(1.5, 20, 100);
  assert.ok(Math.abs(g * 100 + (1.5 - g) * 20 - 100) < 1e-9);
  // Offered under capacity, nothing need be refused; refusing at the price of accepting gains nothing.
  assert.equal(openLoopCeiling(0.5, 10, 100), 1);
  assert.equal(openLoopCeiling(2, 100, 100), 0.5);
  assert.ok(Number.isNaN(openLoopCeiling(2, undefined, 100)));
});

test('metrics parsing reads admissions, refusals by code, sheds by reason and the accept histogram whatever other labels they carry', async () => {
  const { parseMetrics } = await import('../../bench/e2e/relay.js');
  const c = parseMetrics(
    [
      '# HELP txrelay_admitted_total Transactions admitted',
      '# TYPE txrelay_admitted_total counter',
      'txrelay_admitted_total{lane="solana-single"} 70',
      'txrelay_admitted_total{lane="evm-paid"} 5',
      'txrelay_rejected_total{code="TXR_CAPACITY"} 12',
      'txrelay_rejected_total{door="v2",code="TXR_CAPACITY"} 3',
      'txrelay_rejected_total{code="TXR_RATE_IP"} 1',
      'txrelay_shed_total{reason="over_max"} 9',
      'txrelay_shed_total{reason="expired"} 6',
      'txrelay_accept_seconds_bucket{le="0.001",door="solana-v2"} 60',
      'txrelay_accept_seconds_bucket{door="evm-text",le="0.001"} 4',
      'txrelay_accept_seconds_bucket{le="+Inf",door="solana-v2"} 90',
      'txrelay_accept_seconds_count{door="solana-v2"} 90',
    ].join('\n'),
  );
  assert.equal(c.admitted, 75);
  assert.deepEqual(c.rejected, { TXR_CAPACITY: 15, TXR_RATE_IP: 1 });
  assert.deepEqual(c.shed, { over_max: 9, expired: 6 });
  assert.deepEqual([...c.accept], [[0.001, 64], [Infinity, 90]]);
});

test('per-thread CPU lists the main thread under the pid, and threads add up to the process', async () => {
  const { threadSeconds } = await import('../../bench/e2e/proc.js');
  const t = performance.now();
  while (performance.now() - t < 100); // burn ~100 ms on the main thread
  const threads = threadSeconds(process.pid);
  assert.ok(threads.has(process.pid), 'main thread tid = pid');
  assert.ok(threads.get(process.pid)! >= 0.05, `main thread ${threads.get(process.pid)} s`);
  const sum = [...threads.values()].reduce((a, b) => a + b, 0);
  // Ticks are 10 ms per thread; threads that ended earlier count in the process total only.
  assert.ok(sum <= cpuSeconds(process.pid) + 0.01 * threads.size, `threads ${sum} s vs process ${cpuSeconds(process.pid)} s`);
});

test('the report renders the five goals as value, limit and verdict, n/a for a figure not measured, and one profile table per thread', async () => {
  const { renderMarkdown } = await import('../../bench/e2e/report.js');
  const { evaluateGoals, GOALS, OVERLOAD_GOALS } = await import('../../bench/e2e/goals.js');
  const run = (over: Record<string, unknown> = {}) => ({
    name: 'x', what: 'x', tool: 'wrk -t2 -c16 (closed loop)', connections: 16, windowS: 5, answers: 50_000, accepted: 50_000, acceptedPerSec: 10_000,
    refused: 0, rejected: {}, shed: {}, cpuS: 3, cpuUsPerAccepted: 60, cpuUsPerAnswer: 60, cores: 0.6,
    threads: [{ label: 'main', cpuUsPerAccepted: 40, corePct: 40 }, { label: 'thread 1', cpuUsPerAccepted: 20, corePct: 20 }],
    latency: { p50Us: 150, p99Us: 900, maxUs: 2000 }, relaySide: { count: 50_000, p50UpperMs: 0.2, p99UpperMs: 2 },
    loadPct: { generator: 30, sink: 10, orchestrator: 1, rest: 2 }, coreBusyPct: [95, 45],
    gc: [{ isolate: 'main', collections: 10, allocatedBytes: 5e6, scavenges: 10, scavengeP99Ms: 1.2, scavengeMaxMs: 1.5, fullGcs: 0, fullMaxMs: 0, pauseTotalMs: 10 }],
    gcBytesPerAccepted: 100, rssPeakKb: 200_000, statuses: { '2xx/3xx': 50_000 }, generator: {}, notes: [], ...over,
  });
  const crypto = { tool: 't', n: 1000, cpuUsPerTx: 40, wallUsPerTx: 41, backend: 'sodium-native' };
  const goals = evaluateGoals({
    crypto,
    bare: { serial: { p50Us: 80, cpuUsPerAnswer: 38 }, c16: { cpuUsPerAnswer: 10 }, c256: { cpuUsPerAnswer: 8 } },
    pinned: { serial: { p50Us: 100, cpuUsPerAccepted: 90 }, c16: { acceptedPerSec: 10_000, cpuUsPerAccepted: 60 }, c256: { acceptedPerSec: 4_000 }, c1024: null, open2x: null },
    defaultLayout: { c16: { acceptedPerSec: 16_000 } },
    shedCpuUs: null,
  });
  const md = renderMarkdown({
    date: '2026-11-23T04:00:00.000Z', durationS: 600, smoke: false,
    hardware: { loadAvg: '0.5', cpu: 'AMD EPYC', cores: 2, node: 'v20.20.2', os: 'Debian' },
    placement: { relayCore: '0', loadCore: '1', allCores: '0-1' },
    settings: { seconds: 5, warmSeconds: 2, openFactor: 2, sink: 'txrelay bench sink' },
    goals: { ...GOALS, ...OVERLOAD_GOALS },
    doors: [
      {
        door: 'solana-v2', label: 'Solana /v2', family: 'solana', txPerRequest: 1, unitsPerRequest: 1, crypto,
        bare: { serial: run(), c16: run(), c256: run() },
        pinned: { serial: run(), c16: run(), c256: run({ refused: 40_000, answers: 60_000 }), c1024: null, open2x: null, refusal: run({ accepted: 0 }), shed: null },
        defaultLayout: { serial: run(), c16: run(), c256: run() },
        shedCpuUs: null, goals,
        profiles: [{ layout: 'default', window: 'w', threads: [
          { file: 'main thread', totalMs: 7000, busyMs: 5000, top: [{ fn: 'send src/ingress/http.js:43', selfMs: 700, pct: 14 }] },
          { file: 'worker thread 1', totalMs: 7000, busyMs: 4000, top: [{ fn: 'verify src/exec/check.js:10', selfMs: 3000, pct: 75 }] },
        ] }],
        notes: ['pinned 1024 failed: relay exited'],
      },
    ],
  });
  const section = (title: string) => md.split('\n## ').find((s) => s.startsWith(title))!;
  const row = section('Goals').split('\n').find((l) => l.startsWith('| solana-v2 |'));
  // serial latency 100/(80+41) met; serial CPU 90/78 met; saturation 60/50 = 1.2 missed; goodput 0.4 missed; two cores 1.6 met.
  assert.equal(row, '| solana-v2 | 0.83x met | 1.15x met | **1.20x** missed | **0.40x** missed | 1.60x met |');
  assert.match(md, /\| goodput 1024 ÷ 16 ≥ 0.95 \|/);
  assert.match(section('Overload'), /\| solana-v2 \| n\/a \| n\/a \| n\/a \| 67% of 60,000 \|/);
  assert.match(md, /\| pinned, 1024 \| not measured \(see notes\) \|/);
  assert.match(md, /note: pinned 1024 failed: relay exited/);
  assert.match(md, /\*main thread\*: busy 5000 ms of 7000 ms/);
  assert.match(md, /\*worker thread 1\*: busy 4000 ms/);
  assert.match(md, /\| solana-v2 \| thread 1 \| 20.0 \| 20 \|/);
});
