/**
 * Uploader against a real PostgreSQL (TXRELAY_TEST_PG). Each test works in
 * its own table and drops it after. Outages are simulated with a TCP proxy in
 * front of the server, so the shared server itself is never stopped.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type StoreLog } from '../../src/store/db.js';
import { BatchStore, newBatch, type NewBatch } from '../../src/store/batches.js';
import { Uploader } from '../../src/store/uploader.js';
import { PG_URL, PgProxy, pgSkip, sql as pgSql } from '../helpers/pg.js';

const hash = (i: number) => '0x' + i.toString(16).padStart(64, '0');

const skip = await pgSkip();
const sql = (text: string, params: unknown[] = []) => pgSql(PG_URL, text, params);

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Env {
  table: string;
  batches: BatchStore;
  store: Store;
  logs: string[];
  log: StoreLog;
  uploader(url?: string, batchSize?: number): Uploader;
}

function setup(t: TestContext): Env {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  const table = `txr_test_${randomBytes(6).toString('hex')}`;
  const store = Store.open(join(dir, 'data'));
  const batches = new BatchStore(store);
  const logs: string[] = [];
  const log: StoreLog = { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) };
  const uploaders: Uploader[] = [];
  t.after(async () => {
    for (const u of uploaders) await u.stop(1000);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await sql(`DROP TABLE IF EXISTS ${table}`);
  });
  return {
    table,
    batches,
    store,
    logs,
    log,
    uploader(url = PG_URL, batchSize?: number) {
      const u = new Uploader(batches, { url, table, log, pollMs: 20, ...(batchSize ? { batchSize } : {}) });
      uploaders.push(u);
      return u;
    },
  };
}

async function persistMany(batches: BatchStore, n: number, account = 1): Promise<NewBatch[]> {
  const recs = Array.from({ length: n }, (_, i) => newBatch(account + (i % 3), `198.51.100.${i % 250}`, [hash(i), hash(i + 1)]));
  await Promise.all(recs.map((r) => batches.persist(r)));
  return recs;
}

async function rows(table: string): Promise<Map<string, { items: unknown; account_id: string }>> {
  const r = await sql(`SELECT batch_id, items, account_id FROM ${table}`);
  return new Map(r.rows.map((x) => [x.batch_id as string, x]));
}

test('uploader: every record lands in PostgreSQL once, with its fields, and is marked uploaded', { skip }, async (t) => {
  const env = setup(t);
  const recs = await persistMany(env.batches, 1200);
  const up = env.uploader();
  up.start();
  await until('backlog 0', () => env.batches.backlog() === 0);
  const got = await rows(env.table);
  assert.equal(got.size, 1200);
  for (const r of recs) assert.ok(got.has(r.batch_id));
  const one = await sql(`SELECT * FROM ${env.table} WHERE batch_id = $1`, [recs[5]!.batch_id]);
  const row = one.rows[0];
  assert.equal(row.account_id, String(recs[5]!.account_id)); // bigint comes back as text
  assert.equal(row.client_ip, recs[5]!.client_ip);
  assert.deepEqual(row.tx_hashes, recs[5]!.tx_hashes);
  assert.deepEqual(row.items, []);
  assert.equal((row.received_at as Date).toISOString(), recs[5]!.received_at);
  assert.ok(row.uploaded_at instanceof Date);
  const s = up.stats();
  assert.deepEqual({ ...s, lastError: undefined }, { backlog: 0, backlogOverLimit: false, uploaded: 1200, failures: 0, connected: true, lastError: undefined });
  assert.equal(env.batches.get(recs[0]!.batch_id)?.uploaded, true);
});

test('uploader: outcomes written after upload are uploaded again and overwrite items; re-running is idempotent', { skip }, async (t) => {
  const env = setup(t);
  const recs = await persistMany(env.batches, 50);
  const up = env.uploader();
  up.start();
  await until('first upload', () => env.batches.backlog() === 0);
  const items = [{ status: 'queued' as const }, { status: 'not-sent' as const, error_code: -32005 }];
  for (const r of recs.slice(0, 10)) env.batches.updateOutcome(r.batch_id, items);
  await env.batches.flush();
  await until('outcomes uploaded', () => env.batches.backlog() === 0);
  const got = await rows(env.table);
  assert.equal(got.size, 50);
  for (const r of recs.slice(0, 10)) assert.deepEqual(got.get(r.batch_id)?.items, items);
  assert.deepEqual(got.get(recs[10]!.batch_id)?.items, []);
  await up.stop();

  // The same records uploaded again from another store (a restored backup, a crash before marking): no new rows.
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  const other = Store.open(join(dir, 'data'));
  t.after(async () => {
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const otherBatches = new BatchStore(other);
  for (const r of recs) await otherBatches.persist(r);
  const again = new Uploader(otherBatches, { url: PG_URL, table: env.table, pollMs: 20 });
  again.start();
  await until('re-upload', () => otherBatches.backlog() === 0);
  await again.stop();
  const after = await rows(env.table);
  assert.equal(after.size, 50);
  // Later writes win: the re-uploaded version had no outcomes yet.
  assert.deepEqual(after.get(recs[0]!.batch_id)?.items, []);
});

test('uploader: a commit PostgreSQL refuses leaves every record of the statement queued; they go up once it accepts', { skip }, async (t) => {
  const env = setup(t);
  const fn = `${env.table}_reject`;
  // A deferred constraint trigger fails the transaction at COMMIT, after the INSERT itself succeeded.
  await sql(`CREATE TABLE ${env.table} (batch_id text PRIMARY KEY, received_at timestamptz NOT NULL, account_id bigint NOT NULL,
    client_ip text NOT NULL, tx_hashes jsonb NOT NULL, items jsonb NOT NULL, uploaded_at timestamptz NOT NULL DEFAULT now())`);
  await sql(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.account_id = 13 THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`);
  await sql(`CREATE CONSTRAINT TRIGGER ${fn} AFTER INSERT ON ${env.table} DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
  t.after(() => sql(`DROP FUNCTION IF EXISTS ${fn}() CASCADE`).then(() => undefined));

  await persistMany(env.batches, 9, 1);
  await env.batches.persist(newBatch(13, '192.0.2.13', [hash(13)]));
  const up = env.uploader();
  up.start();
  await until('two failed attempts', () => up.stats().failures >= 2);
  assert.equal(env.batches.backlog(), 10);
  assert.equal((await rows(env.table)).size, 0);
  assert.match(up.stats().lastError ?? '', /refused at commit/);

  await sql(`DROP TRIGGER ${fn} ON ${env.table}`);
  await until('backlog 0', () => env.batches.backlog() === 0);
  assert.equal((await rows(env.table)).size, 10);
  assert.ok(env.logs.some((m) => m.includes('recovered')));
});

test('uploader: through a database outage in the middle, all records end in PostgreSQL exactly once', { skip }, async (t) => {
  const env = setup(t);
  const proxy = new PgProxy(PG_URL);
  const url = await proxy.listen();
  t.after(() => proxy.close());
  // Small statements, so the outage lands while the queue is being drained.
  const up = env.uploader(url, 20);
  const before = await persistMany(env.batches, 3000);
  up.start();
  await until('upload under way', () => up.stats().uploaded >= 500, 30_000);
  proxy.down();
  const cutAt = env.batches.backlog();
  assert.ok(cutAt > 0, 'the outage began before the queue was drained');

  const during = await persistMany(env.batches, 300);
  for (const r of before.slice(0, 20)) env.batches.updateOutcome(r.batch_id, [{ status: 'queued' }]);
  await env.batches.flush();
  await until('failures during the outage', () => up.stats().failures >= 3);
  const s = up.stats();
  assert.equal(s.connected, false);
  assert.ok(s.backlog >= 300 + cutAt, `backlog ${s.backlog}`);
  assert.ok(s.lastError);

  proxy.restore();
  const after = await persistMany(env.batches, 300);
  await until('backlog drained after the outage', () => env.batches.backlog() === 0, 60_000);

  const got = await rows(env.table);
  assert.equal(got.size, 3600);
  for (const r of [...before, ...during, ...after]) assert.ok(got.has(r.batch_id), r.batch_id);
  for (const r of before.slice(0, 20)) assert.deepEqual(got.get(r.batch_id)?.items, [{ status: 'queued' }]);
  const dupes = await sql(`SELECT count(*)::int AS n, count(DISTINCT batch_id)::int AS d FROM ${env.table}`);
  assert.deepEqual(dupes.rows[0], { n: 3600, d: 3600 });
  assert.equal(up.stats().connected, true);
  // One warning when it started failing, one line when it recovered; no credentials, no account UUIDs.
  assert.equal(env.logs.filter((m) => m.includes('failing')).length, 1);
  assert.equal(env.logs.filter((m) => m.includes('recovered')).length, 1);
  for (const m of env.logs) {
    assert.doesNotMatch(m, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i);
    assert.ok(!m.includes(url));
  }
});

test('uploader: stop() makes a last upload of what is queued, and returns within its timeout when the database is gone', { skip }, async (t) => {
  const env = setup(t);
  const proxy = new PgProxy(PG_URL);
  const url = await proxy.listen();
  t.after(() => proxy.close());

  const up = env.uploader(url);
  up.start();
  await persistMany(env.batches, 40);
  await up.stop();
  assert.equal(env.batches.backlog(), 0);
  assert.equal((await rows(env.table)).size, 40);

  const up2 = env.uploader(url);
  up2.start();
  await until('connected', () => up2.stats().connected);
  proxy.down();
  await persistMany(env.batches, 40);
  let started = Date.now();
  await up2.stop(500);
  assert.ok(Date.now() - started < 2000, `stop took ${Date.now() - started} ms`);
  // Nothing dropped: still queued locally for the next start.
  assert.equal(env.batches.backlog(), 40);

  // A server that accepts but never answers: the connect in flight is cut at the deadline, not at its own timeout.
  proxy.down('blackhole');
  const up3 = env.uploader(url);
  up3.start();
  await new Promise((r) => setTimeout(r, 200));
  started = Date.now();
  await up3.stop(500);
  assert.ok(Date.now() - started < 2000, `stop took ${Date.now() - started} ms`);
  assert.equal(env.batches.backlog(), 40);
});
