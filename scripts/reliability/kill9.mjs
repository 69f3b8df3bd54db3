#!/usr/bin/env node
/**
 * kill9: nothing acknowledged is lost across a crash
 * (docs/protocol.md#batch-records), not even by a kill -9 right after a batch
 * ack (a record left with `items: []`).
 *
 * `--rounds` times: start the relay on one data directory, stream family A
 * batches (3 signed transactions each, several connections) and Solana
 * singles (POST /v2) at it, SIGKILL it at a random moment, and restart it on
 * the same directory. After each restart every batch id that was answered
 * 202 must have its receive record (GET /admin/batches/ID) with one outcome
 * per item, equal to the statuses the 202 carried. With PostgreSQL at
 * TXRELAY_TEST_PG (default 127.0.0.1:5432/test) each acknowledged batch must
 * also reach txrelay_batch_records, with its items, after the restarts.
 *
 * Also reported, not counted as losses: acknowledged transactions that never
 * reached the upstream (the forwarding queue is in memory by design;
 * docs/reliability.md).
 *
 *   node scripts/reliability/kill9.mjs [--rounds 20] [--min-ms 200] [--max-ms 2000]
 */
import { Client } from 'undici';
import { join } from 'node:path';
import { startRelay, tempDir, emit, deadline, args, sleep, pgReachable, PG_URL, percentiles } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { evmTransfers, solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'kill9';
const TABLE = 'txrelay_batch_records';
/** Transactions per family A batch: enough that a half-written outcome would show. */
const BATCH_ITEMS = 3;
/** Concurrent senders: keeps several batches between record write and answer when the kill lands. */
const EVM_CONNECTIONS = 3;
const SOLANA_CONNECTIONS = 2;
/** Signed transactions prepared per round, more than a round at full speed consumes (~1,500 batches/s at most here). */
const EVM_PER_ROUND = 3 * 3000;
const SOLANA_PER_ROUND = 4000;
/** After the last restart, how long the uploader may take to bring every record to PostgreSQL. */
const PG_WAIT_MS = 30_000;

const o = args({ rounds: 20, min_ms: 200, max_ms: 2000 });
deadline(NAME, 60_000 + o.rounds * 15_000);

const withPg = await pgReachable();
const upstream = await startUpstream();
const dataDir = join(tempDir(), 'data');
const env = {
  TXRELAY_UDP_ENABLED: 'false',
  TXRELAY_LIMITS_IP_RPS: '1000000',
  TXRELAY_LIMITS_IP_BURST: '2000000',
  TXRELAY_EVM_UPSTREAMS_PAID: upstream.url,
  TXRELAY_SOLANA_RPC_UPSTREAMS: upstream.url,
  ...(withPg ? { TXRELAY_DATABASE_URL: PG_URL } : {}),
};

const acked = []; // { id, hashes, statuses, round }
const ackedSingles = []; // base64 of each Solana transaction answered 200
const ackedEvmQueued = []; // hex of each batch item answered queued
let uuid = null;
const rounds = [];
let missing = 0;
let incomplete = 0;
let mismatched = 0;
let checked = 0;

/** Checks every batch acknowledged in `round` against the store of a running relay. */
async function verify(relay, round) {
  for (const a of acked.filter((x) => x.round === round)) {
    checked++;
    const r = await relay.adminCall('GET', `/admin/batches/${a.id}`);
    if (r.status !== 200) {
      missing++;
      continue;
    }
    const items = r.json.items ?? [];
    if (items.length !== BATCH_ITEMS) {
      incomplete++;
      continue;
    }
    if (items.some((it, i) => it.status !== a.statuses[i]) || r.json.tx_hashes.some((h, i) => h !== a.hashes[i])) mismatched++;
  }
}

for (let round = 0; round <= o.rounds; round++) {
  const relay = await startRelay({ env, dataDir, label: `relay (round ${round})` });
  if (round > 0) await verify(relay, round - 1);
  if (round === o.rounds) {
    // The last start only checks the last kill; it then stays up for the PostgreSQL check below.
    rounds.final = relay;
    break;
  }
  if (uuid === null) {
    uuid = (await relay.createAccount({ plan: 'paid', evm: { tps: 1_000_000, burst: 1_000_000 }, solana: { tps: 1_000_000, burst: 1_000_000 } })).uuid;
  }
  const evm = (await evmTransfers(EVM_PER_ROUND, { chainId: 1 })).map((t) => '0x' + t.toString('hex'));
  const sol = solanaTransfers(SOLANA_PER_ROUND);
  let e = 0;
  let s = 0;
  let running = true;
  const before = acked.length;
  const singlesBefore = ackedSingles.length;

  const evmLoop = async () => {
    const c = new Client(relay.base, { pipelining: 1 });
    while (running && e + BATCH_ITEMS <= evm.length) {
      const params = evm.slice(e, (e += BATCH_ITEMS));
      try {
        const r = await c.request({
          path: '/',
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params }),
        });
        const j = await r.body.json();
        if (r.statusCode === 202) {
          const txs = j.result.transactions;
          acked.push({ id: j.result.batch_id, hashes: txs.map((t) => t.tx_hash), statuses: txs.map((t) => t.status), round });
          txs.forEach((t, i) => t.status === 'queued' && ackedEvmQueued.push(params[i]));
        }
      } catch {
        break; // killed under us: this request was never acknowledged
      }
    }
    c.destroy().catch(() => {});
  };
  const solLoop = async () => {
    const c = new Client(relay.base, { pipelining: 1 });
    while (running && s < sol.length) {
      const tx = sol[s++];
      try {
        const r = await c.request({ path: '/v2', method: 'POST', headers: { 'api-key': uuid }, body: tx });
        await r.body.arrayBuffer();
        if (r.statusCode === 200) ackedSingles.push(Buffer.from(tx).toString('base64'));
      } catch {
        break;
      }
    }
    c.destroy().catch(() => {});
  };

  const loops = [...Array.from({ length: EVM_CONNECTIONS }, evmLoop), ...Array.from({ length: SOLANA_CONNECTIONS }, solLoop)];
  const killAfter = o.min_ms + Math.floor(Math.random() * (o.max_ms - o.min_ms));
  await sleep(killAfter);
  await relay.kill('SIGKILL');
  running = false;
  await Promise.all(loops);
  rounds.push({ round, kill_after_ms: killAfter, batches_acked: acked.length - before, singles_acked: ackedSingles.length - singlesBefore });
}

// PostgreSQL: every acknowledged batch, with its items, once the last relay has uploaded its backlog.
const finalRelay = rounds.final;
let pgMissing = null;
let pgIncomplete = null;
if (withPg) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  const ids = acked.map((a) => a.id);
  try {
    const until = Date.now() + PG_WAIT_MS;
    let rows = [];
    while (Date.now() < until) {
      rows = (await c.query(`SELECT batch_id, jsonb_array_length(items) AS n FROM ${TABLE} WHERE batch_id = ANY($1)`, [ids]).catch(() => ({ rows: [] }))).rows;
      if (rows.length === ids.length && rows.every((r) => r.n === BATCH_ITEMS)) break;
      await sleep(250);
    }
    pgMissing = ids.length - rows.length;
    pgIncomplete = rows.filter((r) => r.n !== BATCH_ITEMS).length;
  } finally {
    await c.query(`DELETE FROM ${TABLE} WHERE batch_id = ANY($1)`, [ids]).catch(() => {});
    await c.end();
  }
}
await finalRelay.stop();
await upstream.close();

const notForwardedSingles = ackedSingles.filter((b) => !upstream.delivered.has(b)).length;
const notForwardedEvm = ackedEvmQueued.filter((h) => !upstream.delivered.has(h)).length;
const losses = missing + incomplete + mismatched + (pgMissing ?? 0) + (pgIncomplete ?? 0);
const ok = losses === 0 && checked === acked.length && acked.length > 0;
emit(
  NAME,
  {
    ok,
    rounds: o.rounds,
    kill_after_ms: percentiles(rounds.map((r) => r.kill_after_ms), [50]),
    batches_acked: acked.length,
    batch_records_checked: checked,
    records_missing: missing,
    records_without_all_items: incomplete,
    records_differing_from_answer: mismatched,
    postgres: withPg ? { host: new URL(PG_URL).host, missing: pgMissing, without_all_items: pgIncomplete } : 'not reachable: embedded store only',
    losses,
    in_memory_queue: {
      solana_singles_acked: ackedSingles.length,
      solana_singles_never_forwarded: notForwardedSingles,
      evm_batch_items_queued: ackedEvmQueued.length,
      evm_batch_items_never_forwarded: notForwardedEvm,
    },
    per_round: rounds,
  },
  [
    `kill9: ${o.rounds} rounds of SIGKILL ${o.min_ms}-${o.max_ms} ms into a stream of ${BATCH_ITEMS}-item family A batches and Solana singles, restart on the same data dir`,
    `  acknowledged batches checked after restart: ${checked} of ${acked.length}; missing ${missing}, without all items ${incomplete}, differing from the 202 ${mismatched}`,
    withPg ? `  PostgreSQL ${TABLE}: missing ${pgMissing}, without all items ${pgIncomplete}` : `  PostgreSQL not reachable at ${PG_URL}: embedded store only`,
    `  losses: ${losses}`,
    `  (by design: the forwarding queue is in memory) acknowledged but never forwarded: Solana singles ${notForwardedSingles} of ${ackedSingles.length}, EVM batch items ${notForwardedEvm} of ${ackedEvmQueued.length}`,
  ],
);
process.exit(ok ? 0 : 1);
