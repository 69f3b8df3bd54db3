/**
 * The end-to-end benchmark's pure parts: /proc parsing (a wrong field index
 * would silently report nonsense CPU figures), the bodies file format shared
 * with the wrk Lua script, and the CPU profile summary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseProcStat, parseVmRssKb, cpuSeconds } from '../bench/e2e/proc.js';
import { decodeBodies, encodeBodies } from '../bench/e2e/bodies.js';
import { summariseProfile } from '../bench/e2e/profile.js';

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
  const { histogramQuantiles } = await import('../bench/e2e/histogram.js');
  const before = new Map([[0.001, 10], [0.002, 10], [0.005, 10], [Infinity, 10]]);
  // 100 new answers: 90 within 1 ms, 9 more within 2 ms, the last within 5 ms.
  const after = new Map([[0.001, 100], [0.002, 109], [0.005, 110], [Infinity, 110]]);
  const q = histogramQuantiles(before, after);
  assert.equal(q.count, 100);
  assert.equal(q.p50UpperMs, 1);
  assert.equal(q.p99UpperMs, 2);
});
