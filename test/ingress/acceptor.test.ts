/**
 * Both HTTP acceptors, uWebSockets.js (when a build loads here) and the
 * node:http fallback, run the same app and answer the same raw requests the
 * same way: the uWS API subset txrelay uses, and the HTTP rules docs/protocol.md
 * states (HTTP/1.1 only, request smuggling refused, a 4 KiB header block).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadAcceptor, type Acceptor, type TemplatedApp, type us_listen_socket } from '../../src/ingress/uws.js';
import { RawConnection, rawExchange, header, parseResponses } from '../helpers/raw-http.js';
import { eventually } from '../helpers/relay.js';

interface Running {
  name: string;
  acceptor: Acceptor;
  port: number;
  aborted: string[];
  lateAccess: string[];
}

function buildApp(a: Acceptor, run: Running): TemplatedApp {
  const app = a.uws.App();
  app.get('/ping', (res) => void res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'text/plain').end('pong')));
  app.post('/echo', (res, req) => {
    const facts = {
      method: req.getMethod(),
      url: req.getUrl(),
      query: req.getQuery(),
      auth: req.getQuery('auth') ?? null,
      absentKey: req.getQuery('nope') ?? null,
      dup: req.getHeader('x-dup'),
      missing: req.getHeader('x-missing'),
    };
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const chunks: Buffer[] = [];
    let lasts = 0;
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast) return;
      lasts++;
      if (aborted) return;
      const body = Buffer.concat(chunks);
      res.cork(() => res.writeStatus('200 OK').end(JSON.stringify({ ...facts, bodyLength: body.length, body: body.toString('latin1').slice(0, 64), lasts })));
    });
  });
  // Answers one tick later, like every door that verifies a signature.
  app.post('/later', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast)
        setTimeout(() => {
          if (!aborted) res.cork(() => res.writeStatus('202 Accepted').end(Buffer.concat(chunks).toString()));
        }, 20);
    });
  });
  app.post('/hold', (res) => {
    res.onAborted(() => run.aborted.push('hold'));
    res.onData(() => {});
  });
  app.get('/late', (res, req) => {
    res.onAborted(() => {});
    setImmediate(() => {
      try {
        req.getHeader('host');
        run.lateAccess.push('allowed');
      } catch {
        run.lateAccess.push('refused');
      }
      res.cork(() => res.end('ok'));
    });
  });
  app.post('/status', (res) => {
    res.cork(() => res.writeStatus('605 Batch Decode Error').writeHeader('x-a', '1').writeHeader('x-a', '2').end('Batch Decode Error: count must be 1 to 4'));
  });
  app.get('/peer', (res) => {
    const bytes = [...new Uint8Array(res.getRemoteAddress())];
    const text = Buffer.from(res.getRemoteAddressAsText()).toString();
    res.cork(() => res.end(JSON.stringify({ bytes, text })));
  });
  app.get('/headers', (res, req) => {
    const seen: string[] = [];
    req.forEach((k, v) => seen.push(`${k}=${v}`));
    res.cork(() => res.end(JSON.stringify(seen)));
  });
  app.get('/users/:id', (res, req) => void res.cork(() => res.end(`param ${req.getParameter(0)}`)));
  app.get('/users/me', (res) => void res.cork(() => res.end('static')));
  app.any('/users/me', (res) => void res.cork(() => res.end('any')));
  app.get('/users/:id/keys/:key', (res, req) => void res.cork(() => res.end(`params ${req.getParameter(0)} ${req.getParameter(1)}`)));
  app.any('/*', (res) => void res.cork(() => res.writeStatus('404 Not Found').end('Not Found')));
  return app;
}

const running: Running[] = [];
const closers: (() => void)[] = [];

async function start(name: string, acceptor: Acceptor): Promise<Running> {
  const run: Running = { name, acceptor, port: 0, aborted: [], lateAccess: [] };
  const app = buildApp(acceptor, run);
  const s = await new Promise<us_listen_socket>((resolve, reject) => app.listen('127.0.0.1', 0, (ls) => (ls ? resolve(ls) : reject(new Error('listen')))));
  run.port = acceptor.uws.us_socket_local_port(s);
  closers.push(() => app.close());
  return run;
}

const uwsAcceptor = loadAcceptor('auto');
const kinds: [string, Acceptor | null][] = [
  ['uWS', uwsAcceptor.kind === 'uws' ? uwsAcceptor : null],
  ['node:http', loadAcceptor('node')],
];

after(() => closers.forEach((c) => c()));

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: t\r\n${extra}\r\n`;
const post = (path: string, body: string, extra = '') => `POST ${path} HTTP/1.1\r\nHost: t\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

for (const [name, acceptor] of kinds) {
  const skip = acceptor ? false : `no uWebSockets.js build loads for Node ${process.versions.node} here (acceptor-loader says why)`;
  let run: Running;
  const ready = async () => (run ??= await start(name, acceptor!));

  test(`${name}: HTTP/1.0 is answered 505 and the connection closed (HTTP/1.1 only)`, { skip }, async () => {
    await ready();
    const c = new RawConnection(run.port);
    await c.write('GET /ping HTTP/1.0\r\nHost: t\r\n\r\n');
    assert.ok(await c.until(() => c.closed), 'closed');
    assert.equal(c.responses()[0]?.status, 505);
  });

  test(`${name}: Content-Length together with Transfer-Encoding is answered 400 and the connection closed`, { skip }, async () => {
    await ready();
    const c = new RawConnection(run.port);
    await c.write('POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n');
    assert.ok(await c.until(() => c.closed), 'closed');
    assert.equal(c.responses()[0]?.status, 400);
  });

  test(`${name}: a header block over 4 KiB is answered 431`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, get('/ping', `X-Big: ${'a'.repeat(5000)}\r\n`));
    assert.equal(r.responses[0]?.status, 431);
    const ok = await rawExchange(run.port, get('/ping', `X-Fits: ${'a'.repeat(3000)}\r\n`));
    assert.equal(ok.responses[0]?.status, 200);
  });

  test(`${name}: keep-alive: consecutive requests are answered on one connection`, { skip }, async () => {
    await ready();
    const c = new RawConnection(run.port);
    for (let i = 1; i <= 3; i++) {
      await c.write(i === 2 ? post('/later', `n${i}`) : get('/ping'));
      assert.ok(await c.until(() => c.responses().length >= i));
    }
    assert.deepEqual(
      c.responses().map((r) => [r.status, r.body]),
      [
        [200, 'pong'],
        [202, 'n2'],
        [200, 'pong'],
      ],
    );
    assert.equal(c.closed, false);
    c.destroy();
  });

  test(`${name}: pipelined requests answered synchronously come back in order`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, get('/ping') + post('/status', '') + get('/users/7'), { responses: 3 });
    assert.deepEqual(
      r.responses.map((x) => [x.status, x.body]),
      [
        [200, 'pong'],
        [605, 'Batch Decode Error: count must be 1 to 4'],
        [200, 'param 7'],
      ],
    );
  });

  test(`${name}: a non-standard status goes out as written, with repeated headers kept`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, post('/status', ''));
    const res = r.responses[0]!;
    assert.equal(res.status, 605);
    assert.equal(res.reason, 'Batch Decode Error');
    assert.deepEqual(
      res.headers.filter(([k]) => k === 'x-a').map(([, v]) => v),
      ['1', '2'],
    );
    assert.equal(res.body, 'Batch Decode Error: count must be 1 to 4');
  });

  test(`${name}: request facts: lower-case method, path without query, raw query, decoded value, first of repeated headers, '' when absent`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, post('/echo?auth=a%2Db&x=1', 'hello', 'X-Dup: first\r\nX-Dup: second\r\n'));
    assert.deepEqual(JSON.parse(r.responses[0]!.body), {
      method: 'post',
      url: '/echo',
      query: 'auth=a%2Db&x=1',
      auth: 'a-b',
      absentKey: null,
      dup: 'first',
      missing: '',
      bodyLength: 5,
      body: 'hello',
      lasts: 1,
    });
    // uWS gives no query string at all (undefined) without a '?', and '' after a bare one.
    const none = await rawExchange(run.port, post('/echo', ''));
    assert.equal(JSON.parse(none.responses[0]!.body).query, undefined);
    const bare = await rawExchange(run.port, post('/echo?', ''));
    assert.equal(JSON.parse(bare.responses[0]!.body).query, '');
  });

  test(`${name}: forEach gives every header line, names in lower case`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, get('/headers', 'X-One: 1\r\nX-Dup: a\r\nX-Dup: b\r\n'));
    const seen = JSON.parse(r.responses[0]!.body) as string[];
    assert.deepEqual(
      seen.filter((h) => h.startsWith('x-')),
      ['x-one=1', 'x-dup=a', 'x-dup=b'],
    );
  });

  test(`${name}: a body arrives whole with exactly one isLast: Content-Length in pieces, chunked, and empty`, { skip }, async () => {
    await ready();
    const body = 'x'.repeat(20_000);
    const c = new RawConnection(run.port);
    await c.write(`POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n`);
    for (let i = 0; i < body.length; i += 5000) {
      await c.write(body.slice(i, i + 5000));
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(await c.until(() => c.responses().length === 1));
    assert.deepEqual([JSON.parse(c.responses()[0]!.body).bodyLength, JSON.parse(c.responses()[0]!.body).lasts], [20_000, 1]);
    c.destroy();

    const chunked = await rawExchange(run.port, 'POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n');
    const cj = JSON.parse(chunked.responses[0]!.body);
    assert.deepEqual([cj.body, cj.lasts], ['abcdefg', 1]);

    const empty = await rawExchange(run.port, post('/echo', ''));
    const ej = JSON.parse(empty.responses[0]!.body);
    assert.deepEqual([ej.bodyLength, ej.lasts], [0, 1]);
  });

  test(`${name}: routes: a static segment before :param before *, a method before any`, { skip }, async () => {
    await ready();
    const body = async (req: string) => (await rawExchange(run.port, req)).responses[0]!;
    assert.equal((await body(get('/users/me'))).body, 'static');
    assert.equal((await body(get('/users/42'))).body, 'param 42');
    assert.equal((await body(get('/users/42/keys/k1'))).body, 'params 42 k1');
    assert.equal((await body(post('/users/me', ''))).body, 'any');
    const miss = await body(get('/nowhere/at/all'));
    assert.deepEqual([miss.status, miss.body], [404, 'Not Found']);
  });

  test(`${name}: an IPv4 client on an IPv4 listener is 4 address bytes and its dotted text`, { skip }, async () => {
    await ready();
    const r = await rawExchange(run.port, get('/peer'));
    assert.deepEqual(JSON.parse(r.responses[0]!.body), { bytes: [127, 0, 0, 1], text: '127.0.0.1' });
  });

  test(`${name}: onAborted fires when the client goes away before the answer`, { skip }, async () => {
    await ready();
    const c = new RawConnection(run.port);
    await c.write('POST /hold HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc');
    await new Promise((r) => setTimeout(r, 50));
    c.destroy();
    await eventually(() => run.aborted.length === 1, 3000, 'onAborted');
  });
}

test('node:http answers pipelined requests in order when the answers come later (uWS closes the connection instead)', async () => {
  const run = await start('node:http', loadAcceptor('node'));
  const r = await rawExchange(run.port, post('/later', 'first') + get('/ping') + post('/later', 'third'), { responses: 3 });
  assert.deepEqual(
    r.responses.map((x) => [x.status, x.body]),
    [
      [202, 'first'],
      [200, 'pong'],
      [202, 'third'],
    ],
  );
});

test('node:http keeps an idle connection for 60 s and says so in Keep-Alive', async () => {
  const run = await start('node:http', loadAcceptor('node'));
  const r = await rawExchange(run.port, get('/ping'));
  assert.equal(header(r.responses[0]!, 'keep-alive'), 'timeout=60');
  assert.equal(header(r.responses[0]!, 'connection'), 'keep-alive');
});

test('node:http answers a missing Host, a repeated Content-Length and a folded header line with 400 (uWS gives no answer)', async () => {
  const run = await start('node:http', loadAcceptor('node'));
  for (const req of [
    'GET /ping HTTP/1.1\r\n\r\n',
    'POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab',
    'GET /ping HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n',
  ]) {
    const c = new RawConnection(run.port);
    await c.write(req);
    assert.ok(await c.until(() => c.closed), 'closed');
    assert.equal(c.responses()[0]?.status, 400, JSON.stringify(req));
  }
});

test('node:http refuses a request object used after its handler returned, as uWS forbids', async () => {
  const run = await start('node:http', loadAcceptor('node'));
  const r = await rawExchange(run.port, get('/late'));
  assert.equal(r.responses[0]?.body, 'ok');
  assert.deepEqual(run.lateAccess, ['refused']);
});

test('parseResponses splits a pipelined stream by Content-Length', () => {
  const s = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 505 HTTP Version Not Supported\r\nContent-Length: 0\r\n\r\n';
  assert.deepEqual(
    parseResponses(s).map((r) => [r.status, r.body]),
    [
      [200, 'ok'],
      [505, ''],
    ],
  );
});
