#!/usr/bin/env node
/**
 * framing: HTTP edge cases (smuggling, pipelining, odd request heads), each
 * sent as raw bytes on its own TCP connection to a real relay, with what came
 * back: status lines, whether the relay closed the connection, and (for
 * pipelining) whether the transactions were admitted anyway
 * (txrelay_admitted_total).
 *
 * Each probe names what RFC 9112 / docs/protocol.md expects; a probe whose
 * answer differs is reported as a deviation, and docs/protocol.md#deviations
 * says which of those the acceptor (uWebSockets.js) cannot do otherwise.
 *
 *   node scripts/reliability/framing.mjs
 */
import net from 'node:net';
import { startRelay, emit, deadline, sleep, sumMetric } from './lib.mjs';
import { solanaTransfers, evmTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'framing';
/** A probe that got no answer waits this long to see whether (and when) the relay closes: past uWS's ~10 s idle time-out. */
const SILENT_WAIT_MS = 12_000;
/** Once the expected number of answers has arrived, how long to keep listening for anything more. */
const SETTLE_MS = 300;
/** The header-count search calls a probe refused when nothing comes back this fast (accepted ones answer in ~1 ms). */
const SEARCH_WAIT_MS = 700;
/** One header's value at these sizes: 4 KiB, then up past the 128 KiB where uWS's buffer ends. */
const HEADER_SIZES = [4096, 8192, 16_384, 65_536, 131_072, 262_144];
/** uWS's cap on headers per request is 50 (UWS_HTTP_MAX_HEADERS_COUNT). */
const MANY_HEADERS = 50;
/** The oversized header: 4 KiB, the order of uWS's request-head buffer. */
const BIG_HEADER = 4096;

deadline(NAME, 120_000);

// Answers of /v2 are synchronous while the relay checks inline (light load); `offload` forces the
// asynchronous path every answer takes under load, where pipelining behaves differently.
const relay = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false' } });
const offload = await startRelay({ env: { TXRELAY_UDP_ENABLED: 'false', TXRELAY_WORKERS_THREADS: '1', TXRELAY_WORKERS_INLINE: 'never' }, label: 'offloading relay' });
const accounts = new Map();
for (const r of [relay, offload]) accounts.set(r, await r.createAccount({ plan: 'paid', evm: { tps: 1000, burst: 1000 }, solana: { tps: 1000, burst: 1000 } }));
const sol = solanaTransfers(8);
const evm = await evmTransfers(4, { chainId: 1 });
const hex = (b) => '0x' + b.toString('hex');

/**
 * Writes `payload` on a new connection to `port`; resolves with every status
 * line seen and whether (and after how long) the relay closed. Stops early
 * once `want` answers arrived (plus SETTLE_MS), else after `waitMs`.
 */
function probe(port, payload, { want = 1, waitMs = SILENT_WAIT_MS } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks = [];
    let closed = false;
    let done = false;
    const t0 = performance.now();
    let closedAfterMs = null;
    const statuses = () => [...Buffer.concat(chunks).toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ statuses: statuses(), closed, closed_after_ms: closedAfterMs });
    };
    s.on('data', (d) => {
      chunks.push(d);
      if (statuses().length >= want) setTimeout(finish, SETTLE_MS);
    });
    s.on('error', () => {});
    s.on('close', () => {
      if (done) return;
      closed = true;
      closedAfterMs = Math.round(performance.now() - t0);
      finish();
    });
    const timer = setTimeout(finish, waitMs);
    s.write(payload);
  });
}

const head = (lines) => Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
const ping = head(['GET /ping HTTP/1.1', 'Host: relay']);
const v2 = (key, tx, extra = []) => Buffer.concat([head(['POST /v2 HTTP/1.1', 'Host: relay', `api-key: ${key}`, `Content-Length: ${tx.length}`, ...extra]), tx]);
const rpc = (key, call, extra = ['Content-Type: application/json']) => {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, ...call }));
  return Buffer.concat([head(['POST / HTTP/1.1', 'Host: relay', `Authorization: Bearer ${key}`, `Content-Length: ${body.length}`, ...extra]), body]);
};
const admitted = async (r) => sumMetric(await r.metrics(), 'txrelay_admitted_total');

/**
 * expect: { statuses: [...] } exact status list, or { closedWithoutStatus: true }.
 * known: docs/protocol.md#deviations names this as a limitation of the acceptor.
 * on: which relay ('inline', the default, or 'offload').
 */
const probes = [
  {
    name: 'conflicting Content-Length, smuggled GET /ping behind it',
    finding: 'request smuggling',
    expect: { closedWithoutStatus: true },
    note: 'RFC 9112 6.3 wants 400 then close; uWS keeps parsing after any response, so closing at once is the safe answer (src/ingress/http.ts)',
    payload: (k) => Buffer.concat([head(['POST /v2 HTTP/1.1', 'Host: relay', `api-key: ${k}`, `Content-Length: ${sol[0].length}`, `Content-Length: ${sol[0].length + 5}`]), sol[0], ping]),
  },
  {
    name: 'Content-Length repeated with the same value',
    finding: 'request smuggling',
    expect: { statuses: [200] },
    payload: (k) => v2(k, sol[1], [`Content-Length: ${sol[1].length}`]),
  },
  {
    name: 'Transfer-Encoding: chunked and Content-Length together',
    finding: 'request smuggling (TE.CL)',
    expect: { statuses: [400] },
    note: 'RFC 9112 6.1: a server may reject such a message; it must close the connection after answering',
    payload: (k) => {
      const chunked = Buffer.concat([Buffer.from(sol[2].length.toString(16) + '\r\n'), sol[2], Buffer.from('\r\n0\r\n\r\n')]);
      return Buffer.concat([head(['POST /v2 HTTP/1.1', 'Host: relay', `api-key: ${k}`, 'Transfer-Encoding: chunked', `Content-Length: ${sol[2].length}`]), chunked]);
    },
  },
  {
    name: 'two GET /ping pipelined in one write',
    finding: 'pipelining',
    expect: { statuses: [200, 200] },
    payload: () => Buffer.concat([ping, ping]),
  },
  {
    name: 'two POST /v2 pipelined, checked inline (synchronous answers)',
    finding: 'pipelining',
    expect: { statuses: [200, 200] },
    countAdmitted: true,
    payload: (k) => Buffer.concat([v2(k, sol[3]), v2(k, sol[4])]),
  },
  {
    name: 'two POST /v2 pipelined, checked on a worker (asynchronous answers, as under load)',
    finding: 'pipelining',
    on: 'offload',
    expect: { statuses: [200, 200] },
    known: 'docs/protocol.md#deviations: uWS aborts the pending answer of a pipelined request (it says the transaction is still processed; transactions_admitted shows how many were)',
    countAdmitted: true,
    payload: (k) => Buffer.concat([v2(k, sol[5]), v2(k, sol[6])]),
  },
  {
    name: 'two family A batches pipelined (each answer waits for its record fsync)',
    finding: 'pipelining',
    expect: { statuses: [202, 202] },
    known: 'docs/protocol.md#deviations: uWS aborts the pending answer of a pipelined request (it says the transaction is still processed; transactions_admitted shows how many were)',
    countAdmitted: true,
    payload: (k) => Buffer.concat([rpc(k, { method: 'svc_sendRawTransactionBatch', params: [hex(evm[0])] }), rpc(k, { method: 'svc_sendRawTransactionBatch', params: [hex(evm[1])] })]),
  },
  {
    name: 'HTTP/1.0 request',
    finding: 'HTTP/1.0',
    expect: { statuses: [505] },
    note: 'docs/protocol.md#limits: HTTP/1.0 is answered 505',
    payload: () => head(['GET /ping HTTP/1.0', 'Host: relay']),
  },
  {
    name: 'HTTP/1.1 request without Host',
    finding: 'missing Host',
    expect: { statuses: [400] },
    note: 'RFC 9112 3.2: a server MUST respond 400 to an HTTP/1.1 request without Host',
    known: 'docs/protocol.md#deviations: uWS cannot answer "missing Host" with a status',
    payload: () => head(['GET /ping HTTP/1.1']),
  },
  {
    name: 'obs-fold (header continuation line)',
    finding: 'obs-fold',
    expect: { statuses: [400] },
    note: 'RFC 9112 5.2: reject with 400 (or replace the fold with spaces)',
    payload: () => head(['GET /ping HTTP/1.1', 'Host: relay', 'X-Folded: a', ' b']),
  },
  {
    name: 'POST / JSON-RPC without Content-Type',
    finding: 'missing Content-Type',
    expect: { statuses: [415] },
    payload: (k) => rpc(k, { method: 'eth_sendRawTransaction', params: [hex(evm[2])] }, []),
  },
  {
    name: `${MANY_HEADERS} headers besides Host`,
    finding: 'too many headers',
    // Served is fine too (what must not happen is a close without a status); the probe below finds where 431 starts.
    expect: { statuses: [431], alternatives: [[200]] },
    note: 'RFC 6585 5: 431 Request Header Fields Too Large, if refused at all',
    payload: () => head(['GET /ping HTTP/1.1', 'Host: relay', ...Array.from({ length: MANY_HEADERS }, (_, i) => `X-H${i}: v`)]),
  },
  {
    name: `one ${BIG_HEADER}-byte header`,
    finding: 'oversized header',
    // Served is fine too: RFC 9110 leaves the limit to the server; what must not happen is refusing without a status.
    expect: { statuses: [431], alternatives: [[200]] },
    note: 'RFC 6585 5: 431 Request Header Fields Too Large, if refused at all',
    payload: () => head(['GET /ping HTTP/1.1', 'Host: relay', `X-Big: ${'a'.repeat(BIG_HEADER)}`]),
  },
  {
    name: 'chunked upload of a transaction to /v2',
    finding: 'control',
    expect: { statuses: [200] },
    payload: (k) => Buffer.concat([head(['POST /v2 HTTP/1.1', 'Host: relay', `api-key: ${k}`, 'Transfer-Encoding: chunked']), Buffer.from(sol[7].length.toString(16) + '\r\n'), sol[7], Buffer.from('\r\n0\r\n\r\n')]),
  },
  {
    name: 'invalid chunk size',
    finding: 'framing',
    expect: { statuses: [400] },
    payload: (k) => Buffer.concat([head(['POST /v2 HTTP/1.1', 'Host: relay', `api-key: ${k}`, 'Transfer-Encoding: chunked']), Buffer.from('zz\r\nabc\r\n0\r\n\r\n')]),
  },
  {
    name: 'request line that is not HTTP',
    finding: 'framing',
    expect: { statuses: [400] },
    known: 'uWS answers 505 to a request line it cannot read as HTTP/1.1: a status, not the 400 RFC 9112 suggests',
    payload: () => Buffer.from('HELLO THERE\r\n\r\n'),
  },
];

async function run(p) {
  const r = p.on === 'offload' ? offload : relay;
  const before = p.countAdmitted ? await admitted(r) : 0;
  const want = p.expect.statuses?.length ?? 1;
  const got = await probe(r.httpPort, p.payload(accounts.get(r).uuid), { want });
  let admittedDelta = null;
  if (p.countAdmitted) {
    await sleep(500);
    admittedDelta = (await admitted(r)) - before;
  }
  const asExpected = p.expect.closedWithoutStatus
    ? got.statuses.length === 0 && got.closed
    : [p.expect.statuses, ...(p.expect.alternatives ?? [])].some((want) => JSON.stringify(got.statuses) === JSON.stringify(want));
  return {
    probe: p.name,
    finding: p.finding,
    expected: p.expect.closedWithoutStatus ? 'closed without a status' : [p.expect.statuses, ...(p.expect.alternatives ?? [])].map((x) => x.join(', ')).join(' or '),
    actual_statuses: got.statuses,
    closed: got.closed,
    closed_after_ms: got.closed_after_ms,
    ...(admittedDelta !== null ? { transactions_admitted: admittedDelta } : {}),
    verdict: asExpected ? 'as expected' : p.known ? 'deviation (known limitation)' : 'deviation',
    ...(p.note ? { note: p.note } : {}),
    ...(p.known ? { known: p.known } : {}),
  };
}

/** Largest n for which `make(n)` is still answered 200, by bisection over [lo, hi]. */
async function largestAccepted(make, lo, hi) {
  const ok = async (n) => (await probe(relay.httpPort, make(n), { waitMs: SEARCH_WAIT_MS })).statuses[0] === 200;
  if (!(await ok(lo))) return null;
  if (await ok(hi)) return { accepted_up_to: hi, refused_from: null };
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (await ok(mid)) lo = mid;
    else hi = mid;
  }
  const refused = await probe(relay.httpPort, make(hi), { waitMs: SILENT_WAIT_MS });
  return { accepted_up_to: lo, refused_from: hi, refused_answer: refused.statuses, refused_closed_after_ms: refused.closed_after_ms };
}

// Probes that count admissions run one at a time; the rest together (most wait out the idle time-out).
const results = [];
for (const p of probes.filter((x) => x.countAdmitted)) results.push(await run(p));
results.push(...(await Promise.all(probes.filter((x) => !x.countAdmitted).map(run))));
const headerCount = await largestAccepted((n) => head(['GET /ping HTTP/1.1', 'Host: relay', ...Array.from({ length: n }, (_, i) => `X-H${i}: v`)]), 1, 200);
const headerBytes = await Promise.all(
  HEADER_SIZES.map(async (n) => {
    const got = await probe(relay.httpPort, head(['GET /ping HTTP/1.1', 'Host: relay', `X-Big: ${'a'.repeat(n)}`]));
    return { bytes: n, statuses: got.statuses, closed_after_ms: got.closed_after_ms };
  }),
);
const aliveAfter = relay.alive && (await relay.healthz()) === 200 && offload.alive && (await offload.healthz()) === 200;
await Promise.all([relay.stop(), offload.stop()]);

const unknown = results.filter((r) => r.verdict === 'deviation');
const lines = [
  `framing: ${results.length} probes against ${relay.base.replace('http://', '')}`,
  ...results.map(
    (r) =>
      `  ${r.verdict.padEnd(28)} ${r.probe}: expected ${r.expected}; got ${r.actual_statuses.length ? r.actual_statuses.join(', ') : 'no status'}${r.closed ? `, closed after ${r.closed_after_ms} ms` : ', left open'}${r.transactions_admitted !== undefined ? `, ${r.transactions_admitted} admitted` : ''}`,
  ),
  `  extra headers accepted (besides Host): up to ${headerCount?.accepted_up_to}; ${headerCount?.refused_from ?? 'none'} gets ${headerCount?.refused_answer?.length ? headerCount.refused_answer.join(', ') : 'no status'}${headerCount?.refused_closed_after_ms != null ? `, closed after ${headerCount.refused_closed_after_ms} ms` : ''}`,
  `  one header's value of ${headerBytes.map((h) => `${h.bytes} B: ${h.statuses.length ? h.statuses.join(', ') : 'no status'}${h.closed_after_ms != null ? ` (closed after ${h.closed_after_ms} ms)` : ''}`).join('; ')}`,
  `  relays alive and healthy afterwards: ${aliveAfter}`,
];
emit(
  NAME,
  {
    ok: aliveAfter,
    checks: results.map((r) => ({ what: r.probe, got: r.actual_statuses.length ? r.actual_statuses.join(', ') : r.closed ? 'closed without a status' : 'no status', pass: r.verdict === 'as expected' })),
    deviations: unknown.length,
    known_deviations: results.filter((r) => r.verdict.includes('known')).length,
    probes: results,
    header_count_limit: headerCount,
    header_value_sizes: headerBytes,
  },
  lines,
);
process.exit(aliveAfter ? 0 : 1);
