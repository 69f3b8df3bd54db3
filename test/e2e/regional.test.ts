/**
 * Regional nodes (docs/operations.md#regional-nodes): several `txrelay serve`
 * processes on one machine share one PostgreSQL registry, each serving from
 * its own replica. An account made on one node works on every node, a
 * revocation reaches every node, a node that was down catches up, and a
 * database outage stops account changes but never admission. Each test
 * works in its own database: the machine's server (TXRELAY_TEST_PG) for the
 * shared-registry cases, a private cluster started here for the outages.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from '../helpers/relay.js';
import { TEST_DEDUP_ENV } from '../helpers/dedup-size.js';
import { PgCluster, clusterUnavailable } from '../helpers/pg-cluster.js';
import { freePorts } from '../../bench/e2e/relay.js';
import { uuidToBytes } from '../../src/store/ids.js';
import { SCHEMA_VERSION } from '../../src/store/pg-schema.js';
import { PgProxy, freshDatabase, pgSkip, sql } from '../helpers/pg.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const TOKEN = 'regional-test-token';

const skipShared = await pgSkip();
const skipDump = skipShared || dumpUnavailable();

/** `false` when pg_dump and pg_restore run here, else the skip line. */
function dumpUnavailable(): false | string {
  try {
    execFileSync('pg_dump', ['--version'], { stdio: 'ignore' });
    execFileSync('pg_restore', ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'pg_dump/pg_restore not on PATH: skipping the restore-from-backup test';
  }
}
const skipOutage = clusterUnavailable() ?? false;

interface Node {
  name: string;
  child: ChildProcess;
  base: string;
  admin: string;
  env: NodeJS.ProcessEnv;
  out: () => string;
}

/** A postgres-mode node's environment on fresh ports. */
async function nodeEnv(name: string, dataDir: string, url: string, extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  const [http, admin] = (await freePorts(2)) as [number, number];
  return {
    ...process.env,
    TXRELAY_REGISTRY_MODE: 'postgres',
    TXRELAY_DATABASE_URL: url,
    TXRELAY_NODE_NAME: name,
    TXRELAY_STORAGE_DATA_DIR: dataDir,
    ...TEST_DEDUP_ENV,
    TXRELAY_HTTP_PORT: String(http),
    TXRELAY_ADMIN_PORT: String(admin),
    TXRELAY_ADMIN_TOKEN: TOKEN,
    TXRELAY_UDP_ENABLED: 'false',
    TXRELAY_WORKERS_THREADS: '1',
    TXRELAY_REGISTRY_POLL_INTERVAL_MS: '500',
    TXRELAY_LIMITS_IP_RPS: '100000',
    TXRELAY_LIMITS_IP_BURST: '100000',
    // New accounts may send as fast as the probes ask: a 429 would hide whether the key authenticated.
    TXRELAY_PLANS_FREE_SOLANA_TPS: '100000',
    TXRELAY_PLANS_PAID_SOLANA_TPS: '100000',
    ...extra,
  };
}

function serve(env: NodeJS.ProcessEnv): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, out: () => out };
}

/** Spawns `txrelay serve` in postgres registry mode; resolves once listening, rejects with its output if it exits. */
async function startNode(t: TestContext, name: string, dataDir: string, url: string, extra: Record<string, string> = {}): Promise<Node> {
  const env = await nodeEnv(name, dataDir, url, extra);
  const { child, out } = serve(env);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await eventually(() => out().includes('txrelay listening') || child.exitCode !== null, 20_000, `node ${name} start`);
  if (child.exitCode !== null) throw new Error(`node ${name} exited ${child.exitCode}: ${out()}`);
  const port = (k: string) => `http://127.0.0.1:${env[k]}`;
  return { name, child, base: port('TXRELAY_HTTP_PORT'), admin: port('TXRELAY_ADMIN_PORT'), env, out };
}

/** Runs `txrelay serve` expecting it to refuse to start; resolves with its exit code and output. */
async function refusedStart(name: string, dataDir: string, url: string): Promise<{ code: number | null; out: string }> {
  const { child, out } = serve(await nodeEnv(name, dataDir, url));
  const code = await new Promise<number | null>((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (c) => {
      clearTimeout(kill);
      resolve(c);
    });
  });
  return { code, out: out() };
}

async function stopNode(n: Node): Promise<void> {
  if (n.child.exitCode !== null) return;
  const exited = new Promise((r) => n.child.once('exit', r));
  n.child.kill('SIGTERM');
  await exited;
}

function tempDir(t: TestContext): string {
  const d = mkdtempSync(join(tmpdir(), 'txrelay-regional-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function admin(n: Node, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(n.admin + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

/**
 * Whether `key` authenticates on `n`: a `/v2` body that cannot decode is
 * answered 400 past authentication, 401 before it.
 */
async function authenticates(n: Node, key: string): Promise<boolean> {
  const r = await fetch(n.base + '/v2', { method: 'POST', headers: { 'api-key': key }, body: 'xx' });
  await r.arrayBuffer();
  if (r.status !== 400 && r.status !== 401) throw new Error(`unexpected ${r.status} from ${n.name}`);
  return r.status === 400;
}

function cli(n: Node, ...args: string[]): string {
  return execFileSync(process.execPath, [CLI, ...args], { env: n.env, encoding: 'utf8' }).trim();
}

test('three nodes share one registry: made on one, changed on another, revoked on a third, in effect on all', { skip: skipShared }, async (t) => {
  const url = await freshDatabase(t, 'txr_regional');
  // Node c serves HTTP from two acceptor threads (where the uWS build can), each with its own copy of the replica.
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => startNode(t, `node-${n}`, tempDir(t), url, n === 'c' ? { TXRELAY_HTTP_ACCEPTORS: '2' } : {})));
  const nodes = [a!, b!, c!];

  // Created through the CLI on a: the key is printed once, and every node takes it.
  const key = cli(a!, 'accounts', 'create', '--plan', 'paid');
  assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(await authenticates(a!, key), true, 'in effect on the node that made it when the CLI returns');
  for (const n of [b!, c!]) await eventually(() => authenticates(n, key), 3000, `${n.name} takes the new key`);

  // Changed on b by id; the same record on c.
  const shown = await admin(a!, 'GET', `/admin/accounts/${key}`);
  assert.equal(shown.status, 200);
  const id = shown.json.id as number;
  assert.equal(shown.json.uuid, undefined, 'the key is shown only by its creation');
  assert.equal(shown.json.key_sha256, undefined, 'nor its digest');
  const patched = await admin(b!, 'PATCH', `/admin/accounts/${id}`, { evm: { tps: 77 } });
  assert.equal(patched.status, 200);
  assert.equal(patched.json.evm.tps, 77);
  assert.equal(patched.json.version, 2);
  await eventually(async () => (await admin(c!, 'GET', `/admin/accounts/${id}`)).json.evm.tps === 77, 3000, 'the change on c');

  // Revoked on c by key: refused everywhere.
  const revoked = await admin(c!, 'DELETE', `/admin/accounts/${key}`);
  assert.equal(revoked.status, 200);
  assert.equal(revoked.json.revoked, true);
  assert.equal(await authenticates(c!, key), false);
  for (const n of [a!, b!]) await eventually(async () => !(await authenticates(n, key)), 3000, `${n.name} refuses the revoked key`);

  // Bad input changes nothing.
  const again = await admin(a!, 'PATCH', `/admin/accounts/${id}`, { evm: { tps: 1 } });
  assert.equal(again.status, 409);
  assert.equal(again.json.error.code, 'TXR_ACCOUNT_REVOKED');
  assert.equal((await admin(a!, 'PATCH', '/admin/accounts/99999', { evm: { tps: 1 } })).json.error.code, 'TXR_ACCOUNT_NOT_FOUND');
  assert.equal((await admin(a!, 'DELETE', `/admin/accounts/${crypto.randomUUID()}`)).status, 404);

  // Every node answers with its own name; the ids are PostgreSQL's, the same on every node.
  for (const n of nodes) {
    const r = await fetch(n.base + '/ping');
    assert.equal(r.headers.get('x-svc-node'), n.name);
    await r.arrayBuffer();
    const list = (await admin(n, 'GET', '/admin/accounts')).json as { id: number; revoked: boolean }[];
    assert.deepEqual(
      list.map((x) => [x.id, x.revoked]),
      [[id, true]],
    );
    const h = await fetch(n.admin + '/healthz');
    const health = (await h.json()) as any;
    assert.equal(h.status, 200);
    assert.equal(health.node, n.name);
    assert.equal(health.registry.connected, true);
    assert.ok(health.registry.staleness_s < 5, `staleness ${health.registry.staleness_s}`);
  }

  // The database holds the key's digest, never the key.
  const hex = key.replaceAll('-', '');
  for (const table of ['txrelay_accounts', 'txrelay_account_changes', 'txrelay_registry_meta', 'txrelay_schema_migrations']) {
    const { rows } = await sql(url, `SELECT t::text AS row FROM ${table} t`);
    for (const r of rows) {
      assert.ok(!r.row.toLowerCase().includes(hex) && !r.row.toLowerCase().includes(key), `${table} holds the key`);
    }
  }
  const { rows } = await sql(url, 'SELECT encode(key_sha256, $1) AS d FROM txrelay_accounts WHERE id = $2', ['hex', id]);
  assert.equal(rows[0].d, createHash('sha256').update(uuidToBytes(key)!).digest('hex'));

  // A second live node under a taken name is refused; a node restarted under its own name is not.
  const dup = await refusedStart('node-a', tempDir(t), url);
  assert.notEqual(dup.code, 0);
  assert.match(dup.out, /another live node holds the name \\?"node-a\\?"/);
  await stopNode(c!);
  const c2 = await startNode(t, 'node-c', c!.env['TXRELAY_STORAGE_DATA_DIR']!, url, { TXRELAY_HTTP_ACCEPTORS: '2' });
  assert.equal(await authenticates(c2, key), false);
  await stopNode(c2);
  await Promise.all([stopNode(a!), stopNode(b!)]);
});

test('a node that was down catches up on start, and one past the change log resyncs from a snapshot', { skip: skipShared }, async (t) => {
  const url = await freshDatabase(t, 'txr_regional');
  const dirB = tempDir(t);
  const a = await startNode(t, 'catch-a', tempDir(t), url);
  let b = await startNode(t, 'catch-b', dirB, url);
  const keys: string[] = [];
  for (let i = 0; i < 5; i++) keys.push((await admin(a, 'POST', '/admin/accounts', {})).json.uuid);
  for (const k of keys) await eventually(() => authenticates(b, k), 3000, 'b has the first accounts');
  await stopNode(b);

  // While b is down: 40 changes, 5 new accounts, 2 revocations.
  for (let i = 0; i < 5; i++) keys.push((await admin(a, 'POST', '/admin/accounts', {})).json.uuid);
  for (let i = 0; i < 40; i++) assert.equal((await admin(a, 'PATCH', `/admin/accounts/${keys[i % 10]}`, { solana: { tps: 10 + i } })).status, 200);
  for (const k of keys.slice(0, 2)) assert.equal((await admin(a, 'DELETE', `/admin/accounts/${k}`)).status, 200);

  b = await startNode(t, 'catch-b', dirB, url);
  // Caught up before it listens: the first sync of a start completes before the doors open.
  for (const [i, k] of keys.entries()) assert.equal(await authenticates(b, k), i >= 2, `key ${i} on the restarted node`);
  const same = async () => JSON.stringify((await admin(a, 'GET', '/admin/accounts')).json) === JSON.stringify((await admin(b, 'GET', '/admin/accounts')).json);
  assert.ok(await same(), 'the restarted replica equals the source');
  assert.doesNotMatch(b.out(), /resync|first sync/, 'a position still in the change log replays it');
  await stopNode(b);

  // Past the change log's retention: prune everything but the newest change while b is down.
  assert.equal((await admin(a, 'DELETE', `/admin/accounts/${keys[2]}`)).status, 200);
  for (let i = 0; i < 5; i++) assert.equal((await admin(a, 'PATCH', `/admin/accounts/${keys[5 + i]}`, { plan: 'paid' })).status, 200);
  const { rows } = await sql(url, "SELECT v FROM txrelay_registry_meta WHERE k = 'pruned_through'");
  assert.equal(Number(rows[0].v), 0);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const { pruneChangeLog } = await import('../../src/store/change-feed.js');
  assert.ok((await pruneChangeLog(c, 0)) > 0);
  await c.end();
  b = await startNode(t, 'catch-b', dirB, url);
  assert.match(b.out(), /past the change log's retention: 10 accounts/);
  assert.equal(await authenticates(b, keys[2]!), false);
  assert.ok(await same(), 'the resynced replica equals the source');
  await Promise.all([stopNode(a), stopNode(b)]);
});

test('PostgreSQL down: nodes admit from their replicas, account changes answer 503, and they catch up when it returns', { skip: skipOutage }, async (t) => {
  const cluster = await PgCluster.create();
  t.after(() => cluster.destroy());
  const url = cluster.url;
  const dirB = tempDir(t);
  const a = await startNode(t, 'outage-a', tempDir(t), url);
  let b = await startNode(t, 'outage-b', dirB, url);
  const key = (await admin(a, 'POST', '/admin/accounts', {})).json.uuid as string;
  const other = (await admin(a, 'POST', '/admin/accounts', {})).json.uuid as string;
  await eventually(() => authenticates(b, other), 3000, 'b has both accounts');

  cluster.stop();
  // Admission goes on from the replica.
  for (const n of [a, b]) for (let i = 0; i < 20; i++) assert.equal(await authenticates(n, key), true);
  const refused = await admin(a, 'POST', '/admin/accounts', {});
  assert.equal(refused.status, 503);
  assert.equal(refused.json.error.code, 'TXR_REGISTRY_UNAVAILABLE');
  assert.match(refused.json.error.message, /account registry database unreachable/);
  assert.equal((await admin(b, 'DELETE', `/admin/accounts/${key}`)).status, 503);
  // Healthy while it admits, and says how stale it is.
  await eventually(async () => ((await (await fetch(a.admin + '/healthz')).json()) as any).registry.connected === false, 5000, 'a notices the outage');
  await new Promise((r) => setTimeout(r, 1500));
  const h = await fetch(a.admin + '/healthz');
  assert.equal(h.status, 200);
  const stale = ((await h.json()) as any).registry.staleness_s as number;
  assert.ok(stale >= 1, `staleness ${stale}`);
  const metrics = await (await fetch(a.admin + '/metrics')).text();
  assert.ok(Number(/^txrelay_registry_staleness_seconds (\S+)$/m.exec(metrics)![1]) >= 1);

  // Restarted during the outage: b starts from its replica and says so in one line; a node that never synced refuses.
  await stopNode(b);
  b = await startNode(t, 'outage-b', dirB, url);
  assert.equal(b.out().split('\n').filter((l) => l.includes('serving from the stored replica')).length, 1);
  assert.equal(await authenticates(b, key), true);
  const fresh = await refusedStart('outage-c', tempDir(t), url);
  assert.notEqual(fresh.code, 0);
  assert.match(fresh.out, /does not answer .* never synced its replica, so it cannot start/);

  // Back: a change made on a reaches b without a restart.
  cluster.start();
  await eventually(async () => (await admin(a, 'DELETE', `/admin/accounts/${key}`)).status === 200, 15_000, 'admin writes work again');
  await eventually(async () => !(await authenticates(b, key)), 15_000, 'b applies the revocation made after the outage');
  assert.equal(await authenticates(b, other), true);
  await Promise.all([stopNode(a), stopNode(b)]);
});

test('a schema newer than this binary is refused by the node and by db migrate, changing nothing', { skip: skipShared }, async (t) => {
  const url = await freshDatabase(t, 'txr_regional');
  const env = { ...process.env, TXRELAY_DATABASE_URL: url };
  const out = execFileSync(process.execPath, [CLI, 'db', 'migrate'], { env, encoding: 'utf8' });
  assert.ok(out.includes(`version 0 -> ${SCHEMA_VERSION}`), out);
  assert.ok(execFileSync(process.execPath, [CLI, 'db', 'migrate'], { env, encoding: 'utf8' }).includes(`is current (version ${SCHEMA_VERSION})`));
  await sql(url, 'INSERT INTO txrelay_schema_migrations (version) VALUES (99)');
  const r = await refusedStart('newer', tempDir(t), url);
  assert.notEqual(r.code, 0);
  assert.ok(r.out.includes(`registry schema in PostgreSQL is version 99, newer than this txrelay knows (${SCHEMA_VERSION})`), r.out);
  assert.throws(() => execFileSync(process.execPath, [CLI, 'db', 'migrate'], { env, encoding: 'utf8', stdio: 'pipe' }), /version 99, newer/);
});

/** Keys created on `n` through the admin API. */
async function createKeys(n: Node, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = await admin(n, 'POST', '/admin/accounts', {});
    assert.equal(r.status, 201, JSON.stringify(r.json));
    keys.push(r.json.uuid as string);
  }
  return keys;
}

async function allAuthenticate(n: Node, keys: string[], want: boolean): Promise<boolean> {
  for (const k of keys) if ((await authenticates(n, k)) !== want) return false;
  return true;
}

test('a database restored from an older backup: a node that followed the newer log resyncs and converges', { skip: skipDump }, async (t) => {
  const url = await freshDatabase(t, 'txr_restore');
  const dir = tempDir(t);
  const a = await startNode(t, 'node-a', join(dir, 'a'), url);
  let b = await startNode(t, 'node-b', join(dir, 'b'), url);
  const kept = await createKeys(a, 10);
  await eventually(() => allAuthenticate(b, kept, true), 5000, 'b has the first accounts');
  const backup = join(dir, 'registry.dump');
  execFileSync('pg_dump', ['-Fc', '-f', backup, '-d', url]);

  // Accounts the restore will delete; b follows them, then stops.
  const lost = await createKeys(a, 10);
  await eventually(() => allAuthenticate(b, lost, true), 5000, 'b has the accounts made after the backup');
  await stopNode(b);

  // The same registry (same registry_id) from before `lost`; a change log that reuses their seqs.
  // Node a keeps reading the registry meanwhile, so PostgreSQL can pick the restore as a deadlock victim; the
  // restore is one transaction (rolled back whole), so it is run again, as an operator would.
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync('pg_restore', ['--clean', '--if-exists', '--single-transaction', '-d', url, backup], { stdio: ['ignore', 'ignore', 'pipe'] });
      break;
    } catch (e) {
      if (attempt >= 5 || !String((e as { stderr?: Buffer }).stderr ?? '').includes('deadlock detected')) throw e;
    }
  }
  const fresh = await createKeys(a, 15);

  b = await startNode(t, 'node-b', join(dir, 'b'), url);
  for (const n of [a, b]) {
    await eventually(
      async () => (await allAuthenticate(n, lost, false)) && (await allAuthenticate(n, fresh, true)) && (await allAuthenticate(n, kept, true)),
      5000,
      `${n.name}: accounts of the restored registry only`,
    );
    assert.equal((await admin(n, 'GET', '/admin/accounts')).json.length, 25);
  }
  assert.match(b.out(), /not the change this replica applied/);
});

test('a silent partition: the feed notices within poll + timeout, reconnects, and /healthz says degraded while it cannot', { skip: skipShared }, async (t) => {
  const url = await freshDatabase(t, 'txr_silent');
  const proxy = new PgProxy(url);
  const viaProxy = await proxy.listen();
  t.after(() => proxy.close());
  const POLL_MS = 500;
  const TIMEOUT_MS = 1000;
  const a = await startNode(t, 'node-a', tempDir(t), url);
  const b = await startNode(t, 'node-b', tempDir(t), viaProxy, {
    TXRELAY_REGISTRY_POLL_INTERVAL_MS: String(POLL_MS),
    TXRELAY_REGISTRY_TIMEOUT_MS: String(TIMEOUT_MS),
  });
  const [key, other] = (await createKeys(a, 2)) as [string, string];
  await eventually(() => allAuthenticate(b, [key, other], true), 5000, 'b has both accounts');
  const health = async () => {
    const r = await fetch(b.admin + '/healthz');
    assert.equal(r.status, 200, 'serving goes on');
    return ((await r.json()) as any).registry as { connected: boolean; state: string; staleness_s: number; degraded_after_s: number };
  };
  await eventually(async () => (await health()).state === 'current', 5000, 'b current');
  assert.equal((await health()).degraded_after_s, (POLL_MS + TIMEOUT_MS) / 1000);

  // b's connection goes silent (no reset); a new one would pass. A revocation made now reaches b once
  // it has noticed (a poll and a time-out) and reconnected (a back-off step and a catch-up).
  proxy.silence('pass');
  assert.equal((await admin(a, 'DELETE', `/admin/accounts/${key}`)).status, 200);
  const bound = POLL_MS + TIMEOUT_MS;
  await eventually(async () => !(await authenticates(b, key)), 3 * bound + 2000, `b refuses the key revoked during the partition within ${3 * bound + 2000} ms`);
  assert.equal(await authenticates(b, other), true);

  // Everything silent, new connections too: the node keeps serving, and says degraded, not connected.
  proxy.silence('hold');
  await eventually(async () => {
    const h = await health();
    return h.state === 'degraded' && !h.connected;
  }, 3 * bound + 2000, 'healthz degraded and not connected');
  assert.equal(await authenticates(b, other), true, 'admission goes on from the replica');

  proxy.restore();
  await eventually(async () => (await health()).state === 'current', 15_000, 'current again once PostgreSQL answers');
});

test('a direct SQL edit of the accounts table reaches every node; each change is logged once', { skip: skipShared }, async (t) => {
  const url = await freshDatabase(t, 'txr_direct');
  const a = await startNode(t, 'node-a', tempDir(t), url);
  const b = await startNode(t, 'node-b', tempDir(t), url);
  const [key, other] = (await createKeys(a, 2)) as [string, string];
  await eventually(() => allAuthenticate(b, [key, other], true), 5000, 'b has both accounts');
  const idOf = async (k: string) => (await admin(a, 'GET', `/admin/accounts/${k}`)).json.id as number;
  const [id, otherId] = [await idOf(key), await idOf(other)];
  assert.equal((await admin(b, 'PATCH', `/admin/accounts/${otherId}`, { evm: { tps: 7 } })).status, 200);

  await sql(url, 'UPDATE txrelay_accounts SET revoked = true WHERE id = $1', [id]);
  await sql(url, `UPDATE txrelay_accounts SET evm = jsonb_set(evm, '{tps}', '77') WHERE id = $1`, [otherId]);
  for (const n of [a, b]) {
    await eventually(async () => !(await authenticates(n, key)), 5000, `${n.name} refuses the key revoked by SQL`);
    const shown = (await admin(n, 'GET', `/admin/accounts/${id}`)).json;
    assert.equal(shown.revoked, true);
    assert.equal(shown.version, 2);
    await eventually(async () => (await admin(n, 'GET', `/admin/accounts/${otherId}`)).json.evm.tps === 77, 5000, `${n.name} has the SQL rate`);
    assert.equal(await authenticates(n, other), true);
  }
  // Two creations, an admin PATCH and two SQL updates: five changes, one log row each.
  const { rows } = await sql(url, 'SELECT account_id::int AS id, version FROM txrelay_account_changes ORDER BY seq');
  assert.deepEqual(
    rows.map((r) => [r.id, r.version]),
    [[id, 1], [otherId, 1], [otherId, 2], [id, 2], [otherId, 3]],
  );
  // Revoked for good, by SQL as by the API.
  await assert.rejects(sql(url, 'UPDATE txrelay_accounts SET revoked = false WHERE id = $1', [id]), /stays revoked/);
});
