/**
 * Accounts (docs/protocol.md#admin-api): durable in lmdb, all loaded at open
 * so the hot path authenticates synchronously, from UUID text or the 16 raw
 * bytes of a UDP packet (docs/protocol.md#udp), without building a string.
 * Mutations of one account are serialised, made durable, applied and announced
 * through onChange before they resolve: in effect by the time the admin API
 * answers. Creates beyond `maxLive` live accounts are refused before any
 * write; revoked accounts stay stored (batch records name their ids) but do not count.
 */
import { randomUUID } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { PlanConfig } from '../config/schema.js';
import type { Store } from './db.js';
import { uuidByteWords, uuidTextWords, type UuidWords } from './ids.js';
import { KeyIndex } from './key-index.js';
import { AccountError } from '../errors.js';

type Plan = 'free' | 'paid';
export type Plans = Readonly<Record<Plan, PlanConfig>>;

interface RateSettings {
  readonly enabled: boolean;
  readonly tps: number;
  readonly burst: number;
}

interface SolanaSettings extends RateSettings {
  readonly min_tip_lamports: number;
}

export interface AccountRecord {
  /** The credential: UUID v4, lowercase canonical text. Never logged. Embedded registry only (and the answer to a create). */
  readonly uuid?: string;
  /** Postgres registry: SHA-256 of the key's 16 bytes, hex; the key itself is stored nowhere. */
  readonly key_sha256?: string;
  /** Internal reference used in batch records; sequential from 1, never reused, so a record never names two accounts. */
  readonly id: number;
  readonly plan: Plan;
  readonly evm: RateSettings;
  readonly solana: SolanaSettings;
  readonly revoked: boolean;
  readonly created_at: string;
  /** Postgres registry: the row's version, raised by every change. */
  readonly version?: number;
}

/** A new account as its creation answers it: the only time its key is shown (postgres registry). */
export type NewAccount = AccountRecord & { readonly uuid: string };

/** An account registry, embedded (AccountStore) or postgres (PgRegistry): what the admin API and the gate use. */
export interface Registry {
  readonly mode: 'embedded' | 'postgres';
  readonly maxLive: number;
  /** Accounts not revoked. */
  readonly live: number;
  /** Every account, revoked included, by id. */
  list(): AccountRecord[];
  /** Up to `limit` accounts with ids above `after`, by id: a page costs its length, not the registry's size. */
  page(after: number, limit: number): AccountRecord[];
  /** By key (UUID text) or id (decimal); throws TXR_ACCOUNT_NOT_FOUND. */
  require(ref: string): AccountRecord;
  create(input: unknown, plans: Plans): Promise<NewAccount>;
  update(ref: string, patch: unknown): Promise<AccountRecord>;
  revoke(ref: string): Promise<AccountRecord>;
  /** Hot path: the live account for canonical UUID text. */
  lookup(uuid: string): AccountRecord | undefined;
  /** Hot path: the live account for 16 raw UUID bytes at `offset`. */
  lookupBytes(b: Uint8Array, offset: number): AccountRecord | undefined;
  /** Called with each changed record once it is in effect here. Returns an unsubscribe. */
  onChange(cb: (rec: AccountRecord) => void): () => void;
}

/** Body of POST and PATCH /admin/accounts (docs/protocol.md#admin-api); every field optional. */
export interface AccountInput {
  plan?: Plan;
  evm?: { enabled?: boolean; tps?: number; burst?: number };
  solana?: { enabled?: boolean; tps?: number; burst?: number; min_tip_lamports?: number };
}

/**
 * ~650 B of heap (200k records loaded) and 96 B of token-bucket table per
 * account: ~0.7 GB of heap at the cap, inside Node's default heap limit, which binds.
 */
const MAX_LIVE_ACCOUNTS = 1 << 20;

interface AccountStoreOptions {
  /** Live (not revoked) accounts this node accepts; default MAX_LIVE_ACCOUNTS. Tests use small caps. */
  maxLive?: number;
}

// Token buckets keep milli-tokens in an i32 (2^31 / 1000 = 2.1M): TPS up to 1M, burst up to 2M.
const tps = { type: 'integer', minimum: 0, maximum: 1_000_000 } as const;
// At least one token, or the bucket could never admit anything (use `enabled: false` for that).
const burst = { type: 'integer', minimum: 1, maximum: 2_000_000 } as const;
// Lamports are u64 on chain; beyond 2^53 a JSON number is no longer exact.
const lamports = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const rate = { enabled: { type: 'boolean' }, tps, burst } as const;

const inputSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    plan: { enum: ['free', 'paid'] },
    evm: { type: 'object', additionalProperties: false, properties: rate },
    solana: { type: 'object', additionalProperties: false, properties: { ...rate, min_tip_lamports: lamports } },
  },
} as const;

// Compiled on the first account change, not at import: every start and CLI command imports this module (50 ms of CPU).
let compiledInput: ValidateFunction<AccountInput> | null = null;

export function checkInput(input: unknown): AccountInput {
  const validateInput = (compiledInput ??= new Ajv({ strict: true, allErrors: false }).compile<AccountInput>(inputSchema));
  if (validateInput(input)) return input;
  const e = validateInput.errors![0]!;
  const field = fieldOf(e);
  const what =
    e.keyword === 'additionalProperties'
      ? 'unknown field'
      : e.keyword === 'enum'
        ? `must be one of ${(e.params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
        : (e.message ?? 'invalid');
  throw new AccountError('TXR_ACCOUNT_INVALID', `invalid account field ${field}: ${what}`, field);
}

function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.split('/').slice(1);
  if (e.keyword === 'additionalProperties') path.push(String(e.params['additionalProperty']));
  return path.length ? path.join('.') : 'body';
}

export const notFound = () => new AccountError('TXR_ACCOUNT_NOT_FOUND', 'account not found');
export const revokedAccount = () => new AccountError('TXR_ACCOUNT_REVOKED', 'account is revoked; a revoked account cannot be changed');
export const limitReached = (max: number) =>
  new AccountError('TXR_ACCOUNT_LIMIT', `account limit reached: this node holds at most ${max} live accounts; revoke unused accounts first`);

export const defaultBurst = (t: number): number => Math.max(1, t);

export function mergeRate(cur: RateSettings, patch: AccountInput['evm']): RateSettings {
  const t = patch?.tps ?? cur.tps;
  // "Burst defaults to TPS": a burst never set apart from the TPS follows it; an explicit one stays.
  const b = patch?.burst ?? (cur.burst === defaultBurst(cur.tps) ? defaultBurst(t) : cur.burst);
  return { enabled: patch?.enabled ?? cur.enabled, tps: t, burst: b };
}

export function freeze<R extends AccountRecord>(rec: R): R {
  Object.freeze(rec.evm);
  Object.freeze(rec.solana);
  return Object.freeze(rec);
}

/** Scratch for the hot lookups; single-threaded, so one is enough. */
const scratch: UuidWords = new Int32Array(4);

/** Ids are dense (from 1, gaps only where a create failed), so a page walks ids rather than sorting every record. */
export function pageOf(byId: ReadonlyMap<number, AccountRecord>, maxId: number, after: number, limit: number): AccountRecord[] {
  const out: AccountRecord[] = [];
  for (let id = Math.floor(after) + 1; id <= maxId && out.length < limit; id++) {
    const rec = byId.get(id);
    if (rec !== undefined) out.push(rec);
  }
  return out;
}

export class AccountStore implements Registry {
  readonly mode = 'embedded' as const;
  private readonly byUuid = new Map<string, AccountRecord>();
  private readonly byId = new Map<number, AccountRecord>();
  /** Active (not revoked) accounts only: what authentication may find. */
  private readonly active = new KeyIndex<AccountRecord>(false);
  private readonly listeners = new Set<(rec: AccountRecord) => void>();
  private lastId = 0;
  /** Accounts not revoked, in memory. */
  private liveCount = 0;
  /** Creates between the cap check and their commit: they count against the cap so concurrent creates cannot pass it together. */
  private creating = 0;
  /** Tail of each account's mutation queue: one mutation per account at a time keeps read-modify-write safe. */
  private readonly tails = new Map<string, Promise<unknown>>();
  readonly maxLive: number;

  private constructor(
    private readonly store: Store,
    opts: AccountStoreOptions,
  ) {
    const max = opts.maxLive ?? MAX_LIVE_ACCOUNTS;
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`maxLive must be a non-negative integer, got ${max}`);
    this.maxLive = max;
  }

  /**
   * Loads every account of `store` into memory. Never refuses stored state:
   * with more live accounts stored than `maxLive` (a lowered cap), they all
   * load and creates are refused until revocations bring the count under it.
   */
  static open(store: Store, opts: AccountStoreOptions = {}): AccountStore {
    const s = new AccountStore(store, opts);
    for (const { value } of store.accounts.getRange()) {
      const rec = freeze(value as AccountRecord);
      s.apply(rec);
      if (rec.id > s.lastId) s.lastId = rec.id;
    }
    return s;
  }

  /**
   * Registers an account; missing fields come from `plans[plan]` (plan
   * defaults to free). At the live-account cap it rejects with
   * TXR_ACCOUNT_LIMIT and writes nothing.
   */
  async create(input: unknown, plans: Plans): Promise<NewAccount> {
    const body = checkInput(input ?? {});
    if (this.liveCount + this.creating >= this.maxLive) throw limitReached(this.maxLive);
    const plan = body.plan ?? 'free';
    const p = plans[plan];
    const evmTps = body.evm?.tps ?? p.evm_tps;
    const solTps = body.solana?.tps ?? p.solana_tps;
    let uuid = randomUUID();
    while (this.byUuid.has(uuid) || this.tails.has(uuid)) uuid = randomUUID();
    this.creating++;
    const done = () => void this.creating--;
    return this.serial(uuid, async () => {
      const rec = freeze({
        uuid,
        id: ++this.lastId,
        plan,
        evm: { enabled: body.evm?.enabled ?? true, tps: evmTps, burst: body.evm?.burst ?? defaultBurst(evmTps) },
        solana: {
          // Registration enables family B (at the plan's solana_tps, 2 by default).
          enabled: body.solana?.enabled ?? true,
          tps: solTps,
          burst: body.solana?.burst ?? defaultBurst(solTps),
          min_tip_lamports: body.solana?.min_tip_lamports ?? p.min_tip_lamports,
        },
        revoked: false,
        created_at: new Date().toISOString(),
      }) as NewAccount;
      try {
        await this.persist(rec);
      } finally {
        done();
      }
      return rec;
    });
  }

  /** The record, revoked or not, by key or id; undefined for an unknown or malformed one. */
  get(ref: string): AccountRecord | undefined {
    if (typeof ref !== 'string') return undefined;
    if (/^[1-9][0-9]{0,15}$/.test(ref)) return this.byId.get(Number(ref));
    return this.byUuid.get(ref.toLowerCase());
  }

  /** The record, revoked or not; throws TXR_ACCOUNT_NOT_FOUND for an unknown or malformed key or id. */
  require(ref: string): AccountRecord {
    const rec = this.get(ref);
    if (rec === undefined) throw notFound();
    return rec;
  }

  /** Every account, revoked included, in creation order. */
  list(): AccountRecord[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  page(after: number, limit: number): AccountRecord[] {
    return pageOf(this.byId, this.lastId, after, limit);
  }

  /** Applies a partial body of the create shape. A plan change relabels only: TPS values stay as they are. */
  async update(ref: string, patch: unknown): Promise<AccountRecord> {
    const body = checkInput(patch ?? {});
    return this.serial(this.keyOf(ref), async () => {
      const cur = this.get(ref);
      if (!cur) throw notFound();
      if (cur.revoked) throw revokedAccount();
      const solana = mergeRate(cur.solana, body.solana);
      const rec = freeze({
        ...cur,
        plan: body.plan ?? cur.plan,
        evm: mergeRate(cur.evm, body.evm),
        solana: { ...solana, min_tip_lamports: body.solana?.min_tip_lamports ?? cur.solana.min_tip_lamports },
      });
      await this.persist(rec);
      return rec;
    });
  }

  /** Revokes for good (idempotent); the UUID no longer authenticates. */
  revoke(ref: string): Promise<AccountRecord> {
    return this.serial(this.keyOf(ref), async () => {
      const cur = this.get(ref);
      if (!cur) throw notFound();
      if (cur.revoked) return cur;
      const rec = freeze({ ...cur, revoked: true });
      await this.persist(rec);
      return rec;
    });
  }

  /** Hot path: the active account for canonical UUID text in either case; undefined if unknown, revoked or malformed. */
  lookup(uuid: string): AccountRecord | undefined {
    if (typeof uuid !== 'string' || !uuidTextWords(uuid, scratch)) return undefined;
    return this.active.find(scratch);
  }

  /** The key that serialises an account's mutations: its UUID when known, else the reference as given. */
  private keyOf(ref: string): string {
    return this.get(ref)?.uuid ?? (typeof ref === 'string' ? ref.toLowerCase() : '');
  }

  /** Hot path: the active account for 16 raw UUID bytes at `offset` (UDP packet order); undefined if unknown, revoked or out of bounds. */
  lookupBytes(b: Uint8Array, offset: number): AccountRecord | undefined {
    if (!uuidByteWords(b, offset, scratch)) return undefined;
    return this.active.find(scratch);
  }

  /** Called with the new record after every create, update and revoke, before that call resolves. Returns an unsubscribe. */
  onChange(cb: (rec: AccountRecord) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** Every stored account, revoked included. */
  get size(): number {
    return this.byUuid.size;
  }

  /** Accounts not revoked. May exceed maxLive only if the store was opened with a lower cap than it was filled under. */
  get live(): number {
    return this.liveCount;
  }

  private async persist(rec: AccountRecord): Promise<void> {
    await this.store.write(() => void this.store.accounts.put(rec.uuid!, rec));
    this.apply(rec);
    for (const cb of this.listeners) cb(rec);
  }

  private apply(rec: AccountRecord): void {
    const prev = this.byUuid.get(rec.uuid!);
    this.liveCount += (rec.revoked ? 0 : 1) - (prev && !prev.revoked ? 1 : 0);
    this.byUuid.set(rec.uuid!, rec);
    this.byId.set(rec.id, rec);
    if (rec.revoked) this.active.delete(rec);
    else this.active.set(rec);
  }

  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => this.tails.get(key) === tail && this.tails.delete(key));
    return run;
  }
}
