/**
 * The two-region recipe (docs/operations.md#two-region-production-recipe)
 * runs as written: two nodes start from exactly deploy/two-region/eu.toml and
 * us.toml with the secrets of txrelay.env, only their ports, addresses, paths,
 * upstream URLs and the database's address, password and CA file substituted
 * (each substitution must find its text, so the files and this test cannot
 * drift apart). One PostgreSQL, a private cluster started here, holds the
 * registry: TLS on, plain connections refused for the relay's role, and the
 * nodes connect with txrelay.env's `sslmode=verify-full` against its CA; the
 * doors speak TLS with a self-signed certificate made here; an account made on one node sends signed transactions through both;
 * each node's metrics-only listener answers /metrics and nothing of the admin
 * API; prometheus.yml scrapes exactly those listeners and passes `promtool
 * check config` where promtool is installed. The nodes connect as a role made
 * with the statements docs/operations.md gives (no superuser, owner of its
 * database), so the schema migrations and LISTEN are shown to need no more.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { parse as parseToml } from 'smol-toml';
import { eventually } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { sql } from '../helpers/pg.js';
import { PgCluster, clusterUnavailable } from '../helpers/pg-cluster.js';
import { freePorts } from '../../bench/e2e/relay.js';

const DEPLOY = new URL('../../../deploy/two-region/', import.meta.url).pathname;
const ALERTS = new URL('../../../deploy/prometheus/alerts.yml', import.meta.url).pathname;
const PROMTOOL = '/usr/bin/promtool';
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

const skip = clusterUnavailable() ?? false;

/** `from` replaced by `to` everywhere; `from` must be there. */
function sub(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `the deploy file no longer holds ${JSON.stringify(from)}: update this test with it`);
  return text.split(from).join(to);
}

/** KEY=VALUE lines of an EnvironmentFile (comments and blank lines skipped). */
function envFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

interface Node {
  name: string;
  file: string;
  env: NodeJS.ProcessEnv;
  child: ChildProcess;
  https: string;
  admin: string;
  metrics: string;
}

test('two nodes start from deploy/two-region as written, share one registry, and send over TLS through both', { skip, timeout: 90_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-two-region-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'fullchain.pem');
  const key = join(dir, 'privkey.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=relay.test', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const tls = new Agent({ connect: { ca: readFileSync(cert) } });
  t.after(() => tls.close());

  const upstream = await startUpstream();
  t.after(() => upstream.close());

  // The database server, as docs/operations.md#the-database-across-regions sets it up: ssl = on with a
  // certificate for the name the nodes connect to (here 127.0.0.1), the relay's role on hostssl only.
  const dbCert = join(dir, 'pg-ca.pem');
  const dbKey = join(dir, 'pg-server.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', dbKey, '-out', dbCert, '-days', '2', '-subj', '/CN=db.test', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const hba = ['local all all trust', 'host all postgres 127.0.0.1/32 trust', 'hostssl txrelay txrelay 127.0.0.1/32 scram-sha-256', 'hostnossl all all 0.0.0.0/0 reject', ''].join('\n');
  const cluster = await PgCluster.create({ cert: dbCert, key: dbKey, hba });
  t.after(() => cluster.destroy());
  // The role and database as the docs create them: no superuser, owner of its database.
  const password = randomBytes(12).toString('hex');
  await sql(cluster.url, `CREATE ROLE txrelay LOGIN PASSWORD '${password}'`);
  await sql(cluster.url, 'CREATE DATABASE txrelay OWNER txrelay');

  // The secrets file, as systemd hands it to the relay: only the values change.
  const secrets = envFile(readFileSync(join(DEPLOY, 'txrelay.env'), 'utf8'));
  assert.deepEqual(Object.keys(secrets).sort(), ['TXRELAY_ADMIN_TOKEN', 'TXRELAY_DATABASE_URL']);
  assert.match(secrets['TXRELAY_DATABASE_URL']!, /[?&]sslmode=verify-full(&|$)/, 'the example checks the database server\'s certificate');
  let dbUrl = secrets['TXRELAY_DATABASE_URL']!;
  dbUrl = sub(dbUrl, 'REPLACE_WITH_PASSWORD', password);
  dbUrl = sub(dbUrl, 'db.eu.internal:5432', `127.0.0.1:${cluster.port}`);
  dbUrl = sub(dbUrl, '/etc/txrelay/pg-ca.pem', dbCert);
  // The relay's role cannot connect in the clear: the registry is only reached over TLS.
  await assert.rejects(sql(dbUrl.replace(/\?.*$/, ''), 'SELECT 1'), /no encryption|pg_hba/);
  const dropIn = readFileSync(join(DEPLOY, 'txrelay.service.d', 'two-region.conf'), 'utf8');
  assert.match(dropIn, /^EnvironmentFile=\/etc\/txrelay\/txrelay\.env$/m);

  const start = async (name: 'eu' | 'us', privateIp: string): Promise<Node> => {
    const [http, udp, admin, metrics] = (await freePorts(4)) as [number, number, number, number];
    let text = readFileSync(join(DEPLOY, `${name}.toml`), 'utf8');
    assert.doesNotMatch(text, /^\s*(token|url)\s*=|postgres:\/\//m, 'no secret in the config file');
    text = sub(text, privateIp, '127.0.0.1');
    text = sub(text, 'port = 8443', `port = ${http}`);
    text = sub(text, 'port = 16888', `port = ${udp}`);
    text = sub(text, 'port = 8081', `port = ${admin}`);
    text = sub(text, ':9464"', `:${metrics}"`);
    text = sub(text, '/etc/txrelay/tls/fullchain.pem', cert);
    text = sub(text, '/etc/txrelay/tls/privkey.pem', key);
    text = sub(text, '/var/lib/txrelay/data', join(dir, `${name}-data`));
    text = sub(text, 'https://eth-mainnet.example.com/v2/REPLACE', upstream.url);
    text = sub(text, 'https://solana-mainnet.example.com/REPLACE', upstream.url);
    const file = join(dir, `${name}.toml`);
    writeFileSync(file, text);

    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
    // The token left empty, as written, so the node keeps it in its data directory for the CLI.
    Object.assign(env, { ...secrets, TXRELAY_DATABASE_URL: dbUrl });
    const child = spawn(process.execPath, [CLI, 'serve', '--config', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    await eventually(() => out.includes('txrelay listening') || child.exitCode !== null, 30_000, `node ${name} start`);
    if (child.exitCode !== null) throw new Error(`node ${name} exited ${child.exitCode}: ${out}`);
    return { name, file, env, child, https: `https://127.0.0.1:${http}`, admin: `http://127.0.0.1:${admin}`, metrics: `http://127.0.0.1:${metrics}` };
  };
  const eu = await start('eu', '10.1.0.5');
  const us = await start('us', '10.2.0.5');

  // An account made on eu by the admin CLI on that host: the config file and the token file in the data directory, no secret in its environment.
  const cliEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) cliEnv[k] = v;
  const uuid = execFileSync(process.execPath, [CLI, 'accounts', 'create', '-c', eu.file], { env: cliEnv, encoding: 'utf8' }).trim();
  assert.match(uuid, /^[0-9a-f-]{36}$/);
  const account = { uuid };
  const token = readFileSync(join(dir, 'eu-data', 'admin.token'), 'utf8').trim();

  const send = async (node: Node, nonce: number) => {
    const tx = await signed1559({ nonce });
    const res = await request(node.https + '/', {
      method: 'POST',
      dispatcher: tls,
      headers: { authorization: `Bearer ${account.uuid}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [tx.hex] }),
    });
    return { status: res.statusCode, json: (await res.body.json()) as any, hash: tx.hash };
  };
  const viaEu = await send(eu, 1);
  assert.equal(viaEu.status, 202, JSON.stringify(viaEu.json));
  assert.equal(viaEu.json.result, viaEu.hash);
  // us learns the account from the shared registry's change feed.
  let viaUs = await send(us, 2);
  await eventually(async () => (viaUs = await send(us, 2)).status === 202, 10_000, 'the account on us');
  assert.equal(viaUs.json.result, viaUs.hash);
  await upstream.waitForCalls(2);
  // Both nodes' registry connections are the relay's role, over TLS.
  const conns = await sql(cluster.url, "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'txrelay'");
  assert.ok(conns.rows.length >= 2, `the nodes hold registry connections (${conns.rows.length})`);
  assert.ok(conns.rows.every((r) => r.ssl === true), 'every one of them over TLS');

  // Plain HTTP on a TLS door is not served.
  await assert.rejects(request(eu.https.replace('https:', 'http:') + '/', { method: 'POST', body: '{}', headersTimeout: 3000, bodyTimeout: 3000 }).then((r) => r.body.text()));

  // Each metrics-only listener: /metrics, and no admin API even with the token.
  for (const node of [eu, us]) {
    const m = await request(`${node.metrics}/metrics`);
    assert.equal(m.statusCode, 200);
    assert.match(await m.body.text(), /^txrelay_node_info\{[^}]*node="(eu|us)"/m);
    const a = await request(`${node.metrics}/admin/accounts`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(a.statusCode, 404, node.name);
    await a.body.dump();
  }

  // prometheus.yml scrapes exactly the two metrics listeners, never an admin port.
  const prom = readFileSync(join(DEPLOY, 'prometheus.yml'), 'utf8');
  const targets = [...prom.matchAll(/targets: \["([^"]+)"\]/g)].map((m) => m[1]);
  const listens = ['eu', 'us'].map((n) => (parseToml(readFileSync(join(DEPLOY, `${n}.toml`), 'utf8')) as any).metrics.listen);
  assert.deepEqual(targets, listens);
  // And Prometheus takes the file as it is, with the rules at the path it names.
  if (existsSync(PROMTOOL)) {
    const promFile = join(dir, 'prometheus.yml');
    writeFileSync(promFile, sub(prom, '/etc/prometheus/txrelay-alerts.yml', ALERTS));
    const check = spawnSync(PROMTOOL, ['check', 'config', promFile], { encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool check config:\n${check.stdout}${check.stderr}`);
  } else {
    t.diagnostic(`${PROMTOOL} missing: prometheus.yml not checked by promtool (scripts/ensure-prometheus.sh installs it)`);
  }
});
