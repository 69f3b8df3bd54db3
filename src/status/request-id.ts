/**
 * Request ids (`x-svc-request-id`, docs/protocol.md#status): a random
 * per-thread prefix and a counter. Unique on a node across restarts (the
 * prefix changes) and cheap enough for every request; not secret and not a
 * credential, so guessing one gains nothing: a status read checks the account.
 * The counter also places a request in a tracker's ring (`requestSeq`), so
 * finding a request costs no hash-map entry per transaction.
 */
import { randomBytes } from 'node:crypto';

// Hex: an id never starts with '-', which a command line would read as an option.
const prefix = randomBytes(5).toString('hex') + '-';
let counter = 0;

export function nextRequestId(): string {
  return prefix + (++counter).toString(36);
}

/** The counter of a request id made by this thread; -1 for any other text. */
export function requestSeq(id: string): number {
  if (id.length <= prefix.length || !id.startsWith(prefix)) return -1;
  const n = parseInt(id.slice(prefix.length), 36);
  return Number.isSafeInteger(n) && n > 0 ? n : -1;
}
