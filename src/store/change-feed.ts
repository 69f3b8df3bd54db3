/**
 * Keeps a node's account replica current with PostgreSQL
 * (docs/operations.md#regional-nodes).
 *
 * One dedicated connection LISTENs for change seqs, holds this node's name
 * (a session advisory lock: it ends with the session, so a crashed or
 * stopped node's name is free again at once) and runs every catch-up. A
 * catch-up reads, in one repeatable-read snapshot, every change above the
 * applied seq, or every account when the replica's position is no longer in
 * the change log (pruned, or a database that was rebuilt); it runs on every
 * (re)connect, on each notification, and every `pollMs` as a safety net for a
 * lost one. A lost connection is retried with back-off; meanwhile the node
 * serves from its replica and reports how stale it is.
 *
 * Every connect and query is bounded by `timeoutMs`: a connection whose
 * packets vanish without a reset fails the next poll's catch-up and is
 * replaced, so a silent partition is noticed within pollMs + timeoutMs
 * (docs/operations.md#when-postgresql-is-down). The replica also remembers
 * what the change at its position was, so a change log restored from a backup
 * (same registry, seqs reused) is told apart and resynced.
 */
import net from 'node:net';
import pg from 'pg';
import { E, TxrelayError } from '../errors.js';
import type { Store } from './db.js';
import type { AccountRecord } from './accounts.js';
import { CHANNEL, ROW_COLUMNS, WRITE_LOCK, changeMark, describeUrl, migrate, recordOf, rowColumns, type AccountRow } from './pg-schema.js';

export interface FeedLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** What the feed applies changes to (PgRegistry). */
interface Replica {
  apply(rec: AccountRecord): void;
  replaceAll(records: AccountRecord[]): void;
}

interface FeedOptions {
  url: string;
  node: string;
  pollMs: number;
  /** Bound on each connect and query of the feed. */
  timeoutMs: number;
  retentionS: number;
  log: FeedLog;
  store: Store;
  replica: Replica;
}

/** Rows per catch-up page and per resync page. */
const CHANGE_PAGE = 5_000;
const RESYNC_PAGE = 20_000;
/** Replica rows per embedded-store commit during a resync. */
const STORE_CHUNK = 50_000;
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5_000;
const PRUNE_INTERVAL_MS = 3600_000;

/** Stored beside the replica rows: the last applied seq, and when the replica was last known current. */
const META_SEQ = 'seq';
const META_SYNCED_AT = 'synced_at';
const META_REGISTRY = 'registry_id';
/** What the change at the stored seq was (changeMark): a different one there means another change log. */
const META_MARK = 'mark';

/** A session advisory lock key for a node name (hashtextextended is PostgreSQL's own 64-bit text hash). */
const NODE_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended('txrelay node ' || $1, 0)) AS ok";

export class ChangeFeed {
  /** Last change applied (and stored). */
  seq = 0;
  /** Whether this replica ever completed a sync (stored). */
  synced = false;
  /** The registry_id of the database this replica copies (stored). */
  private registry: string | null = null;
  /** changeMark of the change at `seq` (stored); null when unknown (an empty log, or an older replica). */
  private mark: string | null = null;
  /** Wall-clock ms when the replica was last known current: the end of the last catch-up. */
  currentAt = 0;
  /** Changes applied and full resyncs since start (metrics). */
  applied = 0;
  resyncs = 0;
  connected = false;
  private client: pg.Client | null = null;
  private socket: net.Socket | null = null;
  private running: Promise<void> | null = null;
  /** Every use of the connection, one after another: a prune inside a catch-up's snapshot would break both. */
  private turn: Promise<unknown> = Promise.resolve();
  private again = false;
  private waiters: { seq: number; done: (ok: boolean) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private retryAt = 0;
  private backoff = BACKOFF_MIN_MS;
  private failures = 0;
  private stopped = false;
  private nameHeld = false;
  /** Destroys a client's socket: ending a connection whose packets vanish would wait for an answer that never comes. */
  private readonly sockets = new WeakMap<pg.Client, () => void>();

  constructor(private readonly o: FeedOptions) {}

  /** The stored replica: its records, and its position (this.seq, this.synced, this.currentAt). */
  loadStored(): AccountRecord[] {
    const st = this.o.store;
    const seq = st.replicaMeta.get(META_SEQ);
    this.synced = typeof seq === 'number';
    this.seq = this.synced ? (seq as number) : 0;
    this.currentAt = (st.replicaMeta.get(META_SYNCED_AT) as number | undefined) ?? 0;
    this.registry = (st.replicaMeta.get(META_REGISTRY) as string | undefined) ?? null;
    this.mark = (st.replicaMeta.get(META_MARK) as string | undefined) ?? null;
    return [...st.replica.getRange()].map(({ value }) => Object.freeze(value as AccountRecord));
  }

  /** Seconds since the replica was last known current; Infinity if it never was. */
  staleness(nowMs = Date.now()): number {
    return this.synced ? Math.max(0, nowMs - this.currentAt) / 1000 : Infinity;
  }

  /** Staleness past which the replica is degraded: a poll and a time-out without a catch-up. */
  get staleAfterS(): number {
    return (this.o.pollMs + this.o.timeoutMs) / 1000;
  }

  /** For /healthz: where the replica is and whether it is current (it serves either way). */
  health(nowMs = Date.now()): { connected: boolean; change: number; staleness_s: number | null; state: 'current' | 'degraded'; degraded_after_s: number } {
    const stale = this.staleness(nowMs);
    return {
      connected: this.connected,
      change: this.seq,
      staleness_s: Number.isFinite(stale) ? Math.round(stale * 10) / 10 : null,
      state: stale > this.staleAfterS ? 'degraded' : 'current',
      degraded_after_s: this.staleAfterS,
    };
  }

  /**
   * The first connection: migrate, take the node's name, catch up. Fails
   * start-up when another live node holds the name, the schema is newer, or
   * the database does not answer and this replica never synced.
   */
  async start(): Promise<void> {
    const where = describeUrl(this.o.url);
    try {
      await this.connect(true);
    } catch (e) {
      if (e instanceof TxrelayError) throw e;
      if (!this.synced) {
        throw new TxrelayError(E.REGISTRY_START, `registry: PostgreSQL at ${where} does not answer (${(e as Error).message}) and this node has never synced its replica, so it cannot start — check that PostgreSQL is running and that database.url (TXRELAY_DATABASE_URL) points at it`);
      }
      const age = this.currentAt > 0 ? `, last current ${new Date(this.currentAt).toISOString()}` : '';
      this.o.log.warn(`registry: PostgreSQL at ${where} does not answer (${(e as Error).message}); serving from the stored replica (change ${this.seq}${age}) and catching up when it returns`);
      this.failures = 1;
      this.retryAt = Date.now() + this.backoff;
    }
    this.timer = setInterval(() => this.tick(), this.o.pollMs);
    this.timer.unref();
    this.pruneTimer = setInterval(() => void this.prune().catch(() => {}), PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
  }

  /** Resolves true once change `seq` is applied here, false after `ms`. */
  waitFor(seq: number, ms: number): Promise<boolean> {
    if (this.seq >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, ms);
      const waiter = {
        seq,
        done: (ok: boolean) => {
          clearTimeout(t);
          resolve(ok);
        },
      };
      this.waiters.push(waiter);
      void this.kick();
    });
  }

  /** Runs a catch-up now (or once more after the one running). */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const c = this.client;
    if (c === null || !this.connected) return Promise.resolve();
    this.running = this.exclusive(async () => {
      do {
        this.again = false;
        await this.catchUp(c);
      } while (this.again && !this.stopped);
    })
      .catch((e: unknown) => this.lost(c, e))
      .finally(() => (this.running = null));
    return this.running;
  }

  /** Deletes changes older than the retention (keeping the newest), and records how far it pruned. */
  async prune(retentionS = this.o.retentionS): Promise<number> {
    const c = this.client;
    if (c === null || !this.connected) return 0;
    return this.exclusive(() => pruneChangeLog(c, retentionS));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.running?.catch(() => {});
    const c = this.client;
    this.client = null;
    this.connected = false;
    await c?.end().catch(() => {});
    for (const w of this.waiters.splice(0)) w.done(false);
  }

  // ---- connection -------------------------------------------------------------

  private tick(): void {
    if (this.stopped) return;
    if (this.connected && !this.nameHeld) void this.claimName();
    if (this.connected) void this.kick();
    else if (this.client === null && Date.now() >= this.retryAt) {
      this.connect(false).catch((e: unknown) => this.lost(null, e));
    }
  }

  private async connect(first: boolean): Promise<void> {
    let socket: net.Socket | null = null;
    const client = new pg.Client({
      connectionString: this.o.url,
      connectionTimeoutMillis: this.o.timeoutMs,
      query_timeout: this.o.timeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: this.o.timeoutMs,
      application_name: `txrelay ${this.o.node} feed`,
      stream: () => (socket = this.socket = new net.Socket()),
    });
    this.sockets.set(client, () => socket?.destroy());
    this.client = client;
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (m) => {
      if (m.channel === CHANNEL && Number(m.payload) > this.seq) void this.kick();
    });
    try {
      await client.connect();
      await migrate(client);
      const { rows } = await client.query<{ ok: boolean }>(NODE_LOCK_SQL, [this.o.node]);
      this.nameHeld = rows[0]!.ok;
      if (!this.nameHeld) {
        const msg = `registry: another live node holds the name "${this.o.node}"; give each node its own node.name`;
        if (first) throw new TxrelayError(E.REGISTRY_START, msg);
        // After a silent drop, PostgreSQL keeps the old session (and its lock) until it notices the session is gone.
        this.o.log.warn(`registry: the name "${this.o.node}" is still held by another session: this node's previous connection until PostgreSQL notices it is gone, or another live node; retrying`);
      }
      await client.query(`LISTEN ${CHANNEL}`);
      this.connected = true;
      if (this.failures > 0) this.o.log.info(`registry: PostgreSQL answers again after ${this.failures} failed attempts; catching up from change ${this.seq}`);
      this.failures = 0;
      this.backoff = BACKOFF_MIN_MS;
      // The first catch-up of a start must succeed for start-up to succeed; later ones retry on their own.
      if (first) await this.exclusive(() => this.catchUp(client));
      else void this.kick();
      if (first) void this.prune().catch(() => {});
    } catch (e) {
      this.connected = false;
      if (this.client === client) this.client = null;
      this.socket?.destroy();
      await client.end().catch(() => {});
      throw e;
    }
  }

  /**
   * Retried while connected without the name: after a network cut the old
   * session can hold it until PostgreSQL notices the dead connection.
   */
  private async claimName(): Promise<void> {
    const c = this.client;
    if (c === null) return;
    try {
      const { rows } = await this.exclusive(() => c.query<{ ok: boolean }>(NODE_LOCK_SQL, [this.o.node]));
      if (rows[0]!.ok && !this.nameHeld) {
        this.nameHeld = true;
        this.o.log.info(`registry: holding the node name "${this.o.node}" again`);
      }
    } catch {
      // The next tick retries; a broken connection is reported by its own events.
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** The connection failed: drop it and retry after a back-off (jittered, so nodes do not reconnect in step). */
  private lost(client: pg.Client | null, e: unknown): void {
    if (client !== null && this.client !== client) return;
    if (this.client !== null) {
      const c = this.client;
      this.client = null;
      void c.end().catch(() => {});
      this.sockets.get(c)?.();
    }
    this.connected = false;
    if (this.stopped) return;
    if (this.failures++ === 0) this.o.log.warn(`registry: lost PostgreSQL at ${describeUrl(this.o.url)} (${(e as Error)?.message ?? e}); serving from the replica, reconnecting with back-off`);
    this.retryAt = Date.now() + this.backoff * (0.5 + Math.random() / 2);
    this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff * 2);
  }

  // ---- catch-up -----------------------------------------------------------------

  private async catchUp(c: pg.Client): Promise<void> {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      const { rows } = await c.query<{ pruned: string; head: string; registry: string; mark: string | null }>(
        `SELECT (SELECT v FROM txrelay_registry_meta WHERE k = 'pruned_through') AS pruned,
                (SELECT v FROM txrelay_registry_meta WHERE k = 'registry_id') AS registry,
                (SELECT coalesce(max(seq), 0) FROM txrelay_account_changes) AS head,
                (SELECT ${changeMark()} FROM txrelay_account_changes WHERE seq = $1) AS mark`,
        [this.seq],
      );
      const pruned = Number(rows[0]!.pruned);
      const head = Math.max(Number(rows[0]!.head), pruned);
      const registry = rows[0]!.registry;
      const mark = rows[0]!.mark;
      let why: string | null = null;
      if (!this.synced) why = 'first sync';
      else if (this.registry !== registry) why = 'the database is another registry than the one this replica copied (rebuilt or replaced)';
      else if (this.seq > head) why = `the database's change log ends at ${head}, before this replica's ${this.seq}`;
      else if (this.seq < pruned) why = `change ${this.seq} is past the change log's retention`;
      // Below the pruned mark the change is gone and nothing can be compared; above it, it must be the one applied.
      else if (this.seq > pruned && this.seq > 0 && (mark === null || (this.mark !== null && mark !== this.mark))) {
        why = `change ${this.seq} in the database is not the change this replica applied (a change log restored from a backup)`;
      }
      if (why !== null) await this.resync(c, head, registry, why);
      else {
        if (this.mark === null && mark !== null) this.mark = mark;
        await this.replay(c);
      }
      await c.query('COMMIT');
    } catch (e) {
      // Not awaited: the connection is dropped after a failed catch-up, and after a time-out a
      // ROLLBACK would only queue behind the query that never answered.
      void c.query('ROLLBACK').catch(() => {});
      throw e;
    }
    this.currentAt = Date.now();
  }

  /** Every change above the applied seq, in order, a page at a time; each page stored with its seq. */
  private async replay(c: pg.Client): Promise<void> {
    for (;;) {
      const { rows } = await c.query<AccountRow & { change: string; mark: string }>(
        `SELECT ch.seq AS change, ${changeMark('ch')} AS mark, ${rowColumns('a')}
           FROM txrelay_account_changes ch JOIN txrelay_accounts a ON a.id = ch.account_id
          WHERE ch.seq > $1 ORDER BY ch.seq LIMIT ${CHANGE_PAGE}`,
        [this.seq],
      );
      if (rows.length === 0) return;
      const last = Number(rows[rows.length - 1]!.change);
      // A row appears once per change in the page; it is the row as of the snapshot either way.
      const recs = new Map<number, AccountRecord>();
      for (const r of rows) recs.set(Number(r.id), recordOf(r));
      for (const rec of recs.values()) this.o.replica.apply(rec);
      this.mark = rows[rows.length - 1]!.mark;
      await this.store([...recs.values()], last);
      this.applied += rows.length;
      this.advance(last);
      if (rows.length < CHANGE_PAGE) return;
    }
  }

  /** Every account as of this snapshot, swapped in at once; `head` is the snapshot's last seq. */
  private async resync(c: pg.Client, head: number, registry: string, why: string): Promise<void> {
    const started = Date.now();
    const records: AccountRecord[] = [];
    let after = '0';
    for (;;) {
      const { rows } = await c.query<AccountRow>(`SELECT ${ROW_COLUMNS} FROM txrelay_accounts WHERE id > $1 ORDER BY id LIMIT ${RESYNC_PAGE}`, [after]);
      for (const r of rows) records.push(recordOf(r));
      if (rows.length < RESYNC_PAGE) break;
      after = rows[rows.length - 1]!.id;
    }
    this.o.replica.replaceAll(records);
    // Stored in chunks; the position goes with the last, which also drops the rows the snapshot no longer has,
    // so an interrupted resync resumes from the old position (and identity) and converges.
    for (let i = 0; i < records.length; i += STORE_CHUNK) await this.store(records.slice(i, i + STORE_CHUNK), null);
    const keep = new Set(records.map((r) => r.id));
    const gone = [...this.o.store.replica.getKeys()].filter((id) => !keep.has(id));
    const at = await c.query<{ mark: string }>(`SELECT ${changeMark()} AS mark FROM txrelay_account_changes WHERE seq = $1`, [head]);
    this.mark = at.rows[0]?.mark ?? null;
    this.registry = registry;
    await this.store([], head, gone);
    this.synced = true;
    this.resyncs++;
    this.advance(head);
    this.o.log.info(`registry: ${why}: ${records.length} accounts as of change ${head} in ${Date.now() - started} ms`);
  }

  private store(records: AccountRecord[], seq: number | null, gone: number[] = []): Promise<void> {
    const st = this.o.store;
    const at = Date.now();
    const registry = this.registry;
    const mark = this.mark;
    return st.write(() => {
      for (const rec of records) void st.replica.put(rec.id, rec);
      for (const id of gone) void st.replica.remove(id);
      if (seq !== null) {
        void st.replicaMeta.put(META_SEQ, seq);
        void st.replicaMeta.put(META_SYNCED_AT, at);
        void st.replicaMeta.put(META_REGISTRY, registry);
        if (mark === null) void st.replicaMeta.remove(META_MARK);
        else void st.replicaMeta.put(META_MARK, mark);
      }
    });
  }

  private advance(seq: number): void {
    this.seq = seq;
    const ready = this.waiters.filter((w) => w.seq <= seq);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.seq > seq);
    for (const w of ready) w.done(true);
  }
}

/**
 * Deletes changes older than `retentionS` (never the newest, which marks the
 * head) and raises pruned_through, behind the writer lock so no change
 * commits in between. Returns how many it deleted.
 */
export async function pruneChangeLog(c: pg.ClientBase, retentionS: number): Promise<number> {
  await c.query('BEGIN');
  try {
    await c.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK.toString()]);
    const { rows } = await c.query<{ n: string; top: string | null }>(
      `WITH d AS (
         DELETE FROM txrelay_account_changes
          WHERE changed_at < now() - make_interval(secs => $1)
            AND seq < (SELECT max(seq) FROM txrelay_account_changes)
          RETURNING seq)
       SELECT count(*) AS n, max(seq) AS top FROM d`,
      [retentionS],
    );
    const top = rows[0]!.top;
    if (top !== null) await c.query("UPDATE txrelay_registry_meta SET v = greatest(v, $1) WHERE k = 'pruned_through'", [top]);
    await c.query('COMMIT');
    return Number(rows[0]!.n);
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}
