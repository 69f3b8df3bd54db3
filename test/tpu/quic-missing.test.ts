/**
 * When the QUIC library cannot load (its native build is per platform and an
 * optional dependency, src/tpu/start.ts): a real `txrelay serve` whose module
 * resolution refuses `@matrixai/quic` (a loader hook given by `--import`, as a
 * machine without the library's build would) says so in one start-up line,
 * keeps TPU off and serves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

test('the QUIC library not loading: one start-up line, TPU off, the relay serves', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-quic-missing-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `export async function resolve(specifier, context, next) {
  if (specifier === '@matrixai/quic') throw new Error('libquic.node: cannot open shared object file (refused by the test loader hook)\\nsecond line');
  return next(specifier, context);
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);

  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  Object.assign(env, {
    TXRELAY_STORAGE_DATA_DIR: join(dir, 'data'),
    TXRELAY_HTTP_PORT: '0',
    TXRELAY_ADMIN_PORT: '0',
    TXRELAY_UDP_PORT: '0',
    TXRELAY_HTTP_ACCEPTORS: '1',
    TXRELAY_WORKERS_THREADS: '1',
    TXRELAY_LOG_LEVEL: 'info',
    TXRELAY_SOLANA_CHAIN_RPC: 'http://127.0.0.1:9',
    TXRELAY_SOLANA_TPU_ENABLED: 'true',
  });
  const child = spawn(process.execPath, ['--import', pathToFileURL(register).href, CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const r = await new Promise<{ out: string; err: string; code: number | null }>((resolve, reject) => {
    let out = '';
    let err = '';
    let stopped = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (!stopped && out.includes('"msg":"txrelay listening"')) {
        stopped = true;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ out, err, code }));
  });
  assert.equal(r.code, 0, r.err);
  const lines = r.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; component?: string });
  const tpu = lines.filter((l) => l.component === 'tpu');
  assert.equal(tpu.length, 1, JSON.stringify(tpu));
  assert.equal(
    tpu[0]!.msg,
    'solana.tpu is enabled but stays off: the QUIC library @matrixai/quic cannot load (libquic.node: cannot open shared object file (refused by the test loader hook))',
  );
  assert.ok(lines.some((l) => l.msg === 'txrelay listening'));
  assert.ok(!lines.some((l) => l.msg.startsWith('TPU:')), 'no TPU route started');
});
