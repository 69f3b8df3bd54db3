/**
 * `npm run bench:ws`: the WebSocket door (`/ws`) against HTTP keep-alive
 * `POST /` for the same JSON-RPC call, side by side in one run.
 *
 * The call is the one bench:e2e's `solana-rpc` door sends (Solana
 * `sendTransaction`, base64) and, unless `--doors` says otherwise, its
 * `evm-rpc` one too (`eth_sendRawTransaction`): byte for byte the same body
 * over both transports, a distinct pre-signed transaction each (the relay
 * deduplicates). Each round starts two fresh relays, one per transport
 * (`txrelay serve`, bench/e2e/relay.ts: pinned to core 0, a paid account
 * with a limit far above any rate here made through the admin API,
 * forwarding to `txrelay bench sink`), and measures, the transports' windows
 * of each kind back to back:
 *
 *   - 16 in flight: 16 keep-alive connections, or 16 WebSockets, each with
 *     one request in flight; relay CPU per answered transaction, from
 *     `/proc/<pid>/stat` (utime + stime, every thread) over the window,
 *     divided by the relay's own count of answers in it;
 *   - serial: one connection or one WebSocket, one request in flight;
 *     latency at the client, p50 / p90 / p99, each request from its write
 *     to its whole answer.
 *
 * Back to back, because this host's speed moves in steps (the same serial
 * window 150 or 250 µs at p50 from one minute to the next, with nothing else
 * visibly busy): a relay per transport and round started and stopped in
 * turn put a pair's windows 20 s and more apart, and their ratio flipped
 * from round to round. The relay that waits meanwhile idles on core 0
 * (about 3% of a core).
 *
 * Each window is a warm-up on the same connections, then the measured phase,
 * delimited for bench/e2e/window.ts (which takes every /proc and counter
 * snapshot) by the generator's E2E_START / E2E_END lines. The two
 * transports alternate over `--rounds` rounds (the order flips each round)
 * and the report gives each round's WS ÷ HTTP ratio and their median, as
 * bench:ab does.
 *
 * The load generator is this same script (`--gen '<json>'`), in its own
 * process on core 1 with the sink and the orchestrator, so both transports
 * pay the same process set-up and the same event loop: HTTP through raw
 * `net` sockets writing pre-built requests (bench:e2e's own serial figures
 * come from wrk, which is not Node), WebSocket through the `ws` package
 * (`perMessageDeflate` off, as the relay never compresses), the api-key
 * given once at the upgrade; every request's bytes are built before the
 * connections open. What the generator spent per request is reported too:
 * a serial latency includes the client's own turn.
 *
 * Writes bench/results/ws.md (the latest run; earlier ones are in git
 * history) and prints it. Options: --doors (solana-rpc,evm-rpc), --rounds
 * (5), --seconds (5), --warm (2), --quiet-wait (60: before each round,
 * the most seconds to wait for other work on a shared host to fall under 15%
 * of a core; 0: never wait), --smoke (one door, one round of 1 s windows
 * without warm-up or waiting and a small pool: checks the harness, writes
 * nothing, its figures mean nothing). Needs taskset and 2 cores.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import WebSocket from 'ws';
import { DOORS, type Door, type DoorName, type Family } from './e2e/doors.js';
import { cachedPool, readBodies, writeBodies } from './e2e/bodies.js';
import { coresBusySeconds, cpuModel, loadAvg } from './e2e/proc.js';
import { startRelay, startSink, stopChild, stopRelay, type Relay, type Sink } from './e2e/relay.js';
import { jsonLine, requestHead } from './e2e/generators.js';
import { measureWindow, type LoadSpec, type RunStats } from './e2e/window.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const SCRIPT = fileURLToPath(import.meta.url);
const MAIN = join(HERE, '..', 'src', 'cli', 'main.js');
const CACHE = join(ROOT, 'bench', '.cache', 'e2e');
const RELAY_CORE = '0';
const LOAD_CORE = '1';
const CHAIN_ID = 1;

type Transport = 'http' | 'ws';

// ---- the load generator (a child process: `node dist/bench/ws.js --gen '<json>'`) ---------------------

interface GenOpts {
  transport: Transport;
  host: string;
  port: number;
  /** `/` for HTTP, `/ws` for the upgrade. */
  path: string;
  /** HTTP: every request's headers; WebSocket: the upgrade's. */
  headers: Record<string, string>;
  bodiesFile: string;
  connections: number;
  warmS: number;
  seconds: number;
  /** HTTP status of an accepted call. */
  okStatus: number;
}

interface Percentiles {
  count: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
  mean_us: number;
}

interface GenResult {
  transport: Transport;
  connections: number;
  /** The measured phase as the generator timed it, s. */
  windowS: number;
  /** Requests written in the measured phase, and their answers (latency is theirs). */
  sent: number;
  answered: number;
  ok: number;
  notOk: number;
  warmAnswered: number;
  errors: number;
  /** The bodies ran out before the end: the window ended early. */
  exhausted: boolean;
  latency: Percentiles;
}

const CRLF2 = Buffer.from('\r\n\r\n');
const CL = /\r\ncontent-length:\s*(\d+)/i;
const ERROR = Buffer.from('"error"');
/** One options object for every send: a text frame of the pre-built bytes. */
const TEXT = { binary: false } as const;

interface Conn {
  send(i: number): void;
  close(): void;
  sentAt: number;
  inWindow: boolean;
  busy: boolean;
}

async function generate(o: GenOpts): Promise<GenResult> {
  const bodies = readBodies(o.bodiesFile);
  // Every request's bytes before any connection opens: HTTP the whole request, WebSocket the message.
  const head = requestHead({ host: o.host, port: o.port, path: o.path, headers: o.headers });
  const reqs = o.transport === 'http' ? bodies.map((b) => Buffer.concat([Buffer.from(`${head}content-length: ${b.length}\r\n\r\n`, 'latin1'), b])) : bodies;
  const hist = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  let next = 0;
  let phase: 'warm' | 'window' | 'done' = 'warm';
  let sent = 0;
  let answered = 0;
  let ok = 0;
  let warmAnswered = 0;
  let errors = 0;
  let exhausted = false;
  let inflight = 0;
  let tStart = 0;
  let tEnd = 0;
  let drained: (() => void) | null = null;

  const issue = (c: Conn): void => {
    if (phase === 'done') return;
    if (next >= reqs.length) {
      exhausted = true;
      endWindow();
      return;
    }
    c.inWindow = phase === 'window';
    if (c.inWindow) sent++;
    c.busy = true;
    inflight++;
    c.sentAt = performance.now();
    c.send(next++);
  };
  const onAnswer = (c: Conn, good: boolean): void => {
    const now = performance.now();
    if (!c.busy) return;
    c.busy = false;
    inflight--;
    if (c.inWindow) {
      answered++;
      if (good) ok++;
      hist.recordValue(Math.max(1, Math.round((now - c.sentAt) * 1000)));
    } else warmAnswered++;
    if (phase === 'done') {
      if (inflight === 0) drained?.();
      return;
    }
    issue(c);
  };
  const onError = (c: Conn): void => {
    errors++;
    if (c.busy) {
      c.busy = false;
      inflight--;
      if (phase === 'done' && inflight === 0) drained?.();
    }
  };

  const open = (): Promise<Conn> =>
    new Promise((res, rej) => {
      if (o.transport === 'http') {
        const sock = connect({ host: o.host, port: o.port, noDelay: true });
        let acc: Buffer | null = null;
        const c: Conn = { send: (i) => sock.write(reqs[i]!), close: () => sock.destroy(), sentAt: 0, inWindow: false, busy: false };
        sock.once('connect', () => res(c));
        sock.once('error', rej);
        sock.on('error', () => onError(c));
        sock.on('data', (chunk: Buffer) => {
          // One request in flight per connection: one answer per complete message.
          const buf = acc ? Buffer.concat([acc, chunk]) : chunk;
          const h = buf.indexOf(CRLF2);
          if (h < 0) {
            acc = buf;
            return;
          }
          const m = CL.exec(buf.toString('latin1', 0, h));
          if (buf.length < h + 4 + (m ? Number(m[1]) : 0)) {
            acc = buf;
            return;
          }
          acc = null;
          onAnswer(c, Number(buf.toString('latin1', 9, 12)) === o.okStatus);
        });
      } else {
        const ws = new WebSocket(`ws://${o.host}:${o.port}${o.path}`, { headers: o.headers, perMessageDeflate: false });
        const c: Conn = { send: (i) => ws.send(reqs[i]!, TEXT), close: () => ws.terminate(), sentAt: 0, inWindow: false, busy: false };
        ws.once('open', () => res(c));
        ws.once('unexpected-response', (_req, r) => rej(new Error(`upgrade refused: ${r.statusCode}`)));
        ws.on('error', (e) => {
          onError(c);
          rej(e);
        });
        ws.on('message', (data: Buffer) => onAnswer(c, data.indexOf(ERROR) < 0));
      }
    });

  const conns = await Promise.all(Array.from({ length: o.connections }, open));
  let endTimer: NodeJS.Timeout | null = null;
  const startWindow = (): void => {
    if (phase !== 'warm') return;
    phase = 'window';
    tStart = performance.now();
    process.stdout.write('E2E_START\n');
    endTimer = setTimeout(endWindow, o.seconds * 1000);
  };
  function endWindow(): void {
    if (phase === 'done') return;
    if (phase === 'warm') startWindow(); // ran out during the warm-up: an empty window, flagged as exhausted
    if (endTimer) clearTimeout(endTimer);
    phase = 'done';
    tEnd = performance.now();
    process.stdout.write('E2E_END\n');
    if (inflight === 0) drained?.();
    // The last answers, bounded: a stuck relay still ends the run.
    else setTimeout(() => drained?.(), 5000).unref();
  }
  const done = new Promise<void>((r) => (drained = r));
  if (o.warmS > 0) setTimeout(startWindow, o.warmS * 1000);
  else startWindow();
  for (const c of conns) issue(c);
  await done;
  for (const c of conns) c.close();
  return {
    transport: o.transport,
    connections: o.connections,
    windowS: (tEnd - tStart) / 1000,
    sent,
    answered,
    ok,
    notOk: answered - ok,
    warmAnswered,
    errors,
    exhausted,
    latency: {
      count: hist.totalCount,
      p50_us: hist.totalCount ? hist.getValueAtPercentile(50) : 0,
      p90_us: hist.totalCount ? hist.getValueAtPercentile(90) : 0,
      p99_us: hist.totalCount ? hist.getValueAtPercentile(99) : 0,
      max_us: hist.totalCount ? hist.maxValue : 0,
      mean_us: hist.totalCount ? hist.mean : 0,
    },
  };
}

// ---- the orchestrator ------------------------------------------------------------------------------------

const { values: opt } = parseArgs({
  options: {
    gen: { type: 'string' },
    doors: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    warm: { type: 'string', default: '2' },
    'quiet-wait': { type: 'string', default: '60' },
    smoke: { type: 'boolean', default: false },
  },
});
const SMOKE = opt.smoke;
const ROUNDS = SMOKE ? 1 : Number(opt.rounds);
const SECONDS = SMOKE ? 1 : Number(opt.seconds);
const WARM_SECONDS = SMOKE ? 0 : Number(opt.warm);
/** Before each round, wait up to this long for the host to be nearly idle (other work under QUIET_PCT of a core over a second). */
const QUIET_WAIT_S = SMOKE ? 0 : Number(opt['quiet-wait']);
const QUIET_PCT = 15;
/** Signed transactions per family: bench:e2e's cached pool (the same file), every relay start reusing it (fresh dedup state each). */
const POOL = SMOKE ? 30_000 : 600_000;
/** The pool's share for the 16-in-flight windows; the serial windows take the rest. Either is more than a window can answer here. */
const C16_SHARE = 0.6;
const C16 = 16;
const log = (m: string) => process.stderr.write(`[ws] ${m}\n`);

const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Raw signed transactions of a family, shared with the other benchmarks through one cache file. */
const pool = (family: Family): Promise<Buffer[]> => cachedPool(family, POOL, CHAIN_ID, CACHE, log);

interface Pair {
  c16: RunStats | null;
  serial: RunStats | null;
}

function genSpec(t: Transport, relay: Relay, door: Door, bodiesFile: string, connections: number, what: string): LoadSpec {
  const o: GenOpts = {
    transport: t,
    host: '127.0.0.1',
    port: relay.port,
    path: t === 'http' ? door.path(relay.uuid) : '/ws',
    headers: t === 'http' ? door.headers(relay.uuid) : { 'api-key': relay.uuid },
    bodiesFile,
    connections,
    warmS: WARM_SECONDS,
    seconds: SECONDS,
    okStatus: door.okStatus,
  };
  return {
    name: what,
    what,
    tool: t === 'http' ? 'bench/ws.ts generator: raw net sockets, pre-built keep-alive requests' : 'bench/ws.ts generator: `ws` client, pre-built messages',
    connections,
    argv: [process.execPath, SCRIPT, '--gen', JSON.stringify(o)],
    startMarker: 'E2E_START',
    endMarker: 'E2E_END',
    parse(out) {
      const g = jsonLine<GenResult>(out, 'bench/ws.ts generator');
      const statuses: Record<string, number> = { ok: g.ok, 'not ok': g.notOk };
      if (g.errors) statuses['socket errors'] = g.errors;
      return { latency: { p50Us: g.latency.p50_us, p99Us: g.latency.p99_us, maxUs: g.latency.max_us }, statuses, generator: { ...g } };
    },
  };
}

const gen = (r: RunStats) => r.generator as unknown as GenResult;
/** What the generator spent per answer, µs (its /proc CPU over the window ÷ the relay's answers). */
const clientUs = (r: RunStats) => ((r.loadPct.generator / 100) * r.windowS * 1e6) / Math.max(1, r.answers);
/** What everything but the relay, the generator, the sink and this script took over the window, % of a core (either core: on a VM both may share one physical core). */
const otherWork = (r: RunStats | null) => (r ? r.loadPct.rest : NaN);

/**
 * Waits (up to QUIET_WAIT_S) until other work on the host (a build or a test
 * elsewhere on a shared machine, which the scheduler may put on either core)
 * has stopped: between rounds nothing of this run is busy, so the cores'
 * busy time over a second is theirs. It then less often lands in a window; a
 * window it lands in anyway shows in its "other work" column.
 */
async function quietHost(cores: number, what: string, notes: string[]): Promise<void> {
  if (QUIET_WAIT_S <= 0) return;
  const until = performance.now() + QUIET_WAIT_S * 1000;
  const busy = () => coresBusySeconds(cores).reduce((x, y) => x + y, 0);
  for (let waited = false; ; waited = true) {
    const a = busy();
    await new Promise((r) => setTimeout(r, 1000));
    const pct = 100 * (busy() - a);
    if (pct < QUIET_PCT) {
      if (waited) log('quiet');
      return;
    }
    if (performance.now() > until) {
      notes.push(`${what}: other work still took ${pct.toFixed(0)}% of a core after waiting ${QUIET_WAIT_S} s; measured anyway`);
      return;
    }
    if (!waited) log(`other work takes ${pct.toFixed(0)}% of a core: waiting for it to stop (at most ${QUIET_WAIT_S} s)`);
  }
}

async function main(): Promise<void> {
  if (spawnSync('taskset', ['-V']).error) {
    log('taskset not found: `apt-get install util-linux` and run again');
    process.exit(2);
  }
  const cores = Number(spawnSync('nproc', ['--all'], { encoding: 'utf8' }).stdout.trim());
  if (!(cores >= 2)) {
    log(`bench:ws needs at least 2 cores (one for the relay, one for the load); this machine has ${cores}`);
    process.exit(2);
  }
  // This process lives on the load core with the generators and the sink.
  spawnSync('taskset', ['-a', '-pc', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
  const { loadAcceptor, describeAcceptor } = await import('../src/ingress/uws.js');
  const acceptor = describeAcceptor(loadAcceptor('auto'), 'auto');

  const doorNames = (opt.doors ?? (SMOKE ? 'solana-rpc' : 'solana-rpc,evm-rpc')).split(',').map((s) => s.trim()) as DoorName[];
  const doors = doorNames.map((n) => {
    if (n !== 'solana-rpc' && n !== 'evm-rpc') throw new Error(`--doors: ${n} is not a JSON-RPC door (solana-rpc, evm-rpc)`);
    return DOORS[n];
  });

  const started = new Date();
  const loadBefore = loadAvg();
  const t0 = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-ws-'));
  const notes: string[] = [];
  const results = new Map<DoorName, { order: Transport[]; http: Pair; ws: Pair }[]>();
  let sink: Sink | null = null;
  try {
    sink = await startSink(LOAD_CORE, MAIN);
    const env = { loadCore: LOAD_CORE, cores, sinkPid: sink.pid };
    for (const door of doors) {
      const txs = await pool(door.family);
      // The same bodies for both transports and every relay start: each start has fresh dedup state.
      const split = Math.floor(txs.length * C16_SHARE);
      const c16File = join(dir, `${door.name}-c16.bodies`);
      const serialFile = join(dir, `${door.name}-serial.bodies`);
      writeBodies(c16File, txs.slice(0, split).map((t, i) => door.body([t], i)));
      writeBodies(serialFile, txs.slice(split).map((t, i) => door.body([t], i)));
      const rounds: { order: Transport[]; http: Pair; ws: Pair }[] = [];
      results.set(door.name, rounds);
      for (let r = 0; r < ROUNDS; r++) {
        const order: Transport[] = r % 2 === 0 ? ['http', 'ws'] : ['ws', 'http'];
        const round = { order, http: { c16: null, serial: null } as Pair, ws: { c16: null, serial: null } as Pair };
        rounds.push(round);
        log(`${door.name}, round ${r + 1}/${ROUNDS}: ${order.join(' then ')}, ${C16} in flight, then serial`);
        await quietHost(cores, `${door.name}, round ${r + 1}`, notes);
        const relays = new Map<Transport, Relay>();
        try {
          for (const t of order) relays.set(t, await startRelay({ layout: 'pinned', cores: { relay: RELAY_CORE, all: `0-${cores - 1}` }, main: MAIN, sinkUrl: sink.url }));
          // The two windows of a kind back to back, so both see the host in the same state.
          for (const [key, n, file] of [['c16', C16, c16File], ['serial', 1, serialFile]] as const) {
            for (const t of order) {
              const relay = relays.get(t)!;
              const what = `${door.name} ${t}, ${n === 1 ? 'serial' : `${n} in flight`}, round ${r + 1}`;
              try {
                const s = await measureWindow(relay, genSpec(t, relay, door, file, n, what), env);
                const g = gen(s);
                if (g.exhausted) notes.push(`${what}: the generator ran out of distinct transactions, the window ended early`);
                if (s.refused > 0) notes.push(`${what}: the relay refused ${s.refused} (${Object.keys(s.rejected).join(', ')})`);
                if (g.notOk > 0 || g.errors > 0) notes.push(`${what}: ${g.notOk} answers not accepted, ${g.errors} socket errors`);
                round[t][key] = s;
              } catch (e) {
                const m = `${what} failed: ${(e as Error).message.split('\n')[0]}`;
                log(m);
                notes.push(m);
              }
            }
          }
        } catch (e) {
          const m = `${door.name}, round ${r + 1} failed: ${(e as Error).message.split('\n')[0]}`;
          log(m);
          notes.push(m);
        } finally {
          for (const relay of relays.values()) await stopRelay(relay);
        }
      }
    }
  } finally {
    if (sink) await stopChild(sink.child);
    rmSync(dir, { recursive: true, force: true });
  }

  const lines: string[] = [];
  const p = (l = '') => lines.push(l);
  const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
  const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
  const fx = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : '–');
  const range = (xs: number[]) => {
    const s = xs.filter((x) => Number.isFinite(x));
    return s.length > 1 ? ` (${Math.min(...s).toFixed(2)}–${Math.max(...s).toFixed(2)})` : '';
  };
  const durationS = (performance.now() - t0) / 1000;
  p(`# WebSocket vs HTTP keep-alive, the same JSON-RPC call — ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${SMOKE ? ' (smoke run: the figures mean nothing)' : ''}`);
  p();
  p(
    `${cpuModel()}, ${cores} cores, Node ${process.version}; ${acceptor}; load average ${loadBefore} at start, ${loadAvg()} at end. ` +
      `\`npm run bench:ws\`${SMOKE ? ' -- --smoke' : ''}: ${ROUNDS} round${ROUNDS > 1 ? 's' : ''}, each window ${SECONDS} s after a ${WARM_SECONDS} s warm-up on the same connections; whole run ${durationS.toFixed(0)} s.`,
  );
  p();
  p(
    '**Method.** Each round starts two fresh relays, one per transport, both pinned to core 0 (`taskset`; one core, so every check is inline on the main thread), ' +
      'forwarding to `txrelay bench sink`, with one paid account whose limit is far above any rate here' +
      (QUIET_WAIT_S > 0 ? `, once other work on the host takes under ${QUIET_PCT}% of a core (waiting at most ${QUIET_WAIT_S} s). ` : '. ') +
      `Then a window with ${C16} in flight on each relay (${C16} keep-alive connections, or ${C16} WebSockets, one request in flight on each), back to back, then a serial one on each (one connection or socket); ` +
      'the order of the transports flips each round, and the relay not measured idles meanwhile. ' +
      'Both carry the same bodies, each a distinct signed transaction; over HTTP `POST /` with the door\'s headers on every request, over `/ws` text messages on a socket opened with the `api-key` header. ' +
      'The load generator (bench/ws.ts, its own process on core 1 with the sink and this script) writes pre-built bytes: raw `net` sockets for HTTP, the `ws` package for WebSocket. ' +
      'Latency: at the client, from a request\'s write to its whole answer. CPU: the relay process\'s utime + stime (`/proc/<pid>/stat`, every thread) over exactly the measured window, ' +
      'divided by the answers it counted in that window (`txrelay_admitted_total` + `txrelay_rejected_total`). Ratios are WS ÷ HTTP: under 1, the WebSocket is faster or cheaper. ' +
      '"Other work on the host": the busy time of both cores (`/proc/stat`) minus the relay, the generator, the sink and this script, over the window: on a shared VM it slows the relay even from the other core.',
  );
  for (const door of doors) {
    const rounds = results.get(door.name) ?? [];
    const val = (t: Transport, f: (p: Pair) => number) => rounds.map((r) => f(r[t]));
    const ratios = (f: (p: Pair) => number) => rounds.map((r) => f(r.ws) / f(r.http));
    const lat = (k: 'p50_us' | 'p90_us' | 'p99_us') => (x: Pair) => (x.serial ? gen(x.serial).latency[k] : NaN);
    const cpu16 = (x: Pair) => (x.c16 ? x.c16.cpuUsPerAnswer : NaN);
    const rate16 = (x: Pair) => (x.c16 ? x.c16.answers / x.c16.windowS : NaN);
    const cpuSerial = (x: Pair) => (x.serial ? x.serial.cpuUsPerAnswer : NaN);
    const client16 = (x: Pair) => (x.c16 ? clientUs(x.c16) : NaN);
    const clientSerial = (x: Pair) => (x.serial ? clientUs(x.serial) : NaN);
    p();
    p(`## ${door.label}`);
    p();
    p(`Medians of the ${rounds.length} rounds; the ratio column is the median of each round's own WS ÷ HTTP (a round runs both back to back), with its range.`);
    p();
    p('| figure | HTTP keep-alive `POST /` | WebSocket `/ws` | WS ÷ HTTP, median of rounds (range) |');
    p('|---|---|---|---|');
    const row = (name: string, f: (x: Pair) => number, fmt: (x: number) => string) =>
      p(`| ${name} | ${fmt(median(val('http', f)))} | ${fmt(median(val('ws', f)))} | ${fx(median(ratios(f)))}${range(ratios(f))} |`);
    row('serial latency p50, µs', lat('p50_us'), f0);
    row('serial latency p90, µs', lat('p90_us'), f0);
    row('serial latency p99, µs', lat('p99_us'), f0);
    row(`relay µs CPU per transaction, ${C16} in flight`, cpu16, f1);
    row(`transactions per second, ${C16} in flight`, rate16, f0);
    row('relay µs CPU per transaction, serial', cpuSerial, f1);
    row(`load generator µs CPU per request, ${C16} in flight`, client16, f1);
    row('load generator µs CPU per request, serial', clientSerial, f1);
    p();
    p('Serial, one request in flight (latency at the client, µs):');
    p();
    p('| round | order | HTTP p50 / p90 / p99 | WS p50 / p90 / p99 | WS ÷ HTTP p50 / p90 / p99 | other work on the host, HTTP / WS, % of a core |');
    p('|---|---|---|---|---|---|');
    rounds.forEach((r, i) => {
      const l = (x: Pair) => [lat('p50_us')(x), lat('p90_us')(x), lat('p99_us')(x)];
      const [h, w] = [l(r.http), l(r.ws)];
      p(`| ${i + 1} | ${r.order.map((t) => t.toUpperCase()).join(', ')} | ${h.map(f0).join(' / ')} | ${w.map(f0).join(' / ')} | ${w.map((x, k) => (x / h[k]!).toFixed(2)).join(' / ')} | ${f0(otherWork(r.http.serial))} / ${f0(otherWork(r.ws.serial))} |`);
    });
    p();
    p(`${C16} in flight (relay µs CPU per answered transaction, transactions per second):`);
    p();
    p('| round | order | HTTP µs CPU/tx | HTTP tx/s | WS µs CPU/tx | WS tx/s | WS ÷ HTTP, CPU/tx | other work on the host, HTTP / WS, % of a core |');
    p('|---|---|---|---|---|---|---|---|');
    rounds.forEach((r, i) => {
      p(`| ${i + 1} | ${r.order.map((t) => t.toUpperCase()).join(', ')} | ${f1(cpu16(r.http))} | ${f0(rate16(r.http))} | ${f1(cpu16(r.ws))} | ${f0(rate16(r.ws))} | ${fx(cpu16(r.ws) / cpu16(r.http))} | ${f0(otherWork(r.http.c16))} / ${f0(otherWork(r.ws.c16))} |`);
    });
  }
  if (notes.length) {
    p();
    p('## Notes');
    p();
    for (const n of notes) p(`- ${n}`);
  }
  const md = lines.join('\n') + '\n';
  process.stdout.write(md);
  // The latest run, overwritten (earlier ones live in git history); a smoke run's figures mean nothing.
  if (!SMOKE) {
    const out = join(ROOT, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'ws.md'), md);
    log(`written bench/results/ws.md in ${durationS.toFixed(0)} s`);
  }
}

if (opt.gen !== undefined) {
  const r = await generate(JSON.parse(opt.gen) as GenOpts);
  process.stdout.write('E2E_JSON ' + JSON.stringify(r) + '\n');
  process.exit(0);
} else {
  await main().catch((e) => {
    log(`failed: ${(e as Error).stack ?? e}`);
    process.exit(1);
  });
}
