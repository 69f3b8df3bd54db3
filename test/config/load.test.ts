/**
 * Configuration (docs/configuration.md): TOML (or JSON, same schema) with
 * embedded defaults; unknown keys and variables, wrong types and
 * out-of-range values stop start-up with a message in words naming the key;
 * TXRELAY_<SECTION>_<KEY> overrides single keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, describeKeys } from '../../src/config/load.js';
import { isOtherEnv } from '../../src/config/env-allowlist.js';
import { ConfigError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'txrelay-config-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

test('no file and no environment: the embedded defaults', () => {
  const c = loadConfig({ env: {} });
  assert.deepEqual(c.http, {
    host: '127.0.0.1',
    port: 8080,
    max_body_bytes: 131072,
    max_buffered_body_bytes: 134217728,
    trust_proxy: false,
    proxy_hops: 1,
    tls_cert_file: '',
    tls_key_file: '',
    acceptor: 'auto',
    max_connections: 0,
    max_connections_per_ip: 4096,
    coalesce_answers: true,
    ack_first: true,
    acceptors: 1,
  });
  assert.deepEqual(c.udp, { enabled: true, host: '127.0.0.1', port: 16888, sockets: 0, ip_rps: 1000, ip_burst: 2000 });
  assert.deepEqual(c.limits, { ip_rps: 1000, ip_burst: 2000, queue_capacity: 10000, queue_target_ms: 5, queue_max_ms: 100, shed_hold_ms: 100 });
  assert.equal(c.dedup.window_s, 120);
  assert.deepEqual(c.evm.upstreams, { paid: [], free: [] });
  assert.equal(c.evm.max_batch, 64);
  assert.deepEqual(c.plans, { free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 }, paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 } });
  assert.equal(c.storage.data_dir, './data');
  assert.equal(c.database.url, '');
  assert.deepEqual(c.ws, { enabled: true, idle_timeout_s: 120, max_buffered_bytes: 1048576, max_subscriptions: 16, max_account_subscriptions: 64 });
});

test('a TOML file sets keys; the rest keep their defaults', () => {
  const c = loadConfig({
    env: {},
    file: file('a.toml', '[http]\nport = 9000\n[solana]\nrpc_upstreams = ["http://127.0.0.1:8899"]\n[plans.paid]\nevm_tps = 500\n'),
  });
  assert.equal(c.http.port, 9000);
  assert.equal(c.http.host, '127.0.0.1');
  assert.deepEqual(c.solana.rpc_upstreams, ['http://127.0.0.1:8899']);
  assert.equal(c.plans.paid.evm_tps, 500);
  assert.equal(c.plans.paid.solana_tps, 2);
});

test('JSON is accepted with the same schema', () => {
  const c = loadConfig({ env: {}, file: file('a.json', JSON.stringify({ dedup: { window_s: 30 }, evm: { chain_id: 10 } })) });
  assert.equal(c.dedup.window_s, 30);
  assert.equal(c.evm.chain_id, 10);
});

test('environment variables override the file, key by key, with types from the schema', () => {
  const c = loadConfig({
    file: file('b.toml', '[http]\nport = 9000\nhost = "0.0.0.0"\n'),
    env: { TXRELAY_HTTP_PORT: '9100', TXRELAY_HTTP_TRUST_PROXY: 'true', TXRELAY_EVM_UPSTREAMS_FREE: 'http://a:1,http://b:2', TXRELAY_PLANS_FREE_SOLANA_TPS: '4' },
  });
  assert.equal(c.http.port, 9100);
  assert.equal(c.http.host, '0.0.0.0');
  assert.equal(c.http.trust_proxy, true);
  assert.deepEqual(c.evm.upstreams.free, ['http://a:1', 'http://b:2']);
  assert.equal(c.plans.free.solana_tps, 4);
});

test('unknown keys, wrong types and out-of-range values stop start-up naming the key', () => {
  const cases: [string, string, RegExp][] = [
    ['unknown.toml', '[http]\nprot = 1\n', /unknown key http\.prot/],
    ['section.toml', '[htp]\nport = 1\n', /unknown key htp/],
    ['type.toml', '[udp]\nenabled = "yes"\n', /udp\.enabled/],
    ['range.toml', '[limits]\nqueue_capacity = 0\n', /limits\.queue_capacity/],
    ['port.toml', '[admin]\nport = 70000\n', /admin\.port/],
    ['url.toml', '[evm.upstreams]\npaid = ["ftp://x"]\n', /evm\.upstreams\.paid/],
    ['tip.toml', '[solana]\ntip_accounts = ["not base58!"]\n', /solana\.tip_accounts/],
    ['bad.toml', '[http\nport = 1\n', /line 1, column \d+: invalid TOML/],
  ];
  for (const [name, text, re] of cases) {
    assert.throws(() => loadConfig({ env: {}, file: file(name, text) }), (e: unknown) => e instanceof ConfigError && re.test(e.message), name);
  }
  assert.throws(() => loadConfig({ env: { TXRELAY_DEDUP_WINDOW_S: 'soon' } }), /TXRELAY_DEDUP_WINDOW_S/);
});

test('values are refused in words, never as a regex, with what was given and where to fix it', () => {
  const refused = (text: string, env: Record<string, string> = {}) => {
    try {
      loadConfig({ env, file: text === '' ? undefined : file('words.toml', text) });
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      return e.message;
    }
    assert.fail('accepted');
  };
  const at = join(dir, 'words.toml');
  assert.equal(refused('[solana]\nrpc_upstreams = ["foo"]\n'), `solana.rpc_upstreams[0] must be an http:// or https:// URL, got "foo" — fix it in ${at} (or set TXRELAY_SOLANA_RPC_UPSTREAMS)`);
  assert.equal(refused('[solana]\ntip_accounts = ["0x1"]\n'), `solana.tip_accounts[0] must be a base58 address of 32 to 44 characters, got "0x1" — fix it in ${at} (or set TXRELAY_SOLANA_TIP_ACCOUNTS)`);
  assert.equal(refused('[http]\nacceptor = "fast"\n'), `http.acceptor must be one of "auto", "uws", "node", got "fast" — fix it in ${at} (or set TXRELAY_HTTP_ACCEPTOR)`);
  assert.equal(refused('[http]\nport = "80"\n'), `http.port must be a whole number, got "80" — fix it in ${at} (or set TXRELAY_HTTP_PORT)`);
  assert.equal(refused('[node]\nname = "-a"\n'), `node.name must be letters, digits, ".", "_" and "-", starting with a letter or digit, got "-a" — fix it in ${at} (or set TXRELAY_NODE_NAME)`);
  // Matches the pattern, yet no URL.
  assert.equal(refused('', { TXRELAY_EVM_UPSTREAMS_PAID: 'http://' }), 'evm.upstreams.paid[0] is not a valid URL, got "http://" (from TXRELAY_EVM_UPSTREAMS_PAID) — fix or unset TXRELAY_EVM_UPSTREAMS_PAID');
  assert.equal(refused('', { TXRELAY_UDP_ENABLED: 'maybe' }), 'udp.enabled must be true or false, got "maybe" (from TXRELAY_UDP_ENABLED) — fix or unset TXRELAY_UDP_ENABLED');
  // Several problems: one line, each with its own fix.
  const both = refused('[http]\nport = -1\n[dedup]\nwindow_s = 0\n');
  assert.ok(!both.includes('\n') && both.includes('http.port must be from 0 to 65535, got -1') && both.includes('dedup.window_s must be from 1 to 86400, got 0'), both);
  for (const m of [both, refused('[solana]\nrpc_upstreams = ["foo"]\n')]) assert.ok(!/\^|must match pattern/.test(m), m);
});

test('an unknown key names the nearest real one: a typo, a section, or a key in the wrong section', () => {
  const msg = (text: string) => {
    try {
      loadConfig({ env: {}, file: file('typo.toml', text) });
    } catch (e) {
      return (e as Error).message;
    }
    assert.fail('accepted');
  };
  const at = join(dir, 'typo.toml');
  assert.equal(msg('[http]\nprot = 1\n'), `unknown key http.prot in ${at} — did you mean http.port?`);
  assert.equal(msg('[htp]\nport = 1\n'), `unknown key htp in ${at} — did you mean http?`);
  assert.equal(msg('[http]\ndata_dir = "x"\n'), `unknown key http.data_dir in ${at} — did you mean storage.data_dir?`);
  assert.equal(msg('[plans.paid]\nevm_tsp = 5\n'), `unknown key plans.paid.evm_tsp in ${at} — did you mean plans.paid.evm_tps?`);
  assert.equal(msg('[http]\nzzzzzzzz = 1\n'), `unknown key http.zzzzzzzz in ${at} — remove it (txrelay serve --help lists every key)`);
});

test('an unknown TXRELAY_* variable is refused like an unknown key, naming the nearest real variable', () => {
  assert.throws(() => loadConfig({ env: { TXRELAY_HTTP_PROT: '1' } }), { message: 'unknown environment variable TXRELAY_HTTP_PROT — did you mean TXRELAY_HTTP_PORT?' });
  assert.throws(() => loadConfig({ env: { TXRELAY_STORAGE_DATADIR: '/x' } }), { message: 'unknown environment variable TXRELAY_STORAGE_DATADIR — did you mean TXRELAY_STORAGE_DATA_DIR?' });
  assert.throws(() => loadConfig({ env: { TXRELAY_NO_NATVE: '1' } }), { message: 'unknown environment variable TXRELAY_NO_NATVE — did you mean TXRELAY_NO_NATIVE?' });
  assert.throws(() => loadConfig({ env: { TXRELAY_QQQQQQQQQQQQ: '1' } }), { message: 'unknown environment variable TXRELAY_QQQQQQQQQQQQ — unset it (txrelay serve --help lists every variable)' });
  // What the project itself reads passes, and names outside TXRELAY_ are none of ours.
  const c = loadConfig({ env: { TXRELAY_TEST_PG: 'postgres://x', TXRELAY_TEST_ANYTHING: '1', TXRELAY_BENCH_KEY: 'k', TXRELAY_NO_NATIVE: '1', TXRELAY_ED25519_BACKEND: 'node:crypto', TXRELAY_SECP_BACKEND: 'noble', TXRELAYX: '1', HTTP_PORT: '1' } });
  assert.equal(c.http.port, 8080);
});

test('every TXRELAY_* name the repository reads is a key\'s variable or on the allowlist', () => {
  // Compiled to dist/test/config/: the repository root is three levels up.
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const keyVars = new Set(describeKeys().map((k) => k.env));
  const names = new Set<string>();
  const walk = (p: string) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) {
      for (const n of readdirSync(p)) if (n !== 'node_modules' && n !== 'dist') walk(join(p, n));
      return;
    }
    // These tests spell wrong names on purpose.
    if (p.includes(join('test', 'config')) || p.endsWith(join('test', 'cli', 'startup.test.ts'))) return;
    // A name ending in `_` is a prefix being spoken of (TXRELAY_TEST_), not a variable.
    for (const m of readFileSync(p, 'utf8').matchAll(/TXRELAY_[A-Z0-9_]+/g)) if (!m[0].endsWith('_')) names.add(m[0]);
  };
  for (const p of ['src', 'test', 'bench', 'scripts', '.ci', 'README.md']) walk(join(root, p));
  assert.ok(names.has('TXRELAY_TEST_PG') && names.has('TXRELAY_HTTP_PORT'), 'the scan found the names');
  const stray = [...names].filter((n) => !keyVars.has(n) && !isOtherEnv(n));
  assert.deepEqual(stray, [], 'add them to src/config/env-allowlist.ts with the reason, or make them keys');
});

test('log.format: auto by default; json and pretty accepted; anything else refused', () => {
  assert.equal(loadConfig({ env: {} }).log.format, 'auto');
  assert.equal(loadConfig({ env: { TXRELAY_LOG_FORMAT: 'pretty' } }).log.format, 'pretty');
  assert.equal(loadConfig({ env: { TXRELAY_LOG_FORMAT: 'json' } }).log.format, 'json');
  assert.throws(() => loadConfig({ env: { TXRELAY_LOG_FORMAT: 'text' } }), /log\.format must be one of "auto", "json", "pretty", got "text"/);
});

test('every key has an environment name and a default listed for --help', () => {
  const keys = describeKeys();
  assert.ok(keys.some((k) => k.key === 'plans.paid.min_tip_lamports' && k.env === 'TXRELAY_PLANS_PAID_MIN_TIP_LAMPORTS'));
  assert.ok(keys.every((k) => k.default !== undefined));
  rmSync(dir, { recursive: true, force: true });
});
