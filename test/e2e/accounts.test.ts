/**
 * Account-table hardening end to end: accounts whose ids
 * lie beyond the old 2^19-account bucket table start the relay and are served
 * on the HTTP doors; at the live-account cap the admin API answers 507 with a
 * stable code and stores nothing, and the CLI prints why.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Store } from '../../src/store/db.js';
import { AccountStore, type AccountRecord } from '../../src/store/accounts.js';
import { loadConfig } from '../../src/config/load.js';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { createAdminApp } from '../../src/ingress/admin.js';
import { Metrics } from '../../src/obs/metrics.js';
import { startTestRelay } from '../helpers/relay.js';
import { signed1559 } from '../helpers/evm.js';
import { Replier } from '../../src/ingress/reply.js';
import { AckFirst } from '../../src/ingress/ack-first.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
/** The old table: 2^19 accounts, slot = 2 * id + family; an id at or past it crashed start-up or the first request. */
const OLD_TABLE_ACCOUNTS = 2 ** 19;

function tempDir(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), 'txrelay-accounts-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return join(root, 'data');
}

/** What the old code left behind once 2^19 accounts had ever been registered: live accounts with ids past its table. */
async function storeWithIdsPastOldTable(dir: string): Promise<AccountRecord[]> {
  const store = Store.open(dir);
  const recs: AccountRecord[] = [
    { id: OLD_TABLE_ACCOUNTS - 1, evm: { enabled: true, tps: 100, burst: 100 } },
    { id: OLD_TABLE_ACCOUNTS, evm: { enabled: true, tps: 100, burst: 100 } },
    { id: OLD_TABLE_ACCOUNTS + 7, evm: { enabled: true, tps: 0, burst: 1 } },
  ].map(({ id, evm }) => ({
    uuid: randomUUID(),
    id,
    plan: 'free',
    evm,
    solana: { enabled: true, tps: 2, burst: 2, min_tip_lamports: 1000 },
    revoked: false,
    created_at: new Date().toISOString(),
  }));
  await store.write(() => {
    for (const r of recs) void store.accounts.put(r.uuid!, r);
  });
  await store.close();
  return recs;
}

async function rpc(base: string, uuid: string, method: string, params: unknown[]) {
  const r = await fetch(base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: r.status, headers: r.headers, json: (await r.json()) as any };
}

test('accounts with ids past the old 2^19-account table start the relay and are served on the HTTP doors; a refused take answers a finite Retry-After', async (t) => {
  const dir = tempDir(t);
  const [below, at, zeroTps] = await storeWithIdsPastOldTable(dir);
  const relay = await startTestRelay({}, dir);
  t.after(() => relay.stop({ keepData: true }));

  let nonce = 0;
  for (const rec of [below!, at!]) {
    const tx = await signed1559({ nonce: nonce++ });
    const single = await rpc(relay.base, rec.uuid!, 'eth_sendRawTransaction', [tx.hex]);
    assert.equal(single.status, 202, JSON.stringify(single.json));
    assert.equal(single.json.result, tx.hash);
    const b = await rpc(relay.base, rec.uuid!, 'svc_sendRawTransactionBatch', [(await signed1559({ nonce: nonce++ })).hex]);
    assert.equal(b.status, 202, JSON.stringify(b.json));
  }

  // A newly registered account continues the id sequence past the old table and is served too.
  const created = await relay.createAccount({ plan: 'paid' });
  assert.equal(created.id, OLD_TABLE_ACCOUNTS + 8);
  const fresh = await rpc(relay.base, created.uuid, 'eth_sendRawTransaction', [(await signed1559({ nonce: nonce++ })).hex]);
  assert.equal(fresh.status, 202, JSON.stringify(fresh.json));

  // TPS 0, burst 1: one admission, then a 429 whose wait is finite (the crash path went through an infinite one).
  assert.equal((await rpc(relay.base, zeroTps!.uuid!, 'eth_sendRawTransaction', [(await signed1559({ nonce: nonce++ })).hex])).status, 202);
  const limited = await rpc(relay.base, zeroTps!.uuid!, 'eth_sendRawTransaction', [(await signed1559({ nonce: nonce++ })).hex]);
  assert.equal(limited.status, 429);
  assert.equal(limited.json.error.code, -32005);
  assert.equal(limited.headers.get('retry-after'), '60');
  assert.equal(limited.headers.get('x-ratelimit-retry-after-ms'), '60000');

  const ping = await fetch(relay.base + '/ping');
  assert.equal(await ping.text(), 'pong', 'the relay is still serving');
});

test('at the live-account cap the admin API answers 507 TXR_ACCOUNT_LIMIT and stores nothing; the CLI prints why and exits 1', async (t) => {
  const dir = tempDir(t);
  const store = Store.open(dir);
  t.after(() => store.close());
  const accounts = AccountStore.open(store, { maxLive: 2 });
  const token = 'cap-test-token';
  const config = loadConfig({ env: {}, overrides: { storage: { data_dir: dir }, admin: { token } } });
  // Whichever acceptor this Node gets by default (node:http where no uWS build loads).
  const { uws } = loadAcceptor('auto');
  const reply = new Replier({ coalesce: true, ack: new AckFirst(), node: 'test' });
  const app = createAdminApp({ uws, reply, plans: config.plans, token, accounts, settled: () => Promise.resolve(), batches: null, metrics: new Metrics(), health: () => ({ ok: true }) });
  const port = await new Promise<number>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => {
      if (!s) return reject(new Error('admin listen failed'));
      t.after(() => uws.us_listen_socket_close(s));
      resolve(uws.us_socket_local_port(s as any));
    }),
  );
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: (await r.json()) as any };
  };

  const first = await call('POST', '/admin/accounts', {});
  assert.equal(first.status, 201);
  assert.equal((await call('POST', '/admin/accounts', { plan: 'paid' })).status, 201);
  const refused = await call('POST', '/admin/accounts', {});
  assert.equal(refused.status, 507);
  assert.equal(refused.json.error.code, 'TXR_ACCOUNT_LIMIT');
  assert.match(refused.json.error.message, /at most 2 live accounts/);
  assert.equal((await call('GET', '/admin/accounts')).json.length, 2, 'the refused account was not stored');
  assert.equal(accounts.size, 2);

  const env = { ...process.env, TXRELAY_ADMIN_PORT: String(port), TXRELAY_ADMIN_TOKEN: token, TXRELAY_STORAGE_DATA_DIR: dir };
  const cli = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    execFile(process.execPath, [CLI, 'accounts', 'create'], { env }, (err, stdout, stderr) => resolve({ code: err ? (err as any).code : 0, stdout, stderr })),
  );
  assert.equal(cli.code, 1);
  assert.equal(cli.stdout, '');
  assert.match(cli.stderr, /account limit reached: this node holds at most 2 live accounts/);

  // Another relay's token: the CLI says where it read it and what to check.
  const wrong = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
    execFile(process.execPath, [CLI, 'accounts', 'list'], { env: { ...env, TXRELAY_ADMIN_TOKEN: 'not-this-relays-token' } }, (err, _out, stderr) =>
      resolve({ code: err ? (err as any).code : 0, stderr }),
    ),
  );
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /^txrelay: the relay at http:\/\/127\.0\.0\.1:\d+ refused the admin token read from admin\.token in the configuration; use the same configuration/);
  assert.ok(!wrong.stderr.includes('not-this-relays-token'), 'the token is never printed');

  // Revoking frees a place at once.
  assert.equal((await call('DELETE', `/admin/accounts/${first.json.uuid}`)).status, 200);
  assert.equal((await call('POST', '/admin/accounts', {})).status, 201);
});

test('the account list comes in pages by id, with the next page named in x-svc-next-after; the CLI follows them', async (t) => {
  const r = await startTestRelay();
  t.after(() => r.stop());
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await r.createAccount());
  await r.adminCall('DELETE', `/admin/accounts/${made[1]!.uuid}`);
  const page = async (q: string) => {
    const res = await fetch(`${r.admin}/admin/accounts${q}`, { headers: { authorization: 'Bearer test-admin-token' } });
    return { status: res.status, next: res.headers.get('x-svc-next-after'), json: (await res.json()) as any };
  };
  const first = await page('?limit=2');
  assert.deepEqual(
    first.json.map((a: AccountRecord) => a.id),
    [made[0]!.id, made[1]!.id],
  );
  assert.equal(first.json[1].revoked, true, 'revoked accounts are listed');
  assert.equal(first.next, String(made[1]!.id));
  const second = await page(`?after=${first.next}&limit=2`);
  assert.deepEqual(
    second.json.map((a: AccountRecord) => a.id),
    [made[2]!.id, made[3]!.id],
  );
  const last = await page(`?after=${second.next}&limit=2`);
  assert.deepEqual(
    last.json.map((a: AccountRecord) => a.id),
    [made[4]!.id],
  );
  assert.equal(last.next, null, 'no header on the last page');
  const exact = await page('?limit=5');
  assert.equal(exact.json.length, 5);
  assert.equal(exact.next, null, 'a full last page says no more');
  assert.equal((await page('')).json.length, 5, 'default: the first 1,000');
  for (const bad of ['?limit=0', '?limit=10001', '?limit=x', '?after=-1', '?after=1.5']) {
    const res = await page(bad);
    assert.equal(res.status, 400, bad);
    assert.equal(res.json.error.code, 'TXR_ACCOUNT_INVALID');
  }
  const env = { ...process.env, TXRELAY_ADMIN_PORT: new URL(r.admin).port, TXRELAY_ADMIN_TOKEN: 'test-admin-token' };
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [CLI, 'accounts', 'list'], { env }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  assert.deepEqual(
    (JSON.parse(out) as AccountRecord[]).map((a) => a.id),
    made.map((a) => a.id),
  );
});
