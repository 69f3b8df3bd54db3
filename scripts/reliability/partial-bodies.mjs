#!/usr/bin/env node
/**
 * partial-bodies: connections that declare a 128 KiB body on `POST /`, send
 * all of it but the last byte, and wait. Before bodies were bounded, 16,000
 * of them took the relay from 354 MB to 2.4 GB of RSS: each body's buffer was
 * allocated at its declared length before any credential was read.
 *
 * Phases, side by side in one run, while a well-behaved client measures
 * `GET /ping` on a keep-alive connection and on a new connection every 100 ms:
 *   baseline    nothing else;
 *   strangers   `--strangers` such connections without a credential, from 8
 *               addresses (under the per-IP cap): none of their bytes may be
 *               kept (the credential is read from the head first);
 *   account     `--account` such connections with a live account's Bearer:
 *               their bodies are held as received, within
 *               `http.max_buffered_body_bytes` (the rest get 503);
 *   recovery    attackers gone.
 * Reported per phase: ping latency and success, the relay's RSS (max, and
 * above the baseline), CPU, and `txrelay_body_buffered_bytes` at its peak.
 *
 *   node scripts/reliability/partial-bodies.mjs [--strangers 16000] [--account 2000] [--seconds 15]
 */
import { spawn } from 'node:child_process';
import { startRelay, emit, deadline, args, sleep, track, pinger, sampler, round } from './lib.mjs';

const NAME = 'partial-bodies';
const BASELINE_S = 3;
const RECOVERY_S = 5;
const PER_ATTACKER = 8000;
const ADDRS = Array.from({ length: 8 }, (_, i) => `127.0.2.${i + 1}`);
/** The goal: strangers' partial bodies move RSS by less than this. */
const STRANGERS_RSS_MB = 256;
/** An account's are held within the budget (128 MiB) plus the connections' own cost. */
const ACCOUNT_RSS_MB = 128 + 128;
const NEW_CONNECTION_SUCCESS = 0.99;

const o = args({ strangers: 16_000, account: 2000, seconds: 15 });
deadline(NAME, 120_000 + o.seconds * 3000);

const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false', TXRELAY_LIMITS_IP_RPS: '100000', TXRELAY_LIMITS_IP_BURST: '200000' } });
const key = (await relay.createAccount({ plan: 'paid' })).uuid;

function attack(count, seconds, withKey) {
  const procs = [];
  const n = Math.ceil(count / PER_ATTACKER);
  for (let i = 0; i < n; i++) {
    const addrs = ADDRS.filter((_, j) => j % n === i);
    const child = track(
      spawn(
        process.execPath,
        [new URL('./slowloris-attacker.mjs', import.meta.url).pathname, JSON.stringify({ port: relay.httpPort, mode: 'partial', count: Math.min(PER_ATTACKER, count - i * PER_ATTACKER), seconds, addrs, key: withKey ? key : null })],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      ),
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    procs.push(new Promise((resolve) => child.once('exit', () => resolve(out.trim() ? JSON.parse(out.trim().split('\n').at(-1)) : null))));
  }
  return Promise.all(procs).then((rs) => ({ opened: rs.reduce((a, r) => a + (r?.opened ?? 0), 0), max_open: rs.reduce((a, r) => a + (r?.max_open ?? 0), 0), closed_by_relay: rs.reduce((a, r) => a + (r?.closed_by_relay ?? 0), 0) }));
}

/** The largest value an asynchronous reading gave until stopped. */
function pollMax(read, everyMs) {
  let max = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      max = Math.max(max, await read().catch(() => 0));
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return max;
    },
  };
}

const keep = pinger({ port: relay.httpPort, mode: 'keepalive', everyMs: 20 });
const fresh = pinger({ port: relay.httpPort, mode: 'fresh', everyMs: 100 });
let baseRss = 0;

async function phase(name, seconds, attackFn) {
  const rss = sampler(() => relay.rssMb(), 250);
  const held = pollMax(() => relay.metric('txrelay_body_buffered_bytes'), 500);
  const cpu0 = relay.cpuSeconds();
  const t0 = performance.now();
  const a = attackFn ? await attackFn() : (await sleep(seconds * 1000), null);
  const secs = (performance.now() - t0) / 1000;
  const maxRss = rss.stop().max;
  return {
    phase: name,
    seconds: round(secs),
    ping_keepalive: keep.take(),
    ping_new_connection: fresh.take(),
    relay_cpu_cores: round((relay.cpuSeconds() - cpu0) / secs),
    relay_rss_mb_max: maxRss,
    relay_rss_mb_above_baseline: round(maxRss - baseRss),
    body_bytes_buffered_max: await held.stop(),
    ...(a ? { attackers: a } : {}),
  };
}

const phases = [];
baseRss = relay.rssMb();
phases.push(await phase('baseline', BASELINE_S));
baseRss = phases[0].relay_rss_mb_max;
phases.push(await phase('strangers', o.seconds, () => attack(o.strangers, o.seconds, false)));
await sleep(RECOVERY_S * 1000);
phases.push(await phase('account', o.seconds, () => attack(o.account, o.seconds, true)));
phases.push(await phase('recovery', RECOVERY_S));
await Promise.all([keep.stop(), fresh.stop()]);
const aliveAfter = relay.alive && (await relay.healthz()) === 200;
await relay.stop();

const strangers = phases.find((p) => p.phase === 'strangers');
const account = phases.find((p) => p.phase === 'account');
const checks = [
  {
    what: `${o.strangers} strangers' partial 128 KiB bodies move RSS by less than ${STRANGERS_RSS_MB} MB, nothing of them held`,
    got: `${strangers.relay_rss_mb_above_baseline} MB above the baseline; ${strangers.body_bytes_buffered_max} body bytes held at most; ${strangers.attackers.max_open} connections at once`,
    pass: strangers.relay_rss_mb_above_baseline < STRANGERS_RSS_MB && strangers.body_bytes_buffered_max === 0,
  },
  {
    what: `new connections are answered meanwhile (at least ${NEW_CONNECTION_SUCCESS * 100}%)`,
    got: `${strangers.ping_new_connection.ok} of ${strangers.ping_new_connection.pings}, p99 ${strangers.ping_new_connection.latency_ms.p99} ms`,
    pass: (strangers.ping_new_connection.success_rate ?? 0) >= NEW_CONNECTION_SUCCESS,
  },
  {
    what: `${o.account} of an account's partial bodies are held within http.max_buffered_body_bytes`,
    got: `${account.body_bytes_buffered_max} bytes held at most, RSS ${account.relay_rss_mb_above_baseline} MB above the baseline`,
    pass: account.body_bytes_buffered_max <= 134_217_728 && account.relay_rss_mb_above_baseline < ACCOUNT_RSS_MB,
  },
];
const line = (p) =>
  `  ${p.phase.padEnd(9)} RSS max ${p.relay_rss_mb_max} MB (+${p.relay_rss_mb_above_baseline}), body bytes held max ${p.body_bytes_buffered_max}, CPU ${p.relay_cpu_cores}; ` +
  `new-connection /ping ok ${p.ping_new_connection.success_rate} p99 ${p.ping_new_connection.latency_ms.p99} ms; keep-alive /ping p99 ${p.ping_keepalive.latency_ms.p99} ms` +
  (p.attackers ? `; attackers ${p.attackers.opened} opened, ${p.attackers.max_open} at once, ${p.attackers.closed_by_relay} closed by the relay` : '');
const ok = aliveAfter && checks.every((c) => c.pass);
emit(NAME, { ok, checks, phases, relay_alive_after: aliveAfter }, [
  `partial-bodies: ${o.strangers} strangers, then ${o.account} of one account's, each a 128 KiB body less its last byte`,
  ...phases.map(line),
  ...checks.map((c) => `  ${c.pass ? 'PASS' : 'FAIL'} ${c.what}: ${c.got}`),
]);
process.exit(ok ? 0 : 1);
