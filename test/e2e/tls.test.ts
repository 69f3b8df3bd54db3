/**
 * TLS on the listeners (docs/operations.md#tls), on both acceptors: HTTPS on
 * the doors (/v2, POST / JSON-RPC), wss:// on /ws, HTTPS on the admin API;
 * TLS 1.1 refused; never h2 (ALPN http/1.1 on node:https, no ALPN on uWS);
 * one start-up line for a missing, unreadable or mismatched pair; SIGHUP with
 * a new certificate keeps a live keep-alive connection and gives new
 * connections the new certificate. Real TLS clients (node:https, node:tls,
 * ws) against self-signed certificates made by openssl at test time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { startTestRelay, ADMIN_TOKEN, type TestRelay } from '../helpers/relay.js';
import * as sol from '../helpers/solana.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

const uwsProbe = loadAcceptor('auto');
const ACCEPTORS: { kind: 'uws' | 'node'; skip: string | false }[] = [
  { kind: 'uws', skip: uwsProbe.kind === 'uws' ? false : 'no uWebSockets.js build loads here: skipping the uWS half' },
  { kind: 'node', skip: false },
];
/** Each acceptor with the main thread serving; uWS also with two acceptor threads. */
const SETUPS = ACCEPTORS.flatMap((a) => (a.kind === 'uws' ? [1, 2] : [1]).map((acceptors) => ({ ...a, acceptors })));

interface Pair {
  cert: string;
  key: string;
  pem: Buffer;
}

/** A self-signed certificate for 127.0.0.1 whose subject CN is `cn`. */
function makePair(dir: string, cn: string): Pair {
  const cert = join(dir, `${cn}.crt`);
  const key = join(dir, `${cn}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${cn}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert, key, pem: readFileSync(cert) };
}

function tmp(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Answer {
  status: number;
  body: string;
  /** The CN of the certificate the connection was made with. */
  cn: string;
  socket: tls.TLSSocket;
}

function request(url: string, o: { ca: Buffer; agent?: https.Agent; method?: string; headers?: Record<string, string>; body?: string | Uint8Array }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: o.method ?? 'GET', headers: o.headers, ca: o.ca, agent: o.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      // A keep-alive agent takes the socket back at the end.
      const socket = res.socket as tls.TLSSocket;
      const cn = String(socket.getPeerCertificate().subject?.CN);
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), cn, socket });
      });
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A raw handshake: its protocol and ALPN, or the error code. */
function handshake(port: number, o: tls.ConnectionOptions): Promise<{ protocol: string | null; alpn: string | false | null; cn: string } | { error: string }> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, ...o }, () => {
      resolve({ protocol: s.getProtocol(), alpn: s.alpnProtocol, cn: String(s.getPeerCertificate().subject?.CN) });
      s.destroy();
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
  });
}

async function adminCall(r: TestRelay, ca: Buffer, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const a = await request(`https://127.0.0.1:${r.relay.ports.admin}${path}`, {
    ca,
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: a.status, json: a.body ? JSON.parse(a.body) : null };
}

for (const { kind, skip, acceptors } of SETUPS) {
  test(`${kind}${acceptors > 1 ? `, ${acceptors} acceptor threads` : ''}: HTTPS on /v2, POST / and the admin API, wss:// on /ws; TLS 1.1 refused, never h2; plain HTTP gets no answer`, { skip }, async (t) => {
    const dir = tmp(t);
    const pair = makePair(dir, 'doors.test');
    const r = await startTestRelay({
      http: { acceptor: kind, acceptors, tls_cert_file: pair.cert, tls_key_file: pair.key },
      admin: { tls_cert_file: pair.cert, tls_key_file: pair.key },
    });
    t.after(() => r.stop());
    const port = r.relay.ports.http;
    const ca = pair.pem;

    const created = await adminCall(r, ca, 'POST', '/admin/accounts', { solana: { tps: 100, burst: 100 } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const key: string = created.json.uuid;
    assert.equal((await adminCall(r, ca, 'GET', '/healthz')).status, 200);

    const ping = await request(`https://127.0.0.1:${port}/ping`, { ca });
    assert.deepEqual([ping.status, ping.body, ping.cn], [200, 'pong', 'doors.test']);

    const tx = sol.legacyTransfer();
    const v2 = await request(`https://127.0.0.1:${port}/v2`, { ca, method: 'POST', headers: { 'api-key': key }, body: tx.bytes });
    assert.equal(v2.status, 200, v2.body);
    assert.equal(JSON.parse(v2.body).result, tx.signature);

    const tx2 = sol.legacyTransfer();
    const rpc = await request(`https://127.0.0.1:${port}/`, {
      ca,
      method: 'POST',
      headers: { 'api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'sendTransaction', params: [Buffer.from(tx2.bytes).toString('base64'), { encoding: 'base64' }] }),
    });
    assert.equal(rpc.status, 200, rpc.body);
    assert.equal(JSON.parse(rpc.body).result, tx2.signature);

    // wss:// on /ws: the upgrade, then a JSON-RPC call over the socket.
    const ws = new WebSocket(`wss://127.0.0.1:${port}/ws`, { ca, headers: { 'api-key': key } });
    ws.on('error', () => {});
    t.after(() => ws.terminate());
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const tx3 = sol.legacyTransfer();
    const answer = new Promise<any>((resolve) => ws.once('message', (d) => resolve(JSON.parse(String(d)))));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'sendTransaction', params: [Buffer.from(tx3.bytes).toString('base64'), { encoding: 'base64' }] }));
    assert.equal((await answer).result, tx3.signature);

    for (const p of [port, r.relay.ports.admin]) {
      // The client is let down to TLS 1.0/1.1 (its own floor lowered too), so only the server can refuse.
      const old = await handshake(p, { ca, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' });
      assert.ok('error' in old && /PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|WRONG_VERSION/.test(old.error), `TLS 1.1 refused by the server: ${JSON.stringify(old)}`);
      const v12 = await handshake(p, { ca, maxVersion: 'TLSv1.2' });
      assert.ok(!('error' in v12) && v12.protocol === 'TLSv1.2', `TLS 1.2 accepted: ${JSON.stringify(v12)}`);
      const alpn = await handshake(p, { ca, ALPNProtocols: ['h2', 'http/1.1'] });
      assert.ok(!('error' in alpn), JSON.stringify(alpn));
      // node:https selects http/1.1; uWS sends no ALPN extension, which leaves the client on HTTP/1.1 (RFC 7301 3.2).
      assert.equal(alpn.alpn, kind === 'node' ? 'http/1.1' : false);
      assert.equal(alpn.protocol, 'TLSv1.3');
    }

    // Plain HTTP to the TLS port: no HTTP answer comes back.
    const plain = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'));
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('close', () => resolve(got));
      s.on('error', () => {});
      setTimeout(() => s.destroy(), 2000);
    });
    assert.ok(!plain.startsWith('HTTP/1.1 200'), 'no plain-text answer on the TLS port');
  });
}

/**
 * As root, the CLI runs through util-linux's setpriv with every capability
 * dropped: still uid 0, so it reads the checkout (and the Node binary) wherever
 * they lie, but no longer reads a file whose permission bits forbid its owner.
 */
const SETPRIV = '/usr/bin/setpriv';
const DROP_CAPS = ['--bounding-set=-all', '--inh-caps=-all'];

/** The CLI with a configuration file: its exit code and stderr. */
function serve(file: string, unprivileged = false): Promise<{ code: number | null; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  return new Promise((resolve) => {
    const argv = [CLI, 'serve', '--config', file];
    const child = unprivileged
      ? spawn(SETPRIV, [...DROP_CAPS, process.execPath, ...argv], { env, stdio: ['ignore', 'ignore', 'pipe'] })
      : spawn(process.execPath, argv, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

const rootWithoutSetpriv = process.getuid?.() === 0 && !existsSync(SETPRIV);
test('start-up stops with one line for a missing, unreadable or mismatched certificate or key', { skip: rootWithoutSetpriv ? `running as root and ${SETPRIV} is missing: cannot drop privileges for the unreadable-key case` : false }, async (t) => {
  const dir = tmp(t);
  const a = makePair(dir, 'a.test');
  const b = makePair(dir, 'b.test');
  // Unreadable: a key file whose mode lets nobody read it. Root reads anything, so as root the relay runs
  // without capabilities (setpriv), which the permission bits then bind like any user.
  const root = process.getuid?.() === 0;
  const unreadable = join(dir, 'unreadable.key');
  copyFileSync(a.key, unreadable);
  chmodSync(unreadable, 0);
  const notPem = join(dir, 'not.pem');
  writeFileSync(notPem, 'not a certificate\n', { mode: 0o644 });
  const cases: [string, string, string, RegExp][] = [
    ['http', join(dir, 'missing.crt'), a.key, /^txrelay: http\.tls_cert_file \(TXRELAY_HTTP_TLS_CERT_FILE\) \S+missing\.crt is missing — /],
    ['http', a.cert, unreadable, /^txrelay: http\.tls_key_file \(TXRELAY_HTTP_TLS_KEY_FILE\) \S+unreadable\.key is not readable by this user \(permission denied\) — point http\.tls_key_file at a PEM file this user can read$/],
    ['http', a.cert, b.key, /^txrelay: http\.tls_key_file \(TXRELAY_HTTP_TLS_KEY_FILE\) \S+b\.test\.key is not the key of the certificate in http\.tls_cert_file \S+a\.test\.crt — /],
    ['http', notPem, a.key, /^txrelay: http\.tls_cert_file \(TXRELAY_HTTP_TLS_CERT_FILE\) \S+not\.pem holds no PEM certificate — /],
    ['admin', a.cert, b.key, /^txrelay: admin\.tls_key_file \(TXRELAY_ADMIN_TLS_KEY_FILE\) \S+b\.test\.key is not the key of the certificate in admin\.tls_cert_file \S+a\.test\.crt — /],
    ['http', a.cert, '', /^txrelay: http\.tls_key_file \(TXRELAY_HTTP_TLS_KEY_FILE\) is not set but http\.tls_cert_file is — /],
  ];
  const keyPem = readFileSync(b.key, 'utf8');
  // The starts run at once, each with its own file and data directory: each one mostly waits on its own start-up.
  const runs = await Promise.all(
    cases.map(([section, cert, key], i) => {
      const file = join(dir, `config-${i}.toml`);
      const pairOf = (name: string) => (name === section ? `tls_cert_file = "${cert}"\ntls_key_file = "${key}"\n` : '');
      writeFileSync(file, `[http]\nport = 0\n${pairOf('http')}[udp]\nport = 0\n[admin]\nport = 0\n${pairOf('admin')}[storage]\ndata_dir = "${join(dir, `data-${i}`)}"\n[workers]\nthreads = 1\n`);
      return serve(file, root);
    }),
  );
  for (const [i, [section, cert, key, want]] of cases.entries()) {
    const { code, stderr } = runs[i]!;
    const lines = stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, `one line for ${section} ${cert} ${key}:\n${stderr}`);
    assert.match(lines[0]!, want);
    assert.equal(code, 1);
    assert.ok(!stderr.includes(keyPem.split('\n')[1]!), 'no key material in the message');
  }
});

for (const { kind, skip, acceptors } of SETUPS) {
  test(`${kind}${acceptors > 1 ? `, ${acceptors} acceptor threads` : ''}: SIGHUP with a new certificate: a live keep-alive connection goes on, a new one gets the new certificate`, { skip }, async (t) => {
    const dir = tmp(t);
    const a = makePair(dir, 'old.test');
    const b = makePair(dir, 'new.test');
    const bad = makePair(dir, 'bad.test');
    const cert = join(dir, 'live.crt');
    const key = join(dir, 'live.key');
    copyFileSync(a.cert, cert);
    copyFileSync(a.key, key);
    const file = join(dir, 'config.toml');
    writeFileSync(
      file,
      `[http]\nport = 0\nacceptor = "${kind}"\nacceptors = ${acceptors}\ntls_cert_file = "${cert}"\ntls_key_file = "${key}"\n` +
        `[udp]\nport = 0\n[admin]\nport = 0\ntoken = "${ADMIN_TOKEN}"\ntls_cert_file = "${cert}"\ntls_key_file = "${key}"\n` +
        `[storage]\ndata_dir = "${join(dir, 'data')}"\n[workers]\nthreads = 1\n[log]\nlevel = "info"\n`,
    );
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
    const child = spawn(process.execPath, [CLI, 'serve', '--config', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    const lines: any[] = [];
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    });
    const waitFor = async (pred: (l: any) => boolean, what: string, from = 0) => {
      for (let i = 0; i < 300; i++) {
        const hit = lines.slice(from).find(pred);
        if (hit) return hit;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.fail(`no log line: ${what}\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
    };
    const listening = await waitFor((l) => l.msg === 'txrelay listening', 'listening');
    const base = `https://${listening.http}`;
    const admin = `https://${listening.admin}`;
    const both = Buffer.concat([a.pem, b.pem]);

    // Keep-alive connections, one per listener, made on the old certificate.
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const before = await request(`${base}/ping`, { ca: both, agent });
    assert.deepEqual([before.body, before.cn], ['pong', 'old.test']);
    const adminBefore = await request(`${admin}/healthz`, { ca: both, agent });
    assert.equal(adminBefore.cn, 'old.test');
    // A WebSocket open across the reload, too.
    const acct = await request(`${admin}/admin/accounts`, {
      ca: both,
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ solana: { tps: 100, burst: 100 } }),
    });
    assert.equal(acct.status, 201, acct.body);
    const ws = new WebSocket(`wss://${listening.http}/ws`, { ca: both, headers: { 'api-key': JSON.parse(acct.body).uuid } });
    ws.on('error', () => {});
    t.after(() => ws.terminate());
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade: ${res.statusCode}`)));
    });
    const wsCall = (id: number) =>
      new Promise<any>((resolve) => {
        ws.once('message', (d) => resolve(JSON.parse(String(d))));
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'txrelay_getStatuses', params: [['nope']] }));
      });
    assert.equal((await wsCall(1)).id, 1);

    copyFileSync(b.cert, cert);
    copyFileSync(b.key, key);
    const mark = lines.length;
    child.kill('SIGHUP');
    const reloaded = await waitFor((l) => /^TLS certificate reloaded/.test(l.msg) && l.listener === 'http', 'http reloaded', mark);
    await waitFor((l) => /^TLS certificate reloaded/.test(l.msg) && l.listener === 'admin', 'admin reloaded', mark);
    assert.match(reloaded.fingerprint, /^[0-9A-F:]+$/);

    // The live connections: same sockets, old certificate, still answering.
    for (let i = 0; i < 3; i++) {
      const again = await request(`${base}/ping`, { ca: both, agent });
      assert.equal(again.body, 'pong');
      assert.equal(again.socket, before.socket, 'the same keep-alive connection');
      assert.equal(again.cn, 'old.test');
      const adminAgain = await request(`${admin}/healthz`, { ca: both, agent });
      assert.equal(adminAgain.status, 200);
      assert.equal(adminAgain.socket, adminBefore.socket, 'the same admin connection');
    }
    // New connections: the new certificate, on every thread.
    for (let i = 0; i < 2 * acceptors; i++) {
      const fresh = await request(`${base}/ping`, { ca: both });
      assert.deepEqual([fresh.body, fresh.cn], ['pong', 'new.test']);
    }
    const afterWs = await wsCall(2);
    assert.equal(afterWs.id, 2, 'the WebSocket opened before the reload still answers');
    assert.ok(afterWs.result !== undefined, JSON.stringify(afterWs));
    const freshAdmin = await request(`${admin}/healthz`, { ca: both });
    assert.equal(freshAdmin.cn, 'new.test');

    // A mismatched pair is refused: the one in force stays, and the relay keeps serving.
    copyFileSync(bad.key, key);
    const mark2 = lines.length;
    child.kill('SIGHUP');
    const no = await waitFor((l) => /^TLS reload refused/.test(l.msg) && l.listener === 'http', 'refused', mark2);
    assert.match(no.error, /is not the key of the certificate/);
    const still = await request(`${base}/ping`, { ca: both });
    assert.deepEqual([still.body, still.cn], ['pong', 'new.test']);
    const stillOld = await request(`${base}/ping`, { ca: both, agent });
    assert.equal(stillOld.socket, before.socket);

    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    assert.equal(code, 0);
  });
}

