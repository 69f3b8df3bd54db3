import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/db.js';
import { AccountStore, type AccountRecord, type Plans } from '../../src/store/accounts.js';
import { uuidToBytes } from '../../src/store/ids.js';
import { AccountError } from '../../src/errors.js';

// The configured plan defaults.
const plans: Plans = {
  free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 },
  paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 },
};
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

async function open(t: TestContext, dir = tempDir(t)) {
  const store = Store.open(dir);
  t.after(() => store.close());
  return { dir, store, accounts: AccountStore.open(store) };
}

test('the data directory is created with mode 0700', async (t) => {
  const { dir } = await open(t);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
});

test('a new account takes its plan defaults: free 5/2/1000, paid 50/2/1000, burst = TPS, both families enabled', async (t) => {
  const { accounts } = await open(t);
  const free = await accounts.create({}, plans);
  assert.match(free.uuid, UUID_V4);
  assert.ok(!Number.isNaN(Date.parse(free.created_at)));
  assert.deepEqual({ ...free, uuid: '', created_at: '' }, {
    uuid: '',
    id: 1,
    plan: 'free',
    evm: { enabled: true, tps: 5, burst: 5 },
    solana: { enabled: true, tps: 2, burst: 2, min_tip_lamports: 1000 },
    revoked: false,
    created_at: '',
  });
  const paid = await accounts.create({ plan: 'paid' }, plans);
  assert.equal(paid.id, 2);
  assert.deepEqual(paid.evm, { enabled: true, tps: 50, burst: 50 });
  assert.deepEqual(paid.solana, { enabled: true, tps: 2, burst: 2, min_tip_lamports: 1000 });
  assert.notEqual(paid.uuid, free.uuid);
});

test('explicit fields override the plan; a missing burst defaults to the TPS given', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({ evm: { tps: 7 }, solana: { enabled: false, burst: 9, min_tip_lamports: 5000 } }, plans);
  assert.deepEqual(a.evm, { enabled: true, tps: 7, burst: 7 });
  assert.deepEqual(a.solana, { enabled: false, tps: 2, burst: 9, min_tip_lamports: 5000 });
  // A zero TPS still needs a one-token bucket (burst minimum 1).
  const z = await accounts.create({ evm: { tps: 0 } }, plans);
  assert.deepEqual(z.evm, { enabled: true, tps: 0, burst: 1 });
});

test('records are frozen: the in-memory copy cannot be changed by a caller', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({}, plans);
  assert.throws(() => ((a as { plan: string }).plan = 'paid'), TypeError);
  assert.throws(() => ((a.evm as { tps: number }).tps = 1e6), TypeError);
});

test('update applies a partial body; a plan change keeps the TPS; a default burst follows a new TPS, an explicit one stays', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({ solana: { burst: 10 } }, plans);
  const b = await accounts.update(a.uuid, { evm: { tps: 20 }, solana: { tps: 4 } });
  assert.deepEqual(b.evm, { enabled: true, tps: 20, burst: 20 });
  assert.deepEqual(b.solana, { enabled: true, tps: 4, burst: 10, min_tip_lamports: 1000 });
  assert.equal(b.plan, 'free');
  const c = await accounts.update(a.uuid.toUpperCase(), { plan: 'paid' });
  assert.equal(c.plan, 'paid');
  assert.deepEqual(c.evm, b.evm);
  const d = await accounts.update(a.uuid, { evm: { enabled: false, burst: 3 }, solana: { min_tip_lamports: 0 } });
  assert.deepEqual(d.evm, { enabled: false, tps: 20, burst: 3 });
  assert.equal(d.solana.min_tip_lamports, 0);
  assert.equal(d.created_at, a.created_at);
  assert.equal(d.id, a.id);
  assert.deepEqual(accounts.get(a.uuid), d);
  assert.equal(accounts.lookup(a.uuid), d);
});

test('concurrent updates of one account all apply, in call order', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({}, plans);
  await Promise.all([
    accounts.update(a.uuid, { evm: { tps: 11 } }),
    accounts.update(a.uuid, { solana: { tps: 12 } }),
    accounts.update(a.uuid, { evm: { burst: 13 } }),
  ]);
  const r = accounts.get(a.uuid)!;
  assert.deepEqual([r.evm.tps, r.solana.tps, r.evm.burst], [11, 12, 13]);
});

test('revoke: the UUID stops authenticating, the record stays visible, and revoking again changes nothing', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({}, plans);
  const bytes = uuidToBytes(a.uuid)!;
  assert.equal(accounts.lookupBytes(bytes, 0), a);
  const r = await accounts.revoke(a.uuid);
  assert.equal(r.revoked, true);
  assert.equal(accounts.lookup(a.uuid), undefined);
  assert.equal(accounts.lookupBytes(bytes, 0), undefined);
  assert.equal(accounts.get(a.uuid)?.revoked, true);
  assert.equal(await accounts.revoke(a.uuid), accounts.get(a.uuid));
  assert.equal(accounts.list().length, 1);
  // Revocation is final: a change to a revoked account is refused and changes nothing.
  await assert.rejects(accounts.update(a.uuid, { evm: { tps: 9 } }), (e: unknown) => e instanceof AccountError && e.code === 'TXR_ACCOUNT_REVOKED');
  assert.equal(accounts.get(a.uuid)?.evm.tps, 5);
});

test('an account is addressed by its key or by its id', async (t) => {
  const { accounts } = await open(t);
  await accounts.create({}, plans);
  const b = await accounts.create({ plan: 'paid' }, plans);
  assert.equal(accounts.require(String(b.id)), b);
  assert.equal(accounts.require(b.uuid.toUpperCase()), b);
  const changed = await accounts.update(String(b.id), { solana: { tps: 7 } });
  assert.equal(accounts.get(b.uuid), changed);
  assert.equal((await accounts.revoke(String(b.id))).revoked, true);
  assert.equal(accounts.lookup(b.uuid), undefined);
  for (const ref of ['0', '99', '-1', '1.0', '01']) assert.equal(accounts.get(ref), undefined, ref);
});

test('unknown or malformed UUIDs: get is undefined, update and revoke fail with TXR_ACCOUNT_NOT_FOUND without echoing the UUID', async (t) => {
  const { accounts } = await open(t);
  const unknown = '6f1c2a4e-8b7d-4c3a-9e2f-1a2b3c4d5e6f';
  assert.equal(accounts.get(unknown), undefined);
  for (const id of [unknown, 'not-a-uuid', '']) {
    for (const op of [() => accounts.update(id, {}), () => accounts.revoke(id)]) {
      await assert.rejects(op(), (e: unknown) => {
        assert.ok(e instanceof AccountError);
        assert.equal(e.code, 'TXR_ACCOUNT_NOT_FOUND');
        assert.ok(!e.message.includes(unknown));
        return true;
      });
    }
  }
});

test('malformed input is TXR_ACCOUNT_INVALID and the error names the field', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({}, plans);
  const cases: [unknown, string][] = [
    [{ plan: 'gold' }, 'plan'],
    [{ evm: { tps: -1 } }, 'evm.tps'],
    [{ evm: { tps: '5' } }, 'evm.tps'],
    [{ evm: { tps: 1_000_001 } }, 'evm.tps'],
    [{ evm: { tps: 2.5 } }, 'evm.tps'],
    [{ evm: { burst: 0 } }, 'evm.burst'],
    [{ solana: { burst: 2_000_001 } }, 'solana.burst'],
    [{ solana: { min_tip_lamports: -5 } }, 'solana.min_tip_lamports'],
    [{ solana: { enabled: 'yes' } }, 'solana.enabled'],
    [{ evm: 5 }, 'evm'],
    [{ evm: { rate: 1 } }, 'evm.rate'],
    [{ uuid: a.uuid }, 'uuid'],
    [{ revoked: false }, 'revoked'],
    ['free', 'body'],
    [[], 'body'],
  ];
  for (const [input, field] of cases) {
    for (const op of [() => accounts.create(input, plans), () => accounts.update(a.uuid, input)]) {
      await assert.rejects(op(), (e: unknown) => {
        assert.ok(e instanceof AccountError, JSON.stringify(input));
        assert.equal(e.code, 'TXR_ACCOUNT_INVALID');
        assert.equal(e.field, field);
        assert.ok(e.message.includes(field), e.message);
        assert.ok(!e.message.includes(a.uuid));
        return true;
      });
    }
  }
  // Nothing half-applied.
  assert.equal(accounts.list().length, 1);
  assert.deepEqual(accounts.get(a.uuid), a);
});

test('reopening the store from disk keeps every account, its state and the id sequence', async (t) => {
  const dir = tempDir(t);
  const first = Store.open(dir);
  const accounts = AccountStore.open(first);
  const made: AccountRecord[] = [];
  for (let i = 0; i < 20; i++) made.push(await accounts.create({ plan: i % 2 ? 'paid' : 'free' }, plans));
  await accounts.update(made[3]!.uuid!, { evm: { tps: 99 } });
  await accounts.revoke(made[4]!.uuid!);
  const before = accounts.list();
  await first.close();

  const { accounts: again } = await open(t, dir);
  assert.deepEqual(again.list(), before);
  assert.equal(again.lookup(made[3]!.uuid!)?.evm.tps, 99);
  assert.equal(again.lookup(made[4]!.uuid!), undefined);
  assert.equal(again.get(made[4]!.uuid!)?.revoked, true);
  const next = await again.create({}, plans);
  assert.equal(next.id, 21);
});

test('lookup is case-insensitive and refuses malformed text without throwing', async (t) => {
  const { accounts } = await open(t);
  const a = await accounts.create({}, plans);
  assert.equal(accounts.lookup(a.uuid), a);
  assert.equal(accounts.lookup(a.uuid.toUpperCase()), a);
  const mixed = [...a.uuid].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
  assert.equal(accounts.lookup(mixed), a);
  for (const bad of ['', a.uuid.slice(1), a.uuid.replaceAll('-', ''), ` ${a.uuid}`, `${a.uuid} `, a.uuid.replace(/[0-9a-f]/, 'z')]) {
    assert.equal(accounts.lookup(bad), undefined);
  }
  assert.equal(accounts.lookup(undefined as unknown as string), undefined);
  assert.equal(accounts.lookup(42 as unknown as string), undefined);
});

test('lookupBytes of 16 raw bytes (UDP packet order) finds exactly what lookup of the same UUID finds', async (t) => {
  const { accounts } = await open(t);
  const made = await Promise.all(Array.from({ length: 200 }, () => accounts.create({}, plans)));
  const packet = new Uint8Array(64);
  for (const a of made) {
    packet.set(uuidToBytes(a.uuid)!, 5);
    assert.equal(accounts.lookupBytes(packet, 5), accounts.lookup(a.uuid));
    assert.equal(accounts.lookupBytes(packet, 5), a);
  }
  // One bit off in any byte is another (unknown) UUID.
  for (let i = 0; i < 16; i++) {
    packet.set(uuidToBytes(made[0]!.uuid)!, 5);
    packet[5 + i]! ^= 1;
    assert.equal(accounts.lookupBytes(packet, 5), undefined);
  }
  assert.equal(accounts.lookupBytes(packet, 60), undefined);
  assert.equal(accounts.lookupBytes(new Uint8Array(15), 0), undefined);
});

test('onChange sees every create, update and revoke before the call resolves, and can unsubscribe', async (t) => {
  const { accounts } = await open(t);
  const seen: AccountRecord[] = [];
  const off = accounts.onChange((r) => seen.push(r));
  const a = await accounts.create({}, plans);
  assert.equal(seen.at(-1), a);
  const b = await accounts.update(a.uuid, { evm: { tps: 1 } });
  assert.equal(seen.at(-1), b);
  const c = await accounts.revoke(a.uuid);
  assert.equal(seen.at(-1), c);
  assert.equal(seen.length, 3);
  off();
  await accounts.create({}, plans);
  assert.equal(seen.length, 3);
});

test('the internal id is a small integer distinct from the UUID, unique per account', async (t) => {
  const { accounts } = await open(t);
  const made = await Promise.all(Array.from({ length: 50 }, () => accounts.create({}, plans)));
  const ids = made.map((a) => a.id).sort((x, y) => x - y);
  assert.deepEqual(ids, Array.from({ length: 50 }, (_, i) => i + 1));
});

test('a create at the live-account cap is refused with TXR_ACCOUNT_LIMIT and stores nothing; revoked accounts do not count', async (t) => {
  const dir = tempDir(t);
  const first = Store.open(dir);
  const accounts = AccountStore.open(first, { maxLive: 3 });
  const made: AccountRecord[] = [];
  for (let i = 0; i < 3; i++) made.push(await accounts.create({}, plans));
  const seen: AccountRecord[] = [];
  accounts.onChange((r) => seen.push(r));
  await assert.rejects(accounts.create({}, plans), (e: unknown) => {
    assert.ok(e instanceof AccountError);
    assert.equal(e.code, 'TXR_ACCOUNT_LIMIT');
    assert.match(e.message, /at most 3 live accounts/);
    return true;
  });
  assert.equal(seen.length, 0, 'nothing announced');
  assert.equal(accounts.list().length, 3);
  await accounts.revoke(made[0]!.uuid!);
  assert.equal(accounts.live, 2);
  const next = await accounts.create({}, plans);
  assert.equal(next.id, 4, 'the refused create used no id');
  await first.close();

  // On disk too: the refused create left no record behind.
  const { accounts: again } = await open(t, dir);
  assert.deepEqual(again.list().map((r) => r.id), [1, 2, 3, 4]);
  assert.equal(again.live, 3);
});

test('concurrent creates cannot pass the cap together: exactly the free places succeed', async (t) => {
  const dir = tempDir(t);
  const store = Store.open(dir);
  t.after(() => store.close());
  const accounts = AccountStore.open(store, { maxLive: 5 });
  await accounts.create({}, plans);
  const results = await Promise.allSettled(Array.from({ length: 12 }, () => accounts.create({}, plans)));
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 4);
  for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as AccountError).code, 'TXR_ACCOUNT_LIMIT');
  assert.equal(accounts.live, 5);
  assert.equal(accounts.size, 5);
});

test('a store holding more live accounts than the cap opens whole, and refuses creates until revocations bring it under', async (t) => {
  const dir = tempDir(t);
  const first = Store.open(dir);
  const accounts = AccountStore.open(first, { maxLive: 10 });
  const made: AccountRecord[] = [];
  for (let i = 0; i < 6; i++) made.push(await accounts.create({}, plans));
  await first.close();

  const { accounts: again } = await (async () => {
    const store = Store.open(dir);
    t.after(() => store.close());
    return { accounts: AccountStore.open(store, { maxLive: 4 }) };
  })();
  assert.equal(again.live, 6);
  for (const r of made) assert.equal(again.lookup(r.uuid!)?.id, r.id, 'every stored account still authenticates');
  await assert.rejects(again.create({}, plans), { code: 'TXR_ACCOUNT_LIMIT' });
  await again.revoke(made[0]!.uuid!);
  await again.revoke(made[1]!.uuid!);
  await assert.rejects(again.create({}, plans), { code: 'TXR_ACCOUNT_LIMIT' }, '4 live: still at the cap');
  await again.revoke(made[2]!.uuid!);
  assert.equal((await again.create({}, plans)).id, 7);
});
