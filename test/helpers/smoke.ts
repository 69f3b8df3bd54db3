/**
 * One benchmark script's smoke run (`npm run test:bench`), as every smoke
 * file starts it: at low priority (nice 19: it drives the cores flat out, and
 * the test files running beside it, timing-sensitive relays among them, keep
 * their CPU), skipped with one line where a tool it needs or a second core is
 * missing.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';

// Generous: the smoke run yields its CPU to everything else, so on a busy machine it takes longer.
export const SMOKE_TIMEOUT_MS = 300_000;

interface SmokeOptions {
  /** Tools it runs besides node (checked with `--version`). */
  tools: readonly string[];
  /** The skip line's hint for a missing tool, e.g. ` (apt-get install wrk)`. */
  hint?: string;
  /** The skip line on one core, where it needs two. */
  oneCore?: string;
  /** Node's own flags before the script (`--expose-gc`). */
  nodeFlags?: readonly string[];
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs dist/bench/`script` with `args` and `--smoke`, and asserts it exited 0
 * (the end of its stderr in the message); its stdout and stderr, or null when
 * the test was skipped (the line given).
 */
export async function smokeRun(t: { skip(msg: string): void }, what: string, script: string, args: readonly string[], o: SmokeOptions): Promise<{ out: string; err: string } | null> {
  const missing = ['nice', ...o.tools].filter((tool) => spawnSync(tool, ['--version']).error);
  if (missing.length) {
    t.skip(`${missing.join(', ')} not installed${o.hint ?? ''}: skipping the ${what} smoke run`);
    return null;
  }
  if (o.oneCore !== undefined && Number(spawnSync('nproc', ['--all'], { encoding: 'utf8' }).stdout) < 2) {
    t.skip(o.oneCore);
    return null;
  }
  const path = new URL(`../../bench/${script}`, import.meta.url).pathname;
  const child = spawn('nice', ['-n', '19', process.execPath, ...(o.nodeFlags ?? []), path, ...args, '--smoke'], { env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => child.on('close', r));
  assert.equal(code, 0, err.slice(-3000));
  return { out, err };
}
