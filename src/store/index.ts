/** Embedded store (lmdb) for accounts and batch receive records, and the PostgreSQL uploader. */
export { Store, StoreFailedError, STORE_FAILED, DATA_DIR_MODE, DATA_FILE_MODE, restrictToOwner, type StoreLog, type StoreOptions } from './db.js';
export {
  AccountStore,
  AccountError,
  MAX_LIVE_ACCOUNTS,
  type AccountErrorCode,
  type AccountStoreOptions,
  type AccountInput,
  type AccountRecord,
  type Plan,
  type Plans,
  type RateSettings,
  type SolanaSettings,
} from './accounts.js';
export {
  BatchStore,
  BatchNotFoundError,
  newBatch,
  RETENTION_MS,
  type BatchItemOutcome,
  type BatchRecord,
  type ItemStatus,
  type NewBatch,
  type UploadedVersion,
} from './batches.js';
export { Uploader, BACKLOG_LIMIT, DEFAULT_TABLE, UPLOAD_BATCH, type UploaderOptions, type UploaderStats } from './uploader.js';
export { BatchIdGenerator, nextBatchId, uuidToBytes } from './ids.js';
