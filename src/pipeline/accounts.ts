/**
 * Live accounts: the store's in-memory records joined to their token buckets
 * (docs/protocol.md#rate-limits). A change made through the admin API is
 * configured into the shared table, and reaches every acceptor thread,
 * before the API answers.
 *
 * Seats. Every live account holds one seat in the shared table: four
 * adjacent slots (evm, solana, batch-record budget, refusals). Seats are not account
 * ids: ids are never reused (batch records name them), seats are reused after
 * revocation, so the table is bounded by the live accounts, which the store
 * caps (`AccountStore.maxLive`).
 *
 *   slot:  0 .. 3                      4    5      6       7          ...  4s .. 4s+3
 *        | no seat: never configured | seat 1: evm solana records refusals | seat s ...
 *
 * The refusals bucket is charged by the account's JSON bodies and calls refused
 * for their shape (docs/protocol.md#rate-limits), at the rate and burst of its
 * larger family: refused work is limited like accepted work, and once it is
 * empty a body is refused 429 before it is read.
 *
 * Seat 0 is never configured, so a record without a seat (revoked while its
 * request was in flight) reads as "never admits" instead of an index error.
 */
import type { AccountRecord, Registry } from '../store/accounts.js';
import { KeyIndex } from '../store/key-index.js';
import { uuidByteWords, uuidTextWords, type UuidWords } from '../store/ids.js';
import { NEVER, TokenBucketTable, type TokenBucketHandle } from '../tables/token-bucket.js';
import type { Clock } from '../clock.js';

export type Family = 'evm' | 'solana';
/** The buckets of a seat: one per family, the family A batch-record budget, and refused work. */
type Bucket = Family | 'records' | 'refusals';

export const SLOTS_PER_SEAT = 4;
const OFFSET: Readonly<Record<Bucket, number>> = { evm: 0, solana: 1, records: 2, refusals: 3 };

/** The refusals bucket's limits: the larger of the account's enabled families' (a disabled family's count too when none is). */
export function refusalLimits(rec: AccountRecord): { tps: number; burst: number } {
  const fams = [rec.evm, rec.solana].filter((f) => f.enabled);
  const from = fams.length > 0 ? fams : [rec.evm, rec.solana];
  return { tps: Math.max(...from.map((f) => f.tps)), burst: Math.max(1, ...from.map((f) => f.burst)) };
}

/** Seats a growable table starts with: a small node never commits more than 128 KiB. */
const INITIAL_SEATS = 1024;

/**
 * The wait reported for a take that can never succeed (TPS 0, more credits
 * than the burst, no seat): the doors' minute for an infinite wait, so a
 * client backs off rather than hammering.
 */
export const RETRY_NEVER_MS = 60_000;

interface RegistryOptions {
  initialSeats?: number;
}

/** What the gate asks of the accounts, in whichever thread it runs. */
export interface Accounts {
  /** The live account for a canonical UUID text, if it exists and is not revoked. */
  byText(uuid: string): AccountRecord | undefined;
  /** The live account for 16 raw UUID bytes at `offset` (UDP). */
  byBytes(buf: Uint8Array, offset: number): AccountRecord | undefined;
  /** Takes `n` credits of the account's `family` bucket: 0 when taken, else the milliseconds to wait (finite). */
  take(rec: AccountRecord, family: Family, n: number): number;
  /** Takes one credit of the account's batch-record budget (family A's limits), as `take`. */
  takeRecordCredit(rec: AccountRecord): number;
  /** 0 when the account's refusals bucket holds a credit (nothing taken), else the milliseconds until it does. */
  refusalWait(rec: AccountRecord): number;
  /** Takes one credit of the account's refusals bucket if it holds one: a body or call refused for its shape. */
  takeRefusal(rec: AccountRecord): void;
}

/** An account change as it travels to acceptor threads. */
export interface SeatedRecord {
  rec: AccountRecord;
  seat: number;
}

/** Seats and the shared bucket table: what taking a credit needs, in any thread. */
abstract class SeatedBuckets {
  /** Refused batch-record credits since start, a metric. */
  refusedRecords = 0;
  /** Seat of each account id (0: none); ids are dense from 1, so a typed array indexed by id. */
  protected seatOfId = new Int32Array(1024);

  constructor(
    readonly buckets: TokenBucketTable,
    protected readonly clock: Clock,
  ) {}

  /** The table slot of one of the account's buckets; seat 0's (never configured) when it holds no seat. */
  slotOf(rec: AccountRecord, bucket: Bucket): number {
    return this.seatOf(rec.id) * SLOTS_PER_SEAT + OFFSET[bucket];
  }

  take(rec: AccountRecord, family: Family, n: number): number {
    const wait = this.buckets.tryTake(this.slotOf(rec, family), n, this.clock());
    return wait === NEVER ? RETRY_NEVER_MS : wait;
  }

  takeRecordCredit(rec: AccountRecord): number {
    const wait = this.buckets.tryTake(this.slotOf(rec, 'records'), 1, this.clock());
    if (wait === 0) return 0;
    this.refusedRecords++;
    return wait === NEVER ? RETRY_NEVER_MS : wait;
  }

  refusalWait(rec: AccountRecord): number {
    const wait = this.buckets.waitFor(this.slotOf(rec, 'refusals'), 1, this.clock());
    return wait === NEVER ? RETRY_NEVER_MS : wait;
  }

  takeRefusal(rec: AccountRecord): void {
    this.buckets.tryTake(this.slotOf(rec, 'refusals'), 1, this.clock());
  }

  protected setSeat(id: number, seat: number): void {
    if (id >= this.seatOfId.length) {
      const wider = new Int32Array(Math.max(id + 1, this.seatOfId.length * 2));
      wider.set(this.seatOfId);
      this.seatOfId = wider;
    }
    this.seatOfId[id] = seat;
  }

  seatOf(id: number): number {
    return id < this.seatOfId.length ? this.seatOfId[id]! : 0;
  }
}

/** The main thread's accounts: the store's records, and the seats it hands out and configures. */
export class AccountRegistry extends SeatedBuckets implements Accounts {
  private readonly listeners: ((r: SeatedRecord) => void)[] = [];
  /** Seats freed by revocation, reused last-freed first (still warm in cache). */
  private readonly freeSeats: number[] = [];
  /** The next fresh seat. */
  private nextSeat = 1;
  /** Seat 0 included. */
  private readonly maxSeats: number;

  /** Throws at start-up, rather than refusing accounts later, unless the table can seat max(maxLive, live). */
  constructor(
    readonly store: Registry,
    buckets: TokenBucketTable,
    clock: Clock,
  ) {
    super(buckets, clock);
    this.maxSeats = Math.floor(buckets.maxSlots / SLOTS_PER_SEAT);
    const need = Math.max(store.maxLive, store.live);
    if (need > this.maxSeats - 1) {
      throw new RangeError(`token bucket table seats ${this.maxSeats - 1} accounts but the store may hold ${need} live accounts`);
    }
    for (const rec of store.list()) this.configure(rec);
    store.onChange((rec) => {
      this.configure(rec);
      const seated = { rec, seat: this.seatOf(rec.id) };
      for (const cb of this.listeners) cb(seated);
    });
  }

  /** A registry over its own growable table, sized so start-up succeeds whatever the store holds. */
  static create(store: Registry, clock: Clock, opts: RegistryOptions = {}): AccountRegistry {
    const maxSeats = Math.max(store.maxLive, store.live) + 1;
    const initial = Math.min(maxSeats, Math.max(opts.initialSeats ?? INITIAL_SEATS, store.live + 1));
    const buckets = TokenBucketTable.create({ slots: initial * SLOTS_PER_SEAT, maxSlots: maxSeats * SLOTS_PER_SEAT, nowMs: clock() });
    return new AccountRegistry(store, buckets, clock);
  }

  byText(uuid: string): AccountRecord | undefined {
    const rec = this.store.lookup(uuid);
    return rec && !rec.revoked ? rec : undefined;
  }

  byBytes(buf: Uint8Array, offset: number): AccountRecord | undefined {
    const rec = this.store.lookupBytes(buf, offset);
    return rec && !rec.revoked ? rec : undefined;
  }

  /** Called after every change is configured here, with the record and its seat (for acceptor threads). */
  onSeated(cb: (r: SeatedRecord) => void): void {
    this.listeners.push(cb);
  }

  /** Every live account and its seat: what an acceptor thread starts from. */
  snapshot(): SeatedRecord[] {
    return this.store
      .list()
      .filter((rec) => !rec.revoked)
      .map((rec) => ({ rec, seat: this.seatOf(rec.id) }));
  }

  get seated(): number {
    return this.nextSeat - 1 - this.freeSeats.length;
  }

  private configure(rec: AccountRecord): void {
    let seat = this.seatOf(rec.id);
    if (rec.revoked) {
      if (seat !== 0) this.release(rec.id, seat);
      return;
    }
    if (seat === 0) seat = this.seat(rec.id);
    const now = this.clock();
    const base = seat * SLOTS_PER_SEAT;
    this.buckets.configure(base + OFFSET.evm, rec.evm.tps, rec.evm.burst, now);
    this.buckets.configure(base + OFFSET.solana, rec.solana.tps, rec.solana.burst, now);
    // The record budget follows family A's limits (evm PATCHes reconfigure it here, live).
    this.buckets.configure(base + OFFSET.records, rec.evm.tps, rec.evm.burst, now);
    const r = refusalLimits(rec);
    this.buckets.configure(base + OFFSET.refusals, r.tps, r.burst, now);
  }

  /** A seat for a newly live account. The store's cap, checked at construction, guarantees one exists. */
  private seat(id: number): number {
    const seat = this.freeSeats.pop() ?? this.nextSeat++;
    const slots = (seat + 1) * SLOTS_PER_SEAT;
    if (slots > this.buckets.slots) {
      // Doubling keeps growth (a syscall and a view rebuild per thread) rare.
      this.buckets.grow(Math.min(this.maxSeats * SLOTS_PER_SEAT, Math.max(slots, this.buckets.slots * 2)));
    }
    this.setSeat(id, seat);
    return seat;
  }

  /** Revocation: the buckets are cleared (the next holder starts full) and the seat is free. */
  private release(id: number, seat: number): void {
    this.setSeat(id, 0);
    for (let k = 0; k < SLOTS_PER_SEAT; k++) this.buckets.clear(seat * SLOTS_PER_SEAT + k);
    this.freeSeats.push(seat);
  }
}

/** An acceptor thread's copy of the live records and seats, over the shared buckets; it never seats or configures. */
export class AccountMirror extends SeatedBuckets implements Accounts {
  private readonly active: KeyIndex<AccountRecord>;
  private readonly words: UuidWords = new Int32Array(4);

  /** `hashed`: the registry's records carry key digests (postgres mode), not keys. */
  constructor(buckets: TokenBucketHandle, clock: Clock, records: readonly SeatedRecord[], hashed: boolean) {
    super(TokenBucketTable.attach(buckets), clock);
    this.active = new KeyIndex(hashed);
    for (const r of records) this.apply(r);
  }

  byText(uuid: string): AccountRecord | undefined {
    return uuidTextWords(uuid, this.words) ? this.active.find(this.words) : undefined;
  }

  byBytes(buf: Uint8Array, offset: number): AccountRecord | undefined {
    return uuidByteWords(buf, offset, this.words) ? this.active.find(this.words) : undefined;
  }

  /** A change made on the main thread: the record (revoked or not) and its seat there. */
  apply({ rec, seat }: SeatedRecord): void {
    if (rec.revoked) {
      this.active.delete(rec);
      this.setSeat(rec.id, 0);
    } else {
      this.active.set(rec);
      this.setSeat(rec.id, seat);
    }
  }
}
