#!/usr/bin/env node
/**
 * subscriptions: one account's WebSockets, each holding many status
 * subscriptions, multiply every status change of that account. Found: 1,000
 * sockets x 16 subscriptions of one free account drew 640,000 notifications
 * in 10 s (32,000 per transaction) and moved another tenant's /v2 p99 from
 * 4.1 to 87 ms.
 *
 * Measured here, side by side in one run, on two relays: one with the
 * per-account cap out of the way (`ws.max_account_subscriptions` at its
 * maximum, so only the per-socket `ws.max_subscriptions` 16 applies: the
 * relay as it was), and one with the default cap. On each:
 *   1. a victim (another account, its own Solana TPS high) sends `POST /v2`
 *      every `--every-ms` on one keep-alive connection for `--seconds`:
 *      the quiet p50/p99;
 *   2. the attacker (a free account) opens `--sockets` WebSockets and sends
 *      `--per-socket` subscriptions on each (a worker thread holds them and
 *      counts every notification); the victim holds one subscription too;
 *   3. for `--seconds`, the attacker sends Solana transactions at its
 *      account's rate (free: 2 per second) while the victim goes on: the
 *      victim's p50/p99 under attack, the attacker's notifications per
 *      transaction, the victim's pushes per transaction.
 * Subscribing is a status read (`status.reads_per_s`, 20/s by default): the
 * relays here allow 100,000/s so that the 16,000 subscriptions are made in
 * seconds rather than the ~13 minutes an attacker would spend once; the
 * per-address caps are lifted as every socket comes from 127.0.0.1.
 *
 *   node scripts/reliability/subscriptions.mjs [--sockets 1000] [--per-socket 16] [--seconds 10] [--every-ms 10]
 */
import { Worker } from 'node:worker_threads';
import { Client } from 'undici';
import { startRelay, emit, deadline, args, percentiles, round, sleep } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'subscriptions';
/** ws.max_account_subscriptions's maximum: no per-account bound below the per-socket one. */
const UNCAPPED = 1_048_576;

const o = args({ sockets: 1000, per_socket: 16, seconds: 10, every_ms: 10 });
deadline(NAME, 240_000 + o.seconds * 8000);

const up = await startUpstream();

/** Victim /v2 requests paced every `every_ms` until `stop()`; latencies in ms, statuses counted. */
function victimLoop(relay, key, txs) {
  const c = new Client(relay.base, { pipelining: 1 });
  const lat = [];
  const statuses = {};
  let running = true;
  const done = (async () => {
    let next = performance.now();
    while (running) {
      const tx = txs.pop();
      const t0 = performance.now();
      const r = await c.request({ path: '/v2', method: 'POST', headers: { 'api-key': key, 'content-type': 'application/octet-stream' }, body: tx });
      await r.body.arrayBuffer();
      lat.push(performance.now() - t0);
      statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
      next += o.every_ms;
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
      else next = performance.now();
    }
    await c.close();
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { latency_ms: percentiles(lat), statuses };
    },
  };
}

async function phase(label, env) {
  const relay = await startRelay({
    label,
    env: {
      TXRELAY_UDP_ENABLED: 'false',
      TXRELAY_SOLANA_RPC_UPSTREAMS: up.url,
      TXRELAY_LIMITS_IP_RPS: '1000000',
      TXRELAY_LIMITS_IP_BURST: '2000000',
      TXRELAY_HTTP_MAX_CONNECTIONS_PER_IP: '0',
      TXRELAY_STATUS_READS_PER_S: '100000',
      TXRELAY_STATUS_READS_BURST: '200000',
      ...env,
    },
  });
  try {
    const attacker = await relay.createAccount({ plan: 'free' });
    const victim = await relay.createAccount({ plan: 'paid', solana: { tps: 100_000, burst: 100_000 } });
    const perWindow = Math.ceil((o.seconds * 1000) / o.every_ms) + 100;
    const victimTxs = solanaTransfers(2 * perWindow);

    const quietLoop = victimLoop(relay, victim.uuid, victimTxs);
    await sleep(o.seconds * 1000);
    const quiet = await quietLoop.stop();

    const worker = new Worker(new URL('./subscribe-worker.mjs', import.meta.url), {
      workerData: { url: relay.base.replace('http', 'ws') + '/ws', attackerKey: attacker.uuid, victimKey: victim.uuid, sockets: o.sockets, perSocket: o.per_socket },
    });
    const next = () => new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const setupT0 = performance.now();
    const { ready } = await next();
    const setupS = round((performance.now() - setupT0) / 1000);
    worker.postMessage('take');
    await next();

    // The attacker sends at its account's rate (free plan: Solana 2 per second).
    const attackerTxs = solanaTransfers(o.seconds * 4);
    const sent = {};
    const attackLoop = victimLoop(relay, victim.uuid, victimTxs);
    const cpu0 = relay.cpuSeconds();
    const t0 = performance.now();
    for (let i = 0; performance.now() - t0 < o.seconds * 1000; i++) {
      const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': attacker.uuid, 'content-type': 'application/octet-stream' }, body: attackerTxs[i] });
      await r.arrayBuffer();
      sent[r.status] = (sent[r.status] ?? 0) + 1;
      await sleep(500);
    }
    const attacked = await attackLoop.stop();
    const cpuCores = round((relay.cpuSeconds() - cpu0) / o.seconds);
    // Notifications still on their way.
    await sleep(2000);
    worker.postMessage('take');
    const { counts } = await next();
    worker.postMessage('stop');
    await next();
    await worker.terminate();

    const attackerTx = sent[200] ?? 0;
    const victimTx = attacked.statuses[200] ?? 0;
    const aliveAfter = relay.alive && (await relay.healthz()) === 200;
    return {
      label,
      subscriptions: { ...ready, setup_s: setupS },
      victim_quiet: quiet,
      victim_under_attack: attacked,
      victim_p99_ratio: quiet.latency_ms.p99 ? round(attacked.latency_ms.p99 / quiet.latency_ms.p99) : null,
      attacker_sent: sent,
      attacker_notifications: counts.attacker_notifications,
      attacker_notifications_per_transaction: attackerTx ? round(counts.attacker_notifications / attackerTx, 1) : null,
      victim_notifications: counts.victim_notifications,
      victim_notifications_per_transaction: victimTx ? round(counts.victim_notifications / victimTx, 2) : null,
      socket_closes: counts.close_codes,
      relay_cpu_cores_under_attack: cpuCores,
      relay_alive_after: aliveAfter,
    };
  } finally {
    await relay.stop();
  }
}

const before = await phase('per-socket cap only', { TXRELAY_WS_MAX_ACCOUNT_SUBSCRIPTIONS: String(UNCAPPED) });
const after = await phase('default per-account cap', {});
await up.close();

const line = (p) => [
  `  ${p.label}: ${p.subscriptions.made} subscriptions made, ${p.subscriptions.refused} refused (${p.subscriptions.opened} sockets, ${p.subscriptions.setup_s} s)`,
  `    attacker: ${JSON.stringify(p.attacker_sent)} sent, ${p.attacker_notifications} notifications, ${p.attacker_notifications_per_transaction} per transaction; relay ${p.relay_cpu_cores_under_attack} cores`,
  `    victim /v2: quiet p50 ${p.victim_quiet.latency_ms.p50} ms p99 ${p.victim_quiet.latency_ms.p99} ms; under attack p50 ${p.victim_under_attack.latency_ms.p50} ms p99 ${p.victim_under_attack.latency_ms.p99} ms (${p.victim_p99_ratio}x), ${JSON.stringify(p.victim_under_attack.statuses)}`,
  `    victim's own subscription: ${p.victim_notifications} notifications, ${p.victim_notifications_per_transaction} per transaction; socket closes ${JSON.stringify(p.socket_closes)}`,
];
const result = {
  ok: before.relay_alive_after && after.relay_alive_after && after.victim_notifications > 0,
  checks: {
    // With the cap, one change is pushed at most the cap's number of times (64 by default, one HTTP thread).
    notifications_per_transaction_bounded: after.attacker_notifications_per_transaction !== null && after.attacker_notifications_per_transaction <= 2 * 64,
    victim_still_pushed: after.victim_notifications_per_transaction !== null && after.victim_notifications_per_transaction >= 1.9,
  },
  finding: { notifications_10s: 640_000, per_transaction: 32_000, victim_p99_ms: { quiet: 4.1, attacked: 87 } },
  options: o,
  before,
  after,
};
emit(NAME, result, [`subscriptions: ${o.sockets} sockets x ${o.per_socket} subscriptions of one free account`, ...line(before), ...line(after)]);
process.exit(result.ok ? 0 : 1);
