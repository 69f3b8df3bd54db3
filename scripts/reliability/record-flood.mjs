#!/usr/bin/env node
/**
 * record-flood: how fast one account can grow the store with batch receive
 * records, measured. With no budget before the rate check, a free account
 * wrote 700 records/s (58 MB in 10 s).
 *
 * A free account (plan defaults: family A 5 TPS, burst 5) floods
 * `svc_sendRawTransactionBatch` with the largest batch (evm.max_batch valid
 * signed transactions) on several connections for `--seconds`. Counted:
 * answers by status, answers that carry a batch id (a record was written),
 * txrelay_batch_records_refused_total, and the growth of data.mdb.
 *
 *   node scripts/reliability/record-flood.mjs [--seconds 10] [--connections 4]
 */
import { Worker } from 'node:worker_threads';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { startRelay, emit, deadline, args, round } from './lib.mjs';
import { evmTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'record-flood';
/** Default of evm.max_batch: the largest record one request can make. */
const MAX_BATCH = 64;
/** plans.free.evm_tps default; the record budget follows the account's family A TPS and burst. */
const FREE_TPS = 5;

const o = args({ seconds: 10, connections: 4 });
deadline(NAME, 60_000 + o.seconds * 1000);

// The per-IP limit is lifted so that every refusal measured is the record budget's, not the IP bucket's.
const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false', TXRELAY_LIMITS_IP_RPS: '1000000', TXRELAY_LIMITS_IP_BURST: '2000000' } });
const acct = await relay.createAccount({ plan: 'free' });
const txs = await evmTransfers(MAX_BATCH, { chainId: 1 });
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: txs.map((t) => '0x' + t.toString('hex')) });
const dataMdb = join(relay.dataDir, 'data.mdb');
const size = () => statSync(dataMdb).size;

const size0 = size();
const refused0 = await relay.metric('txrelay_batch_records_refused_total');
const flood = await new Promise((resolve, reject) => {
  const w = new Worker(new URL('./flood-worker.mjs', import.meta.url), {
    workerData: {
      origin: relay.base,
      path: '/',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` },
      body,
      connections: o.connections,
      durationMs: o.seconds * 1000,
    },
  });
  w.once('message', resolve);
  w.once('error', reject);
});
const refused = (await relay.metric('txrelay_batch_records_refused_total')) - refused0;
const grown = size() - size0;
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();

const recordsPerS = round(flood.batch_ids / o.seconds);
/** burst + TPS * t: the most the account's record budget can admit in the window. */
const bound = FREE_TPS + FREE_TPS * o.seconds;
const ok = aliveAfter && flood.batch_ids <= bound + FREE_TPS; // one extra second of refill for the ramp at either end
emit(
  NAME,
  {
    ok,
    finding: { records_per_s: 700, bytes_in_10_s: 58e6 },
    seconds: o.seconds,
    connections: o.connections,
    batch_items: MAX_BATCH,
    body_bytes: body.length,
    requests: flood.requests,
    requests_per_s: round(flood.requests / o.seconds),
    statuses: flood.statuses,
    records_written: flood.batch_ids,
    records_per_s: recordsPerS,
    record_budget_bound: bound,
    records_refused_metric: refused,
    data_mdb_growth_bytes: grown,
    relay_alive_after: aliveAfter,
  },
  [
    `record-flood: a free account (${FREE_TPS} TPS) sends ${MAX_BATCH}-item batches on ${o.connections} connections for ${o.seconds} s`,
    `  ${flood.requests} requests (${round(flood.requests / o.seconds)}/s): ${JSON.stringify(flood.statuses)}`,
    `  records written: ${flood.batch_ids} (${recordsPerS}/s; budget bound burst + TPS*t = ${bound}); refused before writing: ${refused}`,
    `  data.mdb grew by ${grown} bytes (finding: 700 records/s, 58 MB in 10 s)`,
  ],
);
process.exit(ok ? 0 : 1);
