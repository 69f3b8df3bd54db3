/**
 * The postgres account registry (`registry.mode = "postgres"`,
 * docs/operations.md#regional-nodes): PostgreSQL is the source of truth and
 * every node serves from its own replica, in memory and in the embedded store.
 *
 * - Writes (admin API, any node): one transaction behind the writer lock
 *   (account row; the table's trigger adds the change-log row and the
 *   `pg_notify` of the seq), answered after the commit and once this node
 *   has applied it. The lock makes seqs commit in
 *   order, so "every seq above mine" never skips one that commits late.
 * - Reads (the gate): memory only, synchronous; PostgreSQL is never on the
 *   request path.
 * - The feed (change-feed.ts) applies changes in seq order; the last applied
 *   seq is stored in the same commit as the rows it covers.
 * - Keys: PostgreSQL holds SHA-256 of each key, never the key; a key is shown
 *   once, in the answer to its creation.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { E, TxrelayError } from '../errors.js';
import type { Store } from './db.js';
import { KeyIndex, keyDigestHex } from './key-index.js';
import { uuidByteWords, uuidTextWords, type UuidWords } from './ids.js';
import {
  checkInput,
  defaultBurst,
  freeze,
  limitReached,
  mergeRate,
  notFound,
  pageOf,
  revokedAccount,
  type AccountRecord,
  type NewAccount,
  type Plans,
  type Registry,
} from './accounts.js';
import { ROW_COLUMNS, WRITE_LOCK, migrate, recordOf, type AccountRow } from './pg-schema.js';
import { ChangeFeed, type FeedLog } from './change-feed.js';

const MAX_LIVE_ACCOUNTS = 1 << 20;
/** How long a write waits for this node to apply its own commit before answering anyway (it is committed). */
const APPLY_WAIT_MS = 5_000;
/** Bounds on the writers' connections: an unreachable database answers 503 in seconds, not minutes. */
const CONNECT_TIMEOUT_MS = 3_000;
const QUERY_TIMEOUT_MS = 10_000;
/** registry.timeout_ms's default, for callers that do not pass it. */
const FEED_TIMEOUT_MS = 5_000;

interface PgRegistryOptions {
  url: string;
  store: Store;
  node: string;
  pollMs: number;
  /** Bound on each connect and query of the change feed (registry.timeout_ms). */
  timeoutMs?: number;
  retentionS: number;
  log: FeedLog;
  maxLive?: number;
}

/** Where an error leaves a write: a database that does not answer is 503 (retry), anything else is the error itself. */
function unavailable(e: unknown): unknown {
  if (e instanceof TxrelayError) return e;
  const code = (e as { code?: unknown }).code;
  // SQLSTATE classes 08 (connection) and 57 (operator intervention: shutdown); else a Node socket error or a timeout.
  const sqlstate = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
  if (!sqlstate || code.startsWith('08') || code.startsWith('57')) {
    return new TxrelayError(E.REGISTRY_UNAVAILABLE, (e as Error).message || String(e));
  }
  return e;
}

export class PgRegistry implements Registry {
  readonly mode = 'postgres' as const;
  readonly maxLive: number;
  readonly feed: ChangeFeed;
  private byId = new Map<number, AccountRecord>();
  private active = new KeyIndex<AccountRecord>(true);
  private liveCount = 0;
  /** The highest account id seen: pages walk ids up to it. */
  private maxId = 0;
  private readonly listeners = new Set<(rec: AccountRecord) => void>();
  private readonly pool: pg.Pool;
  private readonly words: UuidWords = new Int32Array(4);

  private constructor(private readonly o: PgRegistryOptions) {
    this.maxLive = o.maxLive ?? MAX_LIVE_ACCOUNTS;
    this.pool = new pg.Pool({
      connectionString: o.url,
      max: 2,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      query_timeout: QUERY_TIMEOUT_MS,
      application_name: `txrelay ${o.node} admin`,
    });
    // An idle writer connection that drops is replaced on the next write.
    this.pool.on('error', () => {});
    this.feed = new ChangeFeed({
      url: o.url,
      node: o.node,
      pollMs: o.pollMs,
      timeoutMs: o.timeoutMs ?? FEED_TIMEOUT_MS,
      retentionS: o.retentionS,
      log: o.log,
      store: o.store,
      replica: this,
    });
  }

  /**
   * Loads the stored replica, then syncs with PostgreSQL. A node that synced
   * before starts from its replica when the database does not answer; one
   * that never synced cannot, and start-up fails with one line.
   */
  static async open(o: PgRegistryOptions): Promise<PgRegistry> {
    const r = new PgRegistry(o);
    const stored = r.feed.loadStored();
    for (const rec of stored) r.apply(rec, false);
    await r.feed.start();
    return r;
  }

  get live(): number {
    return this.liveCount;
  }

  /** Every account, revoked included, by id. */
  list(): AccountRecord[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  page(after: number, limit: number): AccountRecord[] {
    return pageOf(this.byId, this.maxId, after, limit);
  }

  require(ref: string): AccountRecord {
    const rec = this.get(ref);
    if (rec === undefined) throw notFound();
    return rec;
  }

  lookup(uuid: string): AccountRecord | undefined {
    return uuidTextWords(uuid, this.words) ? this.active.find(this.words) : undefined;
  }

  lookupBytes(b: Uint8Array, offset: number): AccountRecord | undefined {
    return uuidByteWords(b, offset, this.words) ? this.active.find(this.words) : undefined;
  }

  onChange(cb: (rec: AccountRecord) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  async create(input: unknown, plans: Plans): Promise<NewAccount> {
    const body = checkInput(input ?? {});
    if (this.liveCount >= this.maxLive) throw limitReached(this.maxLive);
    const plan = body.plan ?? 'free';
    const p = plans[plan];
    const evmTps = body.evm?.tps ?? p.evm_tps;
    const solTps = body.solana?.tps ?? p.solana_tps;
    const evm = { enabled: body.evm?.enabled ?? true, tps: evmTps, burst: body.evm?.burst ?? defaultBurst(evmTps) };
    const solana = {
      enabled: body.solana?.enabled ?? true,
      tps: solTps,
      burst: body.solana?.burst ?? defaultBurst(solTps),
      min_tip_lamports: body.solana?.min_tip_lamports ?? p.min_tip_lamports,
    };
    const uuid = randomUUID();
    const rec = await this.write(async (c) => {
      const { rows } = await c.query<AccountRow>(
        `INSERT INTO txrelay_accounts (key_sha256, plan, evm, solana) VALUES (decode($1, 'hex'), $2, $3, $4) RETURNING ${ROW_COLUMNS}`,
        [keyDigestHex(uuid), plan, evm, solana],
      );
      return rows[0]!;
    });
    // The key is shown here, once; nothing stores it.
    return { uuid, ...rec } as NewAccount;
  }

  async update(ref: string, patch: unknown): Promise<AccountRecord> {
    const body = checkInput(patch ?? {});
    return this.write(async (c) => {
      const cur = await this.locked(c, ref);
      if (cur.revoked) throw revokedAccount();
      const sol = mergeRate(cur.solana, body.solana);
      const { rows } = await c.query<AccountRow>(
        `UPDATE txrelay_accounts SET plan = $2, evm = $3, solana = $4 WHERE id = $1 RETURNING ${ROW_COLUMNS}`,
        [cur.id, body.plan ?? cur.plan, mergeRate(cur.evm, body.evm), { ...sol, min_tip_lamports: body.solana?.min_tip_lamports ?? cur.solana.min_tip_lamports }],
      );
      return rows[0]!;
    });
  }

  /** Revokes for good; revoking a revoked account changes nothing and answers its record. */
  async revoke(ref: string): Promise<AccountRecord> {
    return this.write(async (c) => {
      const cur = await this.locked(c, ref);
      if (cur.revoked) return cur;
      const { rows } = await c.query<AccountRow>(`UPDATE txrelay_accounts SET revoked = true WHERE id = $1 RETURNING ${ROW_COLUMNS}`, [cur.id]);
      return rows[0]!;
    });
  }

  /** The replica's record, by key or id. */
  get(ref: string): AccountRecord | undefined {
    if (typeof ref !== 'string') return undefined;
    if (/^[1-9][0-9]{0,15}$/.test(ref)) return this.byId.get(Number(ref));
    if (!uuidTextWords(ref, this.words)) return undefined;
    const live = this.active.find(this.words);
    if (live !== undefined) return live;
    // A revoked account: the admin API only, so a scan rather than a second index.
    const digest = keyDigestHex(ref);
    for (const rec of this.byId.values()) if (rec.key_sha256 === digest) return rec;
    return undefined;
  }

  async close(): Promise<void> {
    await this.feed.stop();
    await this.pool.end().catch(() => {});
  }

  // ---- the replica: called by the feed, in seq order ------------------------

  /** One record as PostgreSQL has it now; `notify` false while loading the stored replica. */
  apply(rec: AccountRecord, notify = true): void {
    const prev = this.byId.get(rec.id);
    if (prev !== undefined && (prev.version ?? 0) >= (rec.version ?? 0) && prev.revoked === rec.revoked) return;
    this.liveCount += (rec.revoked ? 0 : 1) - (prev && !prev.revoked ? 1 : 0);
    this.byId.set(rec.id, rec);
    if (rec.id > this.maxId) this.maxId = rec.id;
    if (rec.revoked) this.active.delete(rec);
    else this.active.set(rec);
    if (notify) for (const cb of this.listeners) cb(rec);
  }

  /** A full resync: every record as of one snapshot, swapped in within one turn; changed ones are announced. */
  replaceAll(records: AccountRecord[]): void {
    const before = this.byId;
    const byId = new Map<number, AccountRecord>();
    const active = new KeyIndex<AccountRecord>(true);
    let live = 0;
    let maxId = 0;
    for (const rec of records) {
      byId.set(rec.id, rec);
      if (rec.id > maxId) maxId = rec.id;
      if (!rec.revoked) {
        active.set(rec);
        live++;
      }
    }
    this.byId = byId;
    this.active = active;
    this.liveCount = live;
    this.maxId = maxId;
    for (const rec of records) {
      const prev = before.get(rec.id);
      if (prev === undefined || prev.version !== rec.version || prev.revoked !== rec.revoked) for (const cb of this.listeners) cb(rec);
    }
    // Accounts are never deleted; one that vanished (a rebuilt database) stops authenticating.
    for (const [id, prev] of before) {
      if (!byId.has(id) && !prev.revoked) for (const cb of this.listeners) cb(freeze({ ...prev, revoked: true }));
    }
  }

  // ---- writes ---------------------------------------------------------------

  /** The row `ref` names, locked for this transaction; TXR_ACCOUNT_NOT_FOUND if none. */
  private async locked(c: pg.PoolClient, ref: string): Promise<AccountRecord> {
    let rows: AccountRow[] = [];
    if (typeof ref === 'string' && /^[1-9][0-9]{0,15}$/.test(ref)) {
      ({ rows } = await c.query<AccountRow>(`SELECT ${ROW_COLUMNS} FROM txrelay_accounts WHERE id = $1 FOR UPDATE`, [ref]));
    } else {
      const digest = typeof ref === 'string' ? keyDigestHex(ref) : undefined;
      if (digest !== undefined) {
        ({ rows } = await c.query<AccountRow>(`SELECT ${ROW_COLUMNS} FROM txrelay_accounts WHERE key_sha256 = decode($1, 'hex') FOR UPDATE`, [digest]));
      }
    }
    if (rows.length === 0) throw notFound();
    return recordOf(rows[0]!);
  }

  /**
   * One change in one transaction behind the writer lock: the row `change`
   * writes (or the record as it stands, when there is nothing to change),
   * its change-log row and the notification. Answered once committed and
   * applied here.
   */
  private async write(change: (c: pg.PoolClient) => Promise<AccountRow | AccountRecord>): Promise<AccountRecord> {
    let c: pg.PoolClient;
    try {
      c = await this.pool.connect();
    } catch (e) {
      throw unavailable(e);
    }
    let row: AccountRow | AccountRecord;
    let seq = 0;
    let broken = false;
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK.toString()]);
      row = await change(c);
      // The table's trigger wrote the change-log row and the notification (pg-schema.ts, migration 2).
      if ('key_hex' in row) seq = Number(row.seq);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => (broken = true));
      throw unavailable(e);
    } finally {
      c.release(broken);
    }
    if (!('key_hex' in row)) return row;
    const rec = recordOf(row);
    if (!(await this.feed.waitFor(seq, APPLY_WAIT_MS))) {
      this.o.log.warn(`account change ${seq} is committed but not yet applied on this node; it applies when the change feed reaches it`);
    }
    return rec;
  }
}

/** Rows per import transaction: one change-log row and one notification each, the writer lock held briefly. */
const IMPORT_CHUNK = 1_000;

/**
 * Copies embedded-registry records (with their keys) into PostgreSQL, as
 * digests: the keys keep working on every node. A key already there is left
 * as it is, so an interrupted import can simply be run again. Ids are
 * PostgreSQL's own. Returns how many were added and how many were there.
 */
export async function importAccounts(url: string, records: readonly AccountRecord[]): Promise<{ added: number; present: number }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, application_name: 'txrelay import' });
  await client.connect();
  try {
    await migrate(client);
    let added = 0;
    for (let i = 0; i < records.length; i += IMPORT_CHUNK) {
      const chunk = records.slice(i, i + IMPORT_CHUNK).map((r) => {
        const digest = r.uuid === undefined ? undefined : keyDigestHex(r.uuid);
        if (digest === undefined) throw new TxrelayError(E.ACCOUNT_INVALID, `record ${r.id} has no valid key (uuid); export it from an embedded registry`);
        return { digest, plan: r.plan, evm: r.evm, solana: r.solana, revoked: r.revoked, created_at: r.created_at };
      });
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK.toString()]);
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO txrelay_accounts (key_sha256, plan, evm, solana, revoked, created_at)
           SELECT decode(x->>'digest', 'hex'), x->>'plan', x->'evm', x->'solana', (x->>'revoked')::boolean, (x->>'created_at')::timestamptz
             FROM jsonb_array_elements($1::jsonb) AS x
           ON CONFLICT (key_sha256) DO NOTHING RETURNING id`,
          [JSON.stringify(chunk)],
        );
        // Each row's change-log row and notification come from the table's trigger.
        await client.query('COMMIT');
        added += rows.length;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      }
    }
    return { added, present: records.length - added };
  } finally {
    await client.end().catch(() => {});
  }
}
