/**
 * What TLS costs the relay (docs/benchmarks.md#tls): the real `txrelay serve`
 * answering GET /ping, plaintext and over TLS side by side, on each acceptor.
 *
 *   keep-alive    16 connections, one request in flight each: µs of server
 *                 CPU per request (TLS: record encryption only);
 *   new conns     8 loops of connect, one request with `Connection: close`,
 *                 close: µs of server CPU per connection. TLS minus plaintext
 *                 is the handshake's cost (ECDSA P-256 and RSA-2048 certificates,
 *                 TLS 1.3, full handshakes: the client keeps no session).
 *
 * CPU comes from the server's /proc/<pid>/stat; the server is pinned to one
 * core when taskset exists, the load runs in this process. Modes alternate
 * (plain, ECDSA, RSA) for three rounds so drift hits each alike; the
 * ratios are the median of each round's own TLS ÷ plaintext; ~3.5 min.
 *
 *   npm run bench:tls [-- --seconds 4 --rounds 3]
 */
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, availableParallelism } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { loadAcceptor } from '../src/ingress/uws.js';
import { cpuModel, cpuSeconds } from './e2e/proc.js';

const CLI = new URL('../src/cli/main.js', import.meta.url).pathname;
const KEEPALIVE_CONNS = 16;
const NEWCONN_LOOPS = 8;
const SECONDS = Number(process.argv[process.argv.indexOf('--seconds') + 1]) || 4;
const ROUNDS = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 3;
const SERVER_CORE = '0';

type Mode = 'plain' | 'ecdsa' | 'rsa';
interface Pair {
  cert: string;
  key: string;
}

const pinned = availableParallelism() >= 2 && !spawnSync('taskset', ['-V']).error;

function makePair(dir: string, name: string, alg: string[]): Pair {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', ...alg, '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert, key };
}

async function startRelay(dir: string, acceptor: 'uws' | 'node', pair: Pair | null): Promise<{ child: ChildProcess; port: number }> {
  const file = join(dir, `relay-${acceptor}-${pair ? 'tls' : 'plain'}.toml`);
  const tlsKeys = pair ? `tls_cert_file = "${pair.cert}"\ntls_key_file = "${pair.key}"\n` : '';
  writeFileSync(
    file,
    `[http]\nport = 0\nacceptor = "${acceptor}"\n# One client address opens thousands of short connections a second.\nmax_connections_per_ip = 0\n${tlsKeys}[udp]\nenabled = false\n[admin]\nport = 0\n` +
      `[storage]\ndata_dir = "${join(dir, `data-${acceptor}-${Date.now()}`)}"\n[workers]\nthreads = 1\n[log]\nlevel = "info"\n`,
  );
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  const args = [CLI, 'serve', '--config', file];
  const child = pinned ? spawn('taskset', ['-c', SERVER_CORE, process.execPath, ...args], { env }) : spawn(process.execPath, args, { env });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /"http":"[^"]*:(\d+)"[^\n]*"msg":"txrelay listening"/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.stderr!.on('data', (d) => process.stderr.write(d));
    child.once('exit', (code) => reject(new Error(`relay exited (${code}): ${out.slice(-500)}`)));
  });
}

const REQ = 'GET /ping HTTP/1.1\r\nHost: bench\r\n\r\n';
const REQ_CLOSE = 'GET /ping HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n';

function connect(port: number, secure: boolean): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // No session kept: every TLS connection is a full handshake.
    const s = secure ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => resolve(s)) : net.connect(port, '127.0.0.1', () => resolve(s));
    s.setNoDelay(true);
    s.once('error', reject);
  });
}

/** Requests answered on `conns` keep-alive connections until `until` (performance.now()). */
async function keepAlive(port: number, secure: boolean, until: number): Promise<number> {
  const socks = await Promise.all(Array.from({ length: KEEPALIVE_CONNS }, () => connect(port, secure)));
  let done = 0;
  await Promise.all(
    socks.map(
      (s) =>
        new Promise<void>((resolve) => {
          let buf = '';
          s.on('data', (d: Buffer) => {
            buf += d.toString('latin1');
            // One answer in flight: its body `pong` ends it.
            if (!buf.endsWith('pong')) return;
            buf = '';
            done++;
            if (performance.now() < until) s.write(REQ);
            else {
              s.destroy();
              resolve();
            }
          });
          s.write(REQ);
        }),
    ),
  );
  return done;
}

/** Connections made, each with one request and the server's close, until `until`. */
async function newConnections(port: number, secure: boolean, until: number): Promise<number> {
  let done = 0;
  const loop = async () => {
    while (performance.now() < until) {
      const s = await connect(port, secure);
      await new Promise<void>((resolve, reject) => {
        let buf = '';
        s.on('data', (d: Buffer) => (buf += d.toString('latin1')));
        s.once('close', () => (buf.endsWith('pong') ? resolve() : reject(new Error(`${secure ? 'TLS' : 'plaintext'} connection closed without an answer (${buf.length} bytes: ${JSON.stringify(buf.slice(0, 80))})`))));
        s.write(REQ_CLOSE);
      });
      done++;
    }
  };
  await Promise.all(Array.from({ length: NEWCONN_LOOPS }, loop));
  return done;
}

interface Run {
  acceptor: string;
  mode: Mode;
  keepAliveUs: number;
  keepAliveRps: number;
  newConnUs: number;
  newConnPerS: number;
}

async function measure(dir: string, acceptor: 'uws' | 'node', mode: Mode, pairs: Record<Mode, Pair | null>): Promise<Run> {
  const r = await startRelay(dir, acceptor, pairs[mode]);
  const secure = mode !== 'plain';
  try {
    await keepAlive(r.port, secure, performance.now() + 1000);
    await newConnections(r.port, secure, performance.now() + 500);
    const phase = async (f: (port: number, secure: boolean, until: number) => Promise<number>) => {
      const cpu0 = cpuSeconds(r.child.pid!);
      const t0 = performance.now();
      const n = await f(r.port, secure, t0 + SECONDS * 1000);
      const s = (performance.now() - t0) / 1000;
      return { us: ((cpuSeconds(r.child.pid!) - cpu0) * 1e6) / n, perS: n / s };
    };
    const ka = await phase(keepAlive);
    const nc = await phase(newConnections);
    return { acceptor, mode, keepAliveUs: ka.us, keepAliveRps: ka.perS, newConnUs: nc.us, newConnPerS: nc.perS };
  } finally {
    r.child.kill('SIGTERM');
    await new Promise((res) => r.child.once('exit', res));
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-tls-'));
  const pairs: Record<Mode, Pair | null> = {
    plain: null,
    ecdsa: makePair(dir, 'ecdsa', ['ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']),
    rsa: makePair(dir, 'rsa', ['rsa:2048']),
  };
  const acceptors: ('uws' | 'node')[] = loadAcceptor('auto').kind === 'uws' ? ['uws', 'node'] : ['node'];
  const runs: Run[] = [];
  try {
    for (const acceptor of acceptors) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of ['plain', 'ecdsa', 'rsa'] as const) runs.push(await measure(dir, acceptor, mode, pairs));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const mean = (xs: Run[], k: keyof Run) => xs.reduce((s, x) => s + (x[k] as number), 0) / xs.length;
  console.log(`\ntxrelay serve, GET /ping; ${SECONDS} s per phase x ${ROUNDS} rounds, modes alternating; keep-alive: ${KEEPALIVE_CONNS} connections; new connections: ${NEWCONN_LOOPS} loops, full TLS 1.3 handshakes${pinned ? `; relay on core ${SERVER_CORE}` : ' (not pinned)'}`);
  console.log(`${cpuModel()}, ${availableParallelism()} cores, Node ${process.versions.node}, ${process.versions.openssl ? `OpenSSL ${process.versions.openssl}` : ''}\n`);
  console.log('| acceptor | mode | µs CPU / request, keep-alive | ÷ plaintext, median (range) | requests/s | µs CPU / new connection | handshake cost (µs CPU, minus plaintext) |\n|---|---|---|---|---|---|---|');
  const rows = [];
  for (const acceptor of acceptors) {
    const plain = runs.filter((r) => r.acceptor === acceptor && r.mode === 'plain');
    const plainNew = mean(plain, 'newConnUs');
    for (const mode of ['plain', 'ecdsa', 'rsa'] as const) {
      const xs = runs.filter((r) => r.acceptor === acceptor && r.mode === mode);
      const row: Record<string, unknown> & { keepAliveUs: number; keepAliveRps: number; newConnUs: number; handshakeUs: number } = {
        acceptor,
        mode,
        keepAliveUs: mean(xs, 'keepAliveUs'),
        keepAliveRps: mean(xs, 'keepAliveRps'),
        newConnUs: mean(xs, 'newConnUs'),
        handshakeUs: mode === 'plain' ? 0 : mean(xs, 'newConnUs') - plainNew,
      };
      // Each round's own ratio to the plaintext run next to it: drift on a shared machine cancels.
      const ratios = xs.map((x, i) => x.keepAliveUs / plain[i]!.keepAliveUs).sort((p, q) => p - q);
      const ratio = ratios[Math.floor(ratios.length / 2)]!;
      Object.assign(row, { keepAliveRatio: ratio, keepAliveRatioRange: [ratios[0], ratios[ratios.length - 1]] });
      rows.push(row);
      const label = mode === 'plain' ? 'plaintext' : mode === 'ecdsa' ? 'TLS, ECDSA P-256' : 'TLS, RSA-2048';
      const range = mode === 'plain' ? '–' : `${ratio.toFixed(2)} (${ratios[0]!.toFixed(2)}–${ratios[ratios.length - 1]!.toFixed(2)})`;
      console.log(`| ${acceptor} | ${label} | ${row.keepAliveUs.toFixed(1)} | ${range} | ${Math.round(row.keepAliveRps).toLocaleString('en')} | ${row.newConnUs.toFixed(0)} | ${mode === 'plain' ? '–' : row.handshakeUs.toFixed(0)} |`);
    }
  }
  console.log(JSON.stringify({ runs, rows }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
