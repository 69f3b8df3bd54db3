#!/usr/bin/env node
/**
 * Where a running relay allocates: V8's sampling heap profiler with the
 * objects that young and full collections already freed kept in (the
 * allocation rate, not what is live at the end, which is what `--heap-prof`
 * reports).
 *
 *   NODE_OPTIONS="--import ./scripts/heap-sample.mjs" txrelay serve ...
 *   kill -USR2 <pid>     # start sampling (e.g. after warm-up)
 *   kill -USR2 <pid>     # stop: writes heap-sample-<pid>.json in the working directory
 *   node scripts/heap-sample.mjs summarize heap-sample-<pid>.json [transactions]
 *
 * The summary lists bytes by allocating function (self) and by the four
 * innermost frames; with a transaction count it also prints bytes per
 * transaction. Imported by a relay it only installs the signal handler.
 */
import { writeFileSync, readFileSync } from 'node:fs';

const SAMPLING_INTERVAL_BYTES = 1024;

if (process.argv[2] === 'summarize' && import.meta.url === `file://${process.argv[1]}`) {
  summarize(process.argv[3], Number(process.argv[4] ?? 0));
} else {
  install();
}

function install() {
  let session = null;
  const post = (method, params = {}) => new Promise((res, rej) => session.post(method, params, (e, r) => (e ? rej(e) : res(r))));
  process.on('SIGUSR2', async () => {
    try {
      if (session === null) {
        const { Session } = await import('node:inspector');
        session = new Session();
        session.connect();
        await post('HeapProfiler.enable');
        await post('HeapProfiler.startSampling', {
          samplingInterval: SAMPLING_INTERVAL_BYTES,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
        process.stderr.write(`heap-sample: sampling allocations in ${process.pid}\n`);
        return;
      }
      const { profile } = await post('HeapProfiler.stopSampling');
      session.disconnect();
      session = null;
      const file = `heap-sample-${process.pid}.json`;
      writeFileSync(file, JSON.stringify(profile));
      process.stderr.write(`heap-sample: wrote ${file}\n`);
    } catch (e) {
      process.stderr.write(`heap-sample: ${e instanceof Error ? e.message : String(e)}\n`);
    }
  });
}

function summarize(file, transactions) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const bySelf = new Map();
  const byStack = new Map();
  let total = 0;
  const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
  const walk = (node, stack) => {
    const f = node.callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
    const self = node.selfSize ?? 0;
    total += self;
    if (self > 0) {
      add(bySelf, name, self);
      add(byStack, [name, ...stack.slice(-3).reverse()].join(' < '), self);
    }
    for (const c of node.children ?? []) walk(c, [...stack, name]);
  };
  walk(profile.head, []);
  const per = (b) => (transactions > 0 ? `  ${(b / transactions).toFixed(0)} B/tx` : '');
  const show = (title, m) => {
    console.log(`\n${title}`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
      console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1e6).toFixed(2).padStart(7)} MB${per(v)}  ${k}`);
    }
  };
  console.log(`${(total / 1e6).toFixed(1)} MB allocated while sampling${per(total)}`);
  show('by allocating function:', bySelf);
  show('by the four innermost frames:', byStack);
}
