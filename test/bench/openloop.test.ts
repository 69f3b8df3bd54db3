/**
 * Both open-loop generators of the benchmarks (bench/e2e/openloop.c and its
 * Node twin openloop.ts) against a real HTTP server on a real socket: every
 * body goes out once; answers are counted by status; latency runs
 * from each request's due time, so a server that falls behind shows in the
 * figures instead of slowing the schedule down (no coordinated omission).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { writeBodies } from '../../bench/e2e/bodies.js';
import { openLoopGenerator, openLoopSpec, type OpenLoopGen } from '../../bench/e2e/generators.js';
import type { OpenLoopResult } from '../../bench/e2e/openloop.js';

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ROOT = resolve(DIST, '..');

interface Seen {
  bodies: string[];
  paths: Set<string>;
  tokens: Set<string>;
}

/** Answers every POST after `holdMs`, 200 for even bodies and 503 for odd ones (the body is the request's number). */
async function server(holdMs: number, seen: Seen): Promise<{ srv: Server; port: number }> {
  const srv = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      seen.bodies.push(body);
      seen.paths.add(req.url ?? '');
      seen.tokens.add(String(req.headers['api-key']));
      const status = Number(body) % 2 === 0 ? 200 : 503;
      setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'busy, try again'), holdMs);
    });
  });
  srv.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, port: (srv.address() as AddressInfo).port };
}

/** Runs a generator as the benchmarks do (its own process; the server answers in this one meanwhile). */
async function run(gen: OpenLoopGen, port: number, bodiesFile: string, rate: number, seconds: number, connections: number): Promise<OpenLoopResult> {
  const spec = openLoopSpec('t', 't', gen, { host: '127.0.0.1', port, path: '/v2?x=1', headers: { 'api-key': 'k-1' }, bodiesFile, rate, seconds, connections, okStatus: 200 });
  const [cmd, ...args] = spec.argv;
  const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  assert.equal(code, 0, err);
  const lines = out.split('\n');
  assert.ok(lines.indexOf('E2E_START') >= 0 && lines.indexOf('E2E_END') > lines.indexOf('E2E_START'), out);
  return spec.parse(out).generator as unknown as OpenLoopResult;
}

/** A server holding its answers `holdMs`, a bodies file of `bodies`, and `fn` run against them; all removed after. */
async function withServer(holdMs: number, bodies: Buffer[], fn: (port: number, file: string, seen: Seen) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'openloop-'));
  const seen: Seen = { bodies: [], paths: new Set(), tokens: new Set() };
  const { srv, port } = await server(holdMs, seen);
  try {
    const file = join(dir, 'b.bodies');
    writeBodies(file, bodies);
    await fn(port, file, seen);
  } finally {
    srv.closeAllConnections();
    srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const gens: [string, () => OpenLoopGen | null][] = [
  ['C', () => {
    const g = openLoopGenerator(ROOT, DIST, () => {});
    return g.kind === 'c' ? g : null;
  }],
  ['Node', () => ({ kind: 'node', script: join(DIST, 'bench', 'e2e', 'openloop.js') })],
];

for (const [name, make] of gens) {
  test(`${name} open-loop generator: every body once, answers counted by status`, async (t) => {
    const gen = make();
    if (!gen) return t.skip('no C compiler here: the benchmarks fall back to the Node generator');
    await withServer(0, Array.from({ length: 1000 }, (_, i) => Buffer.from(String(i))), async (port, file, seen) => {
      const r = await run(gen, port, file, 1000, 0.6, 8);
      assert.equal(r.sent, 600);
      assert.equal(r.answered, 600);
      assert.equal(r.errors, 0);
      assert.equal(r.exhausted, false);
      assert.deepEqual(r.byStatus, { 200: 300, 503: 300 });
      assert.equal(r.accepted.count, 300);
      assert.equal(r.shed.count, 300);
      assert.equal(r.acceptedService.count, 300);
      // Sent in schedule order, but over 8 connections: a generator that fell behind (a busy machine) sends
      // several at once, and the server reads them in whatever order their sockets come up.
      assert.deepEqual(seen.bodies.map(Number).sort((a, b) => a - b), Array.from({ length: 600 }, (_, i) => i));
      assert.deepEqual([...seen.paths], ['/v2?x=1']);
      assert.deepEqual([...seen.tokens], ['k-1']);
      const p = r.accepted;
      assert.ok(p.p50_us >= 1 && p.p50_us <= p.p90_us && p.p90_us <= p.p99_us && p.p99_us <= p.max_us, JSON.stringify(p));
    });
  });

  test(`${name} open-loop generator: a server slower than the schedule shows as latency from the due time`, async (t) => {
    const gen = make();
    if (!gen) return t.skip('no C compiler here: the benchmarks fall back to the Node generator');
    // 2 connections held 50 ms each carry 40 req/s; 200 req/s are offered for 0.5 s.
    await withServer(50, Array.from({ length: 100 }, (_, i) => Buffer.from(String(2 * i))), async (port, file) => {
      const r = await run(gen, port, file, 200, 0.5, 2);
      assert.equal(r.answered, 100);
      assert.deepEqual(r.byStatus, { 200: 100 });
      // The last request, due at 0.5 s, is answered at about 2.5 s (100 at 40 per second): ~2 s past its due time.
      assert.ok(r.accepted.max_us > 1_000_000, `max ${r.accepted.max_us} µs`);
      // Timed from its own write, an answer takes the server's hold, not the backlog's.
      assert.ok(r.acceptedService.max_us < r.accepted.max_us / 4, JSON.stringify(r.acceptedService));
      assert.ok(r.maxSendLagMs > 500, `lag ${r.maxSendLagMs} ms`);
    });
  });
}
