#!/usr/bin/env node
/**
 * Runs the reliability scripts (docs/reliability.md), one after the other,
 * each in its own process: `npm run reliability` runs them all,
 * `npm run reliability -- kill9 fuzz` some, and with one name the options
 * after it go to that script (`npm run reliability -- kill9 --rounds 5`).
 * `--out FILE` writes every script's JSON result line into one JSON array.
 * Prints each script's own summary as it goes, then a line per script.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

/** In the order they run: quick checks first, the long runs last. */
const SCRIPTS = ['permissions', 'framing', 'big-array', 'deep-json', 'record-flood', 'accounts-cap', 'fuzz', 'junk-udp', 'slowloris', 'partial-bodies', 'subscriptions', 'outage', 'shutdown-spill', 'kill9'];
/** Every script bounds its own run time; this catches one that does not exit after its report. */
const SCRIPT_TIMEOUT_MS = 12 * 60_000;

const argv = process.argv.slice(2);
let out = null;
const names = [];
const rest = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--out') out = argv[++i];
  else if (SCRIPTS.includes(argv[i]) && rest.length === 0) names.push(argv[i]);
  else if (argv[i].startsWith('--') || rest.length > 0) rest.push(argv[i]);
  else {
    process.stderr.write(`reliability: no script named ${argv[i]}; scripts: ${SCRIPTS.join(', ')}\n`);
    process.exit(2);
  }
}
if (rest.length > 0 && names.length !== 1) {
  process.stderr.write('reliability: options after the name go to one script; name exactly one\n');
  process.exit(2);
}
const run = names.length ? names : SCRIPTS;

const results = [];
const t0 = Date.now();
for (const name of run) {
  process.stdout.write(`\n== ${name} ==\n`);
  const started = Date.now();
  const child = spawn(process.execPath, [new URL(`./${name}.mjs`, import.meta.url).pathname, ...rest], { stdio: ['ignore', 'pipe', 'inherit'] });
  const kill = setTimeout(() => child.kill('SIGTERM'), SCRIPT_TIMEOUT_MS);
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    // The JSON line is for machines and --out; people read the summary above it.
    for (const line of String(d).split('\n')) if (line && !line.startsWith('{"script"')) process.stdout.write(line + '\n');
  });
  const code = await new Promise((r) => child.once('exit', (c, sig) => r(c ?? sig)));
  clearTimeout(kill);
  const json = stdout
    .trim()
    .split('\n')
    .reverse()
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .find((j) => j && j.script === name);
  results.push({ name, exit: code, seconds: Math.round((Date.now() - started) / 1000), result: json ?? null });
}

process.stdout.write(`\n== summary (${Math.round((Date.now() - t0) / 1000)} s) ==\n`);
for (const r of results) {
  const checks = r.result?.checks ?? [];
  const passed = checks.filter((c) => c.pass).length;
  process.stdout.write(
    `  ${r.name.padEnd(13)} ${r.result?.ok ? 'ok    ' : 'FAILED'} ${String(r.seconds).padStart(4)} s${checks.length ? `  checks ${passed}/${checks.length}` : ''}${r.exit !== 0 ? `  (exit ${r.exit})` : ''}\n`,
  );
  // A check that fails names a property the relay should hold (docs/reliability.md).
  for (const c of checks.filter((x) => !x.pass)) process.stdout.write(`      not holding: ${c.what}: ${c.got}\n`);
}
if (out) {
  writeFileSync(out, JSON.stringify(results.map((r) => r.result ?? { script: r.name, ok: false, exit: r.exit }), null, 2) + '\n');
  process.stdout.write(`results written to ${out}\n`);
}
process.exit(results.every((r) => r.result?.ok) ? 0 : 1);
