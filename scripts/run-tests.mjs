#!/usr/bin/env node
// Runs the compiled test files with node:test: `*.test.js` (npm test), or with
// `--smoke` the benchmark harness smoke runs, `*.smoke.js` (npm run test:bench).
// Node 20's `--test` takes file paths but no globs, so the files are listed
// here. Four files run at once on CI's two cores: most files spend their time
// waiting on child processes, relays and timers, so two at a time left the
// cores idle for much of the run.
// Other arguments keep only the files whose path contains one of them.
import { mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
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
const slowest = ['e2e/regional', 'e2e/tls', 'exec/verifier', 'scripts/tour', 'e2e/durability', 'e2e/status', 'e2e/ws-many', 'e2e/ws', 'client/package', 'e2e/pipelining', 'e2e/hardening', 'e2e/acceptors', 'e2e/spill', 'cli/startup', 'cli/send', 'bench/landed', 'tables/dedup', 'deploy/prometheus', 'landing/many', 'cli/status', 'chains/evm/blob'];
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
// Node 20's runner sorts the paths it is given before it starts them, so the order above holds only
// through names that sort in it: links numbered in that order, in dist/.test-order-<pid> (removed after). Each link's module
// is loaded from its real path, so its imports resolve as ever.
const orderDir = join(root, '..', `.test-order-${process.pid}`);
mkdirSync(orderDir);
const linked = files.map((f, i) => {
  const link = join(orderDir, `${String(i).padStart(3, '0')}-${relative(root, f).replaceAll('/', '-')}`);
  symlinkSync(f, link);
  return link;
});
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=4', '--test-timeout=300000', ...linked], { stdio: 'inherit' });
rmSync(orderDir, { recursive: true, force: true });
process.exit(r.status ?? 1);
