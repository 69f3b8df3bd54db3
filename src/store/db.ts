/**
 * The one lmdb environment under `storage.data_dir` (DECISIONS 2, 7) and its
 * named databases:
 *
 *   accounts      uuid (lowercase text)  -> account record
 *   batches       batch_id               -> batch receive record
 *   upload_queue  batch_id               -> null, lmdb version = record version
 *
 * `upload_queue` holds exactly the records PostgreSQL has not seen in their
 * current version, so the uploader reads its work in key order without
 * scanning every record, and "mark uploaded" is a remove conditional on the
 * version it uploaded (a newer outcome keeps the entry queued).
 *
 * Durability. An awaited write must be fsync'd before its promise resolves,
 * and writes issued in one event-loop turn must share one commit. Measured
 * with lmdb 3.5.6 on Linux (strace, 6,400 puts from 64 concurrent writers:
 * 1 fdatasync per transaction either way, ~45k durable puts/s, 0.35 ms for a
 * lone put):
 * - `overlappingSync` (lmdb-js's default on Linux) resolves a put at commit and
 *   fsyncs later; durability then needs `flushed`, whose promise has no
 *   rejection path, so a failing fsync would hang the request instead of
 *   failing it. Off: the commit itself fdatasyncs (data pages, then the meta
 *   page through an O_DSYNC descriptor) before the put resolves, and a failure
 *   rejects that put.
 * - `eventTurnBatching` (default on) queues an internal promise per batch that
 *   nobody awaits; a failed commit (disk full) then surfaces as an unhandled
 *   rejection, which ends the Node process. Off, with `txnStartThreshold` set
 *   beyond reach and `commitDelay` 0, the commit starts from setImmediate: the
 *   same one-commit-per-turn grouping (1,000 batched puts in one turn: 1
 *   transaction), and writes arriving during an fsync join the next commit.
 * - `noSync` is never set: a crash of the machine could lose acknowledged
 *   records.
 *
 * Failure. After a failed commit LMDB's environment is not safe to keep
 * writing to (observed: EIO on every later commit, then a glibc heap
 * assertion). The store therefore fails closed: every later write rejects at
 * once without touching lmdb, reads keep working, and a restart (after the
 * disk is fixed) reopens the last committed state intact.
 */
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';

/** Stable code of the rejection every write gets once the store has failed. */
export const STORE_FAILED = 'TXR_STORE_FAILED';

/** Minimal log sink; a pino logger fits. Messages never carry account UUIDs. */
export interface StoreLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export class StoreFailedError extends Error {
  readonly code = STORE_FAILED;
  constructor(cause: unknown) {
    super('embedded store write failed; store refuses writes until restart', { cause });
    this.name = 'StoreFailedError';
  }
}

export interface StoreOptions {
  log?: StoreLog;
}

/** lmdb-js honours this option but its typings omit it. */
type EnvOptions = RootDatabaseOptionsWithPath & { txnStartThreshold: number };

export class Store {
  readonly env: RootDatabase;
  // Values are the plain records of accounts.ts and batches.ts; typed there.
  readonly accounts: Database<unknown, string>;
  readonly batches: Database<unknown, string>;
  readonly uploadQueue: Database<null, string>;
  private failure: StoreFailedError | undefined;
  private readonly log: StoreLog | undefined;

  private constructor(env: RootDatabase, log: StoreLog | undefined) {
    this.env = env;
    this.log = log;
    this.accounts = env.openDB<unknown, string>({ name: 'accounts' });
    this.batches = env.openDB<unknown, string>({ name: 'batches' });
    this.uploadQueue = env.openDB<null, string>({ name: 'upload_queue', useVersions: true });
  }

  /** Opens (creating if needed, mode 0700) the environment in `dataDir`. */
  static open(dataDir: string, opts: StoreOptions = {}): Store {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const options: EnvOptions = {
      path: dataDir,
      overlappingSync: false,
      noSync: false,
      eventTurnBatching: false,
      // Never start a commit mid-turn; the setImmediate that commitDelay 0 schedules starts it.
      txnStartThreshold: Number.MAX_SAFE_INTEGER,
      commitDelay: 0,
      // Three databases; lmdb reserves a slot per name.
      maxDbs: 4,
    };
    return new Store(open(options), opts.log);
  }

  /** True until a commit has failed. */
  get healthy(): boolean {
    return this.failure === undefined;
  }

  /**
   * Runs `ops` (lmdb put/remove calls) as one atomic, durable commit, shared
   * with the other writes of this event-loop turn. Resolves once fsync'd;
   * rejects with StoreFailedError if the commit fails or the store already has.
   */
  write(ops: () => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    let committed: Promise<boolean>;
    try {
      committed = this.env.batch(ops);
    } catch (err) {
      return Promise.reject(this.fail(err));
    }
    return committed.then(
      () => undefined,
      (err: unknown) => {
        throw this.fail(err);
      },
    );
  }

  private fail(err: unknown): StoreFailedError {
    // lmdb-js carries the OS error in a second, already rejected promise; unobserved it would end the process.
    const detail = (err as { commitError?: Promise<unknown> } | null)?.commitError;
    if (this.failure) {
      detail?.catch(() => {});
      return this.failure;
    }
    const failure = (this.failure = new StoreFailedError(err));
    const report = (cause: unknown): void => {
      failure.cause = cause;
      this.log?.error(`embedded store commit failed, refusing writes until restart: ${message(cause)}`);
    };
    if (detail) detail.catch(report);
    else report(err);
    return failure;
  }

  /** Waits for queued writes to commit, then closes the environment. */
  async close(): Promise<void> {
    await this.env.close();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
