#!/usr/bin/env node
// Builds with tsc only when a source changed since the last build: what
// `npm start` and `npm test` run first, so a second start answers in about a
// second instead of waiting ~14 s for an unchanged compile. "Changed": a
// file's modification time after the last build began, or a file added or
// removed, among the .ts files under the tsconfig's folders, tsconfig.json
// and package.json. The stamp is dist/.build-stamp; `npm ci` builds through
// this script too (prepare), so the first `npm start` after it does not
// compile again; `npm run build` always compiles.
// The compile is incremental (tsc --incremental; its state, dist/.tsbuildinfo,
// lies in the output folder and goes with it): after an edit, tsc checks and
// emits what the edit can affect, not the whole project (~7 s of CPU for a
// one-file change instead of ~20 s).
//
//   node scripts/build.mjs [--root DIR]   (DIR: a project with a tsconfig.json; default this one)
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const argv = process.argv.slice(2);
const root = resolve(argv[0] === '--root' ? argv[1] : new URL('..', import.meta.url).pathname);
const STAMP = join(root, 'dist', '.build-stamp');

function sources() {
  const files = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist') continue;
      const p = join(dir, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (name.endsWith('.ts')) files.push([p, st.mtimeMs]);
    }
  };
  const config = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  // The include globs' first folders ("src/**/*.ts" -> src).
  for (const dir of new Set((config.include ?? ['.']).map((g) => g.split('/')[0]))) walk(join(root, dir));
  for (const f of ['tsconfig.json', 'package.json']) if (existsSync(join(root, f))) files.push([join(root, f), statSync(join(root, f)).mtimeMs]);
  return files.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/**
 * tsc writes the package's bin 0644, and npm links bins before `prepare` has
 * built them, so `npx txrelay` in a fresh clone would be refused: the bin
 * files are made executable after every build, and when the build is current.
 */
function markBins() {
  let bin = {};
  try {
    bin = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).bin ?? {};
  } catch {
    return; // A bare --root project: nothing to mark.
  }
  for (const rel of typeof bin === 'string' ? [bin] : Object.values(bin)) if (existsSync(join(root, rel))) chmodSync(join(root, rel), 0o755);
}

const files = sources();
const list = files.map(([p]) => p);
let stamp = null;
try {
  stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
} catch {
  // No build yet, or it was removed.
}
const upToDate = stamp !== null && JSON.stringify(stamp.files) === JSON.stringify(list) && files.every(([, m]) => m < stamp.builtAt);
if (upToDate) {
  process.stdout.write('build: up to date\n');
  markBins();
  process.exit(0);
}

/** The newest modification time of a compiled file under `dir`. */
function newestOutput(dir) {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) newest = Math.max(newest, newestOutput(p));
    else if (/\.(js|d\.ts|map)$/.test(name)) newest = Math.max(newest, st.mtimeMs);
  }
  return newest;
}

// The incremental state describes the outputs of the last compile made here. A compile made
// another way since (`npm run build`, a plain tsc) wrote outputs after it that the state does
// not describe: without it, this compile is a whole one.
const INFO = join(root, 'dist', '.tsbuildinfo');
if (existsSync(INFO) && newestOutput(join(root, 'dist')) > statSync(INFO).mtimeMs) rmSync(INFO);
const started = Date.now();
const tsc = createRequire(join(new URL('..', import.meta.url).pathname, 'package.json')).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json'), '--incremental', '--tsBuildInfoFile', INFO], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
markBins();
mkdirSync(join(root, 'dist'), { recursive: true });
writeFileSync(STAMP, JSON.stringify({ builtAt: started, files: list }));
