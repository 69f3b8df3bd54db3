/**
 * Smoke run of bench:landing (`npm run test:bench`): `node --expose-gc
 * dist/bench/landing.js --smoke` starts real relays against the stand-in chain
 * (bench/landing/chain.ts), follows 300 transactions per family through a
 * short hold until all land, tracking on and off. Its figures mean nothing;
 * that every run lands everything and the table renders does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

// Generous: the smoke run yields its CPU to everything else (nice 19), so on a busy machine it takes longer.
const SMOKE_TIMEOUT_MS = 300_000;

test('bench:landing --smoke follows both families to landed and prints one row each', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const { spawn, spawnSync } = await import('node:child_process');
  const missing = ['taskset', 'nice'].filter((tool) => spawnSync(tool, ['--version']).error);
  if (missing.length) return t.skip(`${missing.join(', ')} not installed: skipping the bench:landing smoke run`);
  if (Number(spawnSync('nproc', ['--all'], { encoding: 'utf8' }).stdout) < 2) return t.skip('bench:landing pins the relay to core 0: skipping its smoke run on one core');
  const script = new URL('../../bench/landing.js', import.meta.url).pathname;
  const child = spawn('nice', ['-n', '19', process.execPath, '--expose-gc', script, '--smoke'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => child.on('close', r));
  // The script throws (exit 1) when a tracking-on run has fewer than all 300 reported landed.
  assert.equal(code, 0, err.slice(-3000));
  assert.match(err, /smoke run: nothing written/);
  for (const family of ['solana', 'evm']) {
    const row = new RegExp(`^\\| ${family} \\(.*\\) \\| ([\\d.]+) \\((.*)\\) \\| -?[\\d.]+ ms .* \\| [\\d.]+ \\(.*\\) \\| -?[\\d.]+ µs .* \\| (\\d+) B \\| heap .* \\|$`, 'm').exec(out);
    assert.ok(row, `the ${family} row`);
    assert.ok(Number(row[1]) > 0, `${family}: chain RPC requests during the hold`);
    assert.match(row[2]!, family === 'solana' ? /getSignatureStatuses/ : /eth_getBlockByNumber/);
    assert.ok(Number(row[3]) > 0, `${family}: heap per followed transaction`);
  }
});
