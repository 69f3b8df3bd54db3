/**
 * `metrics.listen`: a listener with GET /metrics and nothing else, so the
 * port opened to a remote Prometheus never reaches the admin API.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ADMIN_TOKEN, startTestRelay } from '../helpers/relay.js';
import { loadConfig } from '../../src/config/load.js';
import { Relay } from '../../src/relay.js';
import { startupLine } from '../../src/cli/startup.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/errors.js';

test('metrics.listen serves GET /metrics only: no admin route, not even with the token', { timeout: 30_000 }, async (t) => {
  const r = await startTestRelay({ metrics: { listen: '127.0.0.1:0' } });
  t.after(() => r.stop());
  const port = r.relay.ports.metrics;
  assert.ok(port && port > 0);
  const base = `http://127.0.0.1:${port}`;
  const m = await fetch(`${base}/metrics`);
  assert.equal(m.status, 200);
  assert.match(await m.text(), /^# HELP txrelay_/m);
  for (const [method, path] of [['GET', '/admin/accounts'], ['POST', '/admin/accounts'], ['GET', '/healthz'], ['GET', '/admin/accounts/1'], ['POST', '/metrics']] as const) {
    const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: method === 'POST' ? '{}' : undefined });
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.equal(await res.text(), 'this listener serves only GET /metrics');
  }
  // The admin listener keeps its /metrics.
  assert.equal((await fetch(`${r.admin}/metrics`)).status, 200);
});

test('no metrics.listen: no extra listener', { timeout: 30_000 }, async (t) => {
  const r = await startTestRelay();
  t.after(() => r.stop());
  assert.equal(r.relay.ports.metrics, null);
});

test('metrics.listen is checked as host:port, and a port in use is one start-up line naming the key', { timeout: 30_000 }, async (t) => {
  assert.throws(() => loadConfig({ env: { TXRELAY_METRICS_LISTEN: '9100' } }), (e: unknown) => e instanceof ConfigError && /metrics\.listen must be host:port/.test(e.message));
  assert.equal(loadConfig({ env: { TXRELAY_METRICS_LISTEN: '[::1]:9100' } }).metrics.listen, '[::1]:9100');

  const holder = net.createServer();
  await new Promise<void>((res) => holder.listen(0, '127.0.0.1', res));
  t.after(() => holder.close());
  const taken = (holder.address() as net.AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-metrics-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({
    env: {},
    overrides: { http: { port: 0 }, udp: { enabled: false }, admin: { port: 0, token: ADMIN_TOKEN }, storage: { data_dir: dir }, log: { level: 'silent' }, workers: { threads: 1 }, metrics: { listen: `127.0.0.1:${taken}` } },
  });
  const err = await Relay.start({ config }).then(
    (relay) => relay.stop().then(() => assert.fail('started')),
    (e: unknown) => e,
  );
  assert.equal(
    startupLine(err),
    `metrics.listen 127.0.0.1:${taken} cannot be bound (EADDRINUSE) — set metrics.listen (TXRELAY_METRICS_LISTEN) to a free host:port of this machine, or to "" for none`,
  );
});
