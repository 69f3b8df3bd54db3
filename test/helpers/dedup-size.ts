/**
 * The duplicate table of every test relay: 100,000 entries (1.9 MB) rather than
 * the default 10 million (183 MiB, written page by page at every start); no
 * test holds more. `TEST_DEDUP_ENV` is the same for a spawned `txrelay serve`.
 */
export const TEST_DEDUP_CAPACITY = 100_000;
export const TEST_DEDUP_ENV = { TXRELAY_DEDUP_CAPACITY: String(TEST_DEDUP_CAPACITY) };
