/**
 * When the TPU route stays off (src/tpu/start.ts): each reason is one
 * start-up line and the relay goes on without it; a keypair file that cannot
 * be read stops start-up instead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/obs/log.js';
import { startTpu } from '../../src/tpu/start.js';

function capture() {
  const lines: any[] = [];
  const log = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
  return { log, lines };
}

const cfg = (tpu: Record<string, unknown>, chainRpc = 'http://127.0.0.1:9') =>
  loadConfig({ env: {}, overrides: { solana: { chain_rpc: chainRpc, tpu: { enabled: true, ...tpu } } } });

test('off by default: nothing built, nothing said', async () => {
  const { log, lines } = capture();
  assert.equal(await startTpu(loadConfig({ env: {} }), log, { threads: 1 }), null);
  assert.equal(lines.length, 0);
});

test('enabled without solana.chain_rpc, or with acceptor threads: one line each, and the route stays off', async () => {
  for (const [c, threads, why] of [
    [cfg({}, ''), 1, /solana\.chain_rpc is empty/],
    [cfg({}), 2, /http\.acceptors/],
  ] as const) {
    const { log, lines } = capture();
    assert.equal(await startTpu(c, log, { threads }), null);
    assert.equal(lines.length, 1);
    assert.match(lines[0].msg, /solana\.tpu is enabled but stays off/);
    assert.match(lines[0].msg, why);
  }
});

test('a keypair file that cannot be read stops start-up with its key and path', async () => {
  const { log } = capture();
  await assert.rejects(startTpu(cfg({ identity_keypair_file: '/nonexistent/id.json' }), log, { threads: 1 }), /solana\.tpu\.identity_keypair_file \/nonexistent\/id\.json/);
});
