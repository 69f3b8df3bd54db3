/**
 * Configuration (docs/configuration.md): TOML (or JSON, same schema) with
 * embedded defaults; unknown keys, wrong types and out-of-range values stop
 * start-up with a message naming the key; TXRELAY_<SECTION>_<KEY> overrides single keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, ConfigError, describeKeys } from '../../src/config/load.js';

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
  assert.deepEqual(c.ws, { enabled: true, idle_timeout_s: 120, max_buffered_bytes: 1048576, max_subscriptions: 16 });
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
    ['bad.toml', '[http\nport = 1\n', /not valid TOML/],
  ];
  for (const [name, text, re] of cases) {
    assert.throws(() => loadConfig({ env: {}, file: file(name, text) }), (e: unknown) => e instanceof ConfigError && re.test(e.message), name);
  }
  assert.throws(() => loadConfig({ env: { TXRELAY_DEDUP_WINDOW_S: 'soon' } }), /TXRELAY_DEDUP_WINDOW_S/);
});

test('every key has an environment name and a default listed for --help', () => {
  const keys = describeKeys();
  assert.ok(keys.some((k) => k.key === 'plans.paid.min_tip_lamports' && k.env === 'TXRELAY_PLANS_PAID_MIN_TIP_LAMPORTS'));
  assert.ok(keys.every((k) => k.default !== undefined));
  rmSync(dir, { recursive: true, force: true });
});
