/**
 * The upstream HTTP client (src/forward/upstream.ts) over real sockets: raw
 * servers that write exactly the bytes a test wants (split, slow, cut, too
 * long), node:http and node:https servers for the ordinary cases, and a
 * self-signed certificate made with openssl at test time.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { UpstreamClient } from '../../src/forward/upstream.js';
import { PostStatus, type PostResult } from '../../src/forward/result.js';
import { HttpError } from '../../src/forward/http1.js';
import { startUpstream } from '../helpers/upstream.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Got {
  outcome: number;
  accepted: number[] | null;
  okCount: number;
  reason: string;
}

/** One post, answered: a copy of the (reused) result object. */
function post(c: UpstreamClient, body: string, firstId = 1, count = 1, batch = false): Promise<Got> {
  return new Promise((resolve) =>
    c.post({ buf: Buffer.from(body, 'latin1'), length: body.length, firstId, count, batch }, (r: PostResult) =>
      resolve({ outcome: r.outcome, accepted: r.accepted ? Array.from(r.accepted.subarray(0, count)) : null, okCount: r.okCount, reason: r.reason }),
    ),
  );
}

const CALL = '{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["AQID"]}';
const OK1 = '{"jsonrpc":"2.0","id":1,"result":"sig"}';

/** A TCP server that hands each request's raw bytes to `answer`, which writes whatever it likes. */
interface RawServer {
  url: string;
  requests: string[];
  connections: number;
  close(): Promise<void>;
}
async function rawServer(answer: (sock: Socket, request: string, n: number) => unknown): Promise<RawServer> {
  const sockets = new Set<Socket>();
  const state: RawServer = { url: '', requests: [], connections: 0, close: async () => undefined };
  const server: Server = createNetServer((sock) => {
    sockets.add(sock);
    state.connections++;
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    sock.on('data', (d) => {
      pending = Buffer.concat([pending, d]);
      // Requests from our client always carry Content-Length.
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const m = /content-length: (\d+)/i.exec(pending.subarray(0, end).toString('latin1'));
        const total = end + 4 + Number(m?.[1] ?? 0);
        if (pending.length < total) return;
        const req = pending.subarray(0, total).toString('latin1');
        pending = pending.subarray(total);
        state.requests.push(req);
        void answer(sock, req, state.requests.length);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return state;
}

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});
async function server(answer: Parameters<typeof rawServer>[0]): Promise<RawServer> {
  const s = await rawServer(answer);
  cleanup.push(() => s.close());
  return s;
}
function client(url: string, opts: ConstructorParameters<typeof UpstreamClient>[1] = {}): UpstreamClient {
  const c = new UpstreamClient(new URL(url), opts);
  cleanup.push(() => c.destroy());
  return c;
}

test('the request is one POST with Host, Content-Type, exact Content-Length, Basic auth from the URL, path and query kept', async () => {
  const s = await server((sock) => sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`));
  const u = new URL(s.url);
  const c = client(`http://us%40er:p%3Ass@127.0.0.1:${u.port}/v1/KEY?api-key=Q`);
  assert.deepEqual(await post(c, CALL), { outcome: PostStatus.OK, accepted: [1], okCount: 1, reason: '' });
  const auth = Buffer.from('us@er:p:ss').toString('base64');
  assert.equal(
    s.requests[0],
    `POST /v1/KEY?api-key=Q HTTP/1.1\r\nHost: 127.0.0.1:${u.port}\r\nContent-Type: application/json\r\nAuthorization: Basic ${auth}\r\nContent-Length: ${CALL.length}\r\n\r\n${CALL}`,
  );
  assert.equal(c.label, `http://127.0.0.1:${u.port}/…`, 'the label never shows the path, query or credentials');
});

test('keep-alive: many requests in a row share one connection', async () => {
  const up = await startUpstream();
  cleanup.push(() => up.close());
  const c = client(up.url, { connections: 4 });
  let connections = 0;
  const s = await server((sock) => sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`));
  const c2 = client(s.url, { connections: 4 });
  for (let i = 0; i < 30; i++) {
    assert.equal((await post(c, `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x${i}"]}`)).outcome, PostStatus.OK);
    assert.equal((await post(c2, CALL)).outcome, PostStatus.OK);
  }
  connections = s.connections;
  assert.equal(connections, 1);
  assert.equal(up.calls().length, 30);
});

test('Connection: close, HTTP/1.0 and a body that runs to the close: answered, and the next request opens a new connection', async () => {
  const answers = [
    `HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`,
    `HTTP/1.0 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`,
    `HTTP/1.1 200 OK\r\n\r\n${OK1}`,
  ];
  for (const a of answers) {
    const s = await server((sock) => {
      sock.write(a);
      if (!a.includes('Content-Length')) sock.end();
    });
    const c = client(s.url);
    assert.equal((await post(c, CALL)).outcome, PostStatus.OK, a);
    assert.equal((await post(c, CALL)).outcome, PostStatus.OK, a);
    assert.equal(s.connections, 2, a);
  }
});

test('a chunked answer with extensions and trailers, written one byte at a time, is read whole', async () => {
  const body = '[{"jsonrpc":"2.0","id":7,"result":"a"},{"jsonrpc":"2.0","id":8,"error":{"code":-32002,"message":"blockhash not found"}}]';
  const half = body.length >> 1;
  const answer =
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' +
    `${half.toString(16)};name=value\r\n${body.slice(0, half)}\r\n${(body.length - half).toString(16)}\r\n${body.slice(half)}\r\n0\r\nX-Checksum: 1\r\n\r\n`;
  const s = await server(async (sock, _req, n) => {
    if (n > 1) return sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`);
    for (const ch of answer) {
      sock.write(ch);
      await new Promise((r) => setImmediate(r));
    }
  });
  const c = client(s.url);
  const r = await post(c, '[' + CALL + ',' + CALL + ']', 7, 2, true);
  assert.deepEqual(r, { outcome: PostStatus.OK, accepted: [1, 0], okCount: 1, reason: 'rpc -32002: blockhash not found' });
  assert.equal((await post(c, CALL)).outcome, PostStatus.OK, 'the connection is reusable after it');
  assert.equal(s.connections, 1);
});

test('closed before answering or mid-answer: CONN_ERROR; an answer that is not JSON: BAD_RESPONSE; non-2xx: HTTP_ERROR, body read past', async () => {
  const cases: [string, (sock: Socket) => void, number, string][] = [
    ['closed before answering', (sock) => sock.destroy(), PostStatus.CONN_ERROR, ''],
    ['closed mid-body', (sock) => sock.end(`HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`), PostStatus.CONN_ERROR, HttpError.CLOSED],
    ['closed mid-head', (sock) => sock.end(`HTTP/1.1 200 OK\r\nContent-Le`), PostStatus.CONN_ERROR, HttpError.CLOSED],
    ['not JSON', (sock) => sock.write(`HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n<html>oh<`), PostStatus.BAD_RESPONSE, 'answer is not JSON'],
    ['broken framing', (sock) => sock.write(`HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n`), PostStatus.BAD_RESPONSE, HttpError.CONTENT_LENGTH],
    ['http 503', (sock) => sock.write(`HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy!`), PostStatus.HTTP_ERROR, 'http 503'],
  ];
  for (const [what, answer, outcome, reason] of cases) {
    const s = await server(answer);
    const c = client(s.url);
    const r = await post(c, CALL);
    assert.equal(r.outcome, outcome, what);
    if (reason) assert.equal(r.reason, reason, what);
    assert.equal(r.accepted, null, what);
  }
  const s = await server((sock) => sock.write(`HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy!`));
  const c = client(s.url);
  await post(c, CALL);
  await post(c, CALL);
  assert.equal(s.connections, 1, 'a non-2xx answer with a framed body keeps the connection');
  const st = c.stats();
  assert.equal(st.httpErrors, 2);
});

test('an over-long answer is refused (BAD_RESPONSE) as soon as its size shows, and the connection is dropped', async () => {
  let wrote = 0;
  const s = await server((sock) => {
    // Announces 2 MiB, then would stream it slowly: the client must not wait for it.
    sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${2 << 20}\r\n\r\n`);
    const t = setInterval(() => {
      if (sock.destroyed) return clearInterval(t);
      sock.write(Buffer.alloc(1024, 0x20));
      wrote++;
    }, 20);
  });
  const c = client(s.url, { timeoutMs: 5_000 });
  const t0 = Date.now();
  const r = await post(c, CALL);
  assert.equal(r.outcome, PostStatus.BAD_RESPONSE);
  assert.equal(r.reason, HttpError.BODY_TOO_LARGE);
  assert.ok(Date.now() - t0 < 2_000 && wrote < 50, 'refused at the head, not after reading the 2 MiB body');
  const s2 = await server((sock) => {
    sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    const piece = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x20), Buffer.from('\r\n')]);
    for (let i = 0; i < 20; i++) sock.write(piece);
  });
  const r2 = await post(client(s2.url), CALL);
  assert.equal(r2.outcome, PostStatus.BAD_RESPONSE);
  assert.equal(r2.reason, HttpError.BODY_TOO_LARGE);
});

test('slow headers and a silent upstream time out (TIMEOUT), counted per item, and the connection is not reused', async () => {
  const s = await server(async (sock, _req, n) => {
    if (n > 2) return void sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`);
    if (n === 2) return; // silent
    for (const ch of 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n') {
      if (sock.destroyed) return;
      sock.write(ch);
      await sleep(30);
    }
  });
  const c = client(s.url, { timeoutMs: 200 });
  for (let k = 0; k < 2; k++) {
    const t0 = Date.now();
    const r = await post(c, '[' + CALL + ',' + CALL + ']', 1, 2, true);
    const took = Date.now() - t0;
    assert.equal(r.outcome, PostStatus.TIMEOUT);
    assert.ok(took >= 190 && took < 1_500, `timed out after ${took} ms`);
  }
  assert.equal(c.stats().timeouts, 4);
  assert.equal((await post(c, CALL)).outcome, PostStatus.OK);
  assert.equal(s.connections, 3);
});

test('a refused connection is CONN_ERROR with the system code', async () => {
  const s = await rawServer(() => undefined);
  const url = s.url;
  await s.close();
  const r = await post(client(url), CALL);
  assert.equal(r.outcome, PostStatus.CONN_ERROR);
  assert.equal(r.reason, 'ECONNREFUSED');
});

test('bytes after the answer, or a Keep-Alive timeout shorter than the margin: the connection is not reused', async () => {
  const extra = await server((sock) => sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}HTTP/1.1 200 OK\r\n`));
  const c = client(extra.url);
  assert.equal((await post(c, CALL)).outcome, PostStatus.OK);
  assert.equal((await post(c, CALL)).outcome, PostStatus.OK);
  assert.equal(extra.connections, 2);
  const hinted = await server((sock) => sock.write(`HTTP/1.1 200 OK\r\nKeep-Alive: timeout=1\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`));
  const c2 = client(hinted.url);
  await post(c2, CALL);
  await post(c2, CALL);
  assert.equal(hinted.connections, 2, 'a server closing after 1 s idle is not raced');
});

test('close() lets the request in flight finish; destroy() answers it ABORTED', async () => {
  const s = await server(async (sock) => {
    await sleep(100);
    if (!sock.destroyed) sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${OK1.length}\r\n\r\n${OK1}`);
  });
  const c = new UpstreamClient(new URL(s.url));
  const p = post(c, CALL);
  await sleep(10);
  await c.close();
  assert.equal((await p).outcome, PostStatus.OK);
  const d = new UpstreamClient(new URL(s.url));
  const q = post(d, CALL);
  await sleep(10);
  await d.destroy();
  assert.equal((await q).outcome, PostStatus.ABORTED);
  assert.equal(d.stats().aborted, 1);
});

test('https: an upstream with a certificate the client is told to trust works; without that trust the TLS failure is a CONN_ERROR', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-tls-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  const key = readFileSync(join(dir, 'key.pem'));
  let connections = 0;
  const srv = createHttpsServer({ cert, key }, (req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const id = (JSON.parse(body) as { id: number }).id;
      const out = JSON.stringify({ jsonrpc: '2.0', id, result: 'sig' + id });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': out.length });
      res.end(out);
    });
  });
  srv.on('secureConnection', () => connections++);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  const port = (srv.address() as AddressInfo).port;
  for (const host of ['localhost', '127.0.0.1']) {
    const c = client(`https://${host}:${port}/`, { ca: cert });
    for (let i = 0; i < 5; i++) {
      const r = await post(c, `{"jsonrpc":"2.0","id":${40 + i},"method":"sendBundle","params":[["AQID"],{"encoding":"base64"}]}`, 40 + i);
      assert.deepEqual(r, { outcome: PostStatus.OK, accepted: [1], okCount: 1, reason: '' }, host);
    }
  }
  assert.equal(connections, 2, 'one TLS connection per client, kept alive');
  const untrusted = await post(client(`https://localhost:${port}/`), CALL);
  assert.equal(untrusted.outcome, PostStatus.CONN_ERROR);
  assert.match(untrusted.reason, /CERT|SELF_SIGNED/);
});
