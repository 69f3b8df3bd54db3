/**
 * Request ids (`x-svc-request-id`, docs/protocol.md#status): a random
 * per-process prefix and a counter. Unique on a node across restarts (the
 * prefix changes) and cheap enough for every request; not secret and not a
 * credential, so guessing one gains nothing: a status read checks the account.
 */
import { randomBytes } from 'node:crypto';

const prefix = randomBytes(6).toString('base64url');
let counter = 0;

export function nextRequestId(): string {
  return `${prefix}-${(++counter).toString(36)}`;
}
