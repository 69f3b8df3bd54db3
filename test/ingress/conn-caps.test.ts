/**
 * Connection caps: a per-IP cap and a total cap below the
 * open-files limit; a connection over either is closed as soon as it is
 * accepted, so accept() keeps working and other clients still get answers.
 * Pinned on both acceptors with real sockets, and on the relay itself.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { loadAcceptor, type Acceptor, type us_listen_socket } from '../../src/ingress/uws.js';
import {
  ConnectionCaps,
  FD_RESERVE,
  addressKey,
  attachConnectionCaps,
  capLimits,
  kernelCensus,
  openFilesLimit,
  parseProcNetTcp,
  refusalLogger,
} from '../../src/ingress/conn-caps.js';
import type { Logger } from '../../src/obs/log.js';
import { RawConnection, rawExchange } from '../helpers/raw-http.js';
import { startTestRelay, eventually } from '../helpers/relay.js';

const PING = 'GET /ping HTTP/1.1\r\nHost: t\r\n\r\n';
/** Long enough to tell "closed by the cap" from an idle time-out (10 s on both acceptors). */
const PROMPTLY_MS = 3000;

const uwsAcceptor = loadAcceptor('auto');
const kinds: [string, Acceptor | null][] = [
  ['uWS', uwsAcceptor.kind === 'uws' ? uwsAcceptor : null],
  ['node:http', loadAcceptor('node')],
];
const noUws = `no uWebSockets.js build loads for Node ${process.versions.node} here`;

const closers: (() => unknown)[] = [];
after(async () => {
  for (const c of closers) await c();
});

async function cappedApp(a: Acceptor, caps: ConnectionCaps): Promise<number> {
  const app = a.uws.App();
  app.get('/ping', (res) => void res.cork(() => res.writeStatus('200 OK').end('pong')));
  app.any('/*', (res) => void res.cork(() => res.writeStatus('404 Not Found').end()));
  assert.ok(attachConnectionCaps(app, caps));
  const s = await new Promise<us_listen_socket>((resolve, reject) => app.listen('127.0.0.1', 0, (ls) => (ls ? resolve(ls) : reject(new Error('listen')))));
  closers.push(() => app.close());
  const port = a.uws.us_socket_local_port(s);
  caps.listening('127.0.0.1', port);
  return port;
}

/** A connection that has been answered once, so the server certainly counts it. */
async function held(port: number, localAddress = '127.0.0.1'): Promise<RawConnection> {
  const c = new RawConnection(port, { localAddress });
  await c.write(PING);
  assert.ok(await c.until(() => c.responses().length === 1), 'answered');
  assert.equal(c.closed, false);
  return c;
}

/** Connects, sends nothing, and tells whether the server closed the connection promptly. */
async function closedUnasked(port: number, localAddress = '127.0.0.1'): Promise<boolean> {
  const c = new RawConnection(port, { localAddress });
  await c.connected();
  await c.until(() => false, PROMPTLY_MS);
  c.destroy();
  return c.closed && c.data === '';
}

for (const [name, acceptor] of kinds) {
  const skip = acceptor ? false : noUws;

  test(`${name}: connections over the per-IP cap are closed at once; another client still connects and is answered`, { skip }, async () => {
    const caps = new ConnectionCaps({ maxConnections: 1000, maxPerIp: 4, ...(acceptor!.kind === 'uws' ? { census: kernelCensus } : {}) });
    const port = await cappedApp(acceptor!, caps);
    const kept: RawConnection[] = [];
    for (let i = 0; i < 4; i++) kept.push(await held(port));
    for (let i = 0; i < 3; i++) assert.equal(await closedUnasked(port), true, `extra connection ${i} closed`);
    assert.equal(caps.refusedPerIp, 3);
    // Another address is not affected, and the capped client's open connections keep working.
    const other = await rawExchange(port, PING, { localAddress: '127.0.0.2' });
    assert.equal(other.responses[0]?.body, 'pong');
    await kept[0]!.write(PING);
    assert.ok(await kept[0]!.until(() => kept[0]!.responses().length === 2));
    // Closing some frees room for the same client again (on uWS once the kernel has been recounted).
    kept.splice(0, 2).forEach((c) => c.destroy());
    await eventually(async () => (await rawExchange(port, PING, { waitMs: 1000 })).responses[0]?.body === 'pong', 5000, 'room again');
    kept.forEach((c) => c.destroy());
  });

  test(`${name}: connections over the total cap are closed at once, from any address`, { skip: skip || (acceptor!.kind === 'node' ? 'node:http makes room instead (next test)' : false) }, async () => {
    const caps = new ConnectionCaps({ maxConnections: 3, maxPerIp: 0 });
    const port = await cappedApp(acceptor!, caps);
    const kept = [await held(port, '127.0.0.1'), await held(port, '127.0.0.2'), await held(port, '127.0.0.3')];
    assert.equal(await closedUnasked(port, '127.0.0.4'), true);
    assert.equal(caps.refusedTotal, 1);
    assert.equal(caps.live, 3);
    kept.shift()!.destroy();
    await eventually(() => caps.live === 2, 3000, 'close counted');
    const again = await rawExchange(port, PING, { localAddress: '127.0.0.4' });
    assert.equal(again.responses[0]?.body, 'pong');
    kept.forEach((c) => c.destroy());
  });

  test(`${name}: at the total cap a new client is served: the longest-idle connection is closed for it, never one with a request in progress`, { skip: skip || (acceptor!.kind === 'uws' ? 'uWS cannot tell which connection is idle: it refuses the new one (previous test)' : false) }, async () => {
    const caps = new ConnectionCaps({ maxConnections: 3, maxPerIp: 0 });
    const port = await cappedApp(acceptor!, caps);
    const oldest = await held(port, '127.0.0.1');
    const newer = await held(port, '127.0.0.2');
    // A request in progress: its head sent, its body not yet.
    const busy = new RawConnection(port, { localAddress: '127.0.0.3' });
    await busy.write('POST /ping HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n');
    await eventually(() => caps.live === 3, 3000, 'three counted');
    // Two newcomers: each answered, the two idle ones closed oldest first, the busy one kept.
    const first = await held(port, '127.0.0.4');
    assert.ok(await oldest.until(() => oldest.closed, 3000), 'the longest-idle connection made room');
    assert.equal(newer.closed, false);
    const second = await held(port, '127.0.0.5');
    assert.ok(await newer.until(() => newer.closed, 3000), 'then the next longest-idle');
    assert.equal(busy.closed, false, 'a request in progress is never evicted');
    assert.equal(caps.evicted, 2);
    assert.equal(caps.refusedTotal, 0);
    [busy, first, second].forEach((c) => c.destroy());
  });

  test(`${name}: the relay closes connections over http.max_connections_per_ip and keeps answering others`, { skip }, async () => {
    const relay = await startTestRelay({ http: { acceptor: acceptor!.kind, max_connections_per_ip: 3 } });
    closers.push(() => relay.stop());
    const port = relay.relay.ports.http;
    const kept = [await held(port), await held(port), await held(port)];
    assert.equal(await closedUnasked(port), true);
    const other = await rawExchange(port, PING, { localAddress: '127.0.0.2' });
    assert.equal(other.responses[0]?.status, 200);
    assert.equal(other.responses[0]?.body, 'pong');
    // The admin listener is not capped.
    assert.equal((await relay.adminCall('GET', '/admin/accounts')).status, 200);
    kept.forEach((c) => c.destroy());
  });
}

test('caps without a census (node:http): exact per-address counts; a close frees its address', () => {
  const caps = new ConnectionCaps({ maxConnections: 5, maxPerIp: 2 });
  assert.deepEqual([caps.open('a'), caps.open('a'), caps.open('a')], [true, true, false]);
  assert.equal(caps.open('b'), true);
  caps.close('a');
  assert.equal(caps.count('a'), 1);
  assert.equal(caps.open('a'), true);
  assert.deepEqual([caps.open('c'), caps.open('c')], [true, true]);
  assert.equal(caps.live, 5);
  assert.equal(caps.open('d'), false);
  assert.deepEqual([caps.refusedPerIp, caps.refusedTotal], [1, 1]);
});

test('caps with a census (uWS): closes without an address are settled by a kernel recount at the cap, at most once a second', async () => {
  let now = 0;
  let kernel = new Map<string, number>();
  let calls = 0;
  const caps = new ConnectionCaps({
    maxConnections: 100,
    maxPerIp: 2,
    now: () => now,
    census: async () => {
      calls++;
      return new Map(kernel);
    },
  });
  assert.deepEqual([caps.open('a'), caps.open('a')], [true, true]);
  // One of them closes; uWS cannot say which address it had.
  caps.close(null);
  now = 5000;
  kernel = new Map([['a', 1]]);
  // The count says the cap is reached: refused, and the kernel is asked.
  assert.equal(caps.open('a'), false);
  await caps.settled();
  assert.deepEqual([calls, caps.count('a')], [1, 1]);
  assert.equal(caps.open('a'), true);
  // At the cap again within the second: no recount, refused on the upper bound.
  caps.close(null);
  now = 5500;
  assert.equal(caps.open('a'), false);
  await caps.settled();
  assert.deepEqual([calls, caps.count('a')], [1, 2]);
  // A second later the kernel is asked again; what happens while it answers is kept on top.
  now = 6600;
  assert.equal(caps.open('a'), false);
  assert.equal(caps.open('b'), true);
  caps.close(null);
  await caps.settled();
  assert.equal(calls, 2);
  assert.deepEqual([caps.count('a'), caps.count('b')], [1, 1]);
  assert.equal(caps.open('a'), true);
});

test('caps with a census: the address table is recounted before it outgrows the total cap', async () => {
  let calls = 0;
  const caps = new ConnectionCaps({
    maxConnections: 3,
    maxPerIp: 10,
    now: () => calls * 2000,
    census: async () => (calls++, new Map([['d', 1]])),
  });
  for (const k of ['a', 'b', 'c']) {
    assert.equal(caps.open(k), true);
    caps.close(null);
  }
  assert.equal(calls, 0);
  assert.equal(caps.open('d'), true);
  await caps.settled();
  assert.equal(calls, 1);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => caps.count(k)), [0, 0, 0, 1]);
});

test('the kernel census counts live connections to the port per client address', async () => {
  const server = net.createServer(() => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const sockets = await Promise.all(
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.2', '127.0.0.2'].map(
      (localAddress) => new Promise<net.Socket>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve(s));
      }),
    ),
  );
  const census = await kernelCensus(port, '127.0.0.1');
  assert.ok(census, '/proc/net/tcp is readable');
  assert.deepEqual(Object.fromEntries(census), { '127.0.0.1': 3, '127.0.0.2': 2 });
  sockets.forEach((s) => s.destroy());
  await new Promise<void>((r) => server.close(() => r()));
});

test('/proc/net/tcp{,6} rows: IPv4-mapped peers key like IPv4 ones, others as 32 hex digits; only live states to the listener count', () => {
  const text = [
    '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1',
    '   1: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2',
    '   2: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D432 01 00000000:00000000 00:00000000 00000000     0        0 3',
    '   3: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D433 08 00000000:00000000 00:00000000 00000000     0        0 4',
    '   4: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:D434 06 00000000:00000000 00:00000000 00000000     0        0 5',
    '   5: 00000000000000000000000001000000:1F91 00000000000000000000000001000000:D435 01 00000000:00000000 00:00000000 00000000     0        0 6',
  ].join('\n');
  const out = new Map<string, number>();
  parseProcNetTcp(text, ':1F90', null, out);
  assert.deepEqual(Object.fromEntries(out), { '127.0.0.1': 1, '00000000000000000000000000000001': 2 });
  // An outgoing connection from another local address can have the listener's port number: the local address tells them apart.
  const v4 = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1',
    '   1: 0200007F:1F90 0100007F:1F91 01 00000000:00000000 00:00000000 00000000     0        0 2',
  ].join('\n');
  const all = new Map<string, number>();
  parseProcNetTcp(v4, ':1F90', null, all);
  assert.deepEqual(Object.fromEntries(all), { '127.0.0.1': 2 });
  const listener = new Map<string, number>();
  parseProcNetTcp(v4, ':1F90', '127.0.0.1', listener);
  assert.deepEqual(Object.fromEntries(listener), { '127.0.0.1': 1 });
});

test('address keys: 4 bytes and IPv4-mapped 16 bytes are the same dotted key', () => {
  assert.equal(addressKey(new Uint8Array([10, 0, 0, 7]).buffer), '10.0.0.7');
  const mapped = new Uint8Array(16);
  mapped.set([0xff, 0xff, 10, 0, 0, 7], 10);
  assert.equal(addressKey(mapped.buffer), '10.0.0.7');
  const v6 = new Uint8Array(16);
  v6[15] = 1;
  assert.equal(addressKey(v6.buffer), '00000000000000000000000000000001');
});

test('the total cap derives from the open-files limit, less a reserve for everything else', () => {
  const cfg = (max = 0, perIp = 4096) => ({ max_connections: max, max_connections_per_ip: perIp });
  assert.deepEqual(capLimits(cfg(), 1_048_576), { maxConnections: 1_048_576 - FD_RESERVE, maxPerIp: 4096, warnings: [] });
  assert.equal(capLimits(cfg(), 20_000).maxConnections, 20_000 - FD_RESERVE);
  assert.deepEqual(capLimits(cfg(), 20_000).warnings, []);
  // A small limit: half of it, and a warning that says how to raise it.
  const low = capLimits(cfg(), 1024);
  assert.equal(low.maxConnections, 512);
  assert.match(low.warnings[0]!, /open-files limit \(1024\).*ulimit -n.*LimitNOFILE=/);
  // An explicit cap above what the limit leaves is lowered, with a warning.
  const over = capLimits(cfg(50_000), 20_000);
  assert.equal(over.maxConnections, 20_000 - FD_RESERVE);
  assert.match(over.warnings[0]!, /http\.max_connections = 50000/);
  assert.equal(capLimits(cfg(500), 20_000).maxConnections, 500);
  // Unknown limit (not Linux): a fixed default, said once.
  const unknown = capLimits(cfg(), null);
  assert.equal(unknown.maxConnections, 16_384);
  assert.equal(unknown.warnings.length, 1);
});

test('the open-files limit is read from /proc/self/limits', () => {
  const text = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            20000                40000                files\n';
  assert.deepEqual(openFilesLimit(text), { soft: 20000, hard: 40000 });
  assert.deepEqual(openFilesLimit('Max open files            unlimited            unlimited            files'), { soft: Infinity, hard: Infinity });
  const real = openFilesLimit();
  assert.ok(real && real.soft > 0 && real.soft <= real.hard);
});

test('refused connections are logged: the first at once, then the rest summed once per interval', async () => {
  const lines: Record<string, unknown>[] = [];
  const log = { warn: (fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
  const caps = new ConnectionCaps({ maxConnections: 1, maxPerIp: 0 });
  const refused = refusalLogger(caps, log, 50);
  caps.open('a');
  for (let i = 0; i < 5; i++) {
    assert.equal(caps.open('b'), false);
    refused();
  }
  assert.deepEqual(lines.map((l) => l.over_total), [1]);
  await eventually(() => lines.length === 2, 2000, 'summary line');
  assert.deepEqual(lines.map((l) => l.over_total), [1, 4]);
  // A quiet interval ends the window: the next refusal is logged at once again.
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(caps.open('b'), false);
  refused();
  assert.deepEqual(lines.map((l) => l.over_total), [1, 4, 1]);
});
