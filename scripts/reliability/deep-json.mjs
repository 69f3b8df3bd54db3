#!/usr/bin/env node
/**
 * deep-json: one account floods deeply nested and invalid JSON, measured.
 * Before the depth limit, a 130 KB body nested 65,000 levels cost 5.46 ms of
 * CPU to refuse (a flat body of that size 0.14 ms), took no quota, and over
 * one WebSocket with 32 messages in flight starved the acceptor.
 *
 * Measured here, on a relay with default limits and a stand-in upstream:
 *   1. the relay's CPU per refused body, sent `--requests` times on one
 *      connection with a live credential: the 65,000-deep body, and a flat
 *      body of the same size refused after it is parsed (an unknown method),
 *      as µs per KB (/proc/<pid>/stat, every thread: an upper bound);
 *   2. another tenant's `/v2` latency (closed loop, signed Solana
 *      transactions) and `GET /ping` latency on a keep-alive connection, for
 *      `--seconds` each: quiet; while one account (a burst large enough that
 *      every body is read: the worst case) floods the deep body over 8 HTTP
 *      connections; while it keeps 32 deep messages in flight on one /ws;
 *   3. the same floods from an account on the paid plan's defaults: once its
 *      refusals bucket is empty its bodies and messages are 429 unread.
 *
 *   node scripts/reliability/deep-json.mjs [--requests 50] [--seconds 5]
 */
import { Worker } from 'node:worker_threads';
import { Client } from 'undici';
import { startRelay, emit, deadline, pinger, percentiles, round, sleep } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'deep-json';
const LEVELS = 65_000;
const HTTP_CONNECTIONS = 8;
const WS_IN_FLIGHT = 32;
const PING_EVERY_MS = 10;
/** The other tenant's pace: one /v2 at a time, this far apart. */
const V2_EVERY_MS = 5;

const o = { requests: 50, seconds: 5 };
Object.assign(o, (await import('./lib.mjs')).args(o));
deadline(NAME, 180_000 + o.seconds * 8000);

const up = await startUpstream();
const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false', TXRELAY_SOLANA_RPC_UPSTREAMS: up.url, TXRELAY_EVM_UPSTREAMS_PAID: up.url, TXRELAY_EVM_UPSTREAMS_FREE: up.url } });
const big = { evm: { tps: 1_000_000, burst: 1_000_000 }, solana: { enabled: true, tps: 1_000_000, burst: 1_000_000 } };
const flooder = await relay.createAccount({ plan: 'paid', ...big });
const tenant = await relay.createAccount({ plan: 'paid', solana: { enabled: true, tps: 100_000, burst: 100_000 } });
const plain = await relay.createAccount({ plan: 'paid' });

const deepBody = '['.repeat(LEVELS) + ']'.repeat(LEVELS);
// The same size, flat: parsed, then refused for its method.
const head = '{"jsonrpc":"2.0","id":1,"method":"eth_nothing","params":[';
const flatBody = head + Array(Math.floor((deepBody.length - head.length - 2) / 2)).fill('1').join(',') + ']}';

/** `n` sequential requests of `body` on one connection: statuses and the relay's CPU per request. */
async function measure(body, n) {
  const c = new Client(relay.base, { pipelining: 1 });
  const statuses = {};
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const r = await c.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${flooder.uuid}` }, body });
    await r.body.text();
    statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
  }
  const ms = performance.now() - t0;
  const cpuMs = ((relay.cpuSeconds() - cpu0) * 1000) / n;
  await c.close();
  return { body_bytes: body.length, requests: n, statuses, client_ms_per_request: round(ms / n), relay_cpu_ms_per_request: round(cpuMs, 3), relay_cpu_us_per_kb: round((cpuMs * 1000) / (body.length / 1024)) };
}

// Warm both paths first (JIT), then measure.
await measure(deepBody, 5);
await measure(flatBody, 5);
const deepCost = await measure(deepBody, o.requests);
const flatCost = await measure(flatBody, o.requests);

/** The other tenant: signed /v2 transactions one at a time, every V2_EVERY_MS; `take()` ends a window. */
function tenantLoop() {
  const txs = solanaTransfers(20_000);
  let next = 0;
  let lat = [];
  const statuses = {};
  let running = true;
  const c = new Client(relay.base, { pipelining: 1 });
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const r = await c.request({ path: '/v2', method: 'POST', headers: { 'content-type': 'application/octet-stream', 'api-key': tenant.uuid }, body: txs[next++ % txs.length] });
        await r.body.text();
        statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
        lat.push(performance.now() - t0);
      } catch {
        statuses.error = (statuses.error ?? 0) + 1;
      }
      await sleep(V2_EVERY_MS);
    }
  })();
  return {
    take() {
      const out = { requests: lat.length, statuses: { ...statuses }, latency_ms: percentiles(lat) };
      lat = [];
      for (const k of Object.keys(statuses)) delete statuses[k];
      return out;
    },
    async stop() {
      running = false;
      await loop;
      await c.close();
    },
  };
}

/** One account sends the deep body over 8 keep-alive connections for --seconds. */
async function httpFlood(uuid) {
  const cpu0 = relay.cpuSeconds();
  const counts = await new Promise((resolve, reject) => {
    const w = new Worker(new URL('./flood-worker.mjs', import.meta.url), {
      workerData: {
        origin: relay.base,
        path: '/',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
        body: deepBody,
        connections: HTTP_CONNECTIONS,
        durationMs: o.seconds * 1000,
        localAddress: '127.0.0.2',
      },
    });
    w.once('message', resolve);
    w.once('error', reject);
  });
  return { ...counts, requests_per_s: round(counts.requests / o.seconds), relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / o.seconds) };
}

/** One socket keeps WS_IN_FLIGHT deep messages in flight for --seconds (ws-flood-worker.mjs). */
async function wsFlood(uuid) {
  const cpu0 = relay.cpuSeconds();
  const got = await new Promise((resolve, reject) => {
    const w = new Worker(new URL('./ws-flood-worker.mjs', import.meta.url), {
      workerData: { url: relay.base.replace('http', 'ws') + `/ws?api-key=${uuid}`, body: deepBody, inFlight: WS_IN_FLIGHT, durationMs: o.seconds * 1000 },
    });
    w.once('message', resolve);
    w.once('error', reject);
  });
  return { ...got, answers_per_s: round(got.answers / o.seconds), relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / o.seconds) };
}

const ping = pinger({ port: relay.httpPort, everyMs: PING_EVERY_MS });
const v2 = tenantLoop();
await sleep(o.seconds * 1000);
const quiet = { ping: ping.take(), v2: v2.take() };
const http = await httpFlood(flooder.uuid);
const underHttp = { ping: ping.take(), v2: v2.take() };
const httpPlain = await httpFlood(plain.uuid);
const underHttpPlain = { ping: ping.take(), v2: v2.take() };
const wsBig = await wsFlood(flooder.uuid);
const underWs = { ping: ping.take(), v2: v2.take() };
const wsPlain = await wsFlood(plain.uuid);
const underWsPlain = { ping: ping.take(), v2: v2.take() };
await v2.stop();
await ping.stop();
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();
await up.close?.();

const ratio = (w) => (quiet.v2.latency_ms.p99 ? round(w.v2.latency_ms.p99 / quiet.v2.latency_ms.p99) : null);
const result = {
  ok: aliveAfter && deepCost.statuses[400] === o.requests,
  finding: { deep_cpu_ms: 5.46, flat_cpu_ms: 0.14, ws_ping_answers_within_1s: '0 of 6', v2_p50_ms_quiet_vs_8_connections: [1.2, 34] },
  refusal_cost: { deep_65000_levels: deepCost, flat_same_size_parsed: flatCost, deep_vs_flat_cpu: round(deepCost.relay_cpu_ms_per_request / flatCost.relay_cpu_ms_per_request) },
  quiet,
  http_flood_large_burst: { flood: http, ...underHttp, v2_p99_vs_quiet: ratio(underHttp) },
  http_flood_paid_defaults: { flood: httpPlain, ...underHttpPlain, v2_p99_vs_quiet: ratio(underHttpPlain) },
  ws_flood_large_burst: { flood: wsBig, ...underWs, v2_p99_vs_quiet: ratio(underWs) },
  ws_flood_paid_defaults: { flood: wsPlain, ...underWsPlain, v2_p99_vs_quiet: ratio(underWsPlain) },
  relay_alive_after: aliveAfter,
};
const line = (label, w) =>
  `  ${label}: /v2 p50 ${w.v2.latency_ms.p50} ms p99 ${w.v2.latency_ms.p99} ms (${w.v2.requests} req, ${JSON.stringify(w.v2.statuses)}); /ping p50 ${w.ping.latency_ms.p50} ms p99 ${w.ping.latency_ms.p99} ms max ${w.ping.latency_ms.max} ms, success ${w.ping.success_rate}`;
emit(NAME, result, [
  `deep-json: one account floods ${LEVELS}-deep bodies (${deepBody.length} B) on a relay with default limits`,
  `  refusing the deep body: relay CPU ${deepCost.relay_cpu_ms_per_request} ms (${deepCost.relay_cpu_us_per_kb} µs/KB), ${JSON.stringify(deepCost.statuses)} (finding: 5.46 ms)`,
  `  refusing a flat body of that size after parsing: ${flatCost.relay_cpu_ms_per_request} ms (${flatCost.relay_cpu_us_per_kb} µs/KB), ${JSON.stringify(flatCost.statuses)}`,
  line('quiet', quiet),
  `  8 HTTP connections, large burst (${http.requests_per_s} req/s, ${JSON.stringify(http.statuses)}, relay ${http.relay_cpu_cores} cores):`,
  line('    ', underHttp) + ` -> /v2 p99 ${result.http_flood_large_burst.v2_p99_vs_quiet}x quiet`,
  `  8 HTTP connections, paid defaults (${httpPlain.requests_per_s} req/s, ${JSON.stringify(httpPlain.statuses)}, relay ${httpPlain.relay_cpu_cores} cores):`,
  line('    ', underHttpPlain) + ` -> /v2 p99 ${result.http_flood_paid_defaults.v2_p99_vs_quiet}x quiet`,
  `  one /ws, ${WS_IN_FLIGHT} in flight, large burst (${wsBig.answers_per_s} answers/s, ${JSON.stringify(wsBig.error_codes)}, closes ${JSON.stringify(wsBig.closes)}, relay ${wsBig.relay_cpu_cores} cores):`,
  line('    ', underWs) + ` -> /v2 p99 ${result.ws_flood_large_burst.v2_p99_vs_quiet}x quiet`,
  `  one /ws, ${WS_IN_FLIGHT} in flight, paid defaults (${wsPlain.answers_per_s} answers/s, ${JSON.stringify(wsPlain.error_codes)}, closes ${JSON.stringify(wsPlain.closes)}, relay ${wsPlain.relay_cpu_cores} cores):`,
  line('    ', underWsPlain) + ` -> /v2 p99 ${result.ws_flood_paid_defaults.v2_p99_vs_quiet}x quiet`,
]);
process.exit(result.ok ? 0 : 1);
