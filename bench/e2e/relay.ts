/**
 * The processes bench:e2e measures and feeds, each started the way a user
 * would, through interfaces that do not depend on the relay's internals:
 *
 *   - txrelay: `node dist/src/cli/main.js serve`, configured by TXRELAY_* env,
 *     counted through its admin API and `/metrics`;
 *   - the upstream: `txrelay bench sink` in a process of its own, so its CPU
 *     is measured apart from the load generator's and the orchestrator's;
 *   - the acceptor ceiling: bench/e2e/bare-server.ts.
 *
 * Every relay start runs under `--trace-gc-nvp` unless profiled: V8 prints one
 * line per collection (a few per second here), which gives allocation per
 * transaction and pause times for any window at negligible cost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { createSocket, type Socket } from 'node:dgram';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseGcLine, type GcEvent } from './gc.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `n` distinct ports that nothing listens on now, TCP and UDP both. They are
 * drawn below the kernel's ephemeral range (32768-60999 on Linux): a port the
 * kernel handed out for `listen(0)` and got back is soon handed to someone
 * else's outgoing connection, and a relay started on it a moment later then
 * finds it taken. Every probe stays open until all are chosen, so one call
 * never returns the same port twice.
 */
export async function freePorts(n: number): Promise<number[]> {
  const probes: { tcp: ReturnType<typeof createServer>; udp: Socket }[] = [];
  try {
    for (let tries = 0; probes.length < n; tries++) {
      if (tries > 200) throw new Error(`no ${n} free ports found in 10000-32767`);
      const port = 10_000 + Math.floor(Math.random() * 22_768);
      const tcp = createServer();
      const ok = await new Promise<boolean>((res) => {
        tcp.once('error', () => res(false));
        tcp.listen(port, '0.0.0.0', () => res(true));
      });
      if (!ok) continue;
      const udp = createSocket('udp4');
      const uok = await new Promise<boolean>((res) => {
        udp.once('error', () => res(false));
        udp.bind(port, '0.0.0.0', () => res(true));
      });
      if (!uok) {
        udp.close();
        await new Promise<void>((res) => tcp.close(() => res()));
        continue;
      }
      probes.push({ tcp, udp });
    }
    return probes.map((p) => (p.tcp.address() as AddressInfo).port);
  } finally {
    await Promise.all(
      probes.map(async (p) => {
        await new Promise<void>((res) => p.udp.close(() => res()));
        await new Promise<void>((res) => (p.tcp.listening ? p.tcp.close(() => res()) : res()));
      }),
    );
  }
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** `taskset -c <cores> <args...>`; cores is a taskset list ("0", "1", "0-1"). */
export function onCores(cores: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn('taskset', ['-c', cores, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

export function collect(child: ChildProcess): Promise<{ out: string; err: string; code: number | null }> {
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((r) => child.on('close', (code) => r({ out, err, code })));
}

export function waitFor(child: ChildProcess, stream: 'stdout' | 'stderr', marker: string, ms = 15_000): Promise<string> {
  return new Promise((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error(`no "${marker}" from child within ${ms} ms: ${buf.slice(-500)}`)), ms);
    const on = (d: Buffer) => {
      buf += d;
      const line = buf.split('\n').find((l) => l.includes(marker));
      if (line) {
        clearTimeout(timer);
        child[stream]!.off('data', on);
        res(line);
      }
    };
    child[stream]!.on('data', on);
    child.once('exit', (c) => {
      clearTimeout(timer);
      rej(new Error(`child exited (${c}) before "${marker}": ${buf.slice(-500)}`));
    });
  });
}

export async function stopChild(child: ChildProcess, ms = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await done;
  clearTimeout(timer);
}

// ---- counts ------------------------------------------------------------------

export interface Counts {
  admitted: number;
  rejected: Record<string, number>;
  /** txrelay_shed_total by reason (standing, over_max, expired): which of the capacity refusals the queue controller made, and where. */
  shed: Record<string, number>;
  /** txrelay_accept_seconds cumulative bucket counts by upper bound, all doors summed (one door runs at a time). */
  accept: Map<number, number>;
}

const ADMITTED = /^txrelay_admitted_total(?:\{[^}]*\})? (\S+)$/;
const REJECTED = /^txrelay_rejected_total\{[^}]*\bcode="([^"]+)"[^}]*\} (\S+)$/;
const SHED = /^txrelay_shed_total\{reason="([^"]+)"\} (\S+)$/;
const ACCEPT_BUCKET = /^txrelay_accept_seconds_bucket\{[^}]*\ble="([^"]+)"[^}]*\} (\S+)$/;

/** The three series bench:e2e reads from the relay's Prometheus text, whatever other labels they carry. */
export function parseMetrics(text: string): Counts {
  let admitted = 0;
  const rejected: Record<string, number> = {};
  const shed: Record<string, number> = {};
  const accept = new Map<number, number>();
  for (const line of text.split('\n')) {
    let m = ADMITTED.exec(line);
    if (m) {
      admitted += Number(m[1]);
      continue;
    }
    m = REJECTED.exec(line);
    if (m) {
      rejected[m[1]!] = (rejected[m[1]!] ?? 0) + Number(m[2]);
      continue;
    }
    m = SHED.exec(line);
    if (m) {
      shed[m[1]!] = Number(m[2]);
      continue;
    }
    m = ACCEPT_BUCKET.exec(line);
    if (m) {
      const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
      accept.set(le, (accept.get(le) ?? 0) + Number(m[2]));
    }
  }
  return { admitted, rejected, shed, accept };
}

// ---- the processes -------------------------------------------------------------

/** What a window measures: a process, how to count its answers, and its GC trace if any. */
export interface Target {
  pid: number;
  counts(): Promise<Counts>;
  gc: GcLog | null;
}

export interface GcLog {
  events: GcEvent[];
  /** Isolates in the order they first reported (the main thread's first). */
  order: string[];
}

export interface Relay extends Target {
  child: ChildProcess;
  port: number;
  adminPort: number;
  uuid: string;
  dir: string;
  layout: Layout;
}

/** `pinned`: the relay on one core (so `workers.threads` auto verifies inline); `default`: every core, the layout a user gets. */
export type Layout = 'pinned' | 'default';

export interface RelayOptions {
  layout: Layout;
  cores: { relay: string; all: string };
  main: string;
  sinkUrl: string;
  profileDir?: string;
  env?: Record<string, string>;
}

/**
 * A relay that sheds nearly every arrival at the door: a queue bound of 1 ms
 * (the controller's target may not exceed it), so nearly every arrival is
 * over it, and sheds written at once, as a bare request's answer is. The
 * door-shed runs of bench:e2e and bench:ab start it so.
 */
export const DOOR_SHED_ENV: Readonly<Record<string, string>> = { TXRELAY_LIMITS_QUEUE_TARGET_MS: '1', TXRELAY_LIMITS_QUEUE_MAX_MS: '1', TXRELAY_LIMITS_SHED_HOLD_MS: '0' };

/** Limits far above any rate here, so only overload (not quotas) refuses transactions. */
const UNLIMITED = '1000000'; // the schema's maximum TPS
const UNLIMITED_BURST = '2000000'; // the schema's maximum burst

export async function startRelay(o: RelayOptions): Promise<Relay> {
  const [port, adminPort] = (await freePorts(2)) as [number, number];
  const token = randomBytes(24).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-e2e-'));
  const env: Record<string, string> = {
    TXRELAY_HTTP_PORT: String(port),
    TXRELAY_ADMIN_PORT: String(adminPort),
    TXRELAY_ADMIN_TOKEN: token,
    TXRELAY_UDP_ENABLED: 'false',
    TXRELAY_STORAGE_DATA_DIR: dir,
    TXRELAY_LIMITS_IP_RPS: UNLIMITED,
    TXRELAY_LIMITS_IP_BURST: UNLIMITED_BURST,
    TXRELAY_LOG_LEVEL: 'warn',
    TXRELAY_SOLANA_RPC_UPSTREAMS: o.sinkUrl,
    TXRELAY_SOLANA_BUNDLE_UPSTREAMS: o.sinkUrl,
    TXRELAY_EVM_UPSTREAMS_PAID: o.sinkUrl,
    TXRELAY_EVM_UPSTREAMS_FREE: o.sinkUrl,
    TXRELAY_PLANS_PAID_EVM_TPS: UNLIMITED,
    TXRELAY_PLANS_PAID_SOLANA_TPS: UNLIMITED,
    ...o.env,
  };
  // Nothing here sets workers.threads: both layouts run the relay's own default (auto).
  const flags = o.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}`] : ['--trace-gc-nvp'];
  const child = onCores(o.layout === 'pinned' ? o.cores.relay : o.cores.all, [process.execPath, ...flags, o.main, 'serve'], env);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const gc: GcLog = { events: [], order: [] };
  let partial = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString('latin1')).split('\n');
    partial = lines.pop()!;
    for (const l of lines) {
      const e = parseGcLine(l);
      if (!e) continue;
      if (!gc.order.includes(e.isolate)) gc.order.push(e.isolate);
      gc.events.push(e);
    }
  });
  const base = `http://127.0.0.1:${adminPort}`;
  try {
    const uuid = await ready(child, base, token, () => stderr);
    const counts = async () => parseMetrics(await (await fetch(`${base}/metrics`)).text());
    return { child, pid: child.pid!, port, adminPort, uuid, dir, layout: o.layout, counts, gc: o.profileDir ? null : gc };
  } catch (e) {
    // A relay that started but cannot be used (say another process took one of its ports between
    // freePorts and the bind) must not outlive the run: left pinned to the measured core, it would
    // share it with every later window.
    await stopChild(child, 5_000);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** Waits for the relay's health check, then makes the paid account every window sends with; its UUID. */
async function ready(child: ChildProcess, base: string, token: string, stderr: () => string): Promise<string> {
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`relay exited at start-up: ${stderr()}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 150) throw new Error(`relay not healthy after 15 s: ${stderr()}`);
    await sleep(100);
  }
  const res = await fetch(`${base}/admin/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'paid', evm: { tps: 1_000_000, burst: 2_000_000 }, solana: { tps: 1_000_000, burst: 2_000_000, min_tip_lamports: 0 } }),
  });
  if (res.status !== 201) throw new Error(`account creation answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { uuid: string }).uuid;
}

export async function stopRelay(r: Relay): Promise<void> {
  await stopChild(r.child, 30_000);
  rmSync(r.dir, { recursive: true, force: true });
}

export interface Bare extends Target {
  child: ChildProcess;
  port: number;
}

/** The acceptor ceiling, pinned where the relay is. */
export async function startBare(core: string, script: string, env: NodeJS.ProcessEnv = {}): Promise<Bare> {
  const port = await freePort();
  const child = onCores(core, [process.execPath, script, String(port)], env);
  await waitFor(child, 'stdout', 'READY');
  child.stdout!.resume();
  const counts = async (): Promise<Counts> => {
    const n = Number(await (await fetch(`http://127.0.0.1:${port}/__count`)).text());
    return { admitted: n, rejected: {}, shed: {}, accept: new Map() };
  };
  return { child, pid: child.pid!, port, counts, gc: null };
}

export interface Sink {
  child: ChildProcess;
  pid: number;
  url: string;
}

/** `txrelay bench sink` on the load core: it answers every JSON-RPC call at once, so forwarding costs what it costs against a fast upstream. */
export async function startSink(core: string, main: string): Promise<Sink> {
  const port = await freePort();
  const child = onCores(core, [process.execPath, main, 'bench', 'sink', '--port', String(port)]);
  child.stdout!.resume();
  await waitFor(child, 'stderr', 'listening');
  child.stderr!.resume();
  return { child, pid: child.pid!, url: `http://127.0.0.1:${port}` };
}
