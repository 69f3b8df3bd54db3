/**
 * Family A batch receive records (docs/protocol.md#batch-records). The door
 * `persist`s the record before any rate check, then `updateOutcome`s the
 * per-item outcomes; both resolve once durable, so a door that awaits them
 * never acknowledges what a crash could lose. Each write queues the new
 * version for upload, and a version is marked uploaded only after PostgreSQL
 * committed it, so an outcome written meanwhile is uploaded again, not lost.
 */
import { E, RelayError, BatchNotFoundError } from '../errors.js';
import type { Store } from './db.js';
import type { Outcome } from '../pipeline/outcome.js';
import { BATCH_ID_PATTERN, batchIdFloor, batchIdTime, nextBatchId } from './ids.js';

/** Statuses this node produces for a batch item (docs/protocol.md#statuses). */
type ItemStatus = 'queued' | 'duplicate' | 'not-sent';

export interface StoredItem {
  status: ItemStatus;
  duplicate?: boolean;
  /** JSON-RPC error code of a `not-sent` item (docs/protocol.md#evm-batches). */
  error_code?: number;
}

/** What lmdb holds. */
interface StoredBatch {
  batch_id: string;
  received_at: string;
  /** AccountRecord.id, never the UUID. */
  account_id: number;
  client_ip: string;
  /** 0x-prefixed hash per request item, in order; null for an item too malformed to hash. */
  tx_hashes: (string | null)[];
  items: StoredItem[];
  /** Incremented by each outcome update; the upload queue entry carries the version still to upload. */
  version: number;
}

export interface BatchRecord extends StoredBatch {
  /** True once PostgreSQL has committed the current version. */
  uploaded: boolean;
}

export type NewBatch = Pick<StoredBatch, 'batch_id' | 'received_at' | 'account_id' | 'client_ip' | 'tx_hashes'>;

/** Identity of an uploaded version, as pendingUpload returned it. */
type UploadedVersion = Pick<StoredBatch, 'batch_id' | 'version'>;

/** Uploaded records are kept this long, for `GET /admin/batches/ID` and operator forensics. */
export const RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Removals per commit while pruning: keeps each transaction (and its pause of other writers) short. */
const PRUNE_CHUNK = 1000;

/** The stored and uploaded form of a batch's outcomes: status, duplicate flag, and a not-sent item's JSON-RPC code. */
export function storedItems(outcomes: readonly Outcome[]): StoredItem[] {
  // A batch's items are transactions: their outcome is never a status read's `answered`.
  return outcomes.map((o) =>
    o.error !== null ? { status: 'not-sent', duplicate: false, error_code: o.error.spec.rpc } : { status: o.status as ItemStatus, duplicate: o.status === 'duplicate' },
  );
}

/** A new record with a fresh batch id; received_at is the id's millisecond. */
export function newBatch(account_id: number, client_ip: string, tx_hashes: (string | null)[]): NewBatch {
  const batch_id = nextBatchId();
  return { batch_id, received_at: new Date(batchIdTime(batch_id)).toISOString(), account_id, client_ip, tx_hashes };
}

export class BatchStore {
  /** Latest version of records whose write has not committed yet; reads see them, flush waits for them. */
  private readonly unsettled = new Map<string, StoredBatch>();
  private readonly writes = new Set<Promise<void>>();
  private outcomeFailures = 0;

  constructor(private readonly store: Store) {}

  /**
   * Writes the record and queues it for upload. Resolves once durable; rejects
   * with RelayError(E.BATCH_RECORD) if it cannot be made durable.
   */
  persist(rec: NewBatch): Promise<void> {
    if (!BATCH_ID_PATTERN.test(rec.batch_id)) {
      return Promise.reject(new RelayError(E.BATCH_RECORD, 'malformed batch id'));
    }
    const stored: StoredBatch = {
      batch_id: rec.batch_id,
      received_at: rec.received_at,
      account_id: rec.account_id,
      client_ip: rec.client_ip,
      tx_hashes: rec.tx_hashes,
      items: [],
      version: 1,
    };
    return this.write(stored).catch((err: unknown) => {
      const e = new RelayError(E.BATCH_RECORD);
      e.cause = err;
      throw e;
    });
  }

  /**
   * Records per-item outcomes; resolves once durable. Rejects with
   * StoreFailedError (also counted in `outcomeWriteFailures`) or
   * BatchNotFoundError, already observed here, so a caller that does not await
   * it cannot cause an unhandled rejection.
   */
  updateOutcome(batchId: string, items: StoredItem[]): Promise<void> {
    const cur = this.read(batchId);
    if (!cur) {
      const p = Promise.reject(new BatchNotFoundError());
      p.catch(() => {});
      return p;
    }
    const next: StoredBatch = { ...cur, items, version: cur.version + 1 };
    const done = this.write(next);
    done.catch(() => void this.outcomeFailures++);
    return done;
  }

  /** Resolves when every write issued so far has settled (graceful shutdown). */
  async flush(): Promise<void> {
    while (this.writes.size) await Promise.allSettled([...this.writes]);
  }

  get(batchId: string): BatchRecord | undefined {
    const rec = this.read(batchId);
    return rec && { ...rec, uploaded: this.isUploaded(rec) };
  }

  /** Up to `limit` records not yet uploaded in their current version, oldest batch_id first. */
  pendingUpload(limit: number): BatchRecord[] {
    const out: BatchRecord[] = [];
    for (const { key, version } of this.store.uploadQueue.getRange({ limit, versions: true })) {
      const rec = this.store.batches.get(key) as StoredBatch | undefined;
      // Record and queue entry are written in one commit, so they agree; the queue's version is the one to confirm.
      if (rec) out.push({ ...rec, version: version ?? rec.version, uploaded: false });
    }
    return out;
  }

  /**
   * Marks these versions uploaded; a record whose version moved on stays queued.
   * Resolves when durable; on failure the records stay queued (re-upload is idempotent).
   */
  markUploaded(recs: readonly UploadedVersion[]): Promise<void> {
    return this.store.write(() => {
      for (const r of recs) void this.store.uploadQueue.remove(r.batch_id, r.version);
    });
  }

  /** Records not yet uploaded in their current version (committed state). */
  backlog(): number {
    return (this.store.uploadQueue.getStats() as { entryCount: number }).entryCount;
  }

  /** Outcome writes that failed (the store has then failed closed, see db.ts). */
  get outcomeWriteFailures(): number {
    return this.outcomeFailures;
  }

  /**
   * Removes uploaded records received before `now - retentionMs` (all of them
   * with `includeNotUploaded`: a node without a database would grow forever). Returns the count.
   */
  async prune(opts: { now?: number; retentionMs?: number; includeNotUploaded?: boolean } = {}): Promise<number> {
    const end = batchIdFloor((opts.now ?? Date.now()) - (opts.retentionMs ?? RETENTION_MS));
    let removed = 0;
    let start: string | undefined;
    for (;;) {
      const keys: string[] = [];
      for (const key of this.store.batches.getKeys({ start, exclusiveStart: start !== undefined, end, limit: PRUNE_CHUNK })) {
        keys.push(key);
      }
      if (!keys.length) return removed;
      start = keys[keys.length - 1];
      const victims = keys.filter((k) => !this.unsettled.has(k) && (opts.includeNotUploaded || !this.store.uploadQueue.doesExist(k)));
      if (victims.length) {
        await this.store.write(() => {
          for (const k of victims) {
            void this.store.batches.remove(k);
            void this.store.uploadQueue.remove(k);
          }
        });
      }
      removed += victims.length;
    }
  }

  private read(batchId: string): StoredBatch | undefined {
    return this.unsettled.get(batchId) ?? (this.store.batches.get(batchId) as StoredBatch | undefined);
  }

  private isUploaded(rec: StoredBatch): boolean {
    return !this.unsettled.has(rec.batch_id) && !this.store.uploadQueue.doesExist(rec.batch_id);
  }

  /** Record and queue entry in one commit, so the queue never names a version that is not on disk. */
  private write(rec: StoredBatch): Promise<void> {
    this.unsettled.set(rec.batch_id, rec);
    const done = this.store
      .write(() => {
        void this.store.batches.put(rec.batch_id, rec);
        void this.store.uploadQueue.put(rec.batch_id, null, rec.version);
      })
      .finally(() => {
        if (this.unsettled.get(rec.batch_id) === rec) this.unsettled.delete(rec.batch_id);
        this.writes.delete(done);
      });
    this.writes.add(done);
    return done;
  }
}
