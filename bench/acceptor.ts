/**
 * What the node:http fallback costs against uWebSockets.js: a bare app on
 * each acceptor answering the same POST the way txrelay's doors do (body read
 * through onData, a JSON answer of the same size), driven flat out by wrk.
 * CPU comes from the server's /proc/<pid>/stat, so the figure is µs of CPU per
 * request on the server side, whatever wrk sees. Runs alternate (uWS, node,
 * uWS, node) so drift on a shared machine hits both alike; ~35 s.
 *
 *   npm run bench:acceptor            needs wrk (apt-get install wrk)
 *   node dist/bench/acceptor.js serve <uws|node>   (the server half; prints READY <port>)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAcceptor, type AcceptorMode, type HttpResponse } from '../src/ingress/uws.js';
import { cpuModel, cpuSeconds } from './e2e/proc.js';

/** A Solana transfer is ~215 bytes; 300 is a typical small transaction with a memo. */
const BODY_BYTES = 300;
/** Enough connections to keep one server core busy with wrk on the other. */
const CONNECTIONS = 64;
const WARM_SECONDS = 2;
const SECONDS = 5;
const ROUNDS = 2;
const SERVER_CORE = '0';
const LOAD_CORE = '1';
/** The same size as txrelay's success answer (an 88-character base58 signature). */
const ANSWER = `{"jsonrpc":"2.0","result":"${'5'.repeat(88)}","id":null}`;

function serve(mode: AcceptorMode): void {
  const a = loadAcceptor(mode);
  if (mode === 'uws' && a.kind !== 'uws') throw new Error('no uWS build loads');
  const app = a.uws.App();
  app.post('/v2', (res: HttpResponse) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    res.onData((chunk, isLast) => {
      // Copied like txrelay's readBody does (uWS neuters the chunk after the call).
      Buffer.from(new Uint8Array(chunk));
      if (!isLast || aborted) return;
      res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(ANSWER));
    });
  });
  app.any('/*', (res) => void res.cork(() => res.writeStatus('404 Not Found').end()));
  app.listen('127.0.0.1', 0, (s) => {
    if (!s) process.exit(1);
    process.stdout.write(`READY ${a.uws.us_socket_local_port(s)} ${a.name}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

interface Run {
  acceptor: string;
  requests: number;
  seconds: number;
  cpuUsPerRequest: number;
}

const pinned = availableParallelism() >= 2 && !spawnSync('taskset', ['-V']).error;
const onCore = (core: string, cmd: string, args: string[]) => (pinned ? spawn('taskset', ['-c', core, cmd, ...args]) : spawn(cmd, args));

async function startServer(mode: 'uws' | 'node'): Promise<{ child: ChildProcess; port: number; name: string }> {
  const child = onCore(SERVER_CORE, process.execPath, [fileURLToPath(import.meta.url), 'serve', mode]);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /READY (\d+) (\S+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), name: m[2]! });
    });
    child.stderr!.on('data', (d) => process.stderr.write(d));
    child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
  });
}

function wrk(port: number, lua: string, seconds: number): Promise<number> {
  const child = onCore(LOAD_CORE, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-s', lua, `http://127.0.0.1:${port}/v2`]);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => {
      const m = /(\d+) requests in/.exec(out);
      const errors = /Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)/.exec(out);
      if (code !== 0 || !m) return reject(new Error(`wrk failed: ${out}`));
      if (errors) return reject(new Error(`wrk saw errors: ${errors[0]}`));
      resolve(Number(m[1]));
    }),
  );
}

async function measure(mode: 'uws' | 'node', lua: string): Promise<Run> {
  const s = await startServer(mode);
  try {
    await wrk(s.port, lua, WARM_SECONDS);
    const cpu0 = cpuSeconds(s.child.pid!);
    const t0 = performance.now();
    const requests = await wrk(s.port, lua, SECONDS);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(s.child.pid!) - cpu0;
    return { acceptor: s.name, requests, seconds, cpuUsPerRequest: (cpu * 1e6) / requests };
  } finally {
    s.child.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  if (spawnSync('wrk', ['-v']).error) {
    console.error('wrk not found: install it with `apt-get install wrk` and run again');
    process.exit(1);
  }
  const uwsLoads = loadAcceptor('auto').kind === 'uws';
  if (!uwsLoads) console.error(`no uWebSockets.js build loads for Node ${process.versions.node} here: measuring node:http alone`);
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-acceptor-'));
  const lua = join(dir, 'post.lua');
  writeFileSync(lua, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/octet-stream"\nwrk.body = string.rep("x", ${BODY_BYTES})\n`);
  const runs: Run[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      if (uwsLoads) runs.push(await measure('uws', lua));
      runs.push(await measure('node', lua));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const mean = (name: string) => {
    const xs = runs.filter((x) => (name === 'node:http' ? x.acceptor === 'node:http' : x.acceptor !== 'node:http'));
    return {
      acceptor: xs[0]?.acceptor ?? name,
      cpuUsPerRequest: xs.reduce((s, x) => s + x.cpuUsPerRequest, 0) / xs.length,
      requestsPerSec: xs.reduce((s, x) => s + x.requests / x.seconds, 0) / xs.length,
    };
  };
  const rows = [...(uwsLoads ? [mean('uws')] : []), mean('node:http')];
  console.log(`\nbare POST ${BODY_BYTES} B → 200 JSON; wrk -t1 -c${CONNECTIONS}, ${SECONDS} s x ${ROUNDS} per acceptor, alternating${pinned ? `; server on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}` : ' (not pinned)'}`);
  console.log(`${cpuModel()}, ${availableParallelism()} cores, Node ${process.versions.node}\n`);
  console.log('| acceptor | µs CPU / request | requests/s (one core) |\n|---|---|---|');
  for (const r of rows) console.log(`| ${r.acceptor} | ${r.cpuUsPerRequest.toFixed(1)} | ${Math.round(r.requestsPerSec).toLocaleString('en')} |`);
  if (rows.length === 2) console.log(`\nnode:http / uWS: ${(rows[1]!.cpuUsPerRequest / rows[0]!.cpuUsPerRequest).toFixed(2)}x the CPU per request`);
  console.log(JSON.stringify({ runs, rows }));
}

if (process.argv[2] === 'serve') serve((process.argv[3] ?? 'auto') as AcceptorMode);
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
