#!/usr/bin/env node
/**
 * accounts-cap: a store past 2^19 accounts must start. Once 524,288 (2^19)
 * accounts had ever been registered, an older relay never started again (its bucket table had
 * 2^19 seats, indexed by account id).
 *
 * Registering half a million accounts through the admin API would take many
 * minutes, so the store is filled the way the relay itself writes it: the
 * records go straight into a fresh lmdb data directory through the relay's
 * own Store (dist/src/store), `--accounts` of them (default 2^19 + 5,712, so
 * that ids run past the old table). Then, from the outside:
 *   1. `txrelay serve` starts on that directory (time to "listening", RSS),
 *      and again after a SIGTERM (a restart, warm page cache);
 *   2. the account with the highest id is served on an EVM and a Solana door;
 *   3. new accounts register through the admin API (201, the next id) and
 *      are served at once; registrations per second for `--register-s`.
 * The live-account cap itself (2^20, docs/protocol.md#limits) has no configuration
 * key, so reaching it is not re-run here: test/store/accounts.test.ts and
 * test/e2e/accounts.test.ts pin it with a small cap (docs/reliability.md).
 *
 *   node scripts/reliability/accounts-cap.mjs [--accounts 530000] [--register-s 5]
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { startRelay, tempDir, emit, deadline, args, round } from './lib.mjs';
import { Store } from '../../dist/src/store/db.js';
import { evmTransfers, solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'accounts-cap';
/** The old bucket table's size: account ids at or past it crashed start-up. */
const OLD_TABLE = 2 ** 19;
/**
 * Records per lmdb commit while filling. The admin API commits one account at
 * a time; a few thousand per commit stays close to the page layout that
 * leaves (50,000 per commit left a larger file whose later commits were ~10x
 * slower), at a fill time of seconds.
 */
const CHUNK = 1000;
/** Loading half a million accounts takes seconds, not the idle start-up's fraction of one. */
const START_TIMEOUT_MS = 300_000;
/** Concurrent admin API registrations: the store serialises per account, not globally. */
const REGISTER_CONNECTIONS = 8;

const o = args({ accounts: OLD_TABLE + 5_712, register_s: 5 });
deadline(NAME, 600_000);

const dataDir = join(tempDir(), 'data');
const fillT0 = performance.now();
const store = Store.open(dataDir);
let last = null;
for (let id = 1; id <= o.accounts; ) {
  const end = Math.min(o.accounts, id + CHUNK - 1);
  const recs = [];
  for (; id <= end; id++) {
    recs.push({
      uuid: randomUUID(),
      id,
      plan: 'free',
      evm: { enabled: true, tps: 100, burst: 100 },
      solana: { enabled: true, tps: 100, burst: 100, min_tip_lamports: 1000 },
      revoked: false,
      created_at: new Date().toISOString(),
    });
  }
  await store.write(() => {
    for (const r of recs) void store.accounts.put(r.uuid, r);
  });
  last = recs.at(-1);
}
await store.close();
const fillS = (performance.now() - fillT0) / 1000;

const env = { TXRELAY_UDP_ENABLED: 'false' };
const first = await startRelay({ env, dataDir, startTimeoutMs: START_TIMEOUT_MS });
const rssFirst = first.rssMb();
await first.stop();
const relay = await startRelay({ env, dataDir, startTimeoutMs: START_TIMEOUT_MS });
const rss = relay.rssMb();

const [evmTx, evmTx2] = await evmTransfers(2, { chainId: 1 });
const [solTx, solTx2] = solanaTransfers(2);
const evmSend = async (uuid, tx) => {
  const r = await fetch(relay.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: ['0x' + tx.toString('hex')] }),
  });
  await r.arrayBuffer();
  return r.status;
};
const solSend = async (uuid, tx) => {
  const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': uuid }, body: tx });
  await r.arrayBuffer();
  return r.status;
};
const highest = { id: last.id, evm: await evmSend(last.uuid, evmTx), solana: await solSend(last.uuid, solTx) };
const created = await relay.adminCall('POST', '/admin/accounts', { plan: 'free' });
const fresh = { status: created.status, id: created.json?.id, evm: await evmSend(created.json.uuid, evmTx2), solana: await solSend(created.json.uuid, solTx2) };

/** Registrations through the admin API for --register-s, REGISTER_CONNECTIONS at a time. */
async function register(r) {
  const pool = new Pool(r.admin, { connections: REGISTER_CONNECTIONS });
  let created = 0;
  const statuses = {};
  const stopAt = performance.now() + o.register_s * 1000;
  const rssBefore = r.rssMb();
  await Promise.all(
    Array.from({ length: REGISTER_CONNECTIONS }, async () => {
      while (performance.now() < stopAt) {
        const res = await pool.request({ path: '/admin/accounts', method: 'POST', headers: { authorization: `Bearer ${r.token}`, 'content-type': 'application/json' }, body: '{}' });
        await res.body.arrayBuffer();
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode === 201) created++;
      }
    }),
  );
  await pool.close();
  return { seconds: o.register_s, created, per_s: round(created / o.register_s), statuses, rss_mb_before: rssBefore, rss_mb_after: r.rssMb() };
}

const registrations = await register(relay);
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();
// The same on an empty store, side by side: what the half million accounts cost a registration.
const empty = await startRelay({ env });
const registrationsEmpty = await register(empty);
await empty.stop();

const ok = aliveAfter && highest.evm === 202 && highest.solana === 200 && fresh.status === 201 && fresh.id === o.accounts + 1 && fresh.evm === 202 && fresh.solana === 200;
emit(
  NAME,
  {
    ok,
    finding: 'relay never started again once 524,288 accounts had been registered',
    accounts_stored: o.accounts,
    highest_id: last.id,
    past_old_table_by: last.id - OLD_TABLE + 1,
    store_fill_s: round(fillS),
    start_ms_first: Math.round(first.startMs),
    start_ms_restart: Math.round(relay.startMs),
    rss_mb_after_start: { first: rssFirst, restart: rss },
    highest_id_account_served: highest,
    new_account: fresh,
    registrations: registrations,
    registrations_on_empty_store: registrationsEmpty,
    cap: 'no configuration key: pinned by test/store/accounts.test.ts and test/e2e/accounts.test.ts with a small cap',
  },
  [
    `accounts-cap: ${o.accounts} accounts in the store (ids 1..${last.id}, ${last.id - OLD_TABLE + 1} past the old 2^19 table), written in ${round(fillS)} s`,
    `  relay started in ${Math.round(first.startMs)} ms (restart ${Math.round(relay.startMs)} ms), RSS ${rssFirst} / ${rss} MB`,
    `  account id ${last.id}: EVM JSON-RPC ${highest.evm}, Solana /v2 ${highest.solana}`,
    `  new account: ${fresh.status}, id ${fresh.id}; EVM ${fresh.evm}, Solana ${fresh.solana}`,
    `  admin API registrations: ${registrations.created} in ${o.register_s} s (${registrations.per_s}/s) ${JSON.stringify(registrations.statuses)}; on an empty store ${registrationsEmpty.per_s}/s`,
  ],
);
process.exit(ok ? 0 : 1);
