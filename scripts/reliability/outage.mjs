#!/usr/bin/env node
/**
 * outage: what the relay does with acknowledged work when what it depends on
 * goes away for a while (docs/reliability.md).
 *
 * (a) upstream: a JSON-RPC upstream (scripts/reliability/upstream.mjs) that
 *     answers, then reads requests and never answers for `--hang-s`, then
 *     answers again. A client submits Solana singles (POST /v2) and EVM
 *     plain-text transactions at a steady `--rate` each throughout. Counted
 *     per phase: acknowledged, refused (by code), and, per acknowledged
 *     transaction, whether the upstream ever answered it; the relay's own
 *     view from /metrics (txrelay_lane_dropped_total, txrelay_upstream_items_total
 *     by outcome, breaker state over time).
 * (b) PostgreSQL: database.url points at a TCP proxy to 127.0.0.1:5432 that
 *     the script stops (connections reset, port closed) for `--pg-down-s` while
 *     family A batches stream in, then restarts; txrelay_batch_upload_backlog
 *     is sampled, and every acknowledged batch must reach txrelay_batch_records.
 *
 *   node scripts/reliability/outage.mjs [--part all|upstream|postgres] [--rate 20] [--hang-s 15] [--pg-down-s 15]
 */
import net from 'node:net';
import { Pool } from 'undici';
import { startRelay, emit, deadline, args, sleep, pgReachable, PG_URL, byLabel, sumMetric, diffCounts, seriesDiff, freePort, round } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { evmTransfers, solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'outage';
const TABLE = 'txrelay_batch_records';
/** Healthy time before the outage, and after it while still submitting. */
const BEFORE_S = 5;
const AFTER_S = 10;
/** How long a lane may take to settle once submissions stop: past the 2 s upstream time-out and a breaker probe. */
const SETTLE_MS = 15_000;
/** Metrics sampling period for the breaker and backlog timelines. */
const SAMPLE_MS = 250;
/** Family A batches during the PostgreSQL outage: per second, items each. */
const PG_BATCHES_PER_S = 10;
const PG_BATCH_ITEMS = 2;
/** After PostgreSQL is back, how long the uploader may take (its back-off tops out at 10 s). */
const PG_DRAIN_MS = 40_000;

const o = args({ part: 'all', rate: 20, hang_s: 15, pg_down_s: 15 });
deadline(NAME, 240_000 + (o.hang_s + o.pg_down_s) * 1000);

const relayEnv = { TXRELAY_UDP_ENABLED: 'false', TXRELAY_LIMITS_IP_RPS: '1000000', TXRELAY_LIMITS_IP_BURST: '2000000' };
const highLimits = { plan: 'paid', evm: { tps: 100_000, burst: 100_000 }, solana: { tps: 100_000, burst: 100_000 } };

/** Calls `fn(i)` `perS` times a second for `seconds`, without waiting for answers (open loop). */
async function steady(perS, seconds, fn) {
  const pending = [];
  const t0 = performance.now();
  const n = Math.round(perS * seconds);
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / perS;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(fn(i));
  }
  await Promise.all(pending);
}

// ---- (a) an upstream that hangs -----------------------------------------------------------

async function upstreamOutage() {
  const up = await startUpstream();
  const relay = await startRelay({ env: { ...relayEnv, TXRELAY_EVM_UPSTREAMS_PAID: up.url, TXRELAY_SOLANA_RPC_UPSTREAMS: up.url } });
  const { uuid } = await relay.createAccount(highLimits);
  const total = Math.ceil(o.rate * (BEFORE_S + o.hang_s + AFTER_S)) + 10;
  const sol = solanaTransfers(total);
  const evm = (await evmTransfers(total, { chainId: 1 })).map((t) => '0x' + t.toString('hex'));
  const pool = new Pool(relay.base, { connections: 16, pipelining: 1 });
  const m0 = await relay.metrics();

  let phase = 'before';
  const subs = []; // { family, key, phase, status, code }
  const submit = async (family, i) => {
    const at = phase;
    const req =
      family === 'solana'
        ? { path: '/v2', method: 'POST', headers: { 'api-key': uuid }, body: sol[i] }
        : { path: `/v2/svc_send_raw_transaction?auth=${uuid}`, method: 'POST', headers: { 'content-type': 'text/plain' }, body: evm[i] };
    try {
      const r = await pool.request(req);
      const text = await r.body.text();
      let code = null;
      if (r.statusCode >= 300) code = family === 'solana' ? text.slice(0, 40) : (JSON.parse(text).error?.code ?? null);
      subs.push({ family, key: family === 'solana' ? Buffer.from(sol[i]).toString('base64') : evm[i], phase: at, status: r.statusCode, code });
    } catch (e) {
      subs.push({ family, key: null, phase: at, status: 0, code: e.code ?? 'error' });
    }
  };

  // Breaker and lane timeline, relative to the start of the hang.
  const timeline = [];
  let hangAt = 0;
  let recoverAt = 0;
  const sampler = setInterval(async () => {
    try {
      const m = await relay.metrics();
      timeline.push({ t: Date.now(), open: sumMetric(m, 'txrelay_upstream_breaker_open'), depth: sumMetric(m, 'txrelay_lane_depth') });
    } catch {}
  }, SAMPLE_MS);

  let i = 0;
  const stream = steady(o.rate, BEFORE_S + o.hang_s + AFTER_S, async () => {
    const k = i++;
    await Promise.all([submit('solana', k), submit('evm', k)]);
  });
  await sleep(BEFORE_S * 1000);
  phase = 'hang';
  hangAt = Date.now();
  up.hang();
  await sleep(o.hang_s * 1000);
  phase = 'after';
  recoverAt = Date.now();
  up.recover();
  await stream;
  // Let the lanes settle: nothing waiting and nothing in flight.
  const until = Date.now() + SETTLE_MS;
  while (Date.now() < until) {
    const m = await relay.metrics();
    if (sumMetric(m, 'txrelay_lane_depth') === 0 && up.stats.held_requests === 0) break;
    await sleep(SAMPLE_MS);
  }
  await sleep(3000); // answers in flight when the lanes emptied
  clearInterval(sampler);
  const m1 = await relay.metrics();
  await pool.close();
  await relay.stop();
  await up.close();

  const phases = {};
  for (const p of ['before', 'hang', 'after']) {
    const s = subs.filter((x) => x.phase === p);
    const acked = s.filter((x) => x.status === 200 || x.status === 202);
    const refused = {};
    for (const x of s.filter((y) => !(y.status === 200 || y.status === 202))) {
      const k = `${x.status} ${x.code}`;
      refused[k] = (refused[k] ?? 0) + 1;
    }
    const delivered = acked.filter((x) => up.delivered.has(x.key)).length;
    phases[p] = { submitted: s.length, acknowledged: acked.length, delivered_to_upstream: delivered, acknowledged_not_delivered: acked.length - delivered, refused };
  }
  const acked = subs.filter((x) => x.status === 200 || x.status === 202);
  const lost = acked.filter((x) => !up.delivered.has(x.key)).length;
  const firstOpen = timeline.find((x) => x.t >= hangAt && x.open > 0);
  const closedAgain = timeline.find((x) => x.t >= recoverAt && x.open === 0);
  const firstRefusal = subs.find((x) => x.phase === 'hang' && x.status === 503);
  return {
    rate_per_family_per_s: o.rate,
    hang_s: o.hang_s,
    phases,
    acknowledged: acked.length,
    acknowledged_not_delivered: lost,
    acknowledged_not_delivered_share: acked.length ? round(lost / acked.length, 4) : null,
    breaker_opened_after_hang_start_ms: firstOpen ? firstOpen.t - hangAt : null,
    breaker_closed_after_recovery_ms: closedAgain ? closedAgain.t - recoverAt : null,
    first_refusal_in_hang: firstRefusal ? `${firstRefusal.status} ${firstRefusal.code}` : null,
    relay_metrics: {
      lane_dropped: diffCounts(byLabel(m1, 'txrelay_lane_dropped_total', 'lane'), byLabel(m0, 'txrelay_lane_dropped_total', 'lane')),
      lane_forwarded: diffCounts(byLabel(m1, 'txrelay_lane_forwarded_total', 'lane'), byLabel(m0, 'txrelay_lane_forwarded_total', 'lane')),
      upstream_items_by_outcome: diffCounts(byLabel(m1, 'txrelay_upstream_items_total', 'outcome'), byLabel(m0, 'txrelay_upstream_items_total', 'outcome')),
      rejected_by_code: diffCounts(byLabel(m1, 'txrelay_rejected_total', 'code'), byLabel(m0, 'txrelay_rejected_total', 'code')),
      // Every forwarding series that moved, whatever it is called in the relay being measured.
      all_forwarding_series: seriesDiff(m1, m0, /^txrelay_(lane|upstream|forward)/),
    },
    upstream_saw: up.stats,
  };
}

// ---- (b) PostgreSQL unreachable ---------------------------------------------------------------

/** A TCP proxy to PostgreSQL that can be stopped (port closed, connections reset) and started again on the same port. */
async function pgProxy(target) {
  const port = await freePort();
  const sockets = new Set();
  let server = null;
  const up = () =>
    new Promise((resolve) => {
      server = net.createServer((c) => {
        const u = net.connect(target.port, target.host);
        sockets.add(c).add(u);
        const drop = () => {
          c.destroy();
          u.destroy();
          sockets.delete(c);
          sockets.delete(u);
        };
        c.on('error', drop).on('close', drop);
        u.on('error', drop).on('close', drop);
        c.pipe(u).pipe(c);
      });
      server.listen(port, '127.0.0.1', resolve);
    });
  const down = () =>
    new Promise((resolve) => {
      for (const s of sockets) s.resetAndDestroy?.() ?? s.destroy();
      sockets.clear();
      server.close(() => resolve());
    });
  await up();
  return { port, up, down };
}

async function postgresOutage() {
  const target = new URL(PG_URL);
  const proxy = await pgProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = new URL(PG_URL);
  viaProxy.port = String(proxy.port);
  const relay = await startRelay({ env: { ...relayEnv, TXRELAY_DATABASE_URL: viaProxy.toString() } });
  const { uuid } = await relay.createAccount(highLimits);
  const n = Math.ceil(PG_BATCHES_PER_S * (BEFORE_S + o.pg_down_s + AFTER_S)) + 5;
  const evm = (await evmTransfers(n * PG_BATCH_ITEMS, { chainId: 1 })).map((t) => '0x' + t.toString('hex'));
  const pool = new Pool(relay.base, { connections: 8, pipelining: 1 });
  const acked = [];
  let refusedOrFailed = 0;
  const backlog = [];
  const sampler = setInterval(async () => {
    try {
      backlog.push({ t: Date.now(), v: await relay.metric('txrelay_batch_upload_backlog') });
    } catch {}
  }, SAMPLE_MS);

  let i = 0;
  const stream = steady(PG_BATCHES_PER_S, BEFORE_S + o.pg_down_s + AFTER_S, async () => {
    const params = evm.slice(i * PG_BATCH_ITEMS, ++i * PG_BATCH_ITEMS);
    try {
      const r = await pool.request({
        path: '/',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params }),
      });
      const j = await r.body.json();
      if (r.statusCode === 202) acked.push(j.result.batch_id);
      else refusedOrFailed++;
    } catch {
      refusedOrFailed++;
    }
  });
  await sleep(BEFORE_S * 1000);
  await proxy.down();
  const downAt = Date.now();
  await sleep(o.pg_down_s * 1000);
  await proxy.up();
  const upAt = Date.now();
  await stream;

  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  let found = 0;
  let drainedAt = null;
  try {
    const until = Date.now() + PG_DRAIN_MS;
    while (Date.now() < until) {
      found = (await c.query(`SELECT count(*)::int AS n FROM ${TABLE} WHERE batch_id = ANY($1)`, [acked]).catch(() => ({ rows: [{ n: 0 }] }))).rows[0].n;
      const b = await relay.metric('txrelay_batch_upload_backlog');
      if (found === acked.length && b === 0) {
        drainedAt = Date.now();
        break;
      }
      await sleep(SAMPLE_MS);
    }
  } finally {
    await c.query(`DELETE FROM ${TABLE} WHERE batch_id = ANY($1)`, [acked]).catch(() => {});
    await c.end();
  }
  clearInterval(sampler);
  await pool.close();
  await relay.stop();
  await proxy.down();

  const during = backlog.filter((x) => x.t >= downAt && x.t < upAt);
  return {
    batches_per_s: PG_BATCHES_PER_S,
    down_s: o.pg_down_s,
    batches_acknowledged: acked.length,
    batches_refused_or_failed: refusedOrFailed,
    backlog_at_outage_start: backlog.filter((x) => x.t < downAt).at(-1)?.v ?? null,
    backlog_max: Math.max(...backlog.map((x) => x.v)),
    backlog_at_recovery: during.at(-1)?.v ?? null,
    backlog_zero_after_recovery_ms: drainedAt ? drainedAt - upAt : null,
    drained_after_last_submission: drainedAt !== null,
    acknowledged_in_postgres: found,
    acknowledged_missing_in_postgres: acked.length - found,
  };
}

const result = { ok: true, checks: [] };
const lines = [];
if (o.part === 'all' || o.part === 'upstream') {
  const a = await upstreamOutage();
  result.upstream = a;
  result.checks.push({ what: 'every transaction acknowledged around an upstream hang reaches the upstream', got: `${a.acknowledged_not_delivered} of ${a.acknowledged} not delivered`, pass: a.acknowledged_not_delivered === 0 });
  lines.push(
    `outage (a): upstream hangs ${o.hang_s} s; ${o.rate}/s Solana /v2 + ${o.rate}/s EVM plain text throughout (${BEFORE_S} s before, ${AFTER_S} s after)`,
    ...Object.entries(a.phases).map(
      ([p, s]) => `  ${p.padEnd(6)}: submitted ${s.submitted}, acknowledged ${s.acknowledged}, delivered ${s.delivered_to_upstream}, acknowledged but not delivered ${s.acknowledged_not_delivered}, refused ${JSON.stringify(s.refused)}`,
    ),
    `  acknowledged but never delivered: ${a.acknowledged_not_delivered} of ${a.acknowledged} (${round(100 * (a.acknowledged_not_delivered_share ?? 0), 1)}%; without hold and retry: 47% of those acknowledged during the hang)`,
    `  breaker opened ${a.breaker_opened_after_hang_start_ms} ms into the hang, closed ${a.breaker_closed_after_recovery_ms} ms after recovery; first refusal: ${a.first_refusal_in_hang}`,
    `  relay metrics: dropped ${JSON.stringify(a.relay_metrics.lane_dropped)}, upstream items ${JSON.stringify(a.relay_metrics.upstream_items_by_outcome)}`,
  );
}
if (o.part === 'all' || o.part === 'postgres') {
  if (!(await pgReachable())) {
    result.postgres = `skipped: PostgreSQL not reachable at ${new URL(PG_URL).host}`;
    lines.push(`outage (b): ${result.postgres}`);
  } else {
    const b = await postgresOutage();
    result.postgres = b;
    result.ok &&= b.acknowledged_missing_in_postgres === 0 && b.drained_after_last_submission;
    result.checks.push({ what: 'every batch acknowledged during a PostgreSQL outage reaches txrelay_batch_records', got: `${b.acknowledged_missing_in_postgres} of ${b.batches_acknowledged} missing`, pass: b.acknowledged_missing_in_postgres === 0 });
    lines.push(
      `outage (b): PostgreSQL unreachable for ${o.pg_down_s} s while ${PG_BATCHES_PER_S} batches/s stream in`,
      `  acknowledged ${b.batches_acknowledged} (refused or failed ${b.batches_refused_or_failed}); backlog ${b.backlog_at_outage_start} before, max ${b.backlog_max}, ${b.backlog_at_recovery} at recovery, 0 after ${b.backlog_zero_after_recovery_ms} ms`,
      `  acknowledged batches in ${TABLE}: ${b.acknowledged_in_postgres} of ${b.batches_acknowledged} (missing ${b.acknowledged_missing_in_postgres})`,
    );
  }
}
emit(NAME, result, lines);
process.exit(result.ok ? 0 : 1);
