#!/usr/bin/env node
/**
 * fuzz: every door of a real relay driven with random and mutated input
 * (fast-check arbitraries and byte-level mutations of real signed
 * transactions, see fuzz-inputs.mjs): family A JSON-RPC single and batch,
 * plain text, family B JSON-RPC, /v2, /v2/batch, UDP, any JSON-RPC body on
 * POST /, the admin API, and mutated raw HTTP/1.1 requests over TCP.
 *
 * Checked per answer: no 5xx but the documented 503s (Server Busy, Upstream
 * Unavailable, shutting down, check failed, -32001/-32006/-32011), and no
 * Solana transaction that is not one of the signed originals ever answered
 * 200 (a mutated transaction accepted would be a forgery). Checked after all
 * doors: the relay is alive and healthy, its RSS stayed bounded, and a fresh
 * valid transaction is still admitted on every door. Counted: inputs per door
 * and kind, answers by status, connections closed without an answer, UDP
 * outcomes (txrelay_udp_datagrams_total), and the duration.
 *
 * Reproduce a run with its seed: `--seed N` (the JSON line carries it).
 *
 *   node scripts/reliability/fuzz.mjs [--count 5000] [--udp-count 100000] [--admin-count 2000] [--raw-count 2000] [--seed N] [--door NAME]
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import bs58 from 'bs58';
import { Pool } from 'undici';
import { startRelay, emit, deadline, args, sleep, sampler, byLabel, diffCounts, round, udpKernelDrops, sumMetric } from './lib.mjs';
import { doors, splitBundle } from './fuzz-inputs.mjs';
import { solanaTransfers, evmTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'fuzz';
/** Requests in flight at once per HTTP door: enough to keep the relay busy, few enough to stay under its capacity. */
const IN_FLIGHT = 16;
/** A raw connection that has neither answered nor closed by then is counted as silent (uWS's idle time-out is ~10 s). */
const RAW_WAIT_MS = 400;
const RAW_IN_FLIGHT = 64;
/** Answers that are documented (docs/protocol.md#errors): anything else in 5xx is a violation. */
const DOOR_STATUSES = new Set([200, 202, 400, 401, 404, 413, 415, 429, 503, 605, 606, 607]);
const ADMIN_STATUSES = new Set([200, 201, 400, 401, 404, 413, 507]);
const DOCUMENTED_503 = /Server Busy|Upstream Unavailable|Service Unavailable|"code":-32001|"code":-32006|"code":-32011/;
/**
 * RSS bound: the relay's memory is bounded by construction (slab 32 MiB, lanes,
 * dedup table allocated at start); growing half a GiB over its size after
 * start-up would mean something unbounded.
 */
const RSS_GROWTH_LIMIT_MB = 512;
/** Examples kept per door and problem, for the report. */
const EXAMPLES = 3;

const o = args({ count: 5000, udp_count: 100_000, admin_count: 2000, raw_count: 2000, seed: Number(randomBytes(4).readUInt32LE(0) >>> 1), door: 'all' });
deadline(NAME, 420_000);

const tipKey = randomBytes(32);
const tip = bs58.encode(tipKey);
const relay = await startRelay({
  env: {
    TXRELAY_LIMITS_IP_RPS: '1000000',
    TXRELAY_LIMITS_IP_BURST: '2000000',
    TXRELAY_UDP_IP_RPS: '1000000',
    TXRELAY_UDP_IP_BURST: '2000000',
    TXRELAY_SOLANA_TIP_ACCOUNTS: tip,
  },
});
const limits = { tps: 1_000_000, burst: 2_000_000 };
const main = await relay.createAccount({ plan: 'paid', evm: limits, solana: { ...limits, min_tip_lamports: 1000 } });
const revoked = await relay.createAccount({});
await relay.adminCall('DELETE', `/admin/accounts/${revoked.uuid}`);
const base = {
  sol: solanaTransfers(64),
  solTip: solanaTransfers(32, { to: () => tipKey, lamports: () => 5000n }),
  evm: await evmTransfers(64, { chainId: 1 }),
  key: main.uuid,
  revoked: revoked.uuid,
  adminToken: relay.token,
};
const originals = new Set([...base.sol, ...base.solTip].map((b) => b.toString('hex')));
const arbs = doors(base);
const counts = { 'solana-v2': o.count, 'solana-batch': o.count, 'solana-rpc': o.count, 'evm-rpc': o.count, 'evm-batch': o.count, 'evm-text': o.count, jsonrpc: o.count, admin: o.admin_count, udp: o.udp_count, 'http-raw': o.raw_count };
const names = o.door === 'all' ? Object.keys(counts) : [o.door];

const rssStart = relay.rssMb();
const rss = sampler(() => relay.rssMb(), 250);
const created = []; // accounts the admin fuzz made, for its PATCH and DELETE
const t0 = performance.now();

/** Per-door tally. */
function tally(door, n) {
  return { door, inputs: n, by_kind: {}, by_status: {}, closed_without_answer: 0, client_refused: 0, violations: 0, examples: [], seconds: 0 };
}
function note(t, problem, input, detail) {
  t.violations++;
  if (t.examples.filter((e) => e.problem === problem).length < EXAMPLES) {
    const body = input.req?.body ?? input.datagram ?? input.bytes;
    const text = Buffer.isBuffer(body) ? body.toString('hex') : String(body ?? '');
    t.examples.push({ problem, kind: input.kind, path: input.req?.path, detail, input: text.length > 240 ? text.slice(0, 240) + '…' : text });
  }
}

async function runPool(items, inFlight, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function httpDoor(door, inputs) {
  const t = tally(door, inputs.length);
  const pool = new Pool(door === 'admin' ? relay.admin : relay.base, { connections: 8, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const allowed = door === 'admin' ? ADMIN_STATUSES : DOOR_STATUSES;
  await runPool(inputs, IN_FLIGHT, async (input) => {
    t.by_kind[input.kind] = (t.by_kind[input.kind] ?? 0) + 1;
    const req = { ...input.req, headers: Object.fromEntries(Object.entries(input.req.headers).filter(([, v]) => v !== undefined)) };
    if (door === 'admin' && req.path.includes('CREATED')) req.path = req.path.replace('CREATED', created.length ? created[Math.floor(Math.random() * created.length)] : randomUUID());
    let status;
    let text;
    let duplicate = false;
    try {
      const r = await pool.request(req);
      status = r.statusCode;
      duplicate = r.headers['x-svc-duplicate'] === 'true';
      text = await r.body.text();
    } catch (e) {
      if (e.code === 'UND_ERR_INVALID_ARG') t.client_refused++; // a header value undici will not send
      else {
        t.closed_without_answer++;
        if (t.examples.filter((x) => x.problem === 'closed without an answer').length < EXAMPLES) {
          t.examples.push({ problem: 'closed without an answer', kind: input.kind, path: req.path, detail: e.code ?? e.message, input: String(Buffer.isBuffer(req.body) ? req.body.toString('hex') : req.body ?? '').slice(0, 240) });
        }
      }
      return;
    }
    t.by_status[status] = (t.by_status[status] ?? 0) + 1;
    if (door === 'admin' && status === 201 && input.kind === 'create') {
      try {
        created.push(JSON.parse(text).uuid);
      } catch {}
    }
    if (!allowed.has(status)) note(t, `status ${status}`, input, text.slice(0, 200));
    else if (status === 503 && !DOCUMENTED_503.test(text)) note(t, 'undocumented 503', input, text.slice(0, 200));
    if (status === 200 && door.startsWith('solana')) {
      let forged = input.forgedSolana;
      if (input.splitBundle) forged = (splitBundle(input.req.body) ?? []).filter((x) => !originals.has(x.toString('hex')));
      // A copy whose first signature (bundle: ordered signatures) was already seen is a duplicate by
      // definition (docs/protocol.md#duplicates) and answered from the dedup table without being forwarded again.
      if (forged?.length && duplicate) t.altered_copies_answered_duplicate = (t.altered_copies_answered_duplicate ?? 0) + 1;
      else if (forged?.length) note(t, 'accepted a Solana transaction that is not a signed original', input, text.slice(0, 200));
    }
  });
  await pool.close();
  return t;
}

async function udpDoor(inputs) {
  const t = tally('udp', inputs.length);
  const m0 = await relay.metrics();
  const drops0 = udpKernelDrops(relay.udpPort);
  const s = dgram.createSocket('udp4');
  await new Promise((r) => s.bind(0, '127.0.0.1', r));
  let i = 0;
  // Paced (~40k/s) so that what is measured is the relay's handling, not the kernel's buffer (junk-udp floods).
  while (i < inputs.length) {
    for (const end = Math.min(inputs.length, i + 200); i < end; i++) {
      t.by_kind[inputs[i].kind] = (t.by_kind[inputs[i].kind] ?? 0) + 1;
      s.send(inputs[i].datagram, relay.udpPort, '127.0.0.1');
    }
    await sleep(5);
  }
  const handled = async () => sumMetric(await relay.metrics(), 'txrelay_udp_datagrams_total') - sumMetric(m0, 'txrelay_udp_datagrams_total');
  const until = Date.now() + 10_000;
  while (Date.now() < until && (await handled()) + udpKernelDrops(relay.udpPort) - drops0 < inputs.length) await sleep(100);
  s.close();
  t.kernel_drops = udpKernelDrops(relay.udpPort) - drops0;
  t.handled = await handled();
  t.by_outcome = diffCounts(byLabel(await relay.metrics(), 'txrelay_udp_datagrams_total', 'outcome'), byLabel(m0, 'txrelay_udp_datagrams_total', 'outcome'));
  return t;
}

async function rawDoor(inputs) {
  const t = tally('http-raw', inputs.length);
  t.silent = 0;
  await runPool(inputs, RAW_IN_FLIGHT, (input) =>
    new Promise((resolve) => {
      t.by_kind[input.kind] = (t.by_kind[input.kind] ?? 0) + 1;
      const sock = net.connect(relay.httpPort, '127.0.0.1');
      const chunks = [];
      let closed = false;
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        sock.destroy();
        const statuses = [...Buffer.concat(chunks).toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
        for (const st of statuses) t.by_status[st] = (t.by_status[st] ?? 0) + 1;
        if (statuses.length === 0) closed ? t.closed_without_answer++ : t.silent++;
        for (const st of statuses) if (st >= 500 && st !== 503 && st !== 505) note(t, `status ${st}`, input, null);
        resolve();
      };
      const timer = setTimeout(done, RAW_WAIT_MS);
      sock.on('data', (d) => chunks.push(d));
      sock.on('error', () => {});
      sock.on('close', () => {
        closed = true;
        done();
      });
      sock.write(input.bytes);
    }),
  );
  return t;
}

const results = [];
let crashedAt = null;
for (const [i, door] of names.entries()) {
  const inputs = fc.sample(arbs[door], { numRuns: counts[door], seed: o.seed + i });
  const t1 = performance.now();
  const t = door === 'udp' ? await udpDoor(inputs) : door === 'http-raw' ? await rawDoor(inputs) : await httpDoor(door, inputs);
  t.seconds = round((performance.now() - t1) / 1000);
  results.push(t);
  if (!relay.alive) {
    crashedAt = door;
    break;
  }
}
const seconds = round((performance.now() - t0) / 1000);

// Afterwards: still healthy, and a fresh valid transaction is admitted on every door.
const after = {};
if (relay.alive) {
  const [s1, s2, s3, s4] = solanaTransfers(4);
  const [tipTx] = solanaTransfers(1, { to: () => tipKey, lamports: () => 5000n });
  const [e1, e2, e3] = (await evmTransfers(3, { chainId: 1 })).map((b) => '0x' + b.toString('hex'));
  const post = async (path, headers, body) => {
    const r = await fetch(relay.base + path, { method: 'POST', headers, body });
    await r.arrayBuffer();
    return r.status;
  };
  const rpc = (auth, call) => post('/', { 'content-type': 'application/json', ...auth }, JSON.stringify({ jsonrpc: '2.0', id: 1, ...call }));
  const bundleBody = (txs) => {
    const h = Buffer.alloc(1 + 2 * txs.length);
    h[0] = txs.length;
    txs.forEach((x, j) => h.writeUInt16LE(x.length, 1 + 2 * j));
    return Buffer.concat([h, ...txs]);
  };
  after['solana-v2'] = (await post('/v2', { 'api-key': main.uuid }, s1)) === 200;
  after['solana-rpc'] = (await rpc({ 'api-key': main.uuid }, { method: 'sendTransaction', params: [s2.toString('base64')] })) === 200;
  after['solana-batch'] = (await post('/v2/batch', { 'api-key': main.uuid }, bundleBody([s3, tipTx]))) === 200;
  after['evm-rpc'] = (await rpc({ authorization: `Bearer ${main.uuid}` }, { method: 'eth_sendRawTransaction', params: [e1] })) === 202;
  after['evm-batch'] = (await rpc({ authorization: `Bearer ${main.uuid}` }, { method: 'svc_sendRawTransactionBatch', params: [e2] })) === 202;
  after['evm-text'] = (await post(`/v2/svc_send_raw_transaction?auth=${main.uuid}`, { 'content-type': 'text/plain' }, e3)) === 202;
  const admitted0 = await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' });
  const s = dgram.createSocket('udp4');
  const p = Buffer.alloc(23 + s4.length);
  p.set([43, 6, 58, 10, 0]);
  Buffer.from(main.uuid.replaceAll('-', ''), 'hex').copy(p, 5);
  p.writeUInt16LE(s4.length, 21);
  p.set(s4, 23);
  await new Promise((r) => s.send(p, relay.udpPort, '127.0.0.1', r));
  s.close();
  let udpOk = false;
  for (let k = 0; k < 50 && !udpOk; k++) {
    await sleep(20);
    udpOk = (await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' })) > admitted0;
  }
  after.udp = udpOk;
  after.admin = (await relay.adminCall('POST', '/admin/accounts', {})).status === 201;
  after.healthz = (await relay.healthz()) === 200;
}
const rssStats = rss.stop();
const errorLines = relay.errorLines();
// A check that fails on the node (not on the transaction) is answered retry-safe and counted here.
const nodeFailures = relay.alive ? { verify_failed: await relay.metric('txrelay_verify_failed_total'), worker_restarts: await relay.metric('txrelay_verify_worker_restarts_total') } : null;
const alive = relay.alive;
await relay.stop();

const violations = results.reduce((a, t) => a + t.violations, 0);
const allAfter = Object.values(after).length > 0 && Object.values(after).every(Boolean);
const rssOk = rssStats.max - rssStart <= RSS_GROWTH_LIMIT_MB;
const ok = alive && crashedAt === null && violations === 0 && allAfter && rssOk;
const inputs = results.reduce((a, t) => a + t.inputs, 0);
emit(
  NAME,
  {
    ok,
    seed: o.seed,
    inputs,
    seconds,
    crashed_during: crashedAt,
    violations,
    relay_error_log_lines: errorLines,
    node_side_check_failures: nodeFailures,
    rss_mb: { after_start: rssStart, max: rssStats.max, end: rssStats.last, growth_limit: RSS_GROWTH_LIMIT_MB },
    valid_after: after,
    doors: results,
  },
  [
    `fuzz: ${inputs} inputs over ${results.length} doors in ${seconds} s (seed ${o.seed})`,
    ...results.map(
      (t) =>
        `  ${t.door.padEnd(13)} ${String(t.inputs).padStart(6)} in ${String(t.seconds).padStart(5)} s: ${JSON.stringify(t.by_status)}` +
        (t.door === 'udp' ? ` handled ${t.handled}, kernel drops ${t.kernel_drops}, ${JSON.stringify(t.by_outcome)}` : '') +
        (t.closed_without_answer ? `; closed without an answer ${t.closed_without_answer}` : '') +
        (t.silent ? `; silent ${t.silent}` : '') +
        (t.client_refused ? `; not sendable ${t.client_refused}` : '') +
        (t.altered_copies_answered_duplicate ? `; altered copies answered as duplicates ${t.altered_copies_answered_duplicate}` : '') +
        (t.violations ? `; VIOLATIONS ${t.violations}` : ''),
    ),
    `  relay ${alive ? 'alive' : 'DEAD'}${crashedAt ? ` (died during ${crashedAt})` : ''}; error log lines ${errorLines}; checks failed on the node ${nodeFailures?.verify_failed}, worker restarts ${nodeFailures?.worker_restarts}; RSS ${rssStart} MB after start, max ${rssStats.max}, end ${rssStats.last}`,
    `  valid transaction admitted afterwards: ${Object.entries(after).map(([k, v]) => `${k} ${v ? 'yes' : 'NO'}`).join(', ')}`,
    ...results.flatMap((t) => t.examples.map((e) => `  example (${t.door}, ${e.problem}): ${e.kind} ${e.path ?? ''} ${e.detail ?? ''} ${e.input}`)),
  ],
);
process.exit(ok ? 0 : 1);
