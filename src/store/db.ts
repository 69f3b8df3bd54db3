/**
 * The one lmdb environment under `storage.data_dir`:
 *
 *   accounts      uuid (lowercase text)  -> account record
 *   batches       batch_id               -> batch receive record
 *   upload_queue  batch_id               -> null, lmdb version = record version
 *   replica       account id             -> account record (postgres registry mode)
 *   replica_meta  "seq"                  -> last change applied to `replica`, written with it
 *
 * `upload_queue` holds exactly the records PostgreSQL lacks in their current
 * version; "mark uploaded" removes an entry only at the version uploaded, so a
 * newer outcome stays queued.
 *
 * Durability: an awaited write is fsync'd before it resolves, and one
 * event-loop turn's writes share one commit (lmdb 3.5.6, strace: one
 * fdatasync per commit, ~45k durable puts/s).
 * - `overlappingSync` off: with it, durability needs `flushed`, which never
 *   rejects, so a failing fsync would hang the request instead of failing it.
 * - `eventTurnBatching` off: a failed commit would reject a promise nobody
 *   awaits and end the process. `txnStartThreshold` out of reach plus
 *   `commitDelay` 0 gives the same per-turn commit, started from setImmediate.
 * - `noSync` never: a machine crash could lose acknowledged records.
 *
 * Permissions: account UUIDs are credentials, so the directory is 0700 and
 * lmdb's files 0600, created with that mode minus the umask (never readable by
 * others, even briefly) then chmod'ed exactly. Looser ones are tightened if
 * ours, else named in a warning: refusing to start would take a working node down.
 *
 * Failure: after a failed commit lmdb is unsafe to write (observed: EIO on
 * every later commit, then a glibc heap assertion), so the store fails closed:
 * later writes reject at once, reads keep working, and a restart reopens the
 * last committed state.
 */
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';
import { StoreFailedError } from '../errors.js';
import { lockDataDir, type DirLock } from './dir-lock.js';

/** Minimal log sink; a pino logger fits. Messages never carry account UUIDs. */
export interface StoreLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

interface StoreOptions {
  log?: StoreLog;
  /** Hold the directory for this process until close: a relay's store (src/store/dir-lock.ts); offline commands read without it. */
  lock?: boolean;
}

/** lmdb-js honours these options but its typings omit them. */
type EnvOptions = RootDatabaseOptionsWithPath & { txnStartThreshold: number; permissionsMode: number };

/** Owner-only modes for the data directory and the files in it (account UUIDs are credentials). */
const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;
/** The files lmdb keeps in the data directory. */
const LMDB_FILES = ['data.mdb', 'lock.mdb'];

/**
 * Makes `path` exactly `mode` when this process owns it. Returns 'ok' when
 * it already was, 'tightened', or 'foreign' when another user owns it and
 * it is looser than `mode` (left alone: only its owner or root may chmod).
 */
export function restrictToOwner(path: string, mode: number): 'ok' | 'tightened' | 'foreign' {
  const st = statSync(path);
  if ((st.mode & 0o777) === mode) return 'ok';
  // Root may chmod anything, but "ours" means the owner we run as.
  if (st.uid !== process.getuid?.()) return (st.mode & 0o777 & ~mode) === 0 ? 'ok' : 'foreign';
  chmodSync(path, mode);
  return 'tightened';
}

/** Creates `dataDir` (0700) or tightens it; warns when it is another user's and readable by others. */
function secureDataDir(dataDir: string, log: StoreLog | undefined): void {
  mkdirSync(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const r = restrictToOwner(dataDir, DATA_DIR_MODE);
  if (r === 'tightened') log?.info(`data directory ${dataDir} restricted to mode 0700`);
  if (r === 'foreign') log?.warn(`data directory ${dataDir} belongs to another user and is open to others; restrict it to mode 0700 (it holds account credentials)`);
}

/** lmdb's files: exactly 0600 if ours, a warning if another user's and looser. */
function secureDataFiles(dataDir: string, log: StoreLog | undefined): void {
  for (const name of LMDB_FILES) {
    const file = join(dataDir, name);
    if (existsSync(file) && restrictToOwner(file, DATA_FILE_MODE) === 'foreign') {
      log?.warn(`${file} belongs to another user and is open to others; restrict it to mode 0600 (it holds account credentials)`);
    }
  }
}

export class Store {
  readonly env: RootDatabase;
  // Values are the plain records of accounts.ts and batches.ts; typed there.
  readonly accounts: Database<unknown, string>;
  readonly batches: Database<unknown, string>;
  readonly uploadQueue: Database<null, string>;
  readonly replica: Database<unknown, number>;
  readonly replicaMeta: Database<unknown, string>;
  private failure: StoreFailedError | undefined;
  private readonly log: StoreLog | undefined;
  private readonly lock: DirLock | undefined;

  private constructor(env: RootDatabase, log: StoreLog | undefined, lock: DirLock | undefined) {
    this.env = env;
    this.log = log;
    this.lock = lock;
    this.accounts = env.openDB<unknown, string>({ name: 'accounts' });
    this.batches = env.openDB<unknown, string>({ name: 'batches' });
    this.uploadQueue = env.openDB<null, string>({ name: 'upload_queue', useVersions: true });
    this.replica = env.openDB<unknown, number>({ name: 'replica' });
    this.replicaMeta = env.openDB<unknown, string>({ name: 'replica_meta' });
  }

  /** Opens (creating if needed) the environment in `dataDir`: directory 0700, files 0600 (see Permissions above). */
  static open(dataDir: string, opts: StoreOptions = {}): Store {
    secureDataDir(dataDir, opts.log);
    const lock = opts.lock ? lockDataDir(dataDir) : undefined;
    try {
      return Store.openLocked(dataDir, opts, lock);
    } catch (e) {
      lock?.release();
      throw e;
    }
  }

  private static openLocked(dataDir: string, opts: StoreOptions, lock: DirLock | undefined): Store {
    // Files an older version left looser are tightened before lmdb writes to them again.
    secureDataFiles(dataDir, opts.log);
    const options: EnvOptions = {
      path: dataDir,
      // lmdb-js takes a path with an extension ("relay.data") for the database file itself; ours is always a directory.
      noSubdir: false,
      permissionsMode: DATA_FILE_MODE,
      overlappingSync: false,
      noSync: false,
      eventTurnBatching: false,
      // Never start a commit mid-turn; the setImmediate that commitDelay 0 schedules starts it.
      txnStartThreshold: Number.MAX_SAFE_INTEGER,
      commitDelay: 0,
      // Five databases; lmdb reserves a slot per name.
      maxDbs: 6,
    };
    const env = open(options);
    // lmdb created any missing file as 0600 minus the umask; make it exactly 0600 (an owner-unwritable file could not be reopened).
    secureDataFiles(dataDir, opts.log);
    return new Store(env, opts.log, lock);
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
    this.lock?.release();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
