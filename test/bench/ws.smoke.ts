/**
 * Smoke run of bench:ws (`npm run test:bench`): `node dist/bench/ws.js
 * --smoke` starts real relays and the sink, and drives one round of 1 s
 * windows over HTTP keep-alive and over WebSockets. Its figures mean nothing;
 * that every window runs and the paired report renders does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SMOKE_TIMEOUT_MS, smokeRun } from '../helpers/smoke.js';

test('bench:ws --smoke measures both transports serially and at 16 in flight and prints the WS ÷ HTTP table', { timeout: SMOKE_TIMEOUT_MS }, async (t) => {
  const run = await smokeRun(t, 'bench:ws', 'ws.js', [], { tools: ['taskset'], oneCore: 'bench:ws needs 2 cores: skipping its smoke run' });
  if (run === null) return;
  const { out } = run;
  assert.doesNotMatch(out, / failed: /, 'no window failed');
  assert.match(out, /^## Solana JSON-RPC `sendTransaction` \(base64\)$/m);
  // | figure | HTTP | WS | WS ÷ HTTP |: every figure measured on both transports.
  for (const figure of ['serial latency p50, µs', 'serial latency p90, µs', 'serial latency p99, µs', 'relay µs CPU per transaction, 16 in flight']) {
    assert.match(out, new RegExp(`^\\| ${figure} \\| [\\d,.]+ \\| [\\d,.]+ \\| \\d+\\.\\d\\dx`, 'm'), figure);
  }
  // | round | order | HTTP µs CPU/tx | HTTP tx/s | WS µs CPU/tx | WS tx/s | ratio |: both relays admitted.
  const m = /^\| 1 \| HTTP, WS \| [\d.]+ \| ([\d,]+) \| [\d.]+ \| ([\d,]+) \| \d+\.\d\dx \|/m.exec(out);
  assert.ok(m, 'the 16-in-flight row of round 1');
  assert.ok(Number(m[1]!.replace(/,/g, '')) > 0 && Number(m[2]!.replace(/,/g, '')) > 0, 'transactions answered over both transports');
});
