#!/usr/bin/env node
/**
 * slowloris: slow and idle connections, up to and beyond the relay's open-file
 * limit (without connection caps, 21,000 idle connections with an fd limit
 * of 20,000 blocked new connections for ~7 s).
 *
 * A well-behaved client measures `GET /ping` throughout, two ways: on one
 * keep-alive connection opened before the attack, and on a new connection
 * every 100 ms (what a new client sees). Phases, side by side in one run:
 *   baseline   nothing else;
 *   trickle    `--trickle` connections each sending a request head one byte
 *              per second, never finishing it, reopened when closed;
 *   idle-one   the relay's soft fd limit (read from /proc/<pid>/limits) plus
 *              `--beyond` idle connections from ONE address (the attack
 *              above: the per-IP cap must keep the rest of the world served);
 *   idle       as many idle connections spread over 16 addresses, each under
 *              the per-IP cap: only the total cap stands against them;
 *   recovery   attackers gone.
 * Reported per phase: ping latency and success on both paths, the relay's
 * open fds (peak), CPU and RSS, and for the attackers how long the relay let
 * their connections live.
 *
 *   node scripts/reliability/slowloris.mjs [--trickle 1000] [--beyond 1000] [--seconds 20]
 */
import { spawn } from 'node:child_process';
import { startRelay, emit, deadline, args, sleep, track, pinger, sampler, round, fdLimit } from './lib.mjs';

const NAME = 'slowloris';
const BASELINE_S = 3;
const TRICKLE_S = 15;
const RECOVERY_S = 5;
/** Idle connections per attacker process, well under its own fd limit. */
const PER_ATTACKER = 8000;
/** Local addresses the attackers connect from: ~28k ephemeral ports each, so 21k connections plus reopenings never run out. */
const ATTACKER_ADDRS = Array.from({ length: 16 }, (_, i) => `127.0.1.${i + 1}`);
/** The caps hold when new clients are answered while idle connections fill the fds: all but 1 in 100. */
const NEW_CONNECTION_SUCCESS = 0.99;
/** A new client every 100 ms, the keep-alive one every 20 ms. */
const FRESH_EVERY_MS = 100;
const KEEPALIVE_EVERY_MS = 20;

const o = args({ trickle: 1000, beyond: 1000, seconds: 20 });
deadline(NAME, 150_000 + o.seconds * 4000);

const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false' } });
const limit = fdLimit(relay.pid);

function attack(mode, count, seconds, only = null) {
  const procs = [];
  for (let left = count, i = 0; left > 0; left -= PER_ATTACKER, i++) {
    const n = Math.min(PER_ATTACKER, left);
    const addrs = only ?? ATTACKER_ADDRS.filter((_, j) => j % Math.ceil(count / PER_ATTACKER) === i % Math.ceil(count / PER_ATTACKER));
    const child = track(
      spawn(process.execPath, [new URL('./slowloris-attacker.mjs', import.meta.url).pathname, JSON.stringify({ port: relay.httpPort, mode, count: n, seconds, addrs, byteEveryMs: 1000 })], {
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    procs.push(new Promise((resolve) => child.once('exit', () => resolve(out.trim() ? JSON.parse(out.trim().split('\n').at(-1)) : null))));
  }
  return Promise.all(procs).then((rs) => merge(rs.filter(Boolean)));
}

function merge(rs) {
  const out = { processes: rs.length, opened: 0, max_open: 0, closed_by_relay: 0, connect_timeouts: 0, connect_errors: {}, open_at_end: 0, lifetime_ms: null };
  for (const r of rs) {
    out.opened += r.opened;
    out.max_open += r.max_open;
    out.closed_by_relay += r.closed_by_relay;
    out.connect_timeouts += r.connect_timeouts;
    out.open_at_end += r.open_at_end;
    for (const [k, v] of Object.entries(r.connect_errors)) out.connect_errors[k] = (out.connect_errors[k] ?? 0) + v;
  }
  // Lifetimes: the range over processes (each reports its own percentiles).
  const l = rs.map((r) => r.lifetime_ms).filter((x) => x.n > 0);
  if (l.length) out.lifetime_ms = { n: l.reduce((a, x) => a + x.n, 0), min: Math.min(...l.map((x) => x.min)), p50: Math.max(...l.map((x) => x.p50)), max: Math.max(...l.map((x) => x.max)) };
  return out;
}

const keep = pinger({ port: relay.httpPort, mode: 'keepalive', everyMs: KEEPALIVE_EVERY_MS });
const fresh = pinger({ port: relay.httpPort, mode: 'fresh', everyMs: FRESH_EVERY_MS });

async function phase(name, seconds, attackFn) {
  const fds = sampler(() => relay.fdCount(), 250);
  const rss = sampler(() => relay.rssMb(), 500);
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  const attackers = attackFn ? attackFn() : sleep(seconds * 1000).then(() => null);
  const a = await attackers;
  const secs = (performance.now() - t0) / 1000;
  return {
    phase: name,
    seconds: round(secs),
    ping_keepalive: keep.take(),
    ping_new_connection: fresh.take(),
    relay_fds_max: fds.stop().max,
    relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / secs),
    relay_rss_mb_max: rss.stop().max,
    ...(a ? { attackers: a } : {}),
  };
}

const phases = [];
phases.push(await phase('baseline', BASELINE_S));
phases.push(await phase('trickle', TRICKLE_S, () => attack('trickle', o.trickle, TRICKLE_S)));
phases.push(await phase('idle-one', o.seconds, () => attack('idle', limit + o.beyond, o.seconds, [ATTACKER_ADDRS[0]])));
// Let the relay close what the first attack left before the second starts.
await sleep(RECOVERY_S * 1000);
phases.push(await phase('idle', o.seconds, () => attack('idle', limit + o.beyond, o.seconds)));
phases.push(await phase('recovery', RECOVERY_S));
await Promise.all([keep.stop(), fresh.stop()]);
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();

const line = (p) =>
  `  ${p.phase.padEnd(9)} keep-alive /ping p50/p99/max ${p.ping_keepalive.latency_ms.p50}/${p.ping_keepalive.latency_ms.p99}/${p.ping_keepalive.latency_ms.max} ms ok ${p.ping_keepalive.success_rate} (longest without an answer ${p.ping_keepalive.longest_without_answer_ms} ms); ` +
  `new-connection /ping p50/p99/max ${p.ping_new_connection.latency_ms.p50}/${p.ping_new_connection.latency_ms.p99}/${p.ping_new_connection.latency_ms.max} ms ok ${p.ping_new_connection.success_rate} ${JSON.stringify(p.ping_new_connection.failures)} (longest without an answer ${p.ping_new_connection.longest_without_answer_ms} ms); relay fds max ${p.relay_fds_max}, CPU ${p.relay_cpu_cores}, RSS ${p.relay_rss_mb_max} MB` +
  (p.attackers
    ? `\n            attackers: ${p.attackers.opened} opened (max ${p.attackers.max_open} at once), ${p.attackers.closed_by_relay} closed by the relay after ${p.attackers.lifetime_ms ? `${p.attackers.lifetime_ms.min}-${p.attackers.lifetime_ms.max} ms (p50 ${p.attackers.lifetime_ms.p50})` : '-'}, connect time-outs ${p.attackers.connect_timeouts}, errors ${JSON.stringify(p.attackers.connect_errors)}`
    : '');
const idleOne = phases.find((p) => p.phase === 'idle-one');
const trickle = phases.find((p) => p.phase === 'trickle');
// The spread attack ('idle') is reported, not checked: past the total cap a new connection is refused until idle ones time out (docs/reliability.md).
const checks = [
  {
    what: `new connections are answered while one address opens ${limit + o.beyond} idle connections, past the fd limit`,
    got: `${idleOne.ping_new_connection.ok} of ${idleOne.ping_new_connection.pings}, none answered for ${idleOne.ping_new_connection.longest_without_answer_ms} ms`,
    pass: (idleOne.ping_new_connection.success_rate ?? 0) >= NEW_CONNECTION_SUCCESS,
  },
  {
    what: 'connections that trickle a request head are closed',
    got: `${trickle.attackers?.closed_by_relay ?? 0} of ${o.trickle} closed, after ${trickle.attackers?.lifetime_ms?.max ?? '-'} ms at most`,
    pass: (trickle.attackers?.closed_by_relay ?? 0) >= o.trickle,
  },
];
emit(
  NAME,
  { ok: aliveAfter, checks, relay_fd_soft_limit: limit, trickle_connections: o.trickle, idle_connections: limit + o.beyond, phases, relay_alive_after: aliveAfter },
  [`slowloris: relay fd soft limit ${limit}; ${o.trickle} trickling connections, then ${limit + o.beyond} idle ones`, ...phases.map(line), `  relay alive and healthy afterwards: ${aliveAfter}`],
);
process.exit(aliveAfter ? 0 : 1);
