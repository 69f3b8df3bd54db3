/**
 * The status API's client side (docs/protocol.md#status): what a node did
 * with a request after acknowledging it, looked up by transaction hash,
 * signature, batch id or request id (`x-svc-request-id`). Shared by both
 * clients and the CLI.
 */
import { header, safeJson, sleep, errorText, type HttpResponse } from './http.js';
import { DEFAULT_RETRY_WAIT_MS, type RetryBudget } from './outcome.js';
import type { Commitment, StatusObject, StatusState } from '../shared/status.js';

// The status object itself is shared with the server (src/shared/status.ts).
export type { StatusState, StatusEvent, Forward, StatusObject, OnChain, Commitment } from '../shared/status.js';

/** Every state but `queued` is final: polling stops there. */
export const FINAL_STATES: ReadonlySet<StatusState> = new Set(['forwarded', 'upstream_rejected', 'failed', 'dropped', 'duplicate', 'unknown', 'expired', 'landed', 'landed_failed', 'not_landed']);

/** What `waitForward` resolves with: the last status read, and whether the wait ran out first. */
export type ForwardWait = StatusObject & { timedOut: boolean };

export interface WaitForwardOptions {
  /** Give up after this many milliseconds (default 10 s); at least one read is always made. */
  timeout?: number;
  /** First pause between reads (default 250 ms); it doubles up to 1 s. */
  pollMs?: number;
  /**
   * Keep reading while the node answers `unknown`: for a send nobody
   * acknowledged (UDP), which the node may not have received yet.
   */
  waitWhileUnknown?: boolean;
}

/** What `waitLanded` resolves with: the last status read, and whether the wait ran out first. */
export type LandedWait = StatusObject & { timedOut: boolean };

export interface WaitLandedOptions extends WaitForwardOptions {
  /** Solana: the confirmation level to wait for (default `confirmed`); the node follows up to its own `solana.landing_commitment`. */
  commitment?: Commitment;
}

/** An outcome plus the relay's request id, when the acknowledgement carried `x-svc-request-id`. */
export type WithRequestId<T> = T & { requestId?: string };

/** The status API refused or could not be reached; `status` is absent for a connection failure. */
export class StatusError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'StatusError';
  }
}

/** What the status calls need of a transport: `HttpTransport` fits. */
export interface StatusTransport {
  request(o: { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string }): Promise<HttpResponse>;
}

export interface StatusReadOptions {
  /** Retries of 429, 503 and connection failures; default 2 retries within 10 s. */
  budget?: RetryBudget;
}

/** `POST /v1/status` takes at most this many ids. */
export const MAX_STATUS_IDS = 100;
const DEFAULT_BUDGET: RetryBudget = { maxRetries: 2, maxWaitMs: 10_000 };
const MAX_POLL_MS = 1000;

/**
 * Statuses for `ids`, in order, through `POST /v1/status`; more than 100 ids
 * go as several requests, one after another. `baseUrl` only names the relay
 * in errors.
 */
export async function fetchStatuses(
  http: StatusTransport,
  baseUrl: string,
  credentialHeaders: Record<string, string>,
  ids: string[],
  opts: StatusReadOptions = {},
): Promise<StatusObject[]> {
  const out: StatusObject[] = [];
  for (let i = 0; i < ids.length; i += MAX_STATUS_IDS) {
    const chunk = ids.slice(i, i + MAX_STATUS_IDS);
    const res = await read(http, baseUrl, opts, {
      method: 'POST',
      path: '/v1/status',
      headers: { ...credentialHeaders, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: chunk }),
    });
    const list = safeJson(res.text)?.statuses;
    if (!Array.isArray(list) || list.length !== chunk.length || !list.every(isStatus)) {
      throw new StatusError(`status API at ${where(baseUrl)}: expected ${chunk.length} statuses, got ${res.text.slice(0, 200)}`, res.status);
    }
    out.push(...list);
  }
  return out;
}

/** One status through `GET /v1/status/{id}`. */
export async function fetchStatus(http: StatusTransport, baseUrl: string, credentialHeaders: Record<string, string>, id: string, opts: StatusReadOptions = {}): Promise<StatusObject> {
  const res = await read(http, baseUrl, opts, { method: 'GET', path: `/v1/status/${encodeURIComponent(id)}`, headers: credentialHeaders });
  const s = safeJson(res.text);
  if (!isStatus(s)) throw new StatusError(`status API at ${where(baseUrl)}: not a status object: ${res.text.slice(0, 200)}`, res.status);
  return s;
}

/**
 * Reads `id`'s status until it is final. A timeout is not an error: it
 * resolves with the last status read and `timedOut: true`. Transport errors
 * (after `getStatus`'s own retries) are thrown.
 */
export function waitForward(getStatus: (id: string) => Promise<StatusObject>, id: string, opts: WaitForwardOptions = {}): Promise<ForwardWait> {
  return pollUntil(getStatus, id, opts, 10_000, (s) => FINAL_STATES.has(s.state) && !(s.state === 'unknown' && opts.waitWhileUnknown));
}

const LEVEL: Record<Commitment, number> = { processed: 1, confirmed: 2, finalized: 3 };

/**
 * Reads `id`'s status until the chain's word on it is final: landed at the
 * commitment asked for (or as far as the node follows it), landed_failed,
 * not_landed; or an end short of the chain (refused, dropped, unknown), or
 * `forwarded` on a node that does not follow its family (`landing:
 * "not_tracked"`). Default time-out 60 s.
 */
export function waitLanded(getStatus: (id: string) => Promise<StatusObject>, id: string, opts: WaitLandedOptions = {}): Promise<LandedWait> {
  return pollUntil(getStatus, id, opts, 60_000, (s) => landedEnd(s, opts));
}

/** Whether `s` is where `waitLanded` stops: the chain's final word at the commitment asked for, or an end short of the chain. */
export function landedEnd(s: StatusObject, opts: Pick<WaitLandedOptions, 'commitment' | 'waitWhileUnknown'> = {}): boolean {
  if (s.state === 'queued' || (s.state === 'unknown' && opts.waitWhileUnknown)) return false;
  if (s.state === 'forwarded') return s.landing === undefined || s.landing === 'not_tracked';
  if (s.state !== 'landed' && s.state !== 'landed_failed') return true;
  if (s.landing === 'done' || s.onchain?.confirmation === undefined) return true;
  return LEVEL[s.onchain.confirmation] >= LEVEL[opts.commitment ?? 'confirmed'];
}

async function pollUntil(getStatus: (id: string) => Promise<StatusObject>, id: string, opts: WaitForwardOptions, defaultTimeout: number, done: (s: StatusObject) => boolean): Promise<StatusObject & { timedOut: boolean }> {
  const deadline = Date.now() + (opts.timeout ?? defaultTimeout);
  let pause = opts.pollMs ?? 250;
  for (;;) {
    const s = await getStatus(id);
    if (done(s)) return { ...s, timedOut: false };
    const left = deadline - Date.now();
    if (left <= 0) return { ...s, timedOut: true };
    // Sleeping to the deadline at most leaves one last read at the deadline itself.
    await sleep(Math.min(pause, left));
    // Most forwards end within milliseconds; a slow one need not cost a read every 250 ms.
    pause = Math.max(pause, Math.min(pause * 2, MAX_POLL_MS));
  }
}

/**
 * `waitForward` for several ids at once: each round reads every id not yet
 * final in one `POST /v1/status` (through `getStatuses`), so a batch's wait
 * costs one read per round, not one per item. Resolves in the order of `ids`.
 */
export async function waitForwardAll(getStatuses: (ids: string[]) => Promise<StatusObject[]>, ids: string[], opts: WaitForwardOptions = {}): Promise<ForwardWait[]> {
  const deadline = Date.now() + (opts.timeout ?? 10_000);
  let pause = opts.pollMs ?? 250;
  const out: (ForwardWait | undefined)[] = ids.map(() => undefined);
  let pending = ids.map((_, i) => i);
  for (;;) {
    const got = await getStatuses(pending.map((i) => ids[i]!));
    const timedOut = Date.now() >= deadline;
    const still: number[] = [];
    pending.forEach((i, k) => {
      const s = got[k]!;
      const done = FINAL_STATES.has(s.state) && !(s.state === 'unknown' && opts.waitWhileUnknown);
      out[i] = { ...s, timedOut: !done && timedOut };
      if (!done) still.push(i);
    });
    pending = still;
    if (pending.length === 0 || timedOut) return out as ForwardWait[];
    await sleep(Math.min(pause, deadline - Date.now()));
    pause = Math.max(pause, Math.min(pause * 2, MAX_POLL_MS));
  }
}

/**
 * One status request. A read changes nothing, so 429, 503 and connection
 * failures are retried after the advertised wait, within the budget; any
 * other non-200 is thrown at once.
 */
async function read(http: StatusTransport, baseUrl: string, opts: StatusReadOptions, req: Parameters<StatusTransport['request']>[0]): Promise<HttpResponse> {
  const budget = opts.budget ?? DEFAULT_BUDGET;
  let retries = 0;
  let waited = 0;
  for (;;) {
    let err: StatusError;
    try {
      const res = await http.request(req);
      if (res.status === 200) return res;
      const after = retryAfterMs(res);
      err = new StatusError(`status API at ${where(baseUrl)} answered ${res.status}: ${errorMessage(res)}`, res.status, after);
      if (res.status !== 429 && res.status !== 503) throw err;
    } catch (e) {
      if (e instanceof StatusError) throw e;
      err = new StatusError(`status API at ${where(baseUrl)} not reachable: ${errorText(e)}`);
    }
    const wait = err.retryAfterMs ?? DEFAULT_RETRY_WAIT_MS;
    if (retries >= budget.maxRetries || waited + wait > budget.maxWaitMs) throw err;
    await sleep(wait);
    waited += wait;
    retries++;
  }
}

function retryAfterMs(res: HttpResponse): number | undefined {
  const ms = header(res.headers, 'x-ratelimit-retry-after-ms');
  if (ms !== undefined && /^\d+$/.test(ms.trim())) return Number(ms);
  const s = header(res.headers, 'retry-after');
  if (s !== undefined && /^\d+$/.test(s.trim())) return Number(s) * 1000;
  return undefined;
}

/** The message of a JSON-RPC, admin-style or plain-text error body. */
function errorMessage(res: HttpResponse): string {
  const j = safeJson(res.text);
  const m = j?.error?.message ?? (typeof j?.error === 'string' ? j.error : undefined);
  return typeof m === 'string' ? m : res.text.trim().slice(0, 200);
}

function isStatus(v: unknown): v is StatusObject {
  return typeof v === 'object' && v !== null && typeof (v as StatusObject).id === 'string' && typeof (v as StatusObject).state === 'string';
}

/** The relay's address without any user or password, for messages. */
function where(baseUrl: string): string {
  try {
    const u = new URL(baseUrl);
    return u.origin + u.pathname.replace(/\/+$/, '');
  } catch {
    return 'the relay';
  }
}
