/**
 * scripts/build.mjs, what `npm start` and `npm test` run first: it compiles
 * only when a source changed since the last build (a file edited, added or
 * removed), incrementally, on a small project of its own so the suite's own
 * dist is never rebuilt under it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = new URL('../../../scripts/build.mjs', import.meta.url).pathname;
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

test('build: compiles the first time and after a change, not when nothing changed', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-build-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'src'));
  // Only the ES library and no @types: each of the compiles below loads ~0.7 s of tsc instead of ~3 s with the DOM library.
  const compilerOptions = { outDir: 'dist', rootDir: '.', module: 'NodeNext', target: 'ES2022', lib: ['ES2022'], types: [], skipLibCheck: true };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['src/**/*.ts'] }));
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 1;\n');
  const build = () => execFileSync(process.execPath, [SCRIPT, '--root', dir], { encoding: 'utf8' });
  const out = join(dir, 'dist', 'src', 'a.js');

  assert.doesNotMatch(build(), /up to date/);
  assert.ok(statSync(out).size > 0, 'compiled');
  const first = statSync(out).mtimeMs;
  assert.match(build(), /up to date/);
  assert.equal(statSync(out).mtimeMs, first, 'nothing recompiled');

  // An edit (its time after the last build began) compiles again.
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 2;\n');
  assert.doesNotMatch(build(), /up to date/);
  assert.match(build(), /up to date/);
  // So does an added file, and a removed one.
  writeFileSync(join(dir, 'src', 'b.ts'), 'export const b = 1;\n');
  utimesSync(join(dir, 'src', 'b.ts'), new Date(0), new Date(0));
  assert.doesNotMatch(build(), /up to date/);
  unlinkSync(join(dir, 'src', 'b.ts'));
  assert.doesNotMatch(build(), /up to date/);
  assert.match(build(), /up to date/);

  // The compile is incremental; a compile made another way in between (`npm run build`) does not
  // leave it an output from a source it has not seen: here an edit undone after a plain tsc.
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 3;\n');
  execFileSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')]);
  assert.match(readFileSync(out, 'utf8'), /a = 3/);
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a = 2;\n');
  assert.doesNotMatch(build(), /up to date/);
  assert.match(readFileSync(out, 'utf8'), /a = 2/);
});
