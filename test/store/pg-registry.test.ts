/**
 * The postgres account registry (src/store/pg-registry.ts, change-feed.ts,
 * pg-schema.ts) against a real PostgreSQL (TXRELAY_TEST_PG). The account
 * tables have fixed names, so each test works in its own fresh database and
 * drops it after. Nodes are PgRegistry instances in this process, each over
 * its own lmdb Store in a temp dir and with its own node name.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { E, TxrelayError, type ErrorSpec, AccountError } from '../../src/errors.js';
import { Store } from '../../src/store/db.js';
import { AccountStore, type AccountRecord, type NewAccount, type Plans } from '../../src/store/accounts.js';
import { PgRegistry, importAccounts } from '../../src/store/pg-registry.js';
import { pruneChangeLog } from '../../src/store/change-feed.js';
import { SCHEMA_VERSION, migrate } from '../../src/store/pg-schema.js';
import { uuidToBytes } from '../../src/store/ids.js';
import { PG_URL, PgProxy, pgSkip, sql } from '../helpers/pg.js';

/** Nothing listens on port 1. */
const DEAD_URL = 'postgres://postgres@127.0.0.1:1/x';
const PLANS: Plans = {
  free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 },
  paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 },
} as Plans;
const POLL_MS = 200;
const RETENTION_S = 86_400;

const skip = await pgSkip();

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A rejection that is a TxrelayError with `spec` (and, if given, a message matching `msg`). */
function isTxr(spec: ErrorSpec, msg?: RegExp): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof TxrelayError, `expected a TxrelayError, got ${String(e)}`);
    assert.equal(e.spec, spec, `expected ${spec.code}, got ${e.spec.code}: ${e.message}`);
    if (msg) assert.match(e.message, msg);
    return true;
  };
}

function isAccountError(code: string): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof AccountError, `expected an AccountError, got ${String(e)}`);
    assert.equal(e.code, code);
    return true;
  };
}

/** What a replica must agree on, per account. */
const stateOf = (recs: readonly AccountRecord[]) => recs.map((r) => ({ id: r.id, version: r.version, revoked: r.revoked }));

interface Line {
  level: 'info' | 'warn' | 'error';
  msg: string;
}

interface Node {
  reg: PgRegistry;
  store: Store;
  dir: string;
  name: string;
  lines: Line[];
  /** Registry then store; safe to call twice. */
  close(): Promise<void>;
}

interface OpenOptions {
  dir?: string;
  url?: string;
  pollMs?: number;
}

interface Env {
  /** The fresh database of this test. */
  url: string;
  q<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
  dir(): string;
  open(name: string, o?: OpenOptions): Promise<Node>;
  /** Max seq in the change log. */
  head(): Promise<number>;
}

async function setup(t: TestContext): Promise<Env> {
  const db = `txr_t_${randomBytes(8).toString('hex')}`;
  await sql(PG_URL, `CREATE DATABASE ${db}`);
  const u = new URL(PG_URL);
  u.pathname = '/' + db;
  const url = u.toString();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  const dirs: string[] = [];
  const nodes = new Set<Node>();
  t.after(async () => {
    for (const n of nodes) await n.close();
    await pool.end().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await sql(PG_URL, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  });
  const env: Env = {
    url,
    q: (text, params = []) => pool.query(text, params),
    dir() {
      const d = mkdtempSync(join(tmpdir(), 'txrelay-pgreg-'));
      dirs.push(d);
      return join(d, 'data');
    },
    async open(name, o = {}) {
      const dir = o.dir ?? env.dir();
      const store = Store.open(dir);
      const lines: Line[] = [];
      const log = {
        info: (msg: string) => void lines.push({ level: 'info', msg }),
        warn: (msg: string) => void lines.push({ level: 'warn', msg }),
        error: (msg: string) => void lines.push({ level: 'error', msg }),
      };
      let reg: PgRegistry;
      try {
        reg = await PgRegistry.open({ url: o.url ?? url, store, node: name, pollMs: o.pollMs ?? POLL_MS, retentionS: RETENTION_S, log });
      } catch (e) {
        await store.close();
        throw e;
      }
      let closed: Promise<void> | null = null;
      const node: Node = {
        reg,
        store,
        dir,
        name,
        lines,
        close() {
          closed ??= (async () => {
            nodes.delete(node);
            await reg.close();
            await store.close();
          })();
          return closed;
        },
      };
      nodes.add(node);
      return node;
    },
    async head() {
      const { rows } = await pool.query<{ s: string }>('SELECT coalesce(max(seq), 0) AS s FROM txrelay_account_changes');
      return Number(rows[0]!.s);
    },
  };
  return env;
}

// ---- 1. migrations ------------------------------------------------------------

test('migrate: concurrent runs apply each version once; a rerun changes nothing; a newer schema refuses start-up', { skip }, async (t) => {
  const env = await setup(t);
  const clients = [0, 1, 2].map(() => new pg.Client({ connectionString: env.url }));
  for (const c of clients) c.on('error', () => {});
  const endClients = async () => {
    for (const c of clients) await c.end().catch(() => {});
  };
  // Hooks run in the order added, so this one (after the database's drop) only covers a failed test.
  t.after(endClients);
  await Promise.all(clients.map((c) => c.connect()));

  const results = await Promise.all(clients.map((c) => migrate(c)));
  // Exactly one of them found an empty database; the others found it migrated.
  assert.equal(results.filter((r) => r.from === 0).length, 1, JSON.stringify(results));
  for (const r of results) {
    assert.equal(r.to, SCHEMA_VERSION);
    if (r.from !== 0) assert.equal(r.from, SCHEMA_VERSION);
  }
  const { rows } = await env.q<{ version: number; n: string }>('SELECT version, count(*) AS n FROM txrelay_schema_migrations GROUP BY version ORDER BY version');
  assert.deepEqual(
    rows.map((r) => [r.version, Number(r.n)]),
    Array.from({ length: SCHEMA_VERSION }, (_, i) => [i + 1, 1]),
  );
  const tables = await env.q<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_name LIKE 'txrelay\\_%' ORDER BY 1");
  assert.deepEqual(
    tables.rows.map((r) => r.t),
    ['txrelay_account_changes', 'txrelay_accounts', 'txrelay_registry_meta', 'txrelay_schema_migrations'],
  );

  const again = await migrate(clients[0]!);
  assert.equal(again.from, again.to);
  assert.equal(again.to, SCHEMA_VERSION);

  await env.q('INSERT INTO txrelay_schema_migrations (version) VALUES ($1)', [SCHEMA_VERSION + 1]);
  let message = '';
  await assert.rejects(migrate(clients[1]!), (e: unknown) => {
    isTxr(E.REGISTRY_START, /newer/)(e);
    message = (e as Error).message;
    return true;
  });
  assert.match(message, new RegExp(`version ${SCHEMA_VERSION + 1}`));
  // The failed migrate rolled back: the client is usable and nothing changed.
  const after = await env.q<{ v: number }>('SELECT max(version) AS v FROM txrelay_schema_migrations');
  assert.equal(after.rows[0]!.v, SCHEMA_VERSION + 1);

  await endClients();

  await assert.rejects(env.open('n-new'), (e: unknown) => {
    isTxr(E.REGISTRY_START)(e);
    assert.equal((e as Error).message, message);
    return true;
  });
});

// ---- 2. two nodes ---------------------------------------------------------------

test('two nodes: create, update and revoke on either node take effect on both; errors for revoked and unknown accounts', { skip }, async (t) => {
  const env = await setup(t);
  const n1 = await env.open('n1');
  const n2 = await env.open('n2');

  // Node 1 has applied its own create before the create resolves.
  let resolved = false;
  const seenBeforeResolve: AccountRecord[] = [];
  const off = n1.reg.onChange((rec) => {
    if (!resolved) seenBeforeResolve.push(rec);
  });
  const pending = n1.reg.create({}, PLANS);
  void pending.then(() => (resolved = true));
  const acc = await pending;
  off();
  assert.equal(typeof acc.uuid, 'string');
  assert.equal(acc.id, 1);
  assert.equal(acc.version, 1);
  assert.equal(acc.revoked, false);
  assert.equal(acc.plan, 'free');
  assert.deepEqual(acc.evm, { enabled: true, tps: 5, burst: 5 });
  assert.deepEqual(acc.solana, { enabled: true, tps: 2, burst: 2, min_tip_lamports: 1000 });
  assert.deepEqual(
    seenBeforeResolve.map((r) => [r.id, r.version]),
    [[1, 1]],
  );
  const own = n1.reg.lookup(acc.uuid);
  assert.equal(own?.id, acc.id);
  assert.equal(own?.version, 1);
  // The replica's record carries the key's digest, never the key.
  assert.equal(own?.uuid, undefined);
  assert.equal(n1.reg.lookup(acc.uuid.toUpperCase())?.id, acc.id);
  assert.equal(n1.reg.live, 1);

  const bytes = uuidToBytes(acc.uuid)!;
  assert.equal(bytes.length, 16);
  await until('node 2 sees the new account', () => n2.reg.lookup(acc.uuid) !== undefined);
  assert.equal(n2.reg.lookup(acc.uuid)?.id, acc.id);
  assert.equal(n2.reg.lookupBytes(bytes, 0)?.id, acc.id);
  const padded = new Uint8Array(20);
  padded.set(bytes, 4);
  assert.equal(n2.reg.lookupBytes(padded, 4)?.id, acc.id);
  assert.equal(n2.reg.lookup(randomUUID()), undefined);

  // Update by id on node 2: in effect on node 2 when it resolves, then on node 1.
  const upd = await n2.reg.update(String(acc.id), { plan: 'paid', evm: { tps: 40 } });
  assert.equal(upd.version, 2);
  assert.equal(upd.plan, 'paid');
  assert.deepEqual(upd.evm, { enabled: true, tps: 40, burst: 40 });
  assert.equal(n2.reg.lookup(acc.uuid)?.version, 2);
  await until('node 1 sees version 2', () => n1.reg.lookup(acc.uuid)?.version === 2);
  assert.equal(n1.reg.lookup(acc.uuid)?.evm.tps, 40);
  assert.equal(n1.reg.lookupBytes(bytes, 0)?.plan, 'paid');

  // Revoke by key on node 1.
  const rev = await n1.reg.revoke(acc.uuid);
  assert.equal(rev.revoked, true);
  assert.equal(rev.version, 3);
  assert.equal(n1.reg.lookup(acc.uuid), undefined);
  assert.equal(n1.reg.lookupBytes(bytes, 0), undefined);
  assert.equal(n1.reg.live, 0);
  await until('node 2 sees the revocation', () => n2.reg.lookup(acc.uuid) === undefined);
  assert.equal(n2.reg.lookupBytes(bytes, 0), undefined);
  assert.equal(n2.reg.live, 0);
  // The admin view still names it, by key or id.
  assert.equal(n2.reg.require(acc.uuid).revoked, true);
  assert.equal(n2.reg.require(String(acc.id)).version, 3);

  await assert.rejects(n2.reg.update(acc.uuid, { plan: 'free' }), isAccountError('TXR_ACCOUNT_REVOKED'));
  await assert.rejects(n1.reg.update(String(acc.id), { plan: 'free' }), isAccountError('TXR_ACCOUNT_REVOKED'));

  const unknownKey = randomUUID();
  await assert.rejects(n1.reg.update(unknownKey, { plan: 'paid' }), isAccountError('TXR_ACCOUNT_NOT_FOUND'));
  await assert.rejects(n2.reg.revoke(unknownKey), isAccountError('TXR_ACCOUNT_NOT_FOUND'));
  await assert.rejects(n1.reg.update('999999', { plan: 'paid' }), isAccountError('TXR_ACCOUNT_NOT_FOUND'));
  await assert.rejects(n2.reg.revoke('999999'), isAccountError('TXR_ACCOUNT_NOT_FOUND'));
  await assert.rejects(n2.reg.revoke('not-a-key'), isAccountError('TXR_ACCOUNT_NOT_FOUND'));

  // Revoking again answers the record and logs no change.
  const changesBefore = await env.q<{ n: string }>('SELECT count(*) AS n FROM txrelay_account_changes');
  const headBefore = await env.head();
  const again = await n2.reg.revoke(acc.uuid);
  assert.equal(again.id, acc.id);
  assert.equal(again.revoked, true);
  assert.equal(again.version, 3);
  const again2 = await n1.reg.revoke(String(acc.id));
  assert.equal(again2.version, 3);
  const changesAfter = await env.q<{ n: string }>('SELECT count(*) AS n FROM txrelay_account_changes');
  assert.equal(changesAfter.rows[0]!.n, changesBefore.rows[0]!.n);
  assert.equal(changesBefore.rows[0]!.n, '3');
  assert.equal(await env.head(), headBefore);
  const row = await env.q<{ version: number; revoked: boolean }>('SELECT version, revoked FROM txrelay_accounts WHERE id = $1', [acc.id]);
  assert.deepEqual(row.rows[0], { version: 3, revoked: true });
  assert.ok(!n1.lines.some((l) => l.level !== 'info'), JSON.stringify(n1.lines));
  assert.ok(!n2.lines.some((l) => l.level !== 'info'), JSON.stringify(n2.lines));
});

// ---- 3. no key in the database ----------------------------------------------------

test('the database holds no usable key: only SHA-256 of its 16 bytes', { skip }, async (t) => {
  const env = await setup(t);
  const n1 = await env.open('n1');
  const made: NewAccount[] = [];
  for (let i = 0; i < 5; i++) made.push(await n1.reg.create(i % 2 ? { plan: 'paid' } : {}, PLANS));
  await n1.reg.update(made[1]!.uuid, { evm: { tps: 7 } });
  await n1.reg.revoke(made[2]!.uuid);

  const { rows: tables } = await env.q<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE 'txrelay\\_%' ORDER BY 1");
  assert.equal(tables.length, 4);
  const dump: string[] = [];
  for (const { t: name } of tables) {
    const { rows } = await env.q<{ r: string }>(`SELECT t::text AS r FROM ${name} t`);
    assert.ok(rows.length > 0, `${name} has rows`);
    dump.push(...rows.map((r) => r.r));
  }
  const text = dump.join('\n').toLowerCase();
  for (const a of made) {
    const key = a.uuid.toLowerCase();
    assert.ok(!text.includes(key), 'key text in the database');
    assert.ok(!text.includes(key.replaceAll('-', '')), 'key hex in the database');
    // Nor its last group alone (12 random hex digits).
    assert.ok(!text.includes(key.slice(24)), 'key tail in the database');
    const digest = createHash('sha256').update(uuidToBytes(a.uuid)!).digest('hex');
    const { rows } = await env.q<{ d: string }>("SELECT encode(key_sha256, 'hex') AS d FROM txrelay_accounts WHERE id = $1", [a.id]);
    assert.equal(rows[0]!.d, digest);
    assert.equal(n1.reg.require(String(a.id)).key_sha256, digest);
  }
  // Nor in the node's stored replica.
  for (const { value } of n1.store.replica.getRange()) {
    const rec = value as AccountRecord;
    assert.equal(rec.uuid, undefined);
    assert.match(rec.key_sha256!, /^[0-9a-f]{64}$/);
  }
});

// ---- 4. the replica's stored position ----------------------------------------------

test('a restarted node starts from its stored replica and replays exactly the changes it missed', { skip }, async (t) => {
  const env = await setup(t);
  const n1 = await env.open('n1');
  let n2 = await env.open('n2');
  const base: NewAccount[] = [];
  for (let i = 0; i < 4; i++) base.push(await n1.reg.create({}, PLANS));
  const head0 = await env.head();
  await until('node 2 at the head', () => n2.reg.feed.seq === head0);
  const old = stateOf(n2.reg.list());
  const dir = n2.dir;
  await n2.close();

  // 20 changes while node 2 is away.
  const made: NewAccount[] = [];
  for (let i = 0; i < 8; i++) made.push(await n1.reg.create({}, PLANS));
  for (let i = 0; i < 6; i++) await n1.reg.update(base[i % 4]!.uuid, { evm: { tps: 10 + i } });
  for (const a of [base[0]!, made[0]!, made[1]!, made[2]!, made[3]!, made[4]!]) await n1.reg.revoke(a.uuid);
  const head = await env.head();
  assert.equal(head, head0 + 20);

  // What node 2 stored: its rows and its position, together.
  const stored = Store.open(dir);
  assert.equal(stored.replicaMeta.get('seq'), head0);
  assert.deepEqual(
    stateOf([...stored.replica.getRange()].map((x) => x.value as AccountRecord)),
    old,
  );
  await stored.close();

  // Opened without the database, it serves exactly that stored state.
  const offline = await env.open('n2', { dir, url: DEAD_URL });
  assert.equal(offline.reg.feed.seq, head0);
  assert.deepEqual(stateOf(offline.reg.list()), old);
  assert.equal(offline.reg.lookup(base[0]!.uuid)?.id, base[0]!.id);
  await offline.close();

  n2 = await env.open('n2', { dir });
  // open() resolves once caught up.
  assert.equal(n2.reg.feed.seq, head);
  assert.equal(n2.reg.feed.resyncs, 0);
  assert.equal(n2.reg.feed.applied, 20);
  assert.deepEqual(stateOf(n2.reg.list()), stateOf(n1.reg.list()));
  assert.equal(n2.reg.lookup(base[0]!.uuid), undefined);
  // base[1] was updated at i = 1 and i = 5.
  assert.equal(n2.reg.lookup(base[1]!.uuid)?.evm.tps, 15);
  assert.equal(n2.reg.lookup(made[7]!.uuid)?.id, made[7]!.id);
  assert.equal(n2.reg.live, n1.reg.live);
  assert.equal(n2.store.replicaMeta.get('seq'), head);
});

// ---- 5. retention ---------------------------------------------------------------------

test('a node whose position was pruned from the change log resyncs in full and converges', { skip }, async (t) => {
  const env = await setup(t);
  const n1 = await env.open('n1');
  let n2 = await env.open('n2');
  const accs: NewAccount[] = [];
  for (let i = 0; i < 5; i++) accs.push(await n1.reg.create({}, PLANS));
  const head0 = await env.head();
  await until('node 2 at the head', () => n2.reg.feed.seq === head0);
  const dir = n2.dir;
  await n2.close();

  await n1.reg.update(accs[0]!.uuid, { plan: 'paid' });
  await n1.reg.revoke(accs[1]!.uuid);
  const added = await n1.reg.create({ solana: { min_tip_lamports: 5000 } }, PLANS);
  await n1.reg.update(String(accs[2]!.id), { solana: { enabled: false } });
  const head = await env.head();

  const c = new pg.Client({ connectionString: env.url });
  await c.connect();
  let deleted: number;
  try {
    deleted = await pruneChangeLog(c, 0);
  } finally {
    await c.end();
  }
  assert.equal(deleted, head - 1);
  const left = await env.q<{ seq: string }>('SELECT seq FROM txrelay_account_changes');
  assert.deepEqual(left.rows.map((r) => Number(r.seq)), [head]);
  const pruned = await env.q<{ v: string }>("SELECT v FROM txrelay_registry_meta WHERE k = 'pruned_through'");
  assert.equal(Number(pruned.rows[0]!.v), head - 1);

  n2 = await env.open('n2', { dir });
  assert.equal(n2.reg.feed.resyncs, 1);
  assert.equal(n2.reg.feed.applied, 0);
  assert.equal(n2.reg.feed.seq, head);
  assert.ok(n2.lines.some((l) => l.level === 'info' && /past the change log's retention/.test(l.msg)), JSON.stringify(n2.lines));
  assert.deepEqual(stateOf(n2.reg.list()), stateOf(n1.reg.list()));
  assert.equal(n2.reg.lookup(accs[0]!.uuid)?.plan, 'paid');
  assert.equal(n2.reg.lookup(accs[1]!.uuid), undefined);
  assert.equal(n2.reg.lookup(added.uuid)?.solana.min_tip_lamports, 5000);
  assert.equal(n2.reg.lookup(accs[2]!.uuid)?.solana.enabled, false);
  assert.equal(n2.reg.live, 5);

  // It keeps following the (pruned) log afterwards.
  await n1.reg.update(accs[3]!.uuid, { evm: { tps: 9 } });
  await until('node 2 follows after the resync', () => n2.reg.lookup(accs[3]!.uuid)?.evm.tps === 9);
  assert.equal(n2.reg.feed.resyncs, 1);
});

// The prune (hourly, and once after start) shares the feed's one connection with the catch-ups: were
// its statements to land inside a catch-up's read-only snapshot, both would fail and the feed would
// drop its connection, and with it the node's name.
test(
  "the feed's own prune, run while it catches up, neither fails nor drops the feed's connection",
  { skip },
  async (t) => {
    const env = await setup(t);
    const n1 = await env.open('n1');
    const n2 = await env.open('n2');
    for (let i = 0; i < 3; i++) await n1.reg.create({}, PLANS);
    // Changes old enough for retention 0 that the prune has something to delete.
    await until('node 2 at the head', async () => n2.reg.feed.seq === (await env.head()));
    await n1.reg.create({}, PLANS);
    // What the poll tick (kick) and the prune timer do when they coincide.
    const [caught, pruned] = await Promise.allSettled([n2.reg.feed.kick(), n2.reg.feed.prune(0)]);
    assert.equal(caught.status, 'fulfilled');
    assert.equal(pruned.status, 'fulfilled', pruned.status === 'rejected' ? String(pruned.reason) : '');
    assert.ok((pruned as PromiseFulfilledResult<number>).value > 0);
    assert.equal(n2.reg.feed.connected, true);
    assert.ok(!n2.lines.some((l) => l.level !== 'info'), JSON.stringify(n2.lines));
    assert.equal(n2.reg.feed.seq, await env.head());
  },
);

// A resync must also drop, in the stored replica, the accounts the new snapshot lacks: kept there, a
// restart would load them again and they would authenticate.
test(
  'after a rebuilt database, accounts that vanished stay gone on the node across a restart',
  { skip },
  async (t) => {
    const env = await setup(t);
    const n1 = await env.open('n1');
    const n2 = await env.open('n2');
    const gone = await n1.reg.create({}, PLANS);
    await n1.reg.create({}, PLANS);
    await until('node 2 at the head', async () => n2.reg.feed.seq === (await env.head()));
    assert.equal(n2.reg.lookup(gone.uuid)?.id, gone.id);
    await n1.close();
    const dir = n2.dir;
    await n2.close();

    // The database is rebuilt empty (say, restored from before these accounts existed).
    await env.q('DROP TABLE txrelay_account_changes, txrelay_accounts, txrelay_registry_meta, txrelay_schema_migrations');
    let n = await env.open('n2', { dir });
    assert.equal(n.reg.feed.resyncs, 1);
    assert.ok(n.lines.some((l) => /another registry than the one this replica copied/.test(l.msg)), JSON.stringify(n.lines));
    assert.equal(n.reg.lookup(gone.uuid), undefined, 'gone once resynced');
    assert.equal(n.reg.live, 0);
    await n.close();

    // Restarted, with and without the database: still gone.
    n = await env.open('n2', { dir, url: DEAD_URL });
    assert.equal(n.reg.lookup(gone.uuid), undefined, 'resurrected from the stored replica (database unreachable)');
    await n.close();
    n = await env.open('n2', { dir });
    assert.equal(n.reg.lookup(gone.uuid), undefined, 'resurrected from the stored replica');
    assert.equal(n.reg.live, 0);
  },
);

// ---- 6. onChange ------------------------------------------------------------------------

test('onChange: changes from the feed are announced in seq order; a resync announces only what changed', { skip }, async (t) => {
  const env = await setup(t);
  const proxy = new PgProxy(env.url);
  const via = await proxy.listen();
  t.after(() => proxy.close());
  const n1 = await env.open('n1');
  const n2 = await env.open('n2', { url: via });
  const heard: AccountRecord[] = [];
  n2.reg.onChange((rec) => heard.push(rec));

  const accs: NewAccount[] = [];
  for (let i = 0; i < 5; i++) accs.push(await n1.reg.create({}, PLANS));
  let head = await env.head();
  await until('node 2 at the head', () => n2.reg.feed.seq === head);
  // One change per account per round, so no two land in one catch-up for the same account.
  await n1.reg.update(accs[2]!.uuid, { evm: { tps: 11 } });
  await n1.reg.update(accs[0]!.uuid, { evm: { tps: 12 } });
  await n1.reg.revoke(accs[4]!.uuid);
  await n1.reg.update(accs[1]!.uuid, { plan: 'paid' });
  const sixth = await n1.reg.create({}, PLANS);
  head = await env.head();
  await until('node 2 at the head', () => n2.reg.feed.seq === head);

  const log = await env.q<{ account_id: string; version: number }>('SELECT account_id, version FROM txrelay_account_changes ORDER BY seq');
  assert.equal(log.rows.length, 10);
  assert.deepEqual(
    heard.map((r) => [r.id, r.version]),
    log.rows.map((r) => [Number(r.account_id), r.version]),
  );
  assert.equal(heard[7]!.revoked, true);
  assert.equal(heard[9]!.id, sixth.id);
  // Each announcement is the record in effect at that moment.
  for (const r of heard) assert.ok(Object.isFrozen(r));

  // A resync with nothing changed announces nothing.
  heard.length = 0;
  n2.reg.replaceAll(n2.reg.list());
  assert.equal(heard.length, 0);

  // Cut node 2 off, change two accounts and add one, prune the log past node 2's position.
  const resyncs = n2.reg.feed.resyncs;
  proxy.down();
  await until('node 2 disconnected', () => !n2.reg.feed.connected);
  await n1.reg.update(accs[0]!.uuid, { solana: { tps: 3 } });
  await n1.reg.revoke(accs[3]!.uuid);
  const seventh = await n1.reg.create({ plan: 'paid' }, PLANS);
  const c = new pg.Client({ connectionString: env.url });
  await c.connect();
  try {
    assert.ok((await pruneChangeLog(c, 0)) > 0);
  } finally {
    await c.end();
  }
  assert.equal(heard.length, 0);
  // Node 2 still serves its replica meanwhile.
  assert.equal(n2.reg.lookup(accs[3]!.uuid)?.id, accs[3]!.id);
  head = await env.head();
  proxy.restore();
  await until('node 2 resynced', () => n2.reg.feed.resyncs === resyncs + 1 && n2.reg.feed.seq === head);

  assert.deepEqual(
    heard.map((r) => [r.id, r.version, r.revoked]).sort((a, b) => (a[0] as number) - (b[0] as number)),
    [
      [accs[0]!.id, 3, false],
      [accs[3]!.id, 2, true],
      [seventh.id, 1, false],
    ],
  );
  assert.deepEqual(stateOf(n2.reg.list()), stateOf(n1.reg.list()));
  assert.equal(n2.reg.lookup(accs[3]!.uuid), undefined);
  assert.equal(n2.reg.lookup(seventh.uuid)?.plan, 'paid');
  // The outage was reported once, and the return once.
  assert.equal(n2.lines.filter((l) => l.level === 'warn' && /lost PostgreSQL/.test(l.msg)).length, 1, JSON.stringify(n2.lines));
  assert.equal(n2.lines.filter((l) => /answers again/.test(l.msg)).length, 1, JSON.stringify(n2.lines));
});

// ---- 7. node names -----------------------------------------------------------------------

test('a node name held by a live node cannot be used by another until it is released', { skip }, async (t) => {
  const env = await setup(t);
  const first = await env.open('edge-1');
  await assert.rejects(env.open('edge-1'), isTxr(E.REGISTRY_START, /"edge-1"/));
  // Another name on the same database is fine.
  const other = await env.open('edge-2');
  await other.close();
  await first.close();
  const again = await env.open('edge-1');
  assert.equal(again.reg.feed.connected, true);
  assert.ok(!again.lines.some((l) => l.level !== 'info'), JSON.stringify(again.lines));
});

// ---- 8. without the database ---------------------------------------------------------------

test('without the database: a node that never synced refuses to start; one that did serves its replica and refuses writes', { skip }, async (t) => {
  const env = await setup(t);
  await assert.rejects(env.open('lonely', { url: DEAD_URL }), isTxr(E.REGISTRY_START, /never synced/));

  const n1 = await env.open('n1');
  const a = await n1.reg.create({}, PLANS);
  const b = await n1.reg.create({ plan: 'paid' }, PLANS);
  await n1.reg.revoke(b.uuid);
  const dir = n1.dir;
  await n1.close();

  const off = await env.open('n1', { dir, url: DEAD_URL });
  const warns = off.lines.filter((l) => l.level === 'warn');
  assert.equal(warns.length, 1, JSON.stringify(off.lines));
  assert.match(warns[0]!.msg, /serving from the stored replica/);
  assert.ok(!warns[0]!.msg.includes('postgres@'), 'no credentials in the line');
  assert.equal(off.reg.lookup(a.uuid)?.id, a.id);
  assert.equal(off.reg.lookupBytes(uuidToBytes(a.uuid)!, 0)?.id, a.id);
  assert.equal(off.reg.lookup(b.uuid), undefined);
  assert.equal(off.reg.list().length, 2);
  assert.equal(off.reg.feed.connected, false);

  const s1 = off.reg.feed.staleness();
  assert.ok(Number.isFinite(s1) && s1 >= 0, String(s1));

  for (const write of [() => off.reg.create({}, PLANS), () => off.reg.update(a.uuid, { plan: 'paid' }), () => off.reg.revoke(String(a.id))]) {
    const started = Date.now();
    await assert.rejects(write(), isTxr(E.REGISTRY_UNAVAILABLE));
    assert.ok(Date.now() - started < 5_000, `answered in ${Date.now() - started} ms`);
  }
  await sleep(600);
  const s2 = off.reg.feed.staleness();
  assert.ok(Number.isFinite(s2) && s2 >= s1 + 0.5, `${s1} -> ${s2}`);
  // Reconnect attempts in the meantime add no more warnings, and it still serves.
  assert.equal(off.lines.filter((l) => l.level === 'warn').length, 1, JSON.stringify(off.lines));
  assert.equal(off.reg.lookup(a.uuid)?.id, a.id);
});

// ---- 9. import ------------------------------------------------------------------------------

test('importAccounts: embedded records are imported once and their keys authenticate on postgres nodes', { skip }, async (t) => {
  const env = await setup(t);
  const edir = env.dir();
  const estore = Store.open(edir);
  let records: AccountRecord[];
  try {
    const emb = AccountStore.open(estore);
    for (let i = 0; i < 6; i++) await emb.create(i === 3 ? { plan: 'paid', evm: { tps: 77, burst: 100 } } : {}, PLANS);
    await emb.revoke(emb.list()[5]!.uuid!);
    records = emb.list();
  } finally {
    await estore.close();
  }
  assert.equal(records.length, 6);

  assert.deepEqual(await importAccounts(env.url, records), { added: 6, present: 0 });
  assert.deepEqual(await importAccounts(env.url, records), { added: 0, present: 6 });
  const count = await env.q<{ n: string }>('SELECT count(*) AS n FROM txrelay_accounts');
  assert.equal(count.rows[0]!.n, '6');

  const n = await env.open('importer');
  for (const r of records) {
    const got = n.reg.lookup(r.uuid!);
    const viaBytes = n.reg.lookupBytes(uuidToBytes(r.uuid!)!, 0);
    if (r.revoked) {
      assert.equal(got, undefined);
      assert.equal(viaBytes, undefined);
      assert.equal(n.reg.require(r.uuid!).revoked, true);
      continue;
    }
    assert.ok(got, 'imported key authenticates');
    assert.equal(viaBytes?.id, got.id);
    assert.equal(got.plan, r.plan);
    assert.deepEqual(got.evm, r.evm);
    assert.deepEqual(got.solana, r.solana);
    assert.equal(got.created_at, r.created_at);
    assert.equal(got.version, 1);
  }
  assert.equal(n.reg.live, 5);
  assert.equal(n.reg.lookup(records[3]!.uuid!)?.evm.burst, 100);

  // Imported accounts are ordinary accounts: a change on another node reaches this one.
  const m = await env.open('other');
  assert.equal(m.reg.live, 5);
  await m.reg.revoke(records[0]!.uuid!);
  await until('the revocation reaches the importer node', () => n.reg.lookup(records[0]!.uuid!) === undefined);
  // A record without its key cannot be imported.
  const { uuid: _drop, ...keyless } = records[1]!;
  await assert.rejects(importAccounts(env.url, [keyless as AccountRecord]), isTxr(E.ACCOUNT_INVALID));
});
