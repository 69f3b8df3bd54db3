#!/usr/bin/env node
// Runs the compiled test files with node:test: `*.test.js` (npm test), or with
// `--smoke` the benchmark harness smoke runs, `*.smoke.js` (npm run test:bench).
// Node 20's `--test` takes file paths but no globs, so the files are listed
// here. Four files run at once on CI's two cores: most files spend their time
// waiting on child processes, relays and timers, so two at a time left the
// cores idle for much of the run.
// Other arguments keep only the files whose path contains one of them.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('../dist/test/', import.meta.url).pathname;
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const only = args.filter((a) => a !== '--smoke');
const suffix = smoke ? '.smoke.js' : '.test.js';
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(suffix) && (only.length === 0 || only.some((o) => p.includes(o)))) files.push(p);
  }
})(root);
// The longest files start first so that two of them do not end up as the run's tail
// on two cores (longest-first scheduling); every other file keeps its path order.
// chains/evm/blob is long only where helpers/kzg.ts has no cached material yet.
const slowest = ['e2e/regional', 'e2e/tls', 'exec/verifier', 'scripts/tour', 'e2e/durability', 'e2e/status', 'e2e/ws-many', 'e2e/ws', 'client/package', 'e2e/pipelining', 'e2e/hardening', 'e2e/acceptors', 'e2e/spill', 'cli/startup', 'chains/evm/blob'];
const rank = (p) => {
  const i = slowest.findIndex((s) => p.includes(`/${s}.`));
  return i < 0 ? slowest.length : i;
};
files.sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error(`no ${suffix} files found under dist/test (did the build run?)`);
  process.exit(1);
}
// Node 20 applies --test-timeout to each file as a whole, too: the smoke runs (5 min each at most,
// their own limit) took over two minutes together on a fresh clone of a slower host.
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=4', '--test-timeout=300000', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
