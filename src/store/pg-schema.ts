/**
 * The account registry's tables in PostgreSQL (docs/operations.md#regional-nodes),
 * as numbered migrations. `migrate` applies the missing ones in one
 * transaction behind an advisory lock, so nodes starting together apply each
 * exactly once, and it refuses a schema newer than this binary knows.
 *
 *   txrelay_schema_migrations  version applied, when
 *   txrelay_accounts           one row per account: id (the batch records'
 *                              account reference), SHA-256 of the key, plan,
 *                              limits, revoked, version, seq of its last change
 *   txrelay_account_changes    the change log: seq -> account and version;
 *                              pruned after registry.change_retention_s
 *   txrelay_registry_meta      pruned_through: the highest seq pruned;
 *                              registry_id: this registry's identity
 *
 * From version 2 a trigger on txrelay_accounts writes the change log, so
 * every write path feeds it: the admin API, the CLI and a direct SQL edit
 * alike (docs/operations.md#how-a-postgres-mode-node-works).
 */
import type pg from 'pg';
import { E, TxrelayError } from '../errors.js';
import { freeze, type AccountRecord } from './accounts.js';

/** WRITE_LOCK and CHANNEL below, as the migrations' SQL spells them (migrations are fixed text). */
const WRITE_LOCK_SQL = '128060664578050';
const CHANNEL_SQL = 'txrelay_accounts';

const MIGRATIONS: readonly { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE txrelay_accounts (
        id bigserial PRIMARY KEY,
        key_sha256 bytea NOT NULL UNIQUE CHECK (length(key_sha256) = 32),
        plan text NOT NULL CHECK (plan IN ('free', 'paid')),
        evm jsonb NOT NULL,
        solana jsonb NOT NULL,
        revoked boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1,
        seq bigint NOT NULL DEFAULT 0
      );
      CREATE TABLE txrelay_account_changes (
        seq bigserial PRIMARY KEY,
        account_id bigint NOT NULL REFERENCES txrelay_accounts (id),
        version integer NOT NULL,
        changed_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX txrelay_account_changes_changed_at ON txrelay_account_changes (changed_at);
      CREATE TABLE txrelay_registry_meta (k text PRIMARY KEY, v bigint NOT NULL);
      INSERT INTO txrelay_registry_meta (k, v) VALUES ('pruned_through', 0);
      -- Which registry this is: a replica of another (a rebuilt or different database) must resync, whatever its seqs say.
      INSERT INTO txrelay_registry_meta (k, v) VALUES ('registry_id', (random() * 9e15)::bigint);
    `,
  },
  {
    version: 2,
    // Before the row is written: take the writer lock (so seqs commit in order whoever writes), bump the
    // version and draw the seq, only when something a replica holds changed. After: the change-log row
    // (ON CONFLICT: a writer that logs the change itself as well adds nothing) and the notification.
    sql: `
      CREATE OR REPLACE FUNCTION txrelay_account_change_seq() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'UPDATE' THEN
          IF NEW.key_sha256 = OLD.key_sha256 AND NEW.plan = OLD.plan AND NEW.evm = OLD.evm AND NEW.solana = OLD.solana
             AND NEW.revoked = OLD.revoked AND NEW.created_at = OLD.created_at THEN
            RETURN NEW;
          END IF;
          IF OLD.revoked AND NOT NEW.revoked THEN
            RAISE EXCEPTION 'account % is revoked, and a revoked account stays revoked', OLD.id USING ERRCODE = 'check_violation';
          END IF;
          IF NEW.version <= OLD.version THEN
            NEW.version := OLD.version + 1;
          END IF;
        END IF;
        PERFORM pg_advisory_xact_lock(${WRITE_LOCK_SQL});
        NEW.seq := nextval(pg_get_serial_sequence('txrelay_account_changes', 'seq'));
        RETURN NEW;
      END $fn$;
      CREATE OR REPLACE FUNCTION txrelay_account_change_log() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.seq <> OLD.seq THEN
          INSERT INTO txrelay_account_changes (seq, account_id, version) VALUES (NEW.seq, NEW.id, NEW.version) ON CONFLICT (seq) DO NOTHING;
          PERFORM pg_notify('${CHANNEL_SQL}', NEW.seq::text);
        END IF;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER txrelay_account_change_seq BEFORE INSERT OR UPDATE ON txrelay_accounts
        FOR EACH ROW EXECUTE FUNCTION txrelay_account_change_seq();
      CREATE TRIGGER txrelay_account_change_log AFTER INSERT OR UPDATE ON txrelay_accounts
        FOR EACH ROW EXECUTE FUNCTION txrelay_account_change_log();
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** Advisory lock keys (one 64-bit space per database): migrations, and the one writer of the change log at a time. */
const MIGRATE_LOCK = 0x7478_726c_0001n;
export const WRITE_LOCK = 0x7478_726c_0002n;
if (WRITE_LOCK.toString() !== WRITE_LOCK_SQL) throw new Error('WRITE_LOCK_SQL must spell WRITE_LOCK');

/** The notification channel; its payload is the change's seq, nothing else. */
export const CHANNEL = CHANNEL_SQL;

/** Brings the schema up to this binary's version; returns the versions before and after. */
export async function migrate(client: pg.ClientBase): Promise<{ from: number; to: number }> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK.toString()]);
    await client.query('CREATE TABLE IF NOT EXISTS txrelay_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM txrelay_schema_migrations');
    const from = rows[0]?.v ?? 0;
    if (from > SCHEMA_VERSION) {
      throw new TxrelayError(
        E.REGISTRY_START,
        `the registry schema in PostgreSQL is version ${from}, newer than this txrelay knows (${SCHEMA_VERSION}); upgrade txrelay on this node`,
      );
    }
    for (const m of MIGRATIONS) {
      if (m.version <= from) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO txrelay_schema_migrations (version) VALUES ($1)', [m.version]);
    }
    await client.query('COMMIT');
    return { from, to: Math.max(from, SCHEMA_VERSION) };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/** A row of txrelay_accounts as `rowColumns` selects it: the digest as hex and the time as ISO text, made by PostgreSQL. */
export interface AccountRow {
  id: string;
  key_hex: string;
  plan: 'free' | 'paid';
  evm: AccountRecord['evm'];
  solana: AccountRecord['solana'];
  revoked: boolean;
  created_at: string;
  version: number;
  /** The seq of the row's last change. */
  seq: string;
}

/**
 * The columns of an AccountRow, of the table aliased `t` (or unqualified).
 * Converting in SQL spares a first sync of a million accounts a Date and a
 * Buffer per row, which it only turned back into strings.
 */
export function rowColumns(t = ''): string {
  const p = t ? `${t}.` : '';
  return (
    `${p}id, encode(${p}key_sha256, 'hex') AS key_hex, ${p}plan, ${p}evm, ${p}solana, ${p}revoked, ` +
    `to_char(${p}created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, ${p}version, ${p}seq`
  );
}

export const ROW_COLUMNS = rowColumns();

export function recordOf(r: AccountRow): AccountRecord {
  return freeze({
    id: Number(r.id),
    key_sha256: r.key_hex,
    plan: r.plan,
    evm: r.evm,
    solana: r.solana,
    revoked: r.revoked,
    created_at: r.created_at,
    version: r.version,
  });
}

/**
 * What identifies one change-log row beyond its seq: its account, version and
 * commit time to the microsecond. A change log restored from a backup reuses
 * seqs; the change it holds at a seq is not the one a replica applied there.
 */
export function changeMark(t = ''): string {
  const p = t ? `${t}.` : '';
  return `format('%s:%s:%s', ${p}account_id, ${p}version, (extract(epoch FROM ${p}changed_at) * 1000000)::bigint)`;
}

/** Host, port and database of a URL, for messages: never its credentials. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'the configured database';
  }
}

