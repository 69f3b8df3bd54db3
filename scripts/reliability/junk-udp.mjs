#!/usr/bin/env node
/**
 * junk-udp: a flood of malformed and unauthenticated datagrams at the UDP
 * door (docs/protocol.md#udp), and whether everyone else is still
 * served meanwhile.
 *
 * A sender process (junk-udp-sender.mjs) blasts random bytes, every kind of
 * malformed header, valid transactions under unknown keys, and corrupted
 * transactions under a known key, from `--sources` addresses, as fast as it
 * can for `--seconds`. One of those addresses is 127.0.0.1, the legitimate
 * HTTP client's (a spoofed source: its HTTP bucket must not
 * drain). Meanwhile a legitimate client sends valid UDP transactions (from
 * 127.0.0.2, an address no junk comes from) and valid HTTP POST /v2
 * transactions (from 127.0.0.1) at a steady rate, and pings GET /ping; the
 * relay forwards to a stand-in upstream, which tells which legitimate
 * transactions got through. Reported: datagrams sent per second, handled per
 * second (txrelay_udp_datagrams_total by outcome), dropped by the kernel
 * before the relay read them (/proc/net/udp), relay CPU and RSS, and the
 * legitimate traffic's fate, before and during the flood, side by side.
 *
 *   node scripts/reliability/junk-udp.mjs [--seconds 10] [--sources 8] [--legit-rate 100]
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { startRelay, emit, deadline, args, sleep, track, pinger, byLabel, diffCounts, round, sampler, udpKernelDrops } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'junk-udp';
/** Legitimate traffic runs alone this long first: the baseline of the side-by-side comparison. */
const BASELINE_S = 5;
/** Legitimate HTTP POST /v2 per second, next to the legitimate UDP rate. */
const HTTP_RATE = 20;
/** Forwarded transactions may still be in flight when a phase ends. */
const SETTLE_MS = 2000;

const o = args({ seconds: 10, sources: 8, legit_rate: 100, seed: 8 });
deadline(NAME, 90_000 + o.seconds * 3000);

const up = await startUpstream();
const relay = await startRelay({ env: { TXRELAY_SOLANA_RPC_UPSTREAMS: up.url } });
const legit = await relay.createAccount({ solana: { tps: 10_000, burst: 10_000 } });
const abuser = await relay.createAccount({ solana: { tps: 1_000_000, burst: 1_000_000 } });
const legitKey = Buffer.from(legit.uuid.replaceAll('-', ''), 'hex');
const udpTxs = solanaTransfers(Math.ceil(o.legit_rate * (BASELINE_S + o.seconds)) + 100);
const httpTxs = solanaTransfers(Math.ceil(HTTP_RATE * (BASELINE_S + o.seconds)) + 100);
const sock = dgram.createSocket('udp4');
await new Promise((r) => sock.bind(0, '127.0.0.2', r));
const pool = new Pool(relay.base, { connections: 4, connect: { localAddress: '127.0.0.1' } });
/** Junk sources: the HTTP client's own address, then addresses of nobody else. */
const junkAddrs = ['127.0.0.1', ...Array.from({ length: o.sources - 1 }, (_, i) => `127.0.0.${10 + i}`)];

const kernelDrops = () => udpKernelDrops(relay.udpPort);

/** Legitimate traffic for `seconds`: UDP at legit_rate and HTTP at HTTP_RATE; returns what was sent and answered. */
async function legitimate(seconds, from) {
  const udpSent = [];
  const http = { sent: [], ok: 0, statuses: {} };
  const pending = [];
  const t0 = performance.now();
  let u = from.udp;
  let h = from.http;
  const udpEvery = 1000 / o.legit_rate;
  const httpEvery = 1000 / HTTP_RATE;
  let nextUdp = t0;
  let nextHttp = t0;
  while (performance.now() - t0 < seconds * 1000) {
    const now = performance.now();
    if (now >= nextUdp) {
      const tx = udpTxs[u++];
      const p = Buffer.alloc(23 + tx.length);
      p.set([43, 6, 58, 10, 0]);
      legitKey.copy(p, 5);
      p.writeUInt16LE(tx.length, 21);
      p.set(tx, 23);
      sock.send(p, relay.udpPort, '127.0.0.1');
      udpSent.push(Buffer.from(tx).toString('base64'));
      nextUdp += udpEvery;
    }
    if (now >= nextHttp) {
      const tx = httpTxs[h++];
      http.sent.push(Buffer.from(tx).toString('base64'));
      pending.push(
        pool.request({ path: '/v2', method: 'POST', headers: { 'api-key': legit.uuid }, body: tx }).then(
          async (r) => {
            await r.body.arrayBuffer();
            http.statuses[r.statusCode] = (http.statuses[r.statusCode] ?? 0) + 1;
            if (r.statusCode === 200) http.ok++;
          },
          () => (http.statuses.error = (http.statuses.error ?? 0) + 1),
        ),
      );
      nextHttp += httpEvery;
    }
    await sleep(Math.max(0, Math.min(nextUdp, nextHttp) - performance.now()));
  }
  await Promise.all(pending);
  await sleep(SETTLE_MS);
  const udpDelivered = udpSent.filter((k) => up.delivered.has(k)).length;
  const httpDelivered = http.sent.filter((k) => up.delivered.has(k)).length;
  return {
    active_s: seconds,
    next: { udp: u, http: h },
    udp: { sent: udpSent.length, delivered: udpDelivered, delivered_share: round(udpDelivered / udpSent.length, 4) },
    http_v2: { sent: http.sent.length, answered_200: http.ok, statuses: http.statuses, delivered: httpDelivered },
  };
}

async function window(fn) {
  const m0 = await relay.metrics();
  const drops0 = kernelDrops();
  const cpu0 = relay.cpuSeconds();
  const rss = sampler(() => relay.rssMb(), 500);
  const t0 = performance.now();
  const out = await fn();
  // Rates over the traffic itself, not the settling time after it.
  const secs = out.active_s;
  const wall = (performance.now() - t0) / 1000;
  const m1 = await relay.metrics();
  const outcomes = diffCounts(byLabel(m1, 'txrelay_udp_datagrams_total', 'outcome'), byLabel(m0, 'txrelay_udp_datagrams_total', 'outcome'));
  const handled = Object.values(outcomes).reduce((a, b) => a + b, 0);
  return {
    ...out,
    udp_handled: handled,
    udp_handled_per_s: round(handled / secs),
    udp_by_outcome: outcomes,
    kernel_drops: kernelDrops() - drops0,
    relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / wall),
    relay_rss_mb_max: rss.stop().max,
  };
}

const ping = pinger({ port: relay.httpPort, everyMs: 20 });
const baseline = await window(() => legitimate(BASELINE_S, { udp: 0, http: 0 }));
baseline.ping = ping.take();

let senderOut = '';
const during = await window(async () => {
  const child = track(
    spawn(process.execPath, [new URL('./junk-udp-sender.mjs', import.meta.url).pathname, JSON.stringify({ port: relay.udpPort, seconds: o.seconds, addrs: junkAddrs, abuserKey: abuser.uuid.replaceAll('-', ''), seed: o.seed })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  child.stdout.on('data', (d) => (senderOut += d));
  const exited = new Promise((r) => child.once('exit', r));
  const l = await legitimate(o.seconds, baseline.next);
  await exited;
  return { ...l, active_s: JSON.parse(senderOut.trim().split('\n').at(-1)).seconds };
});
during.ping = ping.take();
await ping.stop();
const sent = JSON.parse(senderOut.trim().split('\n').at(-1));
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
sock.close();
await pool.close();
await relay.stop();
await up.close();

delete baseline.next;
delete during.next;
const result = {
  ok: aliveAfter,
  checks: [
    {
      what: 'HTTP from an address that junk UDP also claims is still served',
      got: `${during.http_v2.answered_200} of ${during.http_v2.sent} answered 200`,
      pass: during.http_v2.answered_200 === during.http_v2.sent,
    },
  ],
  seconds: o.seconds,
  sources: o.sources,
  // The kernel caps the relay's 8 MiB receive buffer request at this (doubled for bookkeeping).
  net_core_rmem_max: Number(readFileSync('/proc/sys/net/core/rmem_max', 'utf8')),
  junk: { sent: sent.sent, sent_per_s: round(sent.sent / sent.seconds), send_errors: sent.errors, by_kind: sent.by_kind },
  baseline,
  during_flood: during,
  relay_alive_after: aliveAfter,
};
emit(NAME, result, [
  `junk-udp: ${o.sources} sources (one is the HTTP client's address, 127.0.0.1) blast junk for ${o.seconds} s; legitimate ${o.legit_rate}/s UDP + ${HTTP_RATE}/s HTTP /v2 + /ping throughout`,
  `  junk sent: ${sent.sent} (${result.junk.sent_per_s}/s), by kind ${JSON.stringify(sent.by_kind)}`,
  `  relay handled ${during.udp_handled_per_s} datagrams/s (baseline ${baseline.udp_handled_per_s}/s); kernel drops ${during.kernel_drops} (net.core.rmem_max ${result.net_core_rmem_max}); CPU ${during.relay_cpu_cores} cores (baseline ${baseline.relay_cpu_cores}); RSS max ${during.relay_rss_mb_max} MB`,
  `  outcomes during the flood: ${JSON.stringify(during.udp_by_outcome)}`,
  `  legitimate UDP delivered upstream: baseline ${baseline.udp.delivered}/${baseline.udp.sent}, during ${during.udp.delivered}/${during.udp.sent} (${round(100 * during.udp.delivered_share, 1)}%)`,
  `  legitimate HTTP /v2: baseline ${baseline.http_v2.answered_200}/${baseline.http_v2.sent} answered 200, during ${during.http_v2.answered_200}/${during.http_v2.sent} ${JSON.stringify(during.http_v2.statuses)}`,
  `  /ping p50/p99/max: baseline ${baseline.ping.latency_ms.p50}/${baseline.ping.latency_ms.p99}/${baseline.ping.latency_ms.max} ms, during ${during.ping.latency_ms.p50}/${during.ping.latency_ms.p99}/${during.ping.latency_ms.max} ms, success ${during.ping.success_rate}`,
]);
process.exit(aliveAfter ? 0 : 1);
