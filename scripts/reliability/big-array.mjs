#!/usr/bin/env node
/**
 * big-array: a hostile JSON-RPC array, measured. Before arrays were bounded,
 * an unauthenticated JSON-RPC array of 43,000 `{}` (129 KB) cost 0.22 s of main thread and
 * returned 4.5 MB; two connections sending it pushed `GET /ping` p99 to
 * 328 ms.
 *
 * Measured here, on a relay with default limits:
 *   1. one such body, sent `--requests` times on one connection: status,
 *      answer size, client-side time, and the relay process's CPU per request
 *      (all threads, /proc/<pid>/stat: an upper bound of its main-thread time);
 *      the same for the largest array the relay still accepts (evm.max_batch
 *      calls, unauthenticated);
 *   2. `GET /ping` latency on a keep-alive connection, side by side in one
 *      run, for `--seconds` each: alone; while two connections send a body of
 *      the same size that is cheap to refuse (one 129 KB JSON string: the
 *      cost of moving the bytes); and while they send the 43k array.
 *
 *   node scripts/reliability/big-array.mjs [--requests 50] [--seconds 5]
 */
import { Worker } from 'node:worker_threads';
import { Client } from 'undici';
import { startRelay, emit, deadline, pinger, percentiles, round } from './lib.mjs';

const NAME = 'big-array';
/** That body: 43,000 empty objects, 129 KB, inside the default http.max_body_bytes (128 KiB). */
const FINDING_CALLS = 43_000;
/** Default of evm.max_batch, which also bounds a JSON-RPC array. */
const MAX_ARRAY = 64;
/** The well-behaved client pings this often: 100 samples a second keeps a p99 meaningful over a few seconds. */
const PING_EVERY_MS = 10;

const o = { requests: 50, seconds: 5 };
Object.assign(o, (await import('./lib.mjs')).args(o));
deadline(NAME, 120_000 + o.seconds * 2000);

const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false' } });
const bigBody = '[' + Array(FINDING_CALLS).fill('{}').join(',') + ']';
const fullBody = '[' + Array(MAX_ARRAY).fill('{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}').join(',') + ']';

/** `n` sequential requests of `body` on one connection, from `localAddress` (its own IP bucket). */
async function measure(body, n, localAddress) {
  const c = new Client(relay.base, { pipelining: 1, connect: { localAddress } });
  const times = [];
  const statuses = {};
  let bytes = 0;
  const cpu0 = relay.cpuSeconds();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await r.body.text();
    times.push(performance.now() - t0);
    statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
    bytes = text.length;
  }
  const cpuMs = ((relay.cpuSeconds() - cpu0) * 1000) / n;
  await c.close();
  return { body_bytes: body.length, requests: n, statuses, answer_bytes: bytes, client_ms: percentiles(times), relay_cpu_ms_per_request: round(cpuMs) };
}

const big = await measure(bigBody, o.requests, '127.0.0.2');
const full = await measure(fullBody, o.requests, '127.0.0.3');

/** Two connections from one attacker address send `body` back to back for --seconds; resolves with their counts and the relay's CPU. */
async function flood(body, localAddress) {
  const cpu0 = relay.cpuSeconds();
  const counts = await new Promise((resolve, reject) => {
    const w = new Worker(new URL('./flood-worker.mjs', import.meta.url), {
      workerData: { origin: relay.base, path: '/', headers: { 'content-type': 'application/json' }, body, connections: 2, durationMs: o.seconds * 1000, localAddress },
    });
    w.once('message', resolve);
    w.once('error', reject);
  });
  return { ...counts, requests_per_s: round(counts.requests / o.seconds), relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / o.seconds) };
}

// Same size as the 43k array, refused after one cheap JSON.parse of a single string.
const cheapBody = JSON.stringify('a'.repeat(bigBody.length - 2));
const ping = pinger({ port: relay.httpPort, everyMs: PING_EVERY_MS });
await new Promise((r) => setTimeout(r, o.seconds * 1000));
const alone = ping.take();
const cheapFlood = await flood(cheapBody, '127.0.0.4');
const underCheap = ping.take();
const bigFlood = await flood(bigBody, '127.0.0.5');
const underFlood = ping.take();
await ping.stop();
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();

const ratio = alone.latency_ms.p99 ? round(underFlood.latency_ms.p99 / alone.latency_ms.p99) : null;
const result = {
  ok: aliveAfter && big.statuses[400] === o.requests,
  finding: { answer_bytes: 4.5e6, main_thread_s: 0.22, ping_p99_ms_two_connections: 328 },
  array_43k: big,
  array_max_allowed: { calls: MAX_ARRAY, ...full },
  ping_alone: alone,
  ping_under_two_connections_same_size_cheap_body: underCheap,
  ping_under_two_connections_43k_array: underFlood,
  ping_p99_ratio_43k_flood_vs_alone: ratio,
  ping_p99_ratio_cheap_flood_vs_alone: alone.latency_ms.p99 ? round(underCheap.latency_ms.p99 / alone.latency_ms.p99) : null,
  flood_cheap_body: cheapFlood,
  flood_43k_array: bigFlood,
  relay_alive_after: aliveAfter,
};
emit(NAME, result, [
  `big-array: unauthenticated JSON-RPC arrays on a relay with default limits`,
  `  43k {} (${big.body_bytes} B): ${JSON.stringify(big.statuses)}, answer ${big.answer_bytes} B, client p50 ${big.client_ms.p50} ms, relay CPU ${big.relay_cpu_ms_per_request} ms/request (finding: 4.5 MB, 0.22 s)`,
  `  ${MAX_ARRAY} calls (largest allowed, ${full.body_bytes} B): ${JSON.stringify(full.statuses)}, answer ${full.answer_bytes} B, relay CPU ${full.relay_cpu_ms_per_request} ms/request`,
  `  /ping alone: p50 ${alone.latency_ms.p50} ms, p99 ${alone.latency_ms.p99} ms, max ${alone.latency_ms.max} ms, success ${alone.success_rate}`,
  `  /ping with 2 connections sending a cheap body of the same size (${cheapFlood.requests_per_s} req/s, ${JSON.stringify(cheapFlood.statuses)}, relay ${cheapFlood.relay_cpu_cores} cores): p50 ${underCheap.latency_ms.p50} ms, p99 ${underCheap.latency_ms.p99} ms, max ${underCheap.latency_ms.max} ms, success ${underCheap.success_rate}`,
  `  /ping with 2 connections flooding the 43k array (${bigFlood.requests_per_s} req/s, ${JSON.stringify(bigFlood.statuses)}, relay ${bigFlood.relay_cpu_cores} cores): p50 ${underFlood.latency_ms.p50} ms, p99 ${underFlood.latency_ms.p99} ms, max ${underFlood.latency_ms.max} ms, success ${underFlood.success_rate} (finding: p99 328 ms)`,
  `  p99 vs alone: cheap body ${result.ping_p99_ratio_cheap_flood_vs_alone}x, 43k array ${ratio}x`,
]);
process.exit(result.ok ? 0 : 1);
