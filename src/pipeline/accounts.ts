/**
 * Live accounts: the store's in-memory records joined to their token-bucket
 * slots. Every account owns two slots (family A, family B) in the shared
 * table, at 2 * id + family, so a change made through the admin API is
 * re-configured into the table before the API answers (DECISIONS 5).
 */
import type { AccountRecord, AccountStore } from '../store/accounts.js';
import type { TokenBucketTable } from '../shared/token-bucket.js';
import type { Clock } from '../shared/clock.js';

export type Family = 'evm' | 'solana';

/** Accounts the shared bucket table holds: 2 slots each; ~40 bytes per slot of virtual memory. */
export const MAX_ACCOUNTS = 1 << 19;
export const BUCKET_SLOTS = MAX_ACCOUNTS * 2;

export function slotOf(rec: AccountRecord, family: Family): number {
  return rec.id * 2 + (family === 'solana' ? 1 : 0);
}

export class AccountRegistry {
  constructor(
    readonly store: AccountStore,
    private readonly buckets: TokenBucketTable,
    private readonly clock: Clock,
  ) {
    for (const rec of store.list()) this.configure(rec);
    store.onChange((rec) => this.configure(rec));
  }

  private configure(rec: AccountRecord): void {
    if (rec.id >= MAX_ACCOUNTS) throw new Error(`account table full: at most ${MAX_ACCOUNTS} accounts per node`);
    const now = this.clock();
    this.buckets.configure(slotOf(rec, 'evm'), rec.evm.tps, rec.evm.burst, now);
    this.buckets.configure(slotOf(rec, 'solana'), rec.solana.tps, rec.solana.burst, now);
  }

  /** The live account for a canonical UUID text, if it exists and is not revoked. */
  byText(uuid: string): AccountRecord | undefined {
    const rec = this.store.lookup(uuid);
    return rec && !rec.revoked ? rec : undefined;
  }

  /** The live account for 16 raw UUID bytes at `offset` (UDP, SPEC 2.7). */
  byBytes(buf: Uint8Array, offset: number): AccountRecord | undefined {
    const rec = this.store.lookupBytes(buf, offset);
    return rec && !rec.revoked ? rec : undefined;
  }
}
