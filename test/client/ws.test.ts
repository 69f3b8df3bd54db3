/**
 * The WebSocket client (src/client/ws.ts) against a real in-process relay
 * and real upstream servers, with transactions signed by real chain
 * libraries. Dropped connections are made by stopping the relay, by the
 * relay itself (4001, 1001), or by a TCP proxy between client and relay that
 * swallows the relay's answers and then cuts the connection.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { WebSocket as UndiciWebSocket } from 'undici';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer } from '../helpers/solana.js';
import { RelaySocket, RelaySocketError, socketUrl, type RelaySocketEvents, type RelaySocketOptions, type StatusObject } from '../../src/client/index.js';

/** Short waits, so that reconnects take milliseconds. */
const FAST = { initialMs: 20, maxMs: 200, jitter: 0.2 };

async function setup(t: TestContext, extra: Record<string, unknown> = {}): Promise<{ r: TestRelay; up: TestUpstream; key: string; id: number }> {
  const up = await startUpstream();
  t.after(() => up.close());
  const r = await startTestRelay({ evm: { upstreams: { paid: [up.url], free: [up.url] } }, solana: { rpc_upstreams: [up.url] }, ...extra });
  t.after(() => r.stop());
  const acct = await r.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } });
  return { r, up, key: acct.uuid, id: acct.id };
}

function socket(t: TestContext, o: Partial<RelaySocketOptions> & { url: string; apiKey: string }): RelaySocket {
  const s = new RelaySocket({ reconnect: FAST, ...o });
  t.after(() => s.close());
  return s;
}

/** The next `event`; made before what causes it (events fire synchronously). */
function next<K extends keyof RelaySocketEvents>(s: RelaySocket, event: K, ms = 10_000): Promise<Parameters<RelaySocketEvents[K]>[0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out waiting for the ${event} event`));
    }, ms);
    const off = s.on(event, ((x: Parameters<RelaySocketEvents[K]>[0]) => {
      clearTimeout(timer);
      off();
      resolve(x);
    }) as RelaySocketEvents[K]);
  });
}

/** Every status pushed to one listener, to wait on. */
function collect(s: RelaySocket): { seen: StatusObject[]; off: () => void; until(id: string, state: string): Promise<void> } {
  const seen: StatusObject[] = [];
  const off = s.subscribeStatuses((st) => seen.push(st));
  return {
    seen,
    off,
    until: (id, state) =>
      eventually(() => seen.some((x) => x.id === id && x.state === state), 5000, `a ${state} push for ${id}; got ${JSON.stringify(seen.map((x) => [x.id, x.state]))}`),
  };
}

/** `eth_sendRawTransaction` over HTTP, the way another process of the same account would send. */
async function sendOverHttp(r: TestRelay, key: string, hex: string): Promise<void> {
  const res = await fetch(r.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [hex] }),
  });
  assert.equal(res.status, 202, await res.text());
}

const isKind = (kind: string, re?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof RelaySocketError, `a RelaySocketError, got ${String(e)}`);
  assert.equal(e.kind, kind, e.message);
  if (re) assert.match(e.message, re);
  return true;
};

/**
 * A TCP proxy in front of the relay: `hold()` swallows everything the relay
 * sends (its answers never arrive), `cut()` drops every connection.
 *
 * A connection the relay ends is reset on the relay's side. The relay listens
 * without SO_REUSEADDR (uWS's exclusive port), so each connection it closes
 * first would leave a TIME_WAIT on its port that keeps a restarted relay from
 * binding that port for a minute; a reset leaves none.
 */
async function startProxy(t: TestContext, target: string): Promise<{ url: string; hold(): void; cut(): void }> {
  const port = Number(new URL(target).port);
  const pairs = new Set<[net.Socket, net.Socket]>();
  let holding = false;
  const server = net.createServer((client) => {
    const relay = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const pair: [net.Socket, net.Socket] = [client, relay];
    pairs.add(pair);
    client.on('data', (d) => relay.write(d));
    relay.on('data', (d) => {
      if (!holding) client.write(d);
    });
    relay.on('end', () => {
      client.end();
      relay.resetAndDestroy();
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      relay.destroy();
    };
    for (const s of pair) {
      s.on('close', end);
      s.on('error', end);
    }
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  t.after(
    () =>
      new Promise<void>((res) => {
        server.close(() => res());
        for (const pair of [...pairs]) for (const x of pair) x.destroy();
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: () => (holding = true),
    cut: () => {
      holding = false;
      for (const [c, r] of [...pairs]) {
        c.destroy();
        r.destroy();
      }
    },
  };
}

test('the url may be the http(s) or ws(s) base or the /ws url', () => {
  assert.equal(socketUrl('http://127.0.0.1:8080').toString(), 'ws://127.0.0.1:8080/ws');
  assert.equal(socketUrl('https://relay.example/prefix/').toString(), 'wss://relay.example/prefix/ws');
  assert.equal(socketUrl('wss://relay.example/ws').toString(), 'wss://relay.example/ws');
  assert.throws(() => socketUrl('ftp://relay.example'), TypeError);
});

test('sends both families over one socket, answers matched by id; statuses; a relay error carries code and retry advice', async (t) => {
  const { r, up, key } = await setup(t);
  const s = socket(t, { url: r.base, apiKey: key });
  await next(s, 'open');
  assert.equal(s.state, 'open');

  const sol = legacyTransfer();
  const sol2 = legacyTransfer();
  const evm = await signed1559({ nonce: 0 });
  const evm2 = await signed1559({ nonce: 1 });
  // Four calls at once: each answer finds its own call.
  const got = await Promise.all([s.sendSolana(sol.bytes), s.sendEvm(evm.hex), s.sendSolana(Buffer.from(sol2.bytes).toString('base64')), s.sendEvm(evm2.hex)]);
  assert.deepEqual(got, [sol.signature, evm.hash, sol2.signature, evm2.hash]);
  await up.waitForCalls(4);

  const st = await s.statuses([sol.signature, evm.hash, 'never-sent']);
  assert.deepEqual(
    st.map((x) => [x.id, x.door]),
    [
      [sol.signature, 'ws'],
      [evm.hash, 'ws'],
      ['never-sent', null],
    ],
  );
  assert.equal(st[2]!.state, 'unknown');
  await eventually(async () => (await s.statuses([evm.hash]))[0]!.state === 'forwarded', 5000, 'forwarded');

  // Over 100 ids: several calls, one answer in order.
  const many = Array.from({ length: 150 }, (_, i) => `id-${i}`);
  const all = await s.statuses([...many, evm.hash]);
  assert.equal(all.length, 151);
  assert.equal(all[150]!.id, evm.hash);

  await assert.rejects(s.sendEvm('0x1234'), (e: unknown) => {
    isKind('rpc')(e);
    const err = e as RelaySocketError;
    assert.equal(err.method, 'eth_sendRawTransaction');
    assert.ok(typeof err.code === 'number' && err.code < 0);
    return true;
  });
  await assert.rejects(s.request('eth_sign', []), (e: unknown) => isKind('rpc')(e) && (e as RelaySocketError).code === -32601);
  // Sending again is a duplicate, answered with the same hash.
  assert.equal(await s.sendEvm(evm.hex), evm.hash);
  assert.equal(up.calls().length, 4, 'each transaction forwarded once');
});

test('a subscription receives queued then forwarded for a transaction sent over HTTP; after unsubscribing, nothing', async (t) => {
  const { r, up, key } = await setup(t);
  const s = socket(t, { url: r.base, apiKey: key });
  await next(s, 'open');
  const c = collect(s);
  const tx = await signed1559({ nonce: 0 });
  // Subscribing takes one round trip; a call made after it waits for it, so a status read here is already covered.
  await s.statuses(['x']);
  await sendOverHttp(r, key, tx.hex);
  await c.until(tx.hash, 'forwarded');
  const mine = c.seen.filter((x) => x.id === tx.hash);
  assert.deepEqual(
    mine.map((x) => x.state),
    ['queued', 'forwarded'],
  );
  assert.equal(mine[0]!.door, 'jsonrpc');
  assert.equal(mine[1]!.forwards[0]!.upstream_result, 'accepted');

  // A second listener shares the subscription; the pushes stop once both are gone.
  const d = collect(s);
  const tx2 = await signed1559({ nonce: 1 });
  assert.equal(await s.sendEvm(tx2.hex), tx2.hash);
  await c.until(tx2.hash, 'forwarded');
  await d.until(tx2.hash, 'forwarded');
  c.off();
  d.off();
  const tx3 = await signed1559({ nonce: 2 });
  await sendOverHttp(r, key, tx3.hex);
  await up.waitForCalls(3);
  await new Promise((res) => setTimeout(res, 200));
  assert.equal(c.seen.concat(d.seen).filter((x) => x.id === tx3.hash).length, 0);
});

test('after the relay restarts on the same port, the socket reconnects and subscribes again; a call made meanwhile waits and is answered', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const config = { evm: { upstreams: { paid: [up.url], free: [up.url] } }, solana: { rpc_upstreams: [up.url] } };
  const first = await startTestRelay(config);
  const dir = first.dataDir;
  const port = Number(new URL(first.base).port);
  let second: TestRelay | undefined;
  t.after(async () => {
    await second?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const key = (await first.createAccount({ plan: 'paid' })).uuid;
  // The socket goes through the proxy only so that the relay's port is free again at once (see startProxy).
  const proxy = await startProxy(t, first.base);
  const s = socket(t, { url: proxy.url, apiKey: key });
  const opens: number[] = [];
  s.on('open', () => opens.push(Date.now()));
  const reconnecting: number[] = [];
  s.on('reconnecting', (e) => reconnecting.push(e.delayMs));
  await next(s, 'open');
  const c = collect(s);
  const before = await signed1559({ nonce: 0 });
  assert.equal(await s.sendEvm(before.hex), before.hash);
  await c.until(before.hash, 'forwarded');

  const closed = next(s, 'close');
  await first.stop({ keepData: true });
  assert.deepEqual(await closed, { code: 1001, reason: 'node shutting down', reconnect: true });
  assert.equal(s.state, 'reconnecting');
  // Made while no relay listens: it waits in the queue, then goes on the new socket after the subscription.
  const during = await signed1559({ nonce: 1 });
  const waiting = s.sendEvm(during.hex);

  const reopened = next(s, 'open');
  await new Promise((res) => setTimeout(res, 100));
  second = await startTestRelay({ ...config, http: { port } }, dir);
  await reopened;
  assert.equal(await waiting, during.hash);
  assert.ok(reconnecting.length >= 2, `reconnect attempts while the port was closed: ${reconnecting.join(', ')}`);
  assert.ok(
    reconnecting.every((ms) => ms <= FAST.maxMs),
    'waits stay within maxMs',
  );

  // The new subscription (a new server id) pushes to the same listener.
  await c.until(during.hash, 'forwarded');
  const after = await signed1559({ nonce: 2 });
  await sendOverHttp(second, key, after.hex);
  await c.until(after.hash, 'queued');
  await c.until(after.hash, 'forwarded');
  assert.equal(opens.length, 2);
});

test('a revoked account: close 4001 stops the socket for good with an "account revoked" error; no reconnect', async (t) => {
  const { r, key, id } = await setup(t);
  const s = socket(t, { url: r.base, apiKey: key });
  await next(s, 'open');
  collect(s);
  await s.statuses(['x']);
  let reconnects = 0;
  s.on('reconnecting', () => reconnects++);
  const error = next(s, 'error');
  const closed = next(s, 'close');
  assert.equal((await r.adminCall('DELETE', `/admin/accounts/${id}`)).status, 200);
  assert.ok(isKind('revoked', /account revoked/)(await error));
  assert.deepEqual(await closed, { code: 4001, reason: 'account revoked', reconnect: false });
  assert.equal(s.state, 'closed');
  await assert.rejects(s.sendEvm((await signed1559()).hex), isKind('revoked', /eth_sendRawTransaction not sent: account revoked/));
  assert.throws(() => s.subscribeStatuses(() => {}), isKind('revoked'));
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(reconnects, 0);
});

test('an unknown key: the 401 at the upgrade stops the socket with an "unauthorized" error and rejects the calls queued meanwhile', async (t) => {
  const { r, key } = await setup(t);
  const ways: [string, Partial<RelaySocketOptions>][] = [
    ['the ws package (sees the 401)', {}],
    // A WHATWG WebSocket hides the upgrade's status: the client finds the 401 through the status API.
    ['a WHATWG WebSocket, key in a header', { WebSocket: UndiciWebSocket }],
    ['a WHATWG WebSocket, key as ?api-key= (the browser way)', { WebSocket: UndiciWebSocket, auth: 'query' }],
  ];
  for (const [name, opts] of ways) {
    const s = socket(t, { url: r.base, apiKey: randomUUID(), ...opts });
    let reconnects = 0;
    s.on('reconnecting', () => reconnects++);
    const error = next(s, 'error');
    const queued = s.sendEvm((await signed1559()).hex);
    assert.ok(isKind('unauthorized', /401/)(await error), name);
    await assert.rejects(queued, isKind('unauthorized', /not sent: unauthorized/), name);
    assert.equal(s.state, 'closed', name);
    assert.equal(reconnects, 0, name);
  }
  // The browser way with a good key works end to end.
  const ok = socket(t, { url: r.base + '/ws', apiKey: key, WebSocket: UndiciWebSocket, auth: 'query' });
  const tx = legacyTransfer();
  assert.equal(await ok.sendSolana(tx.bytes), tx.signature);
  assert.equal((await ok.statuses([tx.signature]))[0]!.door, 'ws');
});

test('a call in flight when the connection drops: a submission is UNCERTAIN (the relay did admit it; resending gets the duplicate), a read is retry-safe', async (t) => {
  const { r, up, key } = await setup(t);
  const proxy = await startProxy(t, r.base);
  const s = socket(t, { url: proxy.url, apiKey: key });
  await next(s, 'open');
  const tx = await signed1559({ nonce: 0 });
  proxy.hold();
  const sent = assert.rejects(s.sendEvm(tx.hex), isKind('uncertain', /UNCERTAIN.*may have admitted it.*safe/));
  const read = assert.rejects(s.statuses([tx.hash]), isKind('retry-safe', /read changes nothing/));
  // The relay admitted and forwarded it; its answer is lost in the proxy.
  await up.waitForCalls(1);
  const reopened = next(s, 'open');
  proxy.cut();
  await sent;
  await read;
  await reopened;
  assert.equal(await s.sendEvm(tx.hex), tx.hash, 'the relay answers the resend as a duplicate');
  assert.equal((await s.statuses([tx.hash]))[0]!.state, 'forwarded');
  assert.equal(up.calls().length, 1, 'forwarded once');
});

test('bounds: maxPending and timeoutMs while connected, maxQueued while not; close() rejects what waits and ends reconnecting', async (t) => {
  const { r, key } = await setup(t);
  const proxy = await startProxy(t, r.base);
  const s = socket(t, { url: proxy.url, apiKey: key, maxPending: 2, timeoutMs: 400 });
  await next(s, 'open');
  proxy.hold();
  const sent = assert.rejects(s.sendEvm((await signed1559()).hex), isKind('uncertain', /no answer within 400 ms/));
  const read = assert.rejects(s.statuses(['x']), isKind('retry-safe', /no answer within 400 ms/));
  await assert.rejects(s.statuses(['y']), isKind('retry-safe', /maxPending/));
  await sent;
  await read;

  // No relay at all: calls wait for a socket, at most maxQueued of them, at most timeoutMs each.
  const dead = await new Promise<number>((res) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as AddressInfo).port;
      srv.close(() => res(p));
    });
  });
  const q = socket(t, { url: `ws://127.0.0.1:${dead}`, apiKey: key, maxQueued: 2, timeoutMs: 300 });
  const first = assert.rejects(q.statuses(['a']), isKind('retry-safe', /not sent: no connection to the relay within 300 ms/));
  const second = q.sendEvm('0x00');
  await assert.rejects(q.statuses(['c']), isKind('retry-safe', /maxQueued/));
  await first;
  await assert.rejects(second, isKind('retry-safe', /not sent/));
  const third = q.sendEvm('0x00');
  assert.equal(q.state, 'connecting');
  await q.close();
  await assert.rejects(third, isKind('closed', /not sent: the RelaySocket was closed/));
  await assert.rejects(q.statuses(['d']), isKind('closed'));
  assert.equal(q.state, 'closed');
});
