/**
 * Shared plumbing of the reliability scripts (docs/reliability.md): start a
 * real relay (`node dist/src/cli/main.js serve`, TXRELAY_* env, fresh temp
 * data dir, ephemeral ports read back from its start-up log line), read its
 * /metrics and /proc, measure latency, and clean up every process and temp
 * dir whatever happens. Every figure a script reports comes from the outside:
 * HTTP answers, the relay's own metrics, /proc. No import reaches into the
 * relay's internals except the bench transaction generator and, for
 * accounts-cap, the store it writes to before the relay starts.
 */
import { spawn } from 'node:child_process';
import { cpuSeconds, rssKb } from '../../dist/bench/e2e/proc.js';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import net from 'node:net';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const CLI = join(ROOT, 'dist/src/cli/main.js');
export const PG_URL = process.env.TXRELAY_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
/** A relay that has not logged "txrelay listening" by then is reported as failed (idle start-up takes < 1 s). */
const START_TIMEOUT_MS = 30_000;
/** SIGTERM drains for at most 5 s (relay.ts DRAIN_MS); past this a stop becomes SIGKILL. */
const STOP_TIMEOUT_MS = 10_000;
/** Log lines kept per relay for failure reports. */
const LOG_TAIL = 200;

if (!existsSync(CLI)) {
  process.stderr.write('reliability: dist/ is missing; run `npm run build` first (npm run reliability does)\n');
  process.exit(2);
}

// ---- cleanup: every child and temp dir, on any exit ----------------------------

const children = new Set();
const dirs = new Set();

function cleanupSync() {
  for (const c of children) {
    try {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    } catch {}
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
}
process.on('exit', cleanupSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    cleanupSync();
    process.exit(130);
  });
}

/** Tracks a child process so that it is killed if the script ends first. */
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function tempDir(prefix = 'txrelay-rel-') {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(d);
  return d;
}

export function removeDir(d) {
  rmSync(d, { recursive: true, force: true });
  dirs.delete(d);
}

/**
 * A hard bound on a script's run time: past it the script reports a failure
 * and exits, whatever it was waiting on.
 */
export function deadline(name, ms) {
  const t = setTimeout(() => {
    process.stderr.write(`${name}: did not finish within ${Math.round(ms / 1000)} s; giving up\n`);
    emit(name, { ok: false, error: `timed out after ${ms} ms` }, []);
    process.exit(3);
  }, ms);
  t.unref();
  return t;
}

// ---- the machine --------------------------------------------------------------

export function machine() {
  const read = (f) => {
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  };
  const cpu = /^model name\s*:\s*(.+)$/m.exec(read('/proc/cpuinfo'))?.[1]?.trim() ?? 'unknown';
  const os = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(read('/etc/os-release'))?.[1] ?? 'unknown';
  const debian = read('/etc/debian_version').trim();
  return {
    date: new Date().toISOString(),
    cores: availableParallelism(),
    cpu,
    os: debian ? `${os} (${debian})` : os,
    kernel: read('/proc/sys/kernel/osrelease').trim(),
    node: process.version,
    fd_soft_limit: fdLimit('self'),
    // The machine is shared: the 1-minute load average says how much else ran beside the measurement.
    loadavg_1m: Number(read('/proc/loadavg').split(' ')[0]),
  };
}

/** The soft "Max open files" of a process, from /proc/<pid>/limits. */
export function fdLimit(pid) {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : NaN;
}

// ---- /proc of a running relay ------------------------------------------------------

// CPU and RSS are read as bench:e2e reads them (dist/bench/e2e/proc.js).
export { cpuSeconds };

export function rssMb(pid) {
  const kb = rssKb(pid);
  return kb < 0 ? -1 : Math.round(kb / 1024);
}

export function fdCount(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

/** Samples a value every `everyMs` until stopped; keeps min, max and the last. */
export function sampler(fn, everyMs = 200) {
  const s = { min: Infinity, max: -Infinity, last: NaN, samples: [] };
  const take = () => {
    const v = fn();
    if (v < 0 || !Number.isFinite(v)) return;
    s.samples.push([Date.now(), v]);
    s.last = v;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    stats: s,
    stop() {
      clearInterval(t);
      take();
      return s;
    },
  };
}

// ---- a real relay ------------------------------------------------------------------

/**
 * Starts `txrelay serve` as a child process on ephemeral ports. `env` holds
 * TXRELAY_* overrides (strings); `dataDir` reuses a directory (kill9), else a
 * fresh temp one is made and removed at exit.
 */
export async function startRelay({ env = {}, dataDir, startTimeoutMs = START_TIMEOUT_MS, label = 'relay' } = {}) {
  const dir = dataDir ?? join(tempDir(), 'data');
  const token = randomBytes(18).toString('base64url');
  const t0 = performance.now();
  // RELAY_CPU=N pins the relay to core N (taskset), so the load this script makes runs beside it, not on it.
  const pin = process.env.RELAY_CPU;
  const [cmd, argv] = pin ? ['taskset', ['-c', pin, process.execPath, CLI, 'serve']] : [process.execPath, [CLI, 'serve']];
  const child = track(
    spawn(cmd, argv, {
      env: {
        ...process.env,
        TXRELAY_HTTP_PORT: '0',
        TXRELAY_ADMIN_PORT: '0',
        TXRELAY_UDP_PORT: '0',
        TXRELAY_STORAGE_DATA_DIR: dir,
        TXRELAY_ADMIN_TOKEN: token,
        TXRELAY_LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const tail = [];
  let errors = 0;
  let listening = null;
  let partial = '';
  const onLine = (line) => {
    if (!line) return;
    tail.push(line);
    if (tail.length > LOG_TAIL) tail.shift();
    let j;
    try {
      j = JSON.parse(line);
    } catch {
      return;
    }
    if (j.level >= 50) errors++;
    if (j.msg === 'txrelay listening') listening = j;
  };
  const feed = (d) => {
    partial += d;
    let i;
    while ((i = partial.indexOf('\n')) >= 0) {
      onLine(partial.slice(0, i));
      partial = partial.slice(i + 1);
    }
  };
  child.stdout.setEncoding('utf8').on('data', feed);
  child.stderr.setEncoding('utf8').on('data', feed);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  const until = Date.now() + startTimeoutMs;
  while (!listening && child.exitCode === null && child.signalCode === null && Date.now() < until) await sleep(10);
  if (!listening) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw new Error(`${label} did not start:\n${tail.slice(-20).join('\n')}`);
  }
  const startMs = performance.now() - t0;
  const hostPort = (hp) => Number(String(hp).split(':').pop());
  const httpPort = hostPort(listening.http);
  const adminPort = hostPort(listening.admin);
  const base = `http://127.0.0.1:${httpPort}`;
  const admin = `http://127.0.0.1:${adminPort}`;

  const adminCall = async (method, path, body) => {
    const r = await fetch(admin + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {}
    return { status: r.status, json, text };
  };

  const relay = {
    child,
    pid: child.pid,
    dataDir: dir,
    token,
    httpPort,
    adminPort,
    udpPort: listening.udp ?? null,
    base,
    admin,
    startMs,
    exited,
    logTail: () => tail.slice(),
    errorLines: () => errors,
    get alive() {
      return child.exitCode === null && child.signalCode === null;
    },
    adminCall,
    async createAccount(body = {}) {
      const r = await adminCall('POST', '/admin/accounts', body);
      if (r.status !== 201) throw new Error(`create account: ${r.status} ${r.text}`);
      return r.json;
    },
    async metricsText() {
      return (await fetch(admin + '/metrics')).text();
    },
    /** Every sample of /metrics as { name, labels, value }. */
    async metrics() {
      return parseMetrics(await relay.metricsText());
    },
    /** Sum of a metric's samples whose labels include `labels`. */
    async metric(name, labels = {}) {
      return sumMetric(await relay.metrics(), name, labels);
    },
    async healthz() {
      try {
        return (await fetch(admin + '/healthz')).status;
      } catch {
        return 0;
      }
    },
    cpuSeconds: () => cpuSeconds(child.pid),
    rssMb: () => rssMb(child.pid),
    fdCount: () => fdCount(child.pid),
    fdLimit: () => fdLimit(child.pid),
    kill(sig = 'SIGKILL') {
      if (relay.alive) child.kill(sig);
      return exited;
    },
    /** SIGTERM (a graceful drain), SIGKILL if it does not exit in time; removes a temp data dir it made. */
    async stop() {
      if (relay.alive) {
        child.kill('SIGTERM');
        const t = setTimeout(() => relay.alive && child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(t);
      }
      return exited;
    },
  };
  return relay;
}

/** Prometheus text format, the subset prom-client writes. */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

export function sumMetric(samples, name, labels = {}) {
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** A metric's samples grouped by one label: { [labelValue]: sum }. */
export function byLabel(samples, name, label) {
  const out = {};
  for (const s of samples) if (s.name === name) out[s.labels[label] ?? ''] = (out[s.labels[label] ?? ''] ?? 0) + s.value;
  return out;
}

/** Differences of two byLabel results, zero entries left out. */
export function diffCounts(after, before) {
  const out = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** Datagrams the kernel dropped on a local UDP port's sockets (receive buffer full): /proc/net/udp's last column. */
export function udpKernelDrops(port) {
  const hexPort = ':' + port.toString(16).toUpperCase().padStart(4, '0');
  let drops = 0;
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hexPort)) drops += Number(f.at(-1));
  }
  return drops;
}

/**
 * Every series whose name matches `re` that changed between two /metrics
 * reads, keyed `name{labels}`: a report that survives metrics being renamed
 * or added (e.g. a retry counter in a later forwarding lane).
 */
export function seriesDiff(after, before, re) {
  const key = (s) => `${s.name}{${Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`).join(',')}}`;
  const was = new Map(before.filter((s) => re.test(s.name)).map((s) => [key(s), s.value]));
  const out = {};
  for (const s of after) {
    if (!re.test(s.name)) continue;
    const d = s.value - (was.get(key(s)) ?? 0);
    if (d !== 0) out[key(s)] = d;
  }
  return out;
}

// ---- measuring ---------------------------------------------------------------------

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentiles of a list of numbers (not sorted in place). */
export function percentiles(values, ps = [50, 90, 99]) {
  const v = Float64Array.from(values).sort();
  const out = { n: v.length };
  for (const p of ps) out[`p${p}`] = v.length ? round(v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]) : null;
  out.max = v.length ? round(v[v.length - 1]) : null;
  return out;
}

export function round(x, digits = 2) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * A well-behaved client: `GET /ping` every `everyMs`, each on one keep-alive
 * connection (mode 'keepalive', reconnecting when it is closed) or on a new
 * connection each time (mode 'fresh', which is what a new client sees).
 * A ping that takes longer than `timeoutMs` counts as failed. Latency in ms
 * from writing the request to reading the whole answer (fresh: from connect).
 */
export function pinger({ port, host = '127.0.0.1', mode = 'keepalive', everyMs = 20, timeoutMs = 2000 }) {
  const lat = [];
  const failures = {};
  let failed = 0;
  // Longest time between two answered pings (or from the window's start): how long nobody got through.
  let lastOk = performance.now();
  let longestGap = 0;
  let running = true;
  let sock = null;
  let buf = '';
  let waiting = null;
  const fail = (why) => {
    failed++;
    failures[why] = (failures[why] ?? 0) + 1;
  };

  const connect = () =>
    new Promise((resolve) => {
      const s = net.connect({ port, host });
      s.setNoDelay(true);
      let settled = false;
      const t = setTimeout(() => {
        if (settled) return;
        settled = true;
        s.destroy();
        resolve(null);
      }, timeoutMs);
      s.once('connect', () => {
        if (settled) return;
        settled = true;
        clearTimeout(t);
        resolve(s);
      });
      s.on('error', () => {
        if (settled) return;
        settled = true;
        clearTimeout(t);
        resolve(null);
      });
    });

  const once = async () => {
    const t0 = performance.now();
    if (mode === 'fresh' || sock === null || sock.destroyed) {
      if (sock && mode === 'fresh') sock.destroy();
      sock = await connect();
      if (sock === null) return fail('connect');
      buf = '';
      const s = sock;
      s.on('data', (d) => {
        buf += d;
        if (waiting && buf.includes('pong')) {
          buf = '';
          const w = waiting;
          waiting = null;
          w(true);
        }
      });
      s.on('close', () => {
        if (waiting) {
          const w = waiting;
          waiting = null;
          w(false);
        }
      });
      s.on('error', () => {});
    }
    const start = mode === 'fresh' ? t0 : performance.now();
    const ok = await new Promise((resolve) => {
      const t = setTimeout(() => {
        waiting = null;
        sock?.destroy();
        resolve('timeout');
      }, timeoutMs - (performance.now() - t0));
      waiting = (answered) => {
        clearTimeout(t);
        resolve(answered ? 'ok' : 'closed');
      };
      sock.write('GET /ping HTTP/1.1\r\nHost: relay\r\n\r\n');
    });
    if (ok === 'ok') {
      const now = performance.now();
      lat.push(now - start);
      longestGap = Math.max(longestGap, now - lastOk);
      lastOk = now;
    } else fail(ok);
    if (mode === 'fresh') sock?.destroy();
  };

  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await once();
      const rest = everyMs - (performance.now() - t);
      if (rest > 0) await sleep(rest);
    }
    sock?.destroy();
  })();

  return {
    /** Completed pings so far (answered or failed) and their latencies; `reset` starts a new window (phases). */
    take(reset = true) {
      const done = lat.length + failed;
      const now = performance.now();
      const out = { pings: done, ok: lat.length, failures: { ...failures }, latency_ms: percentiles(lat) };
      out.success_rate = done ? round(lat.length / done, 4) : null;
      out.longest_without_answer_ms = Math.round(Math.max(longestGap, now - lastOk));
      if (reset) {
        lastOk = now;
        longestGap = 0;
        lat.length = 0;
        failed = 0;
        for (const k of Object.keys(failures)) delete failures[k];
      }
      return out;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

// ---- PostgreSQL ----------------------------------------------------------------------

export async function pgReachable(url = PG_URL) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

// ---- output ----------------------------------------------------------------------------

/**
 * Prints the human summary and then exactly one JSON line,
 * `{"script":name,"machine":{...},...}`, both on stdout; the runner keeps the
 * JSON line and shows the rest.
 *
 * `ok` says the run itself is sound (it finished, the relay survived, the
 * hard properties held). `checks`, where a script has them, are the
 * properties the relay should hold, `{ what, got, pass }`: they may fail
 * without failing the run, and the runner lists them.
 */
export function emit(name, result, lines) {
  for (const l of lines) process.stdout.write(l + '\n');
  process.stdout.write(JSON.stringify({ script: name, machine: machine(), ...result }) + '\n');
}

/** `--key value` and `--flag` arguments with defaults; numbers stay numbers. */
export function args(defaults) {
  const out = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) continue;
    const key = a.slice(2).replaceAll('-', '_');
    if (!(key in defaults)) {
      process.stderr.write(`unknown option ${a}; options: ${Object.keys(defaults).map((k) => '--' + k.replaceAll('_', '-')).join(' ')}\n`);
      process.exit(2);
    }
    if (typeof defaults[key] === 'boolean') out[key] = true;
    else {
      const v = argv[++i];
      out[key] = typeof defaults[key] === 'number' ? Number(v) : v;
    }
  }
  return out;
}

/** Free TCP port on 127.0.0.1 (for servers of the script itself). */
export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}
