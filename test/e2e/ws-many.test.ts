/**
 * 10,000 WebSockets at once on one relay (docs/protocol.md#websocket), with
 * its memory bounded: the relay runs as a child process (`txrelay serve`;
 * client and server descriptors would not fit in one process's open-files
 * limit), the test opens 10,000 sockets with the `ws` package in batches,
 * subscribes each to statuses, and checks
 *   - every socket is open (`txrelay_websockets_open` on the admin port),
 *   - the relay's RSS grew by less than RSS_PER_SOCKET_BOUND per socket,
 *   - one transaction sent over HTTP is pushed to its subscribers (all
 *     10,000 sockets are the one account's),
 *   - after every client closes, the gauge is back to 0.
 *
 * The child's configuration keeps the per-address caps out of the way: all
 * 10,000 sockets come from 127.0.0.1 (`http.max_connections_per_ip = 0`, the
 * per-IP bucket high), each upgrade and each subscription is a status
 * read (`status.reads_per_s` / `reads_burst` high), and the account's
 * subscriptions are capped (`ws.max_account_subscriptions`, raised here). TXRELAY_TEST_ACCEPTOR and
 * TXRELAY_TEST_ACCEPTORS pick the child's acceptor as they do for the
 * in-process relays (test/helpers/relay.ts).
 *
 * Skips with one line when the open-files limit cannot hold the sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { eventually } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const TOKEN = 'ws-many-admin-token';
const SOCKETS = 10_000;
const BATCH = 500;
/** Each process holds SOCKETS descriptors; the relay keeps 1024 for everything else (http.max_connections = 0), plus room for the rest. */
const FDS_NEEDED = SOCKETS + 1024 + 512;
/**
 * Growth of the relay's RSS per open, subscribed socket, at most. Measured
 * here (10,000 sockets, Node 20, 2 cores; RSS with them all open and
 * subscribed minus RSS before, over 10,000):
 *   uWebSockets.js (the default)        2.2 - 2.5 KiB per socket (six runs)
 *   node:http (http.acceptor = "node")  11.5 - 12.9 KiB per socket (five runs)
 * The bound is about 2.5x the larger figure. A buffer kept per socket (64 KiB
 * and up) or a zlib context (permessage-deflate, which every `ws` client and
 * browser offers; zlib's default deflate state alone is 256 KiB) breaks it;
 * allocator and heap-growth noise do not.
 */
const RSS_PER_SOCKET_BOUND = 32 * 1024;

function fdLimit(): number {
  const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
  return out === 'unlimited' ? Infinity : Number(out);
}

/** The relay's resident set (VmRSS in /proc/<pid>/status), in bytes. */
function rss(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

const MiB = (b: number) => (b / 1048576).toFixed(1);

interface Child {
  child: ChildProcess;
  base: string;
  admin: string;
  /** The acceptor it started with (a uWebSockets.js build or `node:http`), from its start-up line. */
  acceptor: string;
  out: () => string;
  exited: Promise<void>;
}

/** `txrelay serve` on ports it picks (read back from its start-up line), with `config` as its file. */
async function serve(dir: string, config: Record<string, unknown>): Promise<Child> {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(process.execPath, [CLI, 'serve', '-c', file], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-16_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ready: { http: string; admin: string; acceptor: string } | undefined;
  await eventually(
    () => {
      const line = out.split('\n').find((l) => l.includes('"txrelay listening"'));
      if (line) ready = JSON.parse(line);
      return ready !== undefined || child.exitCode !== null;
    },
    20_000,
    'the relay to start',
  );
  if (!ready) throw new Error(`relay exited ${child.exitCode}: ${out}`);
  return { child, base: `http://${ready.http}`, admin: `http://${ready.admin}`, acceptor: ready.acceptor, out: () => out, exited };
}

async function stop(c: Child): Promise<void> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  c.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), 10_000)));
  if ((await Promise.race([c.exited, slow])) === 'slow') {
    c.child.kill('SIGKILL');
    await c.exited;
  }
  clearTimeout(timer);
}

async function metric(admin: string, name: string): Promise<number> {
  const text = await (await fetch(admin + '/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line === undefined ? NaN : Number(line.split(' ').pop());
}

/** One client socket: its subscription and every status it was pushed, as `id state`. */
interface Peer {
  ws: WebSocket;
  sub: number | null;
  pushed: string[];
  closed: boolean;
}

/** Opens a socket, subscribes it, and resolves once the subscription is answered. */
function openPeer(url: string, key: string, ms: number): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'api-key': key } });
    const peer: Peer = { ws, sub: null, pushed: [], closed: false };
    const timer = setTimeout(() => fail(new Error(`no subscription within ${ms} ms`)), ms);
    const fail = (e: Error) => {
      clearTimeout(timer);
      ws.terminate();
      reject(e);
    };
    ws.on('open', () => ws.send('{"jsonrpc":"2.0","id":1,"method":"txrelay_subscribe","params":["statuses"]}'));
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.id === 1) {
        if (typeof m.result !== 'number') return fail(new Error(`subscribe answered ${JSON.stringify(m.error ?? m.result)}`));
        peer.sub = m.result;
        clearTimeout(timer);
        resolve(peer);
      } else if (m.method === 'txrelay_status') {
        peer.pushed.push(`${m.params.result.id} ${m.params.result.state}`);
      }
    });
    ws.on('close', () => (peer.closed = true));
    ws.on('error', (e) => fail(e));
    // The status only: the request carried the key in a header, and the answer's body is not needed.
    ws.on('unexpected-response', (_req, res) => fail(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

test(`${SOCKETS} WebSockets open at once on a relay process, each subscribed, with bounded memory; a push reaches them; all close`, { timeout: 120_000 }, async (t) => {
  const limit = fdLimit();
  if (limit < FDS_NEEDED) {
    t.skip(`open-files limit ${limit} < ${FDS_NEEDED} (ulimit -n): skipping the ${SOCKETS}-socket test`);
    return;
  }
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-ws-many-'));
  const up = await startUpstream();
  const peers: Peer[] = [];
  let relay: Child | undefined;
  try {
    relay = await serve(dir, {
      http: {
        host: '127.0.0.1',
        port: 0,
        max_connections_per_ip: 0,
        ...(process.env.TXRELAY_TEST_ACCEPTOR ? { acceptor: process.env.TXRELAY_TEST_ACCEPTOR } : {}),
        ...(process.env.TXRELAY_TEST_ACCEPTORS ? { acceptors: Number(process.env.TXRELAY_TEST_ACCEPTORS) } : {}),
      },
      udp: { enabled: false },
      admin: { host: '127.0.0.1', port: 0, token: TOKEN },
      storage: { data_dir: dir },
      log: { level: 'info' },
      workers: { threads: 1 },
      limits: { ip_rps: 1_000_000, ip_burst: 2_000_000 },
      // Each upgrade and each subscription is a read of the one account: 2 x SOCKETS in a few seconds.
      status: { reads_per_s: 100_000, reads_burst: 200_000 },
      // Every socket is the one account's, each with a subscription: the per-account cap out of the way too.
      ws: { max_account_subscriptions: SOCKETS + 1 },
      solana: { rpc_upstreams: [up.url] },
    });
    const r = relay;
    const pid = r.child.pid!;
    const created = await fetch(r.admin + '/admin/accounts', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'paid' }),
    });
    assert.equal(created.status, 201);
    const key = ((await created.json()) as { uuid: string }).uuid;
    const url = r.base.replace('http', 'ws') + '/ws';

    // Warm-up: the door's code paths run once before the baseline.
    const warm = await openPeer(url, key, 5000);
    warm.ws.close();
    await eventually(async () => (await metric(r.admin, 'txrelay_websockets_open')) === 0, 5000, 'the warm-up socket to close');
    const before = rss(pid);

    const tOpen = Date.now();
    for (let i = 0; i < SOCKETS; i += BATCH) {
      const batch = await Promise.all(Array.from({ length: Math.min(BATCH, SOCKETS - i) }, () => openPeer(url, key, 15_000)));
      peers.push(...batch);
    }
    const openMs = Date.now() - tOpen;
    assert.equal(new Set(peers.map((p) => p.sub)).size, SOCKETS, 'each subscription has its own id');
    assert.equal(await metric(r.admin, 'txrelay_websockets_open'), SOCKETS, 'every socket open on the relay');
    assert.equal(peers.filter((p) => p.closed).length, 0, 'no socket closed');
    const after = rss(pid);
    const perSocket = (after - before) / SOCKETS;
    t.diagnostic(
      `acceptor ${r.acceptor}: ${SOCKETS} sockets opened and subscribed in ${openMs} ms; ` +
        `relay RSS ${MiB(before)} -> ${MiB(after)} MiB, ${(perSocket / 1024).toFixed(2)} KiB per socket (bound ${RSS_PER_SOCKET_BOUND / 1024} KiB)`,
    );
    assert.ok(perSocket < RSS_PER_SOCKET_BOUND, `relay RSS grew ${(perSocket / 1024).toFixed(2)} KiB per socket, over the bound of ${RSS_PER_SOCKET_BOUND / 1024} KiB`);

    // One transaction over HTTP: every subscriber of the account is pushed queued, then forwarded.
    const tx = legacyTransfer();
    const sent = await fetch(r.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }] }),
    });
    assert.equal(sent.status, 200);
    assert.equal(((await sent.json()) as { result: string }).result, tx.signature);
    const want = [`${tx.signature} queued`, `${tx.signature} forwarded`];
    const tPush = Date.now();
    const sample = [0, 1, BATCH - 1, BATCH, SOCKETS / 2, SOCKETS - 2, SOCKETS - 1].map((i) => peers[i]!);
    await eventually(() => sample.every((p) => p.pushed.length >= 2), 10_000, 'the pushes to the sampled sockets');
    for (const [n, p] of sample.entries()) assert.deepEqual(p.pushed, want, `sampled socket ${n}`);
    // And every other subscriber, too: the account's 10,000 sockets each got both.
    await eventually(() => peers.every((p) => p.pushed.length >= 2), 20_000, 'the pushes to every socket').catch(() => {
      throw new Error(`${peers.filter((p) => p.pushed.length < 2).length} of ${SOCKETS} sockets short of their two pushes`);
    });
    assert.equal(peers.filter((p) => p.pushed.join() !== want.join()).length, 0, 'every socket pushed queued then forwarded, nothing else');
    const pushMs = Date.now() - tPush;
    await up.waitForCalls(1);
    assert.equal(up.calls().length, 1, 'the transaction forwarded once');

    // Every client closes; the relay counts them all closed.
    const tClose = Date.now();
    for (let i = 0; i < SOCKETS; i += BATCH) {
      await Promise.all(
        peers.slice(i, i + BATCH).map(
          (p) =>
            new Promise<void>((resolve) => {
              if (p.ws.readyState === WebSocket.CLOSED) return resolve();
              p.ws.once('close', () => resolve());
              p.ws.close(1000);
            }),
        ),
      );
    }
    await eventually(async () => (await metric(r.admin, 'txrelay_websockets_open')) === 0, 15_000, 'every socket counted closed');
    t.diagnostic(`pushes to all ${SOCKETS} in ${pushMs} ms; closed in ${Date.now() - tClose} ms; relay RSS after closing ${MiB(rss(pid))} MiB; ${Date.now() - t0} ms in all`);
  } catch (e) {
    if (relay) t.diagnostic(`relay output tail:\n${relay.out().slice(-3000)}`);
    throw e;
  } finally {
    for (const p of peers) p.ws.terminate();
    if (relay) await stop(relay);
    await up.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
