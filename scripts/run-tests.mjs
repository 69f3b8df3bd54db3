#!/usr/bin/env node
// Runs every compiled test file with node:test. Node 20's `--test` takes file
// paths but no globs, so the files are listed here; `--test-concurrency`
// keeps the suite inside the two cores CI has.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('../dist/test/', import.meta.url).pathname;
const only = process.argv.slice(2);
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.js') && (only.length === 0 || only.some((o) => p.includes(o)))) files.push(p);
  }
})(root);
if (files.length === 0) {
  console.error('no test files found under dist/test (did the build run?)');
  process.exit(1);
}
// Node 20 applies --test-timeout to each test file as a whole, too. bench-e2e.test.js runs three
// smoke benchmarks (5 min each at most, their own limit), and on a fresh clone (no signed-transaction
// cache) of a slower host they took over two minutes together: the file's limit is theirs.
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=300000', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
