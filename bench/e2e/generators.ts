/**
 * The load generators as window specs (window.ts): wrk, closed loop,
 * through bench/e2e/wrk/bodies.lua (every request a distinct pre-signed
 * transaction), and an open-loop generator for a fixed offered rate: the C
 * one (openloop.c), compiled on first use, or the Node one (openloop.ts)
 * where no C compiler runs.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Door } from './doors.js';
import type { OpenLoopOpts, OpenLoopResult } from './openloop.js';
import type { LoadSpec } from './window.js';

export interface WrkResult {
  requests: number;
  duration_us: number;
  connect_err: number;
  read_err: number;
  write_err: number;
  status_err: number;
  timeout_err: number;
  lat_p50_us: number;
  lat_p90_us: number;
  lat_p99_us: number;
  lat_max_us: number;
  exhausted_threads: number;
}

export function jsonLine<T>(out: string, what: string): T {
  const line = out.split('\n').find((l) => l.startsWith('E2E_JSON '));
  if (!line) throw new Error(`${what}: no result line in its output:\n${out.slice(-2000)}`);
  return JSON.parse(line.slice('E2E_JSON '.length)) as T;
}

export interface WrkOpts {
  name: string;
  what: string;
  port: number;
  door: Door;
  uuid: string;
  bodiesFile: string;
  seconds: number;
  connections: number;
  /** Repeat the bodies when they run out (the bare server has no dedup); the relay must never see one twice. */
  cycle: boolean;
  lua: string;
}

/** Open-loop overload: offered rate = this x the 16-connection capacity. */
export const OPEN_FACTOR = 2;
/**
 * Connections the open-loop generator spreads its fixed rate over (a request
 * waits for a free one: that wait counts as latency). It must exceed the
 * offered rate times the relay's answer time, or the generator is the bound:
 * with 256 it could offer at most 256 ÷ ~20 ms ≈ 13k req/s, under 2x
 * capacity, and fell 3-5 s behind its schedule (the open-loop goodput it
 * reported was then the generator's). With 2048
 * it kept within 10-60 ms of its schedule at 2x (~16-18k req/s here).
 */
export const OPEN_CONNECTIONS = 2048;

/** wrk threads: one per connection up to two (this box has one load core; two keep wrk ahead of a relay on the other). */
export const wrkThreads = (connections: number) => Math.min(2, connections);

export function wrkSpec(o: WrkOpts): LoadSpec {
  const threads = wrkThreads(o.connections);
  const headers = Object.entries(o.door.headers(o.uuid))
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  return {
    name: o.name,
    what: o.what,
    tool: `wrk -t${threads} -c${o.connections} (closed loop)`,
    connections: o.connections,
    // stdbuf: wrk's "Running" and "requests in" lines must arrive when printed, they delimit the window.
    argv: ['stdbuf', '-oL', 'wrk', `-t${threads}`, `-c${o.connections}`, `-d${Math.max(1, Math.round(o.seconds))}s`, '-s', o.lua, `http://127.0.0.1:${o.port}`],
    env: { E2E_BODIES: o.bodiesFile, E2E_THREADS: String(threads), E2E_PATH: o.door.path(o.uuid), E2E_HEADERS: headers, E2E_CYCLE: o.cycle ? '1' : '0' },
    startMarker: 'Running ',
    endMarker: ' requests in ',
    parse(out) {
      const w = jsonLine<WrkResult>(out, 'wrk');
      const errors = w.connect_err + w.read_err + w.write_err + w.timeout_err;
      const statuses: Record<string, number> = { '2xx/3xx': w.requests - w.status_err, 'other status': w.status_err };
      if (errors) statuses['socket errors'] = errors;
      return { latency: { p50Us: w.lat_p50_us, p99Us: w.lat_p99_us, maxUs: w.lat_max_us }, statuses, generator: { ...w } };
    },
  };
}

/** Which open-loop generator runs: the C one's binary, or the Node one's script. */
export type OpenLoopGen = { kind: 'c'; bin: string } | { kind: 'node'; script: string };

let chosen: OpenLoopGen | null = null;

/**
 * The C generator, compiled from `<root>/bench/e2e/openloop.c` into
 * bench/.cache (named by the source's hash, so an edit recompiles) with
 * `$CC` or `cc`; the Node one (`<dist>/bench/e2e/openloop.js`) when that
 * fails, with the compiler's complaint passed to `warn`. The Node generator
 * spends about three times the CPU per request (35 against 11.5 µs,
 * `/usr/bin/time` on both at 50k req/s offered): on a fast hour it could not
 * offer 2x the relay's capacity from one core.
 */
export function openLoopGenerator(root: string, dist: string, warn: (m: string) => void): OpenLoopGen {
  if (chosen) return chosen;
  const src = join(root, 'bench', 'e2e', 'openloop.c');
  const hash = createHash('sha256').update(readFileSync(src)).digest('hex').slice(0, 12);
  const dir = join(root, 'bench', '.cache');
  const bin = join(dir, `openloop-${hash}`);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    const cc = spawnSync(process.env.CC || 'cc', ['-O2', '-o', tmp, src], { encoding: 'utf8' });
    if (cc.status === 0) renameSync(tmp, bin);
    else warn(`the C open-loop generator did not compile (${(cc.error?.message ?? cc.stderr).trim().slice(0, 300)}): using the Node one`);
  }
  chosen = existsSync(bin) ? { kind: 'c', bin } : { kind: 'node', script: join(dist, 'bench', 'e2e', 'openloop.js') };
  return chosen;
}

/** The request line and headers up to the content-length line, as the C generator takes them. */
export function requestHead(o: Pick<OpenLoopOpts, 'host' | 'port' | 'path' | 'headers'>): string {
  let head = `POST ${o.path} HTTP/1.1\r\nhost: ${o.host}:${o.port}\r\n`;
  for (const [k, v] of Object.entries(o.headers)) head += `${k}: ${v}\r\n`;
  return head;
}

export function openLoopSpec(name: string, what: string, gen: OpenLoopGen, o: OpenLoopOpts): LoadSpec {
  return {
    name,
    what,
    tool: `${gen.kind === 'c' ? 'C' : 'node'} open loop, ${o.rate} req/s offered, ${o.connections} connections`,
    connections: o.connections,
    argv:
      gen.kind === 'c'
        ? [gen.bin, o.host, String(o.port), String(o.rate), String(o.seconds), String(o.connections), String(o.okStatus), o.bodiesFile, requestHead(o)]
        : [process.execPath, gen.script, JSON.stringify(o)],
    startMarker: 'E2E_START',
    endMarker: 'E2E_END',
    parse(out) {
      const r = jsonLine<OpenLoopResult>(out, 'open-loop generator');
      const statuses: Record<string, number> = { ...r.byStatus };
      if (r.errors) statuses['socket errors'] = r.errors;
      if (r.sent > r.answered) statuses.unanswered = r.sent - r.answered;
      return { latency: { p50Us: r.accepted.p50_us, p99Us: r.accepted.p99_us, maxUs: r.accepted.max_us }, statuses, generator: { ...r } };
    },
  };
}
