/**
 * What a submission came to: the one result every door renders and the batch
 * record stores (docs/protocol.md#statuses): queued, duplicate (a success,
 * not forwarded again), or not-sent (`error` says why and carries the retry
 * advice). A group has its members' outcomes in `items`, in request order,
 * unless refused as a whole. A success carries what its answer says besides
 * (`dry`, `requestId`), so a door renders from the Outcome alone.
 */
import type { RelayError, Retry } from '../errors.js';
import type { StatusView } from '../status/tracker.js';
import type { AccountRecord } from '../store/accounts.js';

/** `answered`: a status read, which queues nothing. */
type Status = 'queued' | 'duplicate' | 'not-sent' | 'answered';

export class Outcome {
  constructor(
    readonly status: Status,
    /** The transaction hash (EVM, `0x` hex) or first signature (Solana, base58); an EVM batch's batch_id; null when none could be computed. */
    readonly id: string | null,
    readonly error: RelayError | null = null,
    /** A bundle's signatures in request order (the first is `id`). */
    readonly ids: readonly string[] | null = null,
    readonly items: readonly Outcome[] | null = null,
    /** A status read's answer: the status objects, in the order asked. */
    readonly statuses: readonly StatusView[] | null = null,
    /** Its lane has no upstream: accepted, not forwarded (docs/protocol.md#dry-run). */
    readonly dry = false,
    /** The request's id for status reads (`x-svc-request-id`); null when nothing of it was queued, and over UDP. */
    readonly requestId: string | null = null,
    /** An accepted bundle's id (Jito's: docs/protocol.md#solana-bundles). */
    readonly bundleId: string | null = null,
    /** A status read's account: whose reads these were (a WebSocket upgrade opens its socket for it). */
    readonly account: AccountRecord | null = null,
  ) {}

  static answered(statuses: readonly StatusView[]): Outcome {
    return new Outcome('answered', null, null, null, null, statuses);
  }

  /** Queued or a duplicate: `ids` a bundle's signatures; `dry`, `requestId` and `bundleId` as above. */
  static accepted(status: 'queued' | 'duplicate', id: string, ids: readonly string[] | null, dry: boolean, requestId: string | null, bundleId: string | null = null): Outcome {
    return new Outcome(status, id, null, ids, null, null, dry, requestId, bundleId);
  }

  /** A status read's answer, naming the account it was read for. */
  by(account: AccountRecord): Outcome {
    return new Outcome(this.status, this.id, this.error, this.ids, this.items, this.statuses, this.dry, this.requestId, this.bundleId, account);
  }

  /** Not sent, with why; `id` where the transaction could still be hashed (an EVM batch item). */
  static refused(error: RelayError, id: string | null = null): Outcome {
    return new Outcome('not-sent', id, error);
  }

  /** A group's: its status by its members'; `dry` for a success of a group whose lane has none (an EVM batch). */
  static group(id: string | null, items: readonly Outcome[], dry: boolean, requestId: string | null): Outcome {
    const status = groupStatus(items);
    return new Outcome(status, id, null, null, items, null, dry && status !== 'not-sent', requestId);
  }

  get sent(): boolean {
    return this.status !== 'not-sent';
  }

  /** The advice a client follows: only what was not sent and is retry-safe may be sent again. */
  get retry(): Retry {
    return this.error?.spec.retry === 'retry_safe' ? 'retry_safe' : 'do_not_retry_automatically';
  }

  /**
   * A refusal's own status, `ok` when sent; a group follows
   * docs/protocol.md#evm-batches: `ok` if any member was sent, else the first
   * of 400, 503, 429 any member has, else the first member's.
   */
  httpStatus(ok = 202): number {
    if (this.error !== null) return this.error.spec.http;
    if (this.items === null) return ok;
    const items = this.items;
    if (items.some((x) => x.sent)) return ok;
    for (const s of [400, 503, 429]) if (items.some((x) => x.httpStatus() === s)) return s;
    return items.length > 0 ? items[0]!.httpStatus() : 400;
  }

  /** The longest rate-limit wait among a group's members (for Retry-After on an all-limited batch). */
  get retryAfterMs(): number {
    if (this.error !== null) return this.error.retryAfterMs;
    let ms = 0;
    if (this.items !== null) for (const x of this.items) if (x.error !== null && x.error.retryAfterMs > ms) ms = x.error.retryAfterMs;
    return ms;
  }
}

function groupStatus(items: readonly Outcome[]): Status {
  let duplicate = false;
  for (const x of items) {
    if (x.status === 'queued') return 'queued';
    if (x.status === 'duplicate') duplicate = true;
  }
  return duplicate ? 'duplicate' : 'not-sent';
}
