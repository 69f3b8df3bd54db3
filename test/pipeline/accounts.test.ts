/**
 * Live accounts and their token buckets (src/pipeline/accounts.ts): seats
 * freed by revocation and reused, a table that grows to the store's cap, takes
 * that never throw and always report a finite wait, and the family A
 * batch-record budget. Real lmdb store, injected clock.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Store } from '../../src/store/db.js';
import { AccountStore, type AccountRecord, type Plans } from '../../src/store/accounts.js';
import { AccountRegistry, RETRY_NEVER_MS, SLOTS_PER_SEAT } from '../../src/pipeline/accounts.js';
import { TokenBucketTable } from '../../src/tables/token-bucket.js';

const plans: Plans = {
  free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 },
  paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 },
};
const T0 = 1_700_000_000_000;

function setup(t: TestContext, maxLive?: number, dir?: string) {
  if (!dir) {
    const root = mkdtempSync(join(tmpdir(), 'txrelay-registry-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    dir = join(root, 'data');
  }
  const store = Store.open(dir);
  t.after(() => store.close());
  const accounts = AccountStore.open(store, { maxLive });
  const clock = { now: T0 };
  return { dir, store, accounts, clock, tick: () => clock.now };
}

/** Takes until refused; returns how many were taken (bounded, so a bug cannot hang the test). */
function drain(take: () => number, max = 10_000): number {
  let n = 0;
  while (n < max && take() === 0) n++;
  return n;
}

test('revocation frees the seat; the next account reuses it and starts with full buckets', async (t) => {
  const { accounts, tick } = setup(t, 2);
  const reg = AccountRegistry.create(accounts, tick);
  const a = await accounts.create({ evm: { tps: 1, burst: 3 } }, plans);
  const b = await accounts.create({}, plans);
  assert.equal(reg.seated, 2);
  const aEvm = reg.slotOf(a, 'evm');
  assert.equal(drain(() => reg.take(a, 'evm', 1)), 3, 'a drains its family A bucket');
  await accounts.revoke(a.uuid);
  assert.equal(reg.seated, 1);
  const c = await accounts.create({ evm: { tps: 1, burst: 4 } }, plans);
  assert.equal(reg.slotOf(c, 'evm'), aEvm, 'the freed seat is reused');
  assert.notEqual(reg.slotOf(c, 'evm'), reg.slotOf(b, 'evm'));
  assert.equal(c.id, 3, 'ids are never reused');
  // A request that authenticated as `a` before the revocation must not spend c's credits.
  assert.equal(reg.take(a, 'evm', 1), RETRY_NEVER_MS);
  assert.equal(reg.takeRecordCredit(a), RETRY_NEVER_MS);
  assert.equal(drain(() => reg.take(c, 'evm', 1)), 4, "c's bucket starts full, untouched by a's");
  assert.equal(drain(() => reg.takeRecordCredit(c)), 4, "c's record budget starts full too");
});

test('seats of different accounts and families never overlap: each bucket is spent independently', async (t) => {
  const { accounts, tick } = setup(t, 8);
  const reg = AccountRegistry.create(accounts, tick);
  const made: AccountRecord[] = [];
  for (let i = 0; i < 8; i++) made.push(await accounts.create({ evm: { tps: 0, burst: 2 + i }, solana: { tps: 0, burst: 20 + i } }, plans));
  const slots = new Set(made.flatMap((r) => (['evm', 'solana', 'records', 'refusals'] as const).map((k) => reg.slotOf(r, k))));
  assert.equal(slots.size, 8 * SLOTS_PER_SEAT);
  made.forEach((r, i) => {
    assert.equal(drain(() => reg.take(r, 'evm', 1)), 2 + i);
    assert.equal(drain(() => reg.take(r, 'solana', 1)), 20 + i);
    assert.equal(drain(() => reg.takeRecordCredit(r)), 2 + i);
    // Refusals: the larger family's burst, untouched by accepted work.
    let refused = 0;
    while (reg.refusalWait(r) === 0 && refused < 1000) {
      reg.takeRefusal(r);
      refused++;
    }
    assert.equal(refused, 20 + i);
    assert.equal(reg.refusalWait(r), RETRY_NEVER_MS);
  });
});

test('the table grows with the live accounts up to the cap, and is sized to seat whatever the store holds at start', async (t) => {
  const env = setup(t, 40);
  const reg = AccountRegistry.create(env.accounts, env.tick, { initialSeats: 2 });
  assert.equal(reg.buckets.slots, 2 * SLOTS_PER_SEAT);
  assert.equal(reg.buckets.maxSlots, 41 * SLOTS_PER_SEAT, 'cap + seat 0');
  const made: AccountRecord[] = [];
  for (let i = 0; i < 40; i++) made.push(await env.accounts.create({ solana: { tps: 0, burst: 1 + i } }, plans));
  assert.equal(reg.buckets.slots, 41 * SLOTS_PER_SEAT);
  made.forEach((r, i) => assert.equal(drain(() => reg.take(r, 'solana', 1)), 1 + i));
  await assert.rejects(env.accounts.create({}, plans), { code: 'TXR_ACCOUNT_LIMIT' });
  await env.store.close();

  // The same store reopened under a lower cap: every live account still gets a seat.
  const again = setup(t, 10, env.dir);
  assert.equal(again.accounts.live, 40);
  const reg2 = AccountRegistry.create(again.accounts, again.tick);
  assert.equal(reg2.seated, 40);
  for (const r of made) assert.equal(reg2.take(again.accounts.get(r.uuid!)!, 'evm', 1), 0);
});

test('a table too small for the store is refused at construction, naming both numbers', async (t) => {
  const { accounts, tick } = setup(t, 5);
  const small = TokenBucketTable.create({ slots: 5 * SLOTS_PER_SEAT, nowMs: T0 });
  assert.throws(() => new AccountRegistry(accounts, small, tick), /seats 4 accounts but the store may hold 5/);
  const fits = TokenBucketTable.create({ slots: 6 * SLOTS_PER_SEAT, nowMs: T0 });
  assert.doesNotThrow(() => new AccountRegistry(accounts, fits, tick));
});

test('a refused take always reports a finite wait, and nothing throws: TPS 0, more than the burst, a record without a seat', async (t) => {
  const { accounts, tick } = setup(t, 4);
  const reg = AccountRegistry.create(accounts, tick);
  const zero = await accounts.create({ evm: { tps: 0, burst: 1 } }, plans);
  assert.equal(reg.take(zero, 'evm', 1), 0);
  assert.equal(reg.take(zero, 'evm', 1), RETRY_NEVER_MS, 'TPS 0: the bucket never refills');
  assert.equal(reg.takeRecordCredit(zero), 0);
  assert.equal(reg.takeRecordCredit(zero), RETRY_NEVER_MS);
  const one = await accounts.create({ solana: { tps: 2, burst: 2 } }, plans);
  assert.equal(reg.take(one, 'solana', 3), RETRY_NEVER_MS, 'more credits than the burst can never fit');
  // Records this registry never seated: one from another store, one with an id past anything seen.
  const stranger = { ...one, id: 2 ** 19 + 5 } as AccountRecord;
  for (const rec of [stranger, { ...one, id: 10 ** 9 } as AccountRecord]) {
    assert.equal(reg.take(rec, 'evm', 1), RETRY_NEVER_MS);
    assert.equal(reg.take(rec, 'solana', 1), RETRY_NEVER_MS);
    assert.equal(reg.takeRecordCredit(rec), RETRY_NEVER_MS);
    // A record without a seat maps to seat 0's never-configured slot, never past the table.
    assert.ok(reg.slotOf(rec, 'evm') < reg.buckets.slots);
    assert.equal(reg.buckets.tryTake(reg.slotOf(rec, 'evm'), 1, T0), Infinity);
  }
});

test('the record budget admits at most burst + TPS * t, exactly like a family A bucket with the same limits', async () => {
  // One store for all runs (each create is an fsync): a fresh account per run.
  const root = mkdtempSync(join(tmpdir(), 'txrelay-registry-'));
  const store = Store.open(join(root, 'data'));
  try {
    const accounts = AccountStore.open(store, { maxLive: 10_000 });
    let now = T0;
    const reg = AccountRegistry.create(accounts, () => now);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.double({ min: 0, max: 100, noNaN: true }), { maxLength: 200 }),
        async (tps, burst, gaps) => {
          now = T0;
          const rec = await accounts.create({ evm: { tps, burst } }, plans);
          const model = TokenBucketTable.create({ slots: 1, nowMs: T0 });
          model.configure(0, tps, burst, T0);
          const admitted: number[] = [];
          const refusedBefore = reg.refusedRecords;
          let refused = 0;
          for (const gap of gaps) {
            now += gap;
            const ok = reg.takeRecordCredit(rec) === 0;
            assert.equal(ok, model.tryTake(0, 1, now) === 0);
            if (ok) admitted.push(now);
            else refused++;
          }
          assert.equal(reg.refusedRecords - refusedBefore, refused, 'every refusal is counted');
          for (let i = 0; i < admitted.length; i++) {
            for (let j = i; j < admitted.length; j++) {
              assert.ok(j - i + 1 <= burst + (tps * (admitted[j]! - admitted[i]!)) / 1000 + 1e-9);
            }
          }
          await accounts.revoke(rec.uuid);
        },
      ),
      { numRuns: 60 },
    );
  } finally {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a PATCH of family A TPS or burst reconfigures the record budget live; a family B PATCH leaves it alone', async (t) => {
  const { accounts, clock, tick } = setup(t, 4);
  const reg = AccountRegistry.create(accounts, tick);
  const a = await accounts.create({ evm: { tps: 10, burst: 10 } }, plans);
  assert.equal(drain(() => reg.takeRecordCredit(a)), 10);
  await accounts.update(a.uuid, { evm: { tps: 1000, burst: 3 } });
  clock.now += 1000;
  assert.equal(drain(() => reg.takeRecordCredit(accounts.get(a.uuid)!)), 3, 'refilled to the new burst, not the old one');
  clock.now += 2; // 1000 TPS: one credit per ms
  assert.equal(drain(() => reg.takeRecordCredit(a)), 2, 'refills at the new rate (a stale record object still finds its seat)');
  await accounts.update(a.uuid, { solana: { tps: 500, burst: 500 } });
  clock.now += 1;
  assert.equal(drain(() => reg.takeRecordCredit(a)), 1);
  await accounts.update(a.uuid, { evm: { tps: 0 } });
  clock.now += 60_000;
  assert.equal(drain(() => reg.takeRecordCredit(a)), 0, 'TPS 0 stops the refill');
  assert.equal(reg.takeRecordCredit(a), RETRY_NEVER_MS);
});
