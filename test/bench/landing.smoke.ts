/**
 * Smoke run of bench:landing (`npm run test:bench`): `node --expose-gc
 * dist/bench/landing.js --smoke` starts real relays against the stand-in chain
 * (bench/landing/chain.ts), follows 300 transactions per family through a
 * short hold until all land, tracking on and off. Its figures mean nothing;
 * that every run lands everything and the table renders does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SMOKE_TIMEOUT_MS, smokeRun } from '../helpers/smoke.js';

test('bench:landing --smoke follows both families to landed and prints one row each', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  // It exits 1 when a tracking-on run has fewer than all 300 reported landed.
  const run = await smokeRun(t, 'bench:landing', 'landing.js', [], {
    tools: ['taskset'],
    oneCore: 'bench:landing pins the relay to core 0: skipping its smoke run on one core',
    nodeFlags: ['--expose-gc'],
  });
  if (run === null) return;
  const { out, err } = run;
  assert.match(err, /smoke run: nothing written/);
  for (const family of ['solana', 'evm']) {
    const row = new RegExp(`^\\| ${family} \\(.*\\) \\| ([\\d.]+) \\((.*)\\) \\| -?[\\d.]+ ms .* \\| [\\d.]+ \\(.*\\) \\| -?[\\d.]+ µs .* \\| (\\d+) B \\| heap .* \\|$`, 'm').exec(out);
    assert.ok(row, `the ${family} row`);
    assert.ok(Number(row[1]) > 0, `${family}: chain RPC requests during the hold`);
    assert.match(row[2]!, family === 'solana' ? /getSignatureStatuses/ : /eth_getBlockByNumber/);
    assert.ok(Number(row[3]) > 0, `${family}: heap per followed transaction`);
  }
});
