/**
 * WebSocket routes on the node:http fallback (node-ws.ts), with a real `ws`
 * client: the behaviour uWS shows for the same calls (checked against
 * uWebSockets.js 20.4x), except where node-ws.ts says it differs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import WebSocket from 'ws';
import { createNodeAcceptor } from '../../src/ingress/node-acceptor.js';
import { SendStatus, type TemplatedApp, type WebSocket as UwsWebSocket, type WebSocketBehavior } from '../../src/ingress/uws.js';

interface User {
  token: string | undefined;
}

const uws = createNodeAcceptor();
const apps: TemplatedApp[] = [];
after(() => apps.forEach((a) => a.close()));

const text = (ab: ArrayBuffer) => Buffer.from(ab).toString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function behavior(over: Partial<WebSocketBehavior<User>> = {}): WebSocketBehavior<User> {
  return {
    maxPayloadLength: 1024,
    idleTimeout: 0,
    maxBackpressure: 64 * 1024,
    closeOnBackpressureLimit: false,
    sendPingsAutomatically: false,
    upgrade: (res, req, context) =>
      res.upgrade<User>(
        { token: req.getQuery('token') },
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context,
      ),
    open() {},
    message() {},
    close() {},
    ...over,
  };
}

async function listen(app: TemplatedApp): Promise<number> {
  apps.push(app);
  const s = await new Promise<object>((resolve, reject) => app.listen('127.0.0.1', 0, (ls) => (ls ? resolve(ls) : reject(new Error('listen')))));
  return uws.us_socket_local_port(s);
}

function connect(port: number, path: string, opts: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const c = new WebSocket(`ws://127.0.0.1:${port}${path}`, opts);
    c.once('open', () => resolve(c));
    c.once('error', reject);
  });
}

function closeOf(c: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => c.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

function refusal(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const c = new WebSocket(`ws://127.0.0.1:${port}${path}`);
    c.once('open', () => reject(new Error('upgraded')));
    c.once('error', reject);
    c.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
  });
}

const HANDSHAKE = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';

/** Writes `request` on a raw connection; resolves with all it read once the server closed it. */
function exchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`the server did not close; read ${JSON.stringify(out)}`));
    }, 3000);
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.write(request);
  });
}

test('an upgrade handler reads the request; open and message see the userData, copied onto the socket as uWS.js does', async () => {
  const seen: Record<string, unknown> = {};
  let given: User | null = null;
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      upgrade: (res, req, context) => {
        seen.url = req.getUrl();
        seen.header = req.getHeader('x-client');
        seen.upgradeAddress = text(res.getRemoteAddressAsText());
        given = { token: req.getQuery('token') };
        res.upgrade(given, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), '', context);
      },
      open: (ws) => {
        seen.openToken = ws.getUserData().token;
        seen.sameObject = ws.getUserData() === given;
        seen.wsAddress = text(ws.getRemoteAddressAsText());
      },
      message: (ws, m) => {
        seen.messageToken = ws.getUserData().token;
        ws.send(new Uint8Array(m), false);
      },
    }),
  );
  const port = await listen(app);
  const c = await connect(port, '/ws?token=a%20b', { headers: { 'x-client': 'yes' } });
  const reply = new Promise<string>((r) => c.once('message', (d) => r(d.toString())));
  c.send('hi');
  assert.equal(await reply, 'hi');
  assert.deepEqual(seen, {
    url: '/ws',
    header: 'yes',
    upgradeAddress: '127.0.0.1',
    openToken: 'a b',
    sameObject: false,
    wsAddress: '127.0.0.1',
    messageToken: 'a b',
  });
  c.close();
});

test('an upgrade refused with 401 and a body: the client reads both, the connection closes, open never runs', async () => {
  const filter: number[] = [];
  let opened = 0;
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      upgrade: (res) => void res.cork(() => res.writeStatus('401 Unauthorized').writeHeader('content-type', 'text/plain').end('token required')),
      open: () => opened++,
    }),
  );
  app.filter!((_c, n) => filter.push(n));
  const port = await listen(app);
  assert.deepEqual(await refusal(port, '/ws'), { status: 401, body: 'token required' });
  const raw = await exchange(port, `GET /ws HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`);
  assert.match(raw, /^HTTP\/1\.1 401 Unauthorized\r\n/);
  assert.match(raw, /\r\n\r\ntoken required$/);
  await until(() => filter.length === 4, 'both connections closed');
  // Never upgraded: each is an HTTP connection with its +1 and -1.
  assert.deepEqual(filter, [1, -1, 1, -1]);
  assert.equal(opened, 0);
});

test('routing as uWS: a ws route takes handshakes only; unrouted upgrades get 404; a plain route answers an upgrade request', async () => {
  const app = uws.App();
  let opened = 0;
  app.ws<User>('/ws', behavior({ open: () => opened++ }));
  app.get('/plain', (res) => void res.cork(() => res.end('plain')));
  app.any('/*', (res) => void res.cork(() => res.writeStatus('404 Not Found').end('catch-all')));
  const port = await listen(app);

  // Not a handshake: the ws route passes it on.
  const plain = await fetch(`http://127.0.0.1:${port}/ws`);
  assert.equal(plain.status, 404);
  assert.equal(await plain.text(), 'catch-all');
  // A handshake: the ws route, before the wildcard.
  const c = await connect(port, '/ws');
  assert.equal(opened, 1);
  c.close();
  // Upgrade requests elsewhere are plain requests, answered and then closed.
  assert.match(await exchange(port, `GET /plain HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`), /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nplain$/);
  assert.match(await exchange(port, `GET /nope HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`), /^HTTP\/1\.1 404 Not Found\r\n[^]*catch-all$/);

  const bare = uws.App().ws<User>('/ws', behavior());
  const barePort = await listen(bare);
  assert.match(await exchange(barePort, `GET /nope HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`), /^HTTP\/1\.1 404 Not Found\r\n/);
  // A Sec-WebSocket-Key that is not 24 characters is no handshake (uWS checks only the length).
  assert.match(await exchange(barePort, `GET /ws HTTP/1.1\r\nHost: t\r\n${HANDSHAKE.replace(/Key: .*/, 'Key: short')}\r\n`), /^HTTP\/1\.1 404 /);
});

test('text and binary messages round trip; text arrives as its UTF-8 bytes; a message ArrayBuffer is detached after its call', async () => {
  const got: { hex: string; isBinary: boolean }[] = [];
  const kept: ArrayBuffer[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      message: (ws, m, isBinary) => {
        got.push({ hex: Buffer.from(m).toString('hex'), isBinary });
        kept.push(m);
        ws.send(new Uint8Array(m), isBinary);
      },
    }),
  );
  const port = await listen(app);
  const c = await connect(port, '/ws');
  const replies: { data: Buffer; isBinary: boolean }[] = [];
  c.on('message', (data: Buffer, isBinary) => replies.push({ data, isBinary }));
  c.send('héllo');
  c.send(Buffer.from([0, 1, 2, 255]));
  c.send('');
  await until(() => replies.length === 3, 'three echoes');
  assert.deepEqual(got, [
    { hex: Buffer.from('héllo').toString('hex'), isBinary: false },
    { hex: '000102ff', isBinary: true },
    { hex: '', isBinary: false },
  ]);
  assert.deepEqual(
    replies.map((r) => [r.data.toString('hex'), r.isBinary]),
    [
      [Buffer.from('héllo').toString('hex'), false],
      ['000102ff', true],
      ['', false],
    ],
  );
  assert.deepEqual(
    kept.map((ab) => ab.byteLength),
    [0, 0, 0],
    'uWS neuters the memory after the call',
  );
  c.close();
});

test('close runs once whoever closes; from then on every method but getUserData throws, inside close too', async () => {
  const closes: { code: number; reason: string; token: string | undefined; threw: string[] }[] = [];
  const sockets: UwsWebSocket<User>[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      open: (ws) => void sockets.push(ws),
      message: (ws, m) => {
        const t = text(m);
        if (t === 'end') ws.end(4001, 'done');
        else if (t === 'end-bare') ws.end();
        else if (t === 'close') ws.close();
      },
      close: (ws, code, m) => {
        const threw: string[] = [];
        for (const [name, call] of Object.entries({
          send: () => ws.send('x'),
          end: () => ws.end(),
          close: () => ws.close(),
          cork: () => ws.cork(() => {}),
          getBufferedAmount: () => ws.getBufferedAmount(),
          getRemoteAddressAsText: () => ws.getRemoteAddressAsText(),
        })) {
          try {
            call();
          } catch (e) {
            if (/Invalid access of closed uWS\.WebSocket/.test((e as Error).message)) threw.push(name);
          }
        }
        closes.push({ code, reason: text(m), token: ws.getUserData().token, threw });
      },
    }),
  );
  const port = await listen(app);
  const all = ['send', 'end', 'close', 'cork', 'getBufferedAmount', 'getRemoteAddressAsText'];
  const cases: [string, (c: WebSocket) => void, { code: number; reason: string }, { code: number; reason: string }][] = [
    ['server end', (c) => c.send('end'), { code: 4001, reason: 'done' }, { code: 4001, reason: 'done' }],
    // uWS sends no code for end() without one (the client reads 1005) and passes 0 to close.
    ['server end without a code', (c) => c.send('end-bare'), { code: 0, reason: '' }, { code: 1005, reason: '' }],
    ['server close', (c) => c.send('close'), { code: 1006, reason: '' }, { code: 1006, reason: '' }],
    ['client close', (c) => c.close(4100, 'cya'), { code: 4100, reason: 'cya' }, { code: 4100, reason: 'cya' }],
    ['client close without a code', (c) => c.close(), { code: 1005, reason: '' }, { code: 1005, reason: '' }],
    ['client leaves', (c) => c.terminate(), { code: 1006, reason: 'Received TCP FIN before WebSocket close frame' }, { code: 1006, reason: '' }],
  ];
  for (const [name, closer, server, client] of cases) {
    closes.length = 0;
    const c = await connect(port, `/ws?token=${encodeURIComponent(name)}`);
    const clientSaw = closeOf(c);
    closer(c);
    assert.deepEqual(await clientSaw, client, `${name}: the client's close`);
    await until(() => closes.length > 0, `${name}: close`);
    await sleep(30);
    assert.deepEqual(closes, [{ ...server, token: name, threw: all }], name);
    const ws = sockets.at(-1)!;
    assert.throws(() => ws.send('late'), /Invalid access of closed uWS\.WebSocket/, name);
    assert.throws(() => ws.end(1000), /Invalid access of closed uWS\.WebSocket/, name);
    assert.equal(ws.getUserData().token, name);
  }
});

test('a message over maxPayloadLength closes the socket: the client reads 1009, close gets uWS 1006 reason; invalid UTF-8 likewise (1007)', async () => {
  const closes: [number, string][] = [];
  const sizes: number[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      maxPayloadLength: 1024,
      message: (_ws, m) => void sizes.push(m.byteLength),
      close: (_ws, code, m) => void closes.push([code, text(m)]),
    }),
  );
  const port = await listen(app);
  const big = await connect(port, '/ws');
  big.send(Buffer.alloc(1024));
  big.send(Buffer.alloc(1025));
  assert.equal((await closeOf(big)).code, 1009);
  const bad = await connect(port, '/ws');
  bad.send(Buffer.from([0xff, 0xfe]), { binary: false });
  assert.equal((await closeOf(bad)).code, 1007);
  await until(() => closes.length === 2, 'both closes');
  assert.deepEqual(sizes, [1024]);
  assert.deepEqual(closes, [
    [1006, 'Received too big message'],
    [1006, 'Received invalid UTF-8'],
  ]);
});

test('idleTimeout with sendPingsAutomatically: a silent client is pinged, closed when it does not answer; one that answers stays', async () => {
  const closes: [string | undefined, number, string][] = [];
  // 1 s on node (uWS wants 8 s or more): the ping after 0.5 s of silence, the close 0.5 s later (uWS: 4 s and 4 s for 8).
  const app = uws.App().ws<User>(
    '/ws',
    behavior({ idleTimeout: 1, sendPingsAutomatically: true, close: (ws, code, m) => void closes.push([ws.getUserData().token, code, text(m)]) }),
  );
  const port = await listen(app);
  const t0 = performance.now();
  const mute = await connect(port, '/ws?token=mute', { autoPong: false });
  const answering = await connect(port, '/ws?token=answering');
  let mutePings = 0;
  let answeredPings = 0;
  mute.on('ping', () => mutePings++);
  answering.on('ping', () => answeredPings++);
  const muteClose = await closeOf(mute);
  const elapsed = performance.now() - t0;
  assert.equal(muteClose.code, 1006);
  assert.equal(mutePings, 1);
  assert.ok(elapsed >= 900 && elapsed < 2500, `closed after ${elapsed.toFixed(0)} ms`);
  assert.deepEqual(closes, [['mute', 1006, 'WebSocket timed out from inactivity']]);
  await sleep(700);
  assert.equal(answering.readyState, WebSocket.OPEN, 'answering pings keeps a socket open');
  assert.ok(answeredPings >= 2, `${answeredPings} pings`);
  answering.close();
});

test('idleTimeout without sendPingsAutomatically: closed after the silence, without a ping; any message restarts it', async () => {
  const closes: [string | undefined, number, string][] = [];
  const app = uws.App().ws<User>('/ws', behavior({ idleTimeout: 0.5, close: (ws, code, m) => void closes.push([ws.getUserData().token, code, text(m)]) }));
  const port = await listen(app);
  const t0 = performance.now();
  const talker = await connect(port, '/ws?token=talker');
  const quiet = await connect(port, '/ws?token=quiet');
  let pings = 0;
  quiet.on('ping', () => pings++);
  const chat = setInterval(() => talker.send('.'), 50);
  await closeOf(quiet);
  const elapsed = performance.now() - t0;
  assert.equal(pings, 0);
  assert.ok(elapsed >= 450 && elapsed < 2000, `closed after ${elapsed.toFixed(0)} ms`);
  await sleep(600);
  clearInterval(chat);
  assert.equal(talker.readyState, WebSocket.OPEN);
  assert.deepEqual(closes, [['quiet', 1006, 'WebSocket timed out from inactivity']]);
  talker.close();
});

test('backpressure: send to a reader that stopped returns Backpressure, then Dropped past maxBackpressure; drain when it reads again', async () => {
  const maxBackpressure = 256 * 1024;
  let server: UwsWebSocket<User> | null = null;
  const drains: number[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      maxBackpressure,
      open: (ws) => void (server = ws),
      drain: (ws) => void drains.push(ws.getBufferedAmount()),
    }),
  );
  const port = await listen(app);
  const c = await connect(port, '/ws');
  c.pause();
  await until(() => server !== null, 'open');
  const ws = server!;
  const size = 64 * 1024;
  const frame = size + 10;
  const statuses: SendStatus[] = [];
  const amounts: number[] = [];
  let lastQueued: Uint8Array | null = null;
  for (let i = 0; i < 10_000; i++) {
    const chunk = new Uint8Array(size).fill(1);
    const s = ws.send(chunk, true);
    statuses.push(s);
    amounts.push(ws.getBufferedAmount());
    if (s === SendStatus.Backpressure) lastQueued = chunk;
    if (s === SendStatus.Dropped) break;
  }
  assert.equal(statuses.at(-1), SendStatus.Dropped, 'a send is dropped at last');
  const firstBp = statuses.indexOf(SendStatus.Backpressure);
  assert.ok(firstBp >= 0, 'backpressure before the drop');
  assert.ok(statuses.slice(0, firstBp).every((s) => s === SendStatus.Success));
  assert.ok(statuses.slice(firstBp, -1).every((s) => s === SendStatus.Backpressure));
  for (let i = firstBp + 1; i < amounts.length; i++) assert.ok(amounts[i]! >= amounts[i - 1]!, 'the buffered amount only grows');
  assert.ok(amounts.at(-1)! > maxBackpressure, 'dropped only past maxBackpressure');
  assert.ok(Math.max(...amounts) <= maxBackpressure + frame, 'never more than one message past maxBackpressure');
  assert.equal(ws.send('x'), SendStatus.Dropped);
  // uWS copies what it queues: the caller may reuse its bytes.
  lastQueued!.fill(0xee);
  const accepted = statuses.filter((s) => s !== SendStatus.Dropped).length;
  let received = 0;
  let intact = true;
  c.on('message', (d: Buffer) => {
    received++;
    if (d.length !== size || d.some((b) => b !== 1)) intact = false;
  });
  c.resume();
  await until(() => received === accepted, `${accepted} messages`, 5000);
  assert.ok(intact, 'every message arrives as it was sent');
  await until(() => drains.length > 0 && ws.getBufferedAmount() === 0, 'drain');
  assert.equal(drains.at(-1), 0);
  assert.equal(ws.send('again'), SendStatus.Success);
  c.close();
});

test('closeOnBackpressureLimit: a drop closes the socket on the next turn of the loop (close gets 1006, as uWS after its read shutdown)', async () => {
  let server: UwsWebSocket<User> | null = null;
  const closes: [number, string][] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      maxBackpressure: 64 * 1024,
      closeOnBackpressureLimit: true,
      open: (ws) => void (server = ws),
      close: (_ws, code, m) => void closes.push([code, text(m)]),
    }),
  );
  const port = await listen(app);
  const c = await connect(port, '/ws');
  c.pause();
  await until(() => server !== null, 'open');
  const chunk = new Uint8Array(64 * 1024);
  let s = SendStatus.Success;
  for (let i = 0; i < 10_000 && s !== SendStatus.Dropped; i++) s = server!.send(chunk, true);
  assert.equal(s, SendStatus.Dropped);
  assert.deepEqual(closes, [], 'not inside send');
  const clientSaw = closeOf(c);
  c.resume();
  await until(() => closes.length === 1, 'close');
  assert.deepEqual(closes, [[1006, 'Received TCP FIN before WebSocket close frame']]);
  assert.equal((await clientSaw).code, 1006);
});

test('bytes a client sends right behind its handshake reach the WebSocket', async () => {
  const app = uws.App().ws<User>('/ws', behavior({ message: (ws, m) => void ws.send(new Uint8Array(m), true) }));
  const port = await listen(app);
  const s = net.connect(port, '127.0.0.1');
  let out = Buffer.alloc(0);
  s.on('data', (d) => (out = Buffer.concat([out, d])));
  const mask = [1, 2, 3, 4];
  const frame = Buffer.from([0x81, 0x82, ...mask, 'h'.charCodeAt(0) ^ mask[0]!, 'i'.charCodeAt(0) ^ mask[1]!]);
  s.write(Buffer.concat([Buffer.from(`GET /ws HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`), frame]));
  await until(() => out.includes(Buffer.from([0x82, 0x02, 0x68, 0x69])), 'the echo');
  assert.match(out.toString('latin1'), /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  s.destroy();
});

test('cork runs its callback at once and returns the socket; what it sends arrives in order', async () => {
  const statuses: SendStatus[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      open: (ws) => {
        const r = ws.cork(() => {
          for (const m of ['a', 'b', 'c']) statuses.push(ws.send(m));
        });
        statuses.push(r === ws ? SendStatus.Success : SendStatus.Dropped);
      },
    }),
  );
  const port = await listen(app);
  const c = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const got: string[] = [];
  c.on('message', (d: Buffer) => got.push(d.toString()));
  await until(() => got.length === 3, 'three messages');
  assert.deepEqual(got, ['a', 'b', 'c']);
  assert.deepEqual(statuses, [SendStatus.Success, SendStatus.Success, SendStatus.Success, SendStatus.Success]);
  c.close();
});

test('filter: an upgraded connection has its +1 and, as on uWS (the socket leaves the HTTP context), no -1', async () => {
  const filter: number[] = [];
  const closes: number[] = [];
  const app = uws.App().ws<User>('/ws', behavior({ close: (_ws, code) => void closes.push(code) }));
  app.filter!((_c, n) => filter.push(n));
  const port = await listen(app);
  const c = await connect(port, '/ws');
  await sleep(20);
  assert.deepEqual(filter, [1]);
  c.close();
  await until(() => closes.length === 1, 'close');
  await sleep(50);
  assert.deepEqual(filter, [1]);
  // One that is refused (here: no Sec-WebSocket-Version) stays an HTTP connection: +1 and -1.
  assert.match(await exchange(port, `GET /ws HTTP/1.1\r\nHost: t\r\n${HANDSHAKE.replace(/Sec-WebSocket-Version.*\r\n/, '')}\r\n`), /^HTTP\/1\.1 400 /);
  await until(() => filter.length === 3, 'the refused connection closed');
  assert.deepEqual(filter, [1, 1, -1]);
});

test('upgrade after onAborted, later: it opens then; a client that left before gets onAborted and no open', async () => {
  const events: string[] = [];
  const app = uws.App().ws<User>(
    '/ws',
    behavior({
      upgrade: (res, req, context) => {
        const key = req.getHeader('sec-websocket-key');
        const token = req.getQuery('token');
        let aborted = false;
        res.onAborted(() => {
          aborted = true;
          events.push(`aborted ${token}`);
        });
        setTimeout(() => {
          if (!aborted) res.cork(() => res.upgrade<User>({ token }, key, '', '', context));
        }, 50);
      },
      open: (ws) => void events.push(`open ${ws.getUserData().token}`),
    }),
  );
  const port = await listen(app);
  const c = await connect(port, '/ws?token=stays');
  assert.deepEqual(events, ['open stays']);
  c.close();
  const s = net.connect(port, '127.0.0.1');
  s.write(`GET /ws?token=leaves HTTP/1.1\r\nHost: t\r\n${HANDSHAKE}\r\n`);
  await sleep(10);
  s.destroy();
  await until(() => events.length === 2, 'onAborted');
  await sleep(100);
  assert.deepEqual(events, ['open stays', 'aborted leaves']);
});

test('res.upgrade throws outside a ws route, after writeHeader, and for a userData that is not an object', async () => {
  const errors: string[] = [];
  const app = uws.App();
  const attempt = (f: () => void) => {
    try {
      f();
      errors.push('no error');
    } catch (e) {
      errors.push((e as Error).message);
    }
  };
  app.get('/plain', (res, req) => {
    attempt(() => res.upgrade({}, req.getHeader('sec-websocket-key'), '', '', null));
    res.end('ok');
  });
  app.ws<User>(
    '/ws',
    behavior({
      upgrade: (res, req, context) => {
        const key = req.getHeader('sec-websocket-key');
        attempt(() => res.upgrade(42 as unknown as User, key, '', '', context));
        attempt(() => res.upgrade({ token: 'x' }, key, '', '', {}));
        res.writeHeader('x-early', '1');
        attempt(() => res.upgrade({ token: 'x' }, key, '', '', context));
        res.writeStatus('403 Forbidden').end();
      },
    }),
  );
  const port = await listen(app);
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/plain`)).text(), 'ok');
  assert.equal((await refusal(port, '/ws')).status, 403);
  assert.equal(errors.length, 4);
  assert.match(errors[0]!, /only for a ws route's request/);
  assert.match(errors[1]!, /userData must be an object/);
  assert.match(errors[2]!, /context must be the one/);
  assert.match(errors[3]!, /after writeStatus or writeHeader/);
});

test('app.close() closes its WebSockets at once: close gets 1006, the clients see 1006', async () => {
  const closes: [number, string][] = [];
  const app = uws.App().ws<User>('/ws', behavior({ close: (_ws, code, m) => void closes.push([code, text(m)]) }));
  const port = await listen(app);
  const clients = await Promise.all([connect(port, '/ws'), connect(port, '/ws')]);
  const seen = clients.map(closeOf);
  app.close();
  assert.deepEqual(closes, [
    [1006, ''],
    [1006, ''],
  ]);
  assert.deepEqual(
    (await Promise.all(seen)).map((s) => s.code),
    [1006, 1006],
  );
  await sleep(30);
  assert.equal(closes.length, 2);
});
