/**
 * The postgres account registry under realistic conditions, with real
 * `txrelay serve` processes against a real PostgreSQL: (1) how soon a
 * revocation made on one node stops the key on the other two, (2) the same
 * when the notification is lost and only the poll (registry.poll_interval_ms
 * 2000) delivers it, (3) how soon a node that was down for 10,000 changes has
 * caught up after it starts again, (4) first sync, warm restart, memory and
 * lmdb size with 1,000,000 accounts, and (5) request latency while PostgreSQL
 * is down, what the admin API and /healthz say meanwhile, and how soon the
 * node is current again once it returns (a private cluster started from the
 * server binaries in /usr/lib/postgresql), and (6) a silent partition (a TCP
 * proxy that drops packets without a reset): how soon a revocation reaches
 * the cut-off node and /healthz says degraded (`--partition` runs only 6).
 * Every database it creates
 * (txrelay_bench_*), cluster, temp dir and process is removed at the end,
 * even on failure. Run `npm run bench:registry`; it
 * prints each table as it finishes and writes bench/results/registry.md.
 * `--smoke` runs tiny versions and writes nothing. TXRELAY_BENCH_PG names
 * the server to use (default postgres://postgres@127.0.0.1:5432/test).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { freePorts, stopChild } from './e2e/relay.js';
import { rssKb } from './e2e/proc.js';
import { WRITE_LOCK } from '../src/store/pg-schema.js';
import { PgProxy } from '../test/helpers/pg.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/bench
const ROOT = resolve(HERE, '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const OUT = join(ROOT, 'bench', 'results', 'registry.md');
const COMMAND = 'npm run bench:registry';

const SMOKE = process.argv.includes('--smoke');
/** `--partition`: only section 6. */
const PARTITION_ONLY = process.argv.includes('--partition');
const PARTITION_ROUNDS = SMOKE ? 2 : 8;
/** registry.timeout_ms's default. */
const TIMEOUT_MS = 5000;
const SIZE = SMOKE
  ? { revocations: 10, lost: 5, changes: 200, catchUpAccounts: 20, accounts: 10_000, upS: 2, downS: 3 }
  : { revocations: 200, lost: 50, changes: 10_000, catchUpAccounts: 200, accounts: 1_000_000, upS: 10, downS: 30 };
const POLL_MS = 2000;
const GOALS = { revocationP99Ms: 1000, lostP99Ms: 6000, catchUpMs: 10_000 };
/** Between probes of one key: tight enough that the probe's resolution is well below the figures it measures. */
const PROBE_GAP_MS = 1;
const LOST_PROBE_GAP_MS = 2;
/** Lets a started node finish what start-up leaves behind (JIT, first GCs) before its RSS is read. */
const SETTLE_MS = 3000;

const BASE_URL = process.env.TXRELAY_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const TOKEN = randomBytes(24).toString('hex');
const XX = Buffer.from('xx');
/** An account the probes never exhaust, so a live key answers 400 (decode error, past authentication) every time. */
const UNLIMITED_ACCOUNT = { plan: 'paid', evm: { tps: 1_000_000, burst: 2_000_000 }, solana: { tps: 1_000_000, burst: 2_000_000, min_tip_lamports: 0 } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`[registry] ${m}\n`);
const now = () => performance.now();

// ---- what the finally block removes ------------------------------------------------------

const live = new Set<NodeProc>();
const dirs: string[] = [];
const databases: string[] = [];
const clusters: PgCluster[] = [];
const clients = new Set<pg.Client>();

// ---- statistics and formatting --------------------------------------------------------------

/** Nearest-rank quantile of unsorted values. */
function q(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
const max = (v: readonly number[]) => (v.length ? Math.max(...v) : NaN);

function ms(x: number): string {
  if (!Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  return a < 10 ? x.toFixed(2) : a < 100 ? x.toFixed(1) : x.toFixed(0);
}
const s1 = (msValue: number) => (msValue / 1000).toFixed(2);
const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');
const int = (n: number) => n.toLocaleString('en-US');

function table(head: string[], rows: (string | number)[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const sections: string[] = [];
const summary: string[][] = [];
function section(md: string): void {
  sections.push(md);
  process.stdout.write(md + '\n\n');
}

// ---- PostgreSQL --------------------------------------------------------------------------------

function dbUrl(base: string, db: string): string {
  const u = new URL(base);
  u.pathname = '/' + db;
  return u.toString();
}

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, application_name: 'txrelay bench registry' });
  await c.connect();
  c.on('error', () => {});
  clients.add(c);
  return c;
}

async function closeClient(c: pg.Client): Promise<void> {
  clients.delete(c);
  await c.end().catch(() => {});
}

/** A fresh database on the shared server; dropped at the end. */
async function createDatabase(tag: string): Promise<string> {
  const name = `txrelay_bench_${tag}_${randomBytes(4).toString('hex')}`;
  const c = await client(BASE_URL);
  try {
    await c.query(`CREATE DATABASE ${name}`);
    databases.push(name);
  } finally {
    await closeClient(c);
  }
  return dbUrl(BASE_URL, name);
}

async function head(c: pg.Client): Promise<number> {
  const { rows } = await c.query<{ s: string }>('SELECT coalesce(max(seq), 0) AS s FROM txrelay_account_changes');
  return Number(rows[0]!.s);
}

/**
 * A revocation as a writer makes it (writer lock, row, change-log row, the
 * row's seq) minus the pg_notify: a notification that never arrives, so only
 * a node's poll can deliver it.
 */
async function revokeWithoutNotify(c: pg.Client, id: number): Promise<void> {
  await c.query('BEGIN');
  try {
    // Without the table's triggers, whose change-log row would carry a notification.
    await c.query('SET LOCAL session_replication_role = replica');
    await c.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK.toString()]);
    const { rows } = await c.query<{ version: number }>('UPDATE txrelay_accounts SET revoked = true, version = version + 1 WHERE id = $1 RETURNING version', [id]);
    const log = await c.query<{ seq: string }>('INSERT INTO txrelay_account_changes (account_id, version) VALUES ($1, $2) RETURNING seq', [id, rows[0]!.version]);
    await c.query('UPDATE txrelay_accounts SET seq = $2 WHERE id = $1', [id, log.rows[0]!.seq]);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

// ---- a private cluster that can be stopped -----------------------------------------------------

function pgBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  return null;
}

const AS_ROOT = process.getuid?.() === 0;

/** Runs a server binary; initdb refuses root, so as root every one runs as the postgres user. */
async function pgBin(bin: string, cmd: string, args: string[]): Promise<void> {
  const full = join(bin, cmd);
  const [file, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', full, ...args]] : [full, args];
  await promisify(execFile)(file, argv, { timeout: 120_000 });
}

class PgCluster {
  private constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
  ) {}

  static async create(bin: string): Promise<PgCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-pg-'));
    dirs.push(dir);
    if (AS_ROOT) {
      const id = async (flag: string) => Number(await execFileText('id', [flag, 'postgres']));
      chownSync(dir, await id('-u'), await id('-g'));
    }
    const [port] = (await freePorts(1)) as [number];
    const c = new PgCluster(bin, dir, port);
    clusters.push(c);
    await pgBin(bin, 'initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await c.start();
    return c;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  start(): Promise<void> {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    return pgBin(this.bin, 'pg_ctl', ['-D', join(this.dir, 'data'), '-o', opts, '-w', '-l', join(this.dir, 'log'), 'start']);
  }

  /** Immediate: connections cut at once, as in a crash. */
  stop(): Promise<void> {
    return pgBin(this.bin, 'pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  }
}

function execFileText(file: string, args: string[]): Promise<string> {
  return promisify(execFile)(file, args, { encoding: 'utf8' }).then((r) => r.stdout.trim());
}

// ---- relay nodes -----------------------------------------------------------------------------------

interface NodeOptions {
  name: string;
  url: string;
  /** Reused for a restart on the same replica; a new temp dir otherwise. */
  dir?: string;
  listenTimeoutMs?: number;
}

/** One `txrelay serve` in postgres registry mode, its ports, and keep-alive pools to its doors. */
class NodeProc {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  /** performance.now() of the "txrelay listening" line. */
  readonly listening: Promise<number>;
  readonly http: Pool;
  readonly admin: Pool;
  readonly registryLines: string[] = [];
  private tail = '';

  private constructor(
    readonly name: string,
    readonly dir: string,
    readonly httpPort: number,
    readonly adminPort: number,
    url: string,
    timeoutMs: number,
  ) {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TXRELAY_REGISTRY_MODE: 'postgres',
      TXRELAY_DATABASE_URL: url,
      TXRELAY_NODE_NAME: name,
      TXRELAY_HTTP_PORT: String(httpPort),
      TXRELAY_ADMIN_PORT: String(adminPort),
      TXRELAY_ADMIN_TOKEN: TOKEN,
      TXRELAY_UDP_ENABLED: 'false',
      TXRELAY_STORAGE_DATA_DIR: dir,
      // info: the start-up line and the registry's sync lines are info.
      TXRELAY_LOG_LEVEL: 'info',
      TXRELAY_REGISTRY_POLL_INTERVAL_MS: String(POLL_MS),
      // The probes come from one address at up to ~1000/s per node: far under these.
      TXRELAY_LIMITS_IP_RPS: '1000000',
      TXRELAY_LIMITS_IP_BURST: '2000000',
    };
    this.spawnedAt = now();
    this.child = spawn(process.execPath, [MAIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this);
    this.child.once('exit', () => live.delete(this));
    this.listening = new Promise<number>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`node ${name}: no "txrelay listening" within ${timeoutMs} ms: ${this.tail.slice(-1500)}`)), timeoutMs);
      let partial = '';
      // Always read: a pipe nobody drains would block the node on its next log line.
      this.child.stdout!.on('data', (d: Buffer) => {
        const t = now();
        const lines = (partial + d.toString('utf8')).split('\n');
        partial = lines.pop()!;
        for (const l of lines) {
          this.tail = (this.tail + l + '\n').slice(-6000);
          if (l.includes('"component":"registry"')) this.registryLines.push(l);
          if (l.includes('txrelay listening')) {
            clearTimeout(timer);
            res(t);
          }
        }
      });
      this.child.stderr!.on('data', (d: Buffer) => (this.tail = (this.tail + d.toString('utf8')).slice(-6000)));
      this.child.once('exit', (code, sig) => {
        clearTimeout(timer);
        rej(new Error(`node ${name} exited (${code ?? sig}) before it listened: ${this.tail.slice(-1500)}`));
      });
    });
    this.listening.catch(() => {});
    this.http = new Pool(`http://127.0.0.1:${httpPort}`, { connections: 1, pipelining: 1 });
    this.admin = new Pool(`http://127.0.0.1:${adminPort}`, { connections: 16, pipelining: 1 });
  }

  static async start(o: NodeOptions): Promise<NodeProc> {
    const [httpPort, adminPort] = (await freePorts(2)) as [number, number];
    let dir = o.dir;
    if (dir === undefined) {
      dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-node-'));
      dirs.push(dir);
    }
    return new NodeProc(o.name, dir, httpPort, adminPort, o.url, o.listenTimeoutMs ?? 30_000);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Milliseconds from spawn to the start-up line. */
  async startMs(): Promise<number> {
    return (await this.listening) - this.spawnedAt;
  }

  /** SIGTERM, and the exit; milliseconds it took and the exit code. */
  async stop(): Promise<{ ms: number; code: number | null }> {
    const t = now();
    await stopChild(this.child, 30_000);
    await Promise.all([this.http.destroy().catch(() => {}), this.admin.destroy().catch(() => {})]);
    return { ms: now() - t, code: this.child.exitCode };
  }

  async adminCall(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const r = await this.admin.request({
      path,
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.statusCode, text: await r.body.text() };
  }

  async healthz(): Promise<{ status: number; body: { registry?: { connected: boolean; change: number; staleness_s: number | null; state?: string } } }> {
    const r = await this.admin.request({ path: '/healthz', method: 'GET' });
    return { status: r.statusCode, body: JSON.parse(await r.body.text()) };
  }

  async metric(name: string): Promise<number> {
    const r = await this.admin.request({ path: '/metrics', method: 'GET' });
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await r.body.text());
    return m ? Number(m[1]) : NaN;
  }

  /** One authenticated `POST /v2` with an undecodable body: 400 while the key is live, 401 once it is not. */
  async probe(key: string): Promise<number> {
    const r = await this.http.request({ path: '/v2', method: 'POST', headers: { 'api-key': key }, body: XX });
    await r.body.arrayBuffer();
    return r.statusCode;
  }
}

interface Account {
  id: number;
  uuid: string;
}

async function createAccounts(node: NodeProc, n: number, body: unknown): Promise<Account[]> {
  return inParallel(n, 8, async () => {
    const r = await node.adminCall('POST', '/admin/accounts', body);
    if (r.status !== 201) throw new Error(`account creation on ${node.name} answered ${r.status}: ${r.text}`);
    const j = JSON.parse(r.text) as Account;
    return { id: j.id, uuid: j.uuid };
  });
}

async function inParallel<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** Until every node has applied change `seq` (its /metrics txrelay_registry_change). */
async function waitApplied(nodes: NodeProc[], seq: number, timeoutMs = 30_000): Promise<void> {
  const deadline = now() + timeoutMs;
  for (const n of nodes) {
    while ((await n.metric('txrelay_registry_change')) < seq) {
      if (now() > deadline) throw new Error(`node ${n.name} did not reach change ${seq} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }
}

/** Every key answers 400 on every node: the measurements start from keys each node knows as live. */
async function checkLive(nodes: NodeProc[], accounts: Account[]): Promise<void> {
  for (const n of nodes) {
    for (const a of accounts) {
      const st = await n.probe(a.uuid);
      if (st !== 400) throw new Error(`node ${n.name}: live key of account ${a.id} answered ${st}, expected 400`);
    }
  }
}

interface Seen {
  /** performance.now() when the first 401 arrived. */
  at: number;
  /** Since the answer before it: how precisely `at` places the change. */
  gap: number;
  probes: number;
}

/** Probes until the key answers 401. */
async function until401(node: NodeProc, key: string, gapMs: number, timeoutMs: number): Promise<Seen> {
  const start = now();
  let prev = start;
  for (let probes = 1; ; probes++) {
    const st = await node.probe(key);
    const t = now();
    if (st === 401) return { at: t, gap: t - prev, probes };
    if (st !== 400) throw new Error(`node ${node.name}: probe answered ${st} (expected 400 until revoked, then 401)`);
    if (t - start > timeoutMs) throw new Error(`node ${node.name}: key still live ${timeoutMs} ms after its revocation`);
    prev = t;
    await sleep(gapMs);
  }
}

// ---- 1. revocation propagation -----------------------------------------------------------------------

async function revocation(nodes: NodeProc[], url: string): Promise<void> {
  const [a] = nodes as [NodeProc];
  log(`1. creating ${SIZE.revocations} accounts on ${a.name}`);
  const accounts = await createAccounts(a, SIZE.revocations, UNLIMITED_ACCOUNT);
  const c = await client(url);
  await waitApplied(nodes, await head(c));
  await closeClient(c);
  await checkLive(nodes, accounts);
  log(`1. ${SIZE.revocations} revocations, round-robin over ${nodes.map((n) => n.name).join(', ')}`);
  const fromCommit: number[] = [];
  const fromSend: number[] = [];
  const answer: number[] = [];
  const gaps: number[] = [];
  let early = 0;
  for (let i = 0; i < accounts.length; i++) {
    const acc = accounts[i]!;
    const issuer = nodes[i % nodes.length]!;
    const others = nodes.filter((n) => n !== issuer);
    const t0 = now();
    // Probing starts with the DELETE: an observer that applies before the issuer answers is seen too.
    const seen = Promise.all(others.map((n) => until401(n, acc.uuid, PROBE_GAP_MS, 30_000)));
    const r = await issuer.adminCall('DELETE', `/admin/accounts/${acc.id}`);
    const tCommit = now();
    if (r.status !== 200) throw new Error(`DELETE on ${issuer.name} answered ${r.status}: ${r.text}`);
    answer.push(tCommit - t0);
    for (const s of await seen) {
      fromCommit.push(s.at - tCommit);
      fromSend.push(s.at - t0);
      gaps.push(s.gap);
      if (s.at < tCommit) early++;
    }
  }
  const p99 = q(fromCommit, 0.99);
  section(
    [
      `## 1. Revocation propagation`,
      '',
      `3 nodes on one database (registry.poll_interval_ms ${POLL_MS}); ${accounts.length} revocations issued by \`DELETE /admin/accounts/<id>\` round-robin on the three, one at a time; each of the two other nodes probed with the key (\`POST /v2\`, keep-alive, ${PROBE_GAP_MS} ms between probes) until it answers 401. ${fromCommit.length} (node, revocation) pairs. Goal: p99 from the commit <= ${GOALS.revocationP99Ms} ms.`,
      '',
      table(
        ['latency to the first 401 on another node', 'p50 ms', 'p99 ms', 'max ms', 'goal'],
        [
          ['from the DELETE\'s answer (after the commit)', ms(q(fromCommit, 0.5)), ms(p99), ms(max(fromCommit)), `${verdict(p99 <= GOALS.revocationP99Ms)} (p99 <= ${GOALS.revocationP99Ms} ms)`],
          ['from sending the DELETE', ms(q(fromSend, 0.5)), ms(q(fromSend, 0.99)), ms(max(fromSend)), ''],
          ['DELETE round trip on the issuing node', ms(q(answer, 0.5)), ms(q(answer, 0.99)), ms(max(answer)), ''],
          ['probe resolution (previous answer to the 401)', ms(q(gaps, 0.5)), ms(q(gaps, 0.99)), ms(max(gaps)), ''],
        ],
      ),
      '',
      `${early} of ${fromCommit.length} pairs saw the 401 before the issuing node answered the DELETE (it answers once it has applied the change itself): those count as negative latencies from the commit.`,
    ].join('\n'),
  );
  summary.push(['1. revocation reaches the other nodes, p99 from commit', `${ms(p99)} ms`, `<= ${GOALS.revocationP99Ms} ms`, verdict(p99 <= GOALS.revocationP99Ms)]);
}

// ---- 2. lost notification --------------------------------------------------------------------------------

async function lostNotification(nodes: NodeProc[], url: string): Promise<void> {
  const [a] = nodes as [NodeProc];
  log(`2. creating ${SIZE.lost} accounts on ${a.name}`);
  const accounts = await createAccounts(a, SIZE.lost, UNLIMITED_ACCOUNT);
  const c = await client(url);
  try {
    await waitApplied(nodes, await head(c));
    await checkLive(nodes, accounts);
    log(`2. ${SIZE.lost} revocations by SQL without pg_notify`);
    const byNode = new Map<string, number[]>(nodes.map((n) => [n.name, []]));
    for (const acc of accounts) {
      // A random phase against the nodes' poll timers: right after the previous change was seen it would be correlated with them.
      await sleep(Math.random() * POLL_MS);
      const seen = Promise.all(nodes.map((n) => until401(n, acc.uuid, LOST_PROBE_GAP_MS, POLL_MS * 10)));
      await revokeWithoutNotify(c, acc.id);
      const tCommit = now();
      const s = await seen;
      nodes.forEach((n, i) => byNode.get(n.name)!.push(s[i]!.at - tCommit));
    }
    const all = [...byNode.values()].flat();
    const p99 = q(all, 0.99);
    section(
      [
        `## 2. Lost notification`,
        '',
        `The same 3 nodes (registry.poll_interval_ms ${POLL_MS}). ${accounts.length} revocations committed by a SQL transaction that does what a writer does (writer lock, row, change-log row) except \`pg_notify\`, so only each node's poll can deliver them; a random wait of 0-${POLL_MS} ms before each, so the commits fall at random points of the poll period. Every node probed (${LOST_PROBE_GAP_MS} ms between probes). Latency from the COMMIT's return to the first 401. Goal: <= ${GOALS.lostP99Ms} ms.`,
        '',
        table(
          ['node', 'revocations', 'p50 ms', 'p99 ms', 'max ms', 'goal'],
          [
            ...nodes.map((n) => {
              const v = byNode.get(n.name)!;
              return [n.name, v.length, ms(q(v, 0.5)), ms(q(v, 0.99)), ms(max(v)), verdict(max(v) <= GOALS.lostP99Ms)];
            }),
            ['all', all.length, ms(q(all, 0.5)), ms(p99), ms(max(all)), `${verdict(p99 <= GOALS.lostP99Ms)} (p99 <= ${GOALS.lostP99Ms} ms)`],
          ],
        ),
        '',
        `With ${accounts.length} samples per node, a node's p99 is its maximum.`,
      ].join('\n'),
    );
    summary.push(['2. lost notification: poll delivers it, p99 / max', `${ms(p99)} / ${ms(max(all))} ms`, `<= ${GOALS.lostP99Ms} ms`, verdict(p99 <= GOALS.lostP99Ms)]);
  } finally {
    await closeClient(c);
  }
}

// ---- 3. catch-up after downtime --------------------------------------------------------------------------

async function catchUp(nodes: NodeProc[], url: string): Promise<NodeProc[]> {
  const [a, b, cNode] = nodes as [NodeProc, NodeProc, NodeProc];
  log(`3. creating ${SIZE.catchUpAccounts} accounts on ${a.name}`);
  const accounts = await createAccounts(a, SIZE.catchUpAccounts, {});
  const c = await client(url);
  try {
    await waitApplied(nodes, await head(c));
    const stopped = await cNode.stop();
    if (stopped.code !== 0) throw new Error(`node ${cNode.name} exited ${stopped.code} on SIGTERM`);
    log(`3. ${cNode.name} stopped in ${ms(stopped.ms)} ms; ${SIZE.changes} PATCHes on ${a.name}, 16 at a time`);
    const before = await head(c);
    const t0 = now();
    const patchMs = await inParallel(SIZE.changes, 16, async (i) => {
      const acc = accounts[i % accounts.length]!;
      const t = now();
      // A new value each time: a PATCH that changes nothing is not a change, and logs none.
      const r = await a.adminCall('PATCH', `/admin/accounts/${acc.id}`, { solana: { tps: 1000 + i } });
      if (r.status !== 200) throw new Error(`PATCH on ${a.name} answered ${r.status}: ${r.text}`);
      return now() - t;
    });
    const writeMs = now() - t0;
    const target = await head(c);
    if (target - before !== SIZE.changes) throw new Error(`expected ${SIZE.changes} changes, the change log grew by ${target - before}`);
    log(`3. ${SIZE.changes} changes in ${ms(writeMs)} ms; restarting ${cNode.name}`);
    const again = await NodeProc.start({ name: cNode.name, url, dir: cNode.dir });
    const listenMs = await again.startMs();
    let appliedAt = NaN;
    const deadline = now() + 120_000;
    for (;;) {
      if ((await again.metric('txrelay_registry_change')) >= target) {
        appliedAt = now();
        break;
      }
      if (now() > deadline) throw new Error(`${cNode.name} did not reach change ${target} within 120 s of its start`);
      await sleep(10);
    }
    const currentMs = appliedAt - again.spawnedAt;
    const resyncs = await again.metric('txrelay_registry_resyncs_total');
    const applied = await again.metric('txrelay_registry_changes_applied_total');
    const ok = currentMs <= GOALS.catchUpMs;
    section(
      [
        `## 3. Catch-up after downtime`,
        '',
        `${cNode.name} stopped (SIGTERM, exited in ${ms(stopped.ms)} ms); ${int(SIZE.changes)} changes made meanwhile through ${a.name}'s admin API (PATCH over ${accounts.length} accounts, 16 at a time: ${int(Math.round(SIZE.changes / (writeMs / 1000)))} changes/s, PATCH round trip p50 ${ms(q(patchMs, 0.5))} ms, p99 ${ms(q(patchMs, 0.99))} ms); then ${cNode.name} started again on its replica. Goal: current within ${GOALS.catchUpMs / 1000} s of its start.`,
        '',
        table(
          ['from spawn to', 'seconds', 'goal'],
          [
            ['"txrelay listening"', s1(listenMs), ''],
            [`/metrics txrelay_registry_change = ${target} (the change log's max(seq))`, s1(currentMs), `${verdict(ok)} (<= ${GOALS.catchUpMs / 1000} s)`],
          ],
        ),
        '',
        `After the restart: ${applied} changes replayed, ${resyncs} full resyncs (0: it replayed the change log rather than reloading every account).`,
      ].join('\n'),
    );
    summary.push([`3. catch-up of ${int(SIZE.changes)} changes after a restart`, `${s1(currentMs)} s (listening at ${s1(listenMs)} s)`, `<= ${GOALS.catchUpMs / 1000} s`, verdict(ok)]);
    return [a, b, again];
  } finally {
    await closeClient(c);
  }
}

// ---- 4. a million accounts ----------------------------------------------------------------------------------

async function million(): Promise<void> {
  const n = SIZE.accounts;
  const url = await createDatabase('1m');
  log(`4. schema by \`txrelay db migrate\``);
  await promisify(execFile)(process.execPath, [MAIN, 'db', 'migrate'], { env: { ...process.env, TXRELAY_DATABASE_URL: url }, timeout: 60_000 });

  log('4. a node with 0 accounts, for the baseline RSS');
  const empty = await NodeProc.start({ name: 'bench-empty', url });
  const emptyStartMs = await empty.startMs();
  await sleep(SETTLE_MS);
  const rss0 = rssKb(empty.pid);
  await empty.stop();

  log(`4. inserting ${int(n)} accounts by SQL`);
  const c = await client(url);
  let insertMs: number;
  try {
    const t = now();
    // As if each account had been created with one change and the log pruned up to the newest: ids and seqs 1..n, change n kept.
    await c.query('BEGIN');
    await c.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK.toString()]);
    // The change log is written below as a pruned one would be, not row by row by the table's triggers.
    await c.query('SET LOCAL session_replication_role = replica');
    await c.query(
      `INSERT INTO txrelay_accounts (id, key_sha256, plan, evm, solana, version, seq)
       SELECT g, sha256(uuid_send(gen_random_uuid())), 'free',
              '{"enabled":true,"tps":5,"burst":5}'::jsonb,
              '{"enabled":true,"tps":2,"burst":2,"min_tip_lamports":1000}'::jsonb, 1, g
         FROM generate_series(1, ${n}) AS g`,
    );
    await c.query(`SELECT setval(pg_get_serial_sequence('txrelay_accounts', 'id'), ${n})`);
    await c.query(`INSERT INTO txrelay_account_changes (seq, account_id, version) VALUES (${n}, ${n}, 1)`);
    await c.query(`SELECT setval(pg_get_serial_sequence('txrelay_account_changes', 'seq'), ${n})`);
    await c.query(`UPDATE txrelay_registry_meta SET v = ${n - 1} WHERE k = 'pruned_through'`);
    await c.query('COMMIT');
    // What autovacuum would have done on a database that grew to this size over time.
    await c.query('VACUUM ANALYZE txrelay_accounts');
    insertMs = now() - t;
  } finally {
    await closeClient(c);
  }

  log(`4. first sync of a fresh node (empty data dir)`);
  const first = await NodeProc.start({ name: 'bench-1m', url, listenTimeoutMs: 600_000 });
  const firstMs = await first.startMs();
  const liveAccounts = await first.metric('txrelay_registry_accounts');
  if (liveAccounts !== n) throw new Error(`the node holds ${liveAccounts} live accounts, expected ${n}`);
  const syncLine = first.registryLines.find((l) => l.includes('first sync'));
  const syncInner = syncLine ? Number(/in (\d+) ms/.exec(syncLine)?.[1]) : NaN;
  await sleep(SETTLE_MS);
  const rssFirst = rssKb(first.pid);
  const mdb = statSync(join(first.dir, 'data.mdb'));
  const stopFirst = await first.stop();
  if (stopFirst.code !== 0) throw new Error(`bench-1m exited ${stopFirst.code} on SIGTERM`);

  log('4. warm restart on the same data dir');
  const warm = await NodeProc.start({ name: 'bench-1m', url, dir: first.dir, listenTimeoutMs: 600_000 });
  const warmMs = await warm.startMs();
  const warmResyncs = await warm.metric('txrelay_registry_resyncs_total');
  await sleep(SETTLE_MS);
  const rssWarm = rssKb(warm.pid);
  const mdbWarm = statSync(join(warm.dir, 'data.mdb'));
  const stopWarm = await warm.stop();

  const perAccount = (kb: number) => ((kb - rss0) * 1024) / n;
  section(
    [
      `## 4. ${int(n)} accounts`,
      '',
      `${int(n)} accounts inserted by SQL into a fresh database (${s1(insertMs)} s including VACUUM ANALYZE), the change log pruned up to its newest change, so a fresh node does a full resync. RSS from /proc/<pid>/status VmRSS ${SETTLE_MS / 1000} s after "txrelay listening"; the baseline is a node on the same database before the insert (0 accounts, started in ${s1(emptyStartMs)} s, ${int(rss0)} kB).`,
      '',
      table(
        ['start', 'spawn to "txrelay listening", s', 'RSS, MB', 'RSS over the 0-account node, bytes per account', 'data.mdb, bytes per account (size / allocated)', 'SIGTERM to exit, s'],
        [
          [
            'first sync (empty data dir)',
            `${s1(firstMs)} (resync itself: ${s1(syncInner)})`,
            (rssFirst / 1024).toFixed(0),
            perAccount(rssFirst).toFixed(0),
            `${(mdb.size / n).toFixed(0)} / ${((mdb.blocks * 512) / n).toFixed(0)}`,
            s1(stopFirst.ms),
          ],
          [
            `warm restart (same data dir; ${warmResyncs} resyncs)`,
            s1(warmMs),
            (rssWarm / 1024).toFixed(0),
            perAccount(rssWarm).toFixed(0),
            `${(mdbWarm.size / n).toFixed(0)} / ${((mdbWarm.blocks * 512) / n).toFixed(0)}`,
            s1(stopWarm.ms),
          ],
        ],
      ),
    ].join('\n'),
  );
  summary.push([`4. ${int(n)} accounts: first sync / warm restart to listening`, `${s1(firstMs)} s / ${s1(warmMs)} s`, '', '']);
  summary.push([`4. ${int(n)} accounts: memory (warm restart) / data.mdb per account`, `${perAccount(rssWarm).toFixed(0)} B / ${(mdbWarm.size / n).toFixed(0)} B`, '', '']);
}

// ---- 5. admission during an outage ---------------------------------------------------------------------------

async function latencies(node: NodeProc, key: string, seconds: number): Promise<{ lat: number[]; other: Map<number, number> }> {
  const lat: number[] = [];
  const other = new Map<number, number>();
  const end = now() + seconds * 1000;
  while (now() < end) {
    const t = now();
    const st = await node.probe(key);
    lat.push(now() - t);
    if (st !== 400) other.set(st, (other.get(st) ?? 0) + 1);
  }
  return { lat, other };
}

async function outage(): Promise<void> {
  const bin = pgBinDir();
  if (bin === null || (AS_ROOT && (await execFileText('id', ['-u', 'postgres']).catch(() => '')) === '')) {
    section('## 5. Admission during an outage\n\nSkipped: no PostgreSQL server binaries under /usr/lib/postgresql (or no postgres user to run them as root).');
    summary.push(['5. admission during an outage', 'skipped', '', '']);
    return;
  }
  log('5. a private cluster');
  const cluster = await PgCluster.create(bin);
  const node = await NodeProc.start({ name: 'bench-outage', url: cluster.url });
  await node.listening;
  const [acc] = await createAccounts(node, 1, UNLIMITED_ACCOUNT);
  const key = acc!.uuid;
  // Warm the connection and the JIT outside the windows.
  await latencies(node, key, 0.5);

  log(`5. ${SIZE.upS} s with the database up`);
  const up = await latencies(node, key, SIZE.upS);
  const tStop = now();
  await cluster.stop();
  const stopMs = now() - tStop;
  const h0 = await node.healthz();
  log(`5. ${SIZE.downS} s with the database stopped`);
  const down = await latencies(node, key, SIZE.downS);
  const h1 = await node.healthz();
  const tPost = now();
  const post = await node.adminCall('POST', '/admin/accounts', {});
  const postMs = now() - tPost;
  const postCode = /"code":"([^"]+)"/.exec(post.text)?.[1] ?? '-';
  const h2 = await node.healthz();

  log('5. starting the cluster again');
  const tStart = now();
  await cluster.start();
  const tUp = now();
  let recovered = NaN;
  let last = h2;
  const deadline = now() + 60_000;
  while (now() < deadline) {
    last = await node.healthz();
    const r = last.body.registry;
    if (last.status === 200 && r?.connected === true && r.staleness_s !== null && r.staleness_s < 5) {
      recovered = now();
      break;
    }
    await sleep(50);
  }
  await node.stop();

  const ratio = (f: (v: number[]) => number) => (f(down.lat) / f(up.lat)).toFixed(2) + 'x';
  const p50 = (v: number[]) => q(v, 0.5);
  const p99 = (v: number[]) => q(v, 0.99);
  const others = (m: Map<number, number>) => (m.size === 0 ? 'none' : [...m].map(([s, c]) => `${c} x ${s}`).join(', '));
  const postOk = post.status === 503 && postCode === 'TXR_REGISTRY_UNAVAILABLE';
  const staleGrew = (h1.body.registry?.staleness_s ?? 0) > (h0.body.registry?.staleness_s ?? Infinity);
  const healthOk = h0.status === 200 && h1.status === 200 && h2.status === 200;
  section(
    [
      `## 5. Admission during an outage`,
      '',
      `One node on a private PostgreSQL cluster, one account; sequential authenticated \`POST /v2\` (keep-alive, body \`xx\`: 400 after authentication) for ${SIZE.upS} s with the database up, then for ${SIZE.downS} s after \`pg_ctl stop -m immediate\` (took ${ms(stopMs)} ms).`,
      '',
      table(
        ['database', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'answers other than 400'],
        [
          ['up', up.lat.length, ms(p50(up.lat)), ms(p99(up.lat)), ms(max(up.lat)), others(up.other)],
          ['stopped', down.lat.length, ms(p50(down.lat)), ms(p99(down.lat)), ms(max(down.lat)), others(down.other)],
          ['stopped / up', `${((down.lat.length / SIZE.downS) / (up.lat.length / SIZE.upS)).toFixed(2)}x (per second)`, ratio(p50), ratio(p99), ratio(max), ''],
        ],
      ),
      '',
      table(
        ['while stopped', 'observed'],
        [
          ['admin `POST /admin/accounts`', `${post.status} ${postCode} in ${ms(postMs)} ms (${verdict(postOk)}: 503 TXR_REGISTRY_UNAVAILABLE)`],
          [
            '/healthz',
            `${h0.status} / ${h1.status} / ${h2.status}; staleness_s ${h0.body.registry?.staleness_s} just after the stop, ${h1.body.registry?.staleness_s} after the ${SIZE.downS} s window, connected ${h1.body.registry?.connected} (${verdict(healthOk && staleGrew)}: stays 200, staleness grows)`,
          ],
          [
            'after `pg_ctl start` (took ' + ms(tUp - tStart) + ' ms)',
            Number.isFinite(recovered)
              ? `/healthz connected and staleness_s < 5 ${s1(recovered - tUp)} s after it returned (${s1(recovered - tStart)} s after it was called)`
              : `**not recovered within 60 s**: ${JSON.stringify(last.body.registry)}`,
          ],
        ],
      ),
    ].join('\n'),
  );
  summary.push(['5. POST /v2 p50 / p99 with the database stopped vs up', `${ratio(p50)} / ${ratio(p99)}`, '', '']);
  summary.push(['5. admin write while stopped; /healthz', `${post.status} ${postCode}; ${h1.status}, staleness ${h1.body.registry?.staleness_s} s`, '503 TXR_REGISTRY_UNAVAILABLE; 200, growing', verdict(postOk && healthOk && staleGrew)]);
  summary.push(['5. current again after the database returns', Number.isFinite(recovered) ? `${s1(recovered - tUp)} s` : 'not within 60 s', '', '']);
}

// ---- the run -----------------------------------------------------------------------------------------------------

// ---- 6. silent partition --------------------------------------------------------------------------

/** Polls `cond` every 20 ms; the time it first held, from `t0`. */
async function timeUntil(what: string, t0: number, cond: () => Promise<boolean>, timeoutMs = 60_000): Promise<number> {
  for (;;) {
    if (await cond()) return now() - t0;
    if (now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

async function partition(): Promise<void> {
  const url = await createDatabase('partition');
  const proxy = new PgProxy(url);
  const viaProxy = await proxy.listen();
  try {
    const a = await NodeProc.start({ name: 'bench-direct', url });
    const b = await NodeProc.start({ name: 'bench-partitioned', url: viaProxy });
    await Promise.all([a.listening, b.listening]);
    const current = async () => (await b.healthz()).body.registry?.state === 'current';
    const revoked: number[] = [];
    for (let i = 0; i < PARTITION_ROUNDS; i++) {
      log(`6. silent partition, revocation round ${i + 1} of ${PARTITION_ROUNDS}`);
      const [acc] = await createAccounts(a, 1, UNLIMITED_ACCOUNT);
      await timeUntil('the partitioned node has the account', now(), async () => (await b.probe(acc!.uuid)) === 400, 30_000);
      await timeUntil('the partitioned node is current', now(), current, 30_000);
      // The node's connection goes silent (no reset); new connections pass, as after a middlebox lost its state.
      proxy.silence('pass');
      await sleep(Math.random() * POLL_MS);
      const r = await a.adminCall('DELETE', `/admin/accounts/${acc!.id}`);
      const t0 = now();
      if (r.status !== 200) throw new Error(`DELETE answered ${r.status}: ${r.text}`);
      revoked.push((await until401(b, acc!.uuid, 5, 120_000)).at - t0);
    }
    log('6. everything silent, new connections held');
    await timeUntil('current before the black hole', now(), current, 30_000);
    proxy.silence('hold');
    const t0 = now();
    let status200 = true;
    const health = async () => {
      const h = await b.healthz();
      if (h.status !== 200) status200 = false;
      return h.body.registry!;
    };
    const disconnected = await timeUntil('connected false', t0, async () => !(await health()).connected);
    const degraded = await timeUntil('degraded', t0, async () => (await health()).state === 'degraded');
    proxy.restore();
    const t1 = now();
    const back = await timeUntil('current again', t1, async () => (await health()).state === 'current');
    const bound = POLL_MS + TIMEOUT_MS;
    section(
      [
        `## 6. Silent partition`,
        '',
        `Two nodes on defaults (registry.poll_interval_ms ${POLL_MS}, registry.timeout_ms ${TIMEOUT_MS}); one reaches PostgreSQL through a TCP proxy that can drop a connection's packets without a reset. ${PARTITION_ROUNDS} rounds: the partitioned node's connection goes silent (new connections pass), after a random 0-${POLL_MS} ms an account is revoked on the other node, and the partitioned node is probed until it refuses the key. Then every packet is dropped, new connections included, and \`/healthz\` is read every 20 ms.`,
        '',
        table(
          ['measurement', 'p50 ms', 'max ms', 'bound'],
          [
            ['revocation during a silent drop, from the commit to the first 401', ms(q(revoked, 0.5)), ms(max(revoked)), `poll + 2 x timeout = ${POLL_MS + 2 * TIMEOUT_MS} ms`],
            ['everything dropped: `/healthz` connected false', ms(disconnected), ms(disconnected), `poll + timeout = ${bound} ms`],
            ['everything dropped: `/healthz` state degraded', ms(degraded), ms(degraded), `poll + timeout = ${bound} ms`],
            ['packets flow again: state current', ms(back), ms(back), ''],
          ],
        ),
        '',
        `\`/healthz\` answered 200 throughout: ${status200 ? 'yes' : '**no**'}.`,
      ].join('\n'),
    );
    summary.push(['6. revocation during a silent drop, max from commit', `${ms(max(revoked))} ms`, `<= ${POLL_MS + 2 * TIMEOUT_MS} ms`, verdict(max(revoked) <= POLL_MS + 2 * TIMEOUT_MS)]);
    // Read every 20 ms: the reading interval is the figure's resolution.
    summary.push(['6. black hole to /healthz degraded', `${ms(degraded)} ms`, `<= ${bound} ms (+ 20 ms reading)`, verdict(degraded <= bound + 20)]);
    await Promise.all([a.stop(), b.stop()]);
  } finally {
    await proxy.close();
  }
}

async function cleanup(): Promise<void> {
  await Promise.all([...live].map((n) => n.stop().catch(() => {})));
  await Promise.all([...clients].map((c) => closeClient(c)));
  for (const c of clusters.splice(0)) await c.stop().catch(() => {});
  if (databases.length > 0) {
    const c = await client(BASE_URL).catch(() => null);
    for (const db of databases.splice(0)) {
      await c?.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch((e: unknown) => log(`could not drop database ${db}: ${(e as Error).message}`));
    }
    if (c) await closeClient(c);
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const started = now();
  const date = new Date().toISOString();
  const cpu = cpus();
  const load0 = loadavg().map((x) => x.toFixed(2)).join(' ');
  const header = [
    `<!-- ${COMMAND}${SMOKE ? ' --smoke' : ''} -->`,
    `# txrelay registry benchmark, ${date}, Node ${process.version}, ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores${SMOKE ? ' (smoke: tiny sizes)' : ''}`,
  ];
  process.stdout.write(header.join('\n') + '\n\n');
  try {
    const c = await client(BASE_URL);
    const { rows } = await c.query<{ v: string; fsync: string; sc: string }>("SELECT current_setting('server_version') AS v, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc");
    await closeClient(c);
    const server = `PostgreSQL ${rows[0]!.v} at ${new URL(BASE_URL).host} (fsync ${rows[0]!.fsync}, synchronous_commit ${rows[0]!.sc}) for 1-4; every node, PostgreSQL and this process share the machine's ${cpu.length} cores.`;

    if (PARTITION_ONLY) {
      await partition();
      return;
    }
    const nodesUrl = await createDatabase('nodes');
    log('starting 3 nodes');
    let nodes = await Promise.all(['bench-a', 'bench-b', 'bench-c'].map((name) => NodeProc.start({ name, url: nodesUrl })));
    await Promise.all(nodes.map((n) => n.listening));
    await revocation(nodes, nodesUrl);
    await lostNotification(nodes, nodesUrl);
    nodes = await catchUp(nodes, nodesUrl);
    await Promise.all(nodes.map((n) => n.stop()));
    await million();
    await outage();
    await partition();

    const took = (now() - started) / 1000;
    const load1 = loadavg().map((x) => x.toFixed(2)).join(' ');
    const report = [
      ...header,
      '',
      `${server} Load average ${load0} at the start, ${load1} at the end; the run took ${took.toFixed(0)} s.`,
      '',
      '## Summary',
      '',
      table(['measurement', 'figure', 'goal', 'verdict'], summary),
      '',
      ...sections.flatMap((s) => [s, '']),
    ].join('\n');
    process.stdout.write(`## Summary\n\n${table(['measurement', 'figure', 'goal', 'verdict'], summary)}\n\nthe run took ${took.toFixed(0)} s\n`);
    if (!SMOKE) {
      writeFileSync(OUT, report);
      log(`wrote ${OUT}`);
    }
  } finally {
    await cleanup();
  }
}

process.once('SIGINT', () => {
  log('interrupted: cleaning up');
  void cleanup().finally(() => process.exit(130));
});

main().catch((e: unknown) => {
  process.stderr.write(`registry benchmark failed: ${(e as Error)?.stack ?? e}\n`);
  process.exitCode = 1;
});
