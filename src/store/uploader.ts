/**
 * Copies batch receive records to PostgreSQL when `database.url` is set
 * (docs/protocol.md#batch-records). One loop, one connection: upsert the
 * oldest queued records in one statement, and only after PostgreSQL commits
 * mark those versions uploaded (a crash in between re-uploads: harmless).
 * Errors are retried with back-off indefinitely; nothing is dropped or thrown.
 */
import net from 'node:net';
import pg from 'pg';
import type { BatchRecord, BatchStore } from './batches.js';
import type { StoreLog } from './db.js';

const DEFAULT_TABLE = 'txrelay_batch_records';
/** Rows per statement: one JSON parameter of at most ~2 MB (500 x 64 hashes), one round trip. */
const UPLOAD_BATCH = 500;
/** Past this many unuploaded records (~0.5 GB locally at ~500 bytes each) stats() flags it; nothing is dropped. */
const BACKLOG_LIMIT = 1_000_000;
/** Back-off after a failure: 100 ms doubling to 10 s, each wait jittered down by up to half to spread reconnects. */
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 10_000;
/** Idle poll of the local queue: uploads are not user-visible, and the poll is one B-tree cursor step. */
const POLL_MS = 200;
/** A dead-but-open connection must not stall the loop: bound connect and each query. */
const CONNECT_TIMEOUT_MS = 5_000;
const QUERY_TIMEOUT_MS = 30_000;
/** stop()'s default budget for the final flush, inside a typical 10 s shutdown grace period. */
const STOP_TIMEOUT_MS = 5_000;
/** Retention pruning runs at most this often, when the queue is idle. */
const PRUNE_INTERVAL_MS = 3600_000;

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

interface UploaderOptions {
  /** PostgreSQL connection URL (`database.url`); never logged. */
  url: string;
  /** Table name; tests use a unique one. Lowercase identifier. */
  table?: string;
  log?: StoreLog;
  batchSize?: number;
  pollMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
}

interface UploaderStats {
  /** Records not yet uploaded in their current version. */
  backlog: number;
  /** True while backlog exceeds BACKLOG_LIMIT: the database has been unreachable for long. */
  backlogOverLimit: boolean;
  /** Record versions uploaded since start. */
  uploaded: number;
  /** Failed attempts (connect, create table, upsert, mark) since start. */
  failures: number;
  lastError?: string;
  connected: boolean;
}

type Round = 'idle' | 'more' | 'failed';

export class Uploader {
  private readonly table: string;
  private readonly insertSql: string;
  private readonly createSql: string;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly backoffMinMs: number;
  private readonly backoffMaxMs: number;
  private readonly log: StoreLog | undefined;

  private client: pg.Client | undefined;
  /** The client's socket: pg's end() waits on a server that never answers, destroying it does not. */
  private socket: net.Socket | undefined;
  /** The client has connected and the table exists. */
  private ready = false;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private wake: (() => void) | undefined;
  private attempt = 0;
  private lastPrune = 0;
  private overLimit = false;
  private counters = { uploaded: 0, failures: 0, lastError: undefined as string | undefined };

  constructor(
    private readonly batches: BatchStore,
    private readonly opts: UploaderOptions,
  ) {
    this.table = opts.table ?? DEFAULT_TABLE;
    if (!TABLE_NAME.test(this.table)) throw new TypeError('uploader table must be a lowercase SQL identifier');
    this.batchSize = opts.batchSize ?? UPLOAD_BATCH;
    this.pollMs = opts.pollMs ?? POLL_MS;
    this.backoffMinMs = opts.backoffMinMs ?? BACKOFF_MIN_MS;
    this.backoffMaxMs = opts.backoffMaxMs ?? BACKOFF_MAX_MS;
    this.log = opts.log;
    const t = pg.escapeIdentifier(this.table);
    this.createSql = `CREATE TABLE IF NOT EXISTS ${t} (
      batch_id text PRIMARY KEY,
      received_at timestamptz NOT NULL,
      account_id bigint NOT NULL,
      client_ip text NOT NULL,
      tx_hashes jsonb NOT NULL,
      items jsonb NOT NULL,
      uploaded_at timestamptz NOT NULL DEFAULT now())`;
    // One jsonb parameter holds every row: no per-row placeholders, no array-literal quoting.
    this.insertSql = `INSERT INTO ${t} (batch_id, received_at, account_id, client_ip, tx_hashes, items)
      SELECT r->>'batch_id', (r->>'received_at')::timestamptz, (r->>'account_id')::bigint,
             r->>'client_ip', r->'tx_hashes', r->'items'
        FROM jsonb_array_elements($1::jsonb) AS r
      ON CONFLICT (batch_id) DO UPDATE SET items = EXCLUDED.items, uploaded_at = now()`;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /**
   * Stops the loop, lets pending outcome writes land, then tries to upload
   * what is left for at most `timeoutMs`. Whatever is still queued stays in
   * lmdb for the next start. Never rejects.
   */
  async stop(timeoutMs: number = STOP_TIMEOUT_MS): Promise<void> {
    if (!this.loop) return;
    this.stopping = true;
    this.wake?.();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      this.disconnect(); // aborts a query or connect in flight; the round then fails and the drain ends
    }, timeoutMs);
    try {
      await this.loop;
      this.loop = undefined;
      await this.batches.flush();
      while (!expired && (await this.round()) === 'more');
    } finally {
      clearTimeout(timer);
      this.disconnect();
    }
  }

  stats(): UploaderStats {
    const backlog = this.batches.backlog();
    const s: UploaderStats = {
      backlog,
      backlogOverLimit: backlog > BACKLOG_LIMIT,
      uploaded: this.counters.uploaded,
      failures: this.counters.failures,
      connected: this.ready,
    };
    if (this.counters.lastError !== undefined) s.lastError = this.counters.lastError;
    return s;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const r = await this.round();
      if (this.stopping) break;
      if (r === 'failed') await this.sleep(this.backoff());
      else if (r === 'idle') {
        await this.prune();
        await this.sleep(this.pollMs);
      }
    }
  }

  /** One upload of up to batchSize records. Never throws. */
  private async round(): Promise<Round> {
    let recs: BatchRecord[];
    try {
      this.checkBacklog();
      recs = this.batches.pendingUpload(this.batchSize);
    } catch (err) {
      return this.failed(err); // the local store is closed or broken; keep trying rather than escape the loop
    }
    try {
      // Connect even with nothing to upload: a wrong URL or a down database shows in stats and logs at once.
      const client = await this.connect();
      if (recs.length === 0) return this.succeeded('idle');
      await client.query(this.insertSql, [JSON.stringify(recs.map(row))]);
    } catch (err) {
      this.disconnect();
      return this.failed(err);
    }
    // PostgreSQL has committed (autocommit statement): only now may lmdb forget them.
    try {
      await this.batches.markUploaded(recs);
    } catch (err) {
      // Local store failed closed; the rows stay queued and the next upload of them is a no-op upsert.
      return this.failed(err);
    }
    this.counters.uploaded += recs.length;
    return this.succeeded(recs.length === this.batchSize ? 'more' : 'idle');
  }

  private succeeded(r: Round): Round {
    if (this.attempt > 0) this.log?.info(`batch record upload recovered after ${this.attempt} failed attempts`);
    this.attempt = 0;
    return r;
  }

  private async connect(): Promise<pg.Client> {
    if (this.client && this.ready) return this.client;
    this.disconnect();
    const client = new pg.Client({
      connectionString: this.opts.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      query_timeout: QUERY_TIMEOUT_MS,
      keepAlive: true,
      application_name: 'txrelay-uploader',
      stream: () => (this.socket = new net.Socket()),
    });
    // A connection dropped while idle is reported here; the next round reconnects.
    client.on('error', () => {
      if (this.client === client) this.disconnect();
    });
    // Held before it is ready so that stop() can abort a connect in flight.
    this.client = client;
    await client.connect();
    await client.query(this.createSql);
    if (this.client !== client) throw new Error('uploader stopped while connecting');
    this.ready = true;
    return client;
  }

  private disconnect(): void {
    const c = this.client;
    if (!c) return;
    if (this.ready) void c.end().catch(() => {});
    else this.socket?.destroy(); // connecting: the connect then fails at once instead of at its timeout
    this.client = undefined;
    this.socket = undefined;
    this.ready = false;
  }

  private failed(err: unknown): Round {
    const msg = err instanceof Error ? err.message : String(err);
    this.counters.failures++;
    this.counters.lastError = msg;
    if (this.attempt++ === 0) this.log?.warn(`batch record upload failing, retrying with back-off: ${msg}`);
    return 'failed';
  }

  private backoff(): number {
    const ceiling = Math.min(this.backoffMaxMs, this.backoffMinMs * 2 ** Math.min(this.attempt - 1, 30));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  private checkBacklog(): void {
    const over = this.batches.backlog() > BACKLOG_LIMIT;
    if (over && !this.overLimit) this.log?.warn(`batch record upload backlog above ${BACKLOG_LIMIT}; records are kept, none dropped`);
    this.overLimit = over;
  }

  private async prune(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_INTERVAL_MS) return;
    this.lastPrune = now;
    try {
      await this.batches.prune({ now });
    } catch (err) {
      this.log?.warn(`batch record pruning failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
    });
  }
}

function row(r: BatchRecord): object {
  return {
    batch_id: r.batch_id,
    received_at: r.received_at,
    account_id: r.account_id,
    client_ip: r.client_ip,
    tx_hashes: r.tx_hashes,
    items: r.items,
  };
}
