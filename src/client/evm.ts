/**
 * Family A client (client rules: docs/protocol.md#statuses): classifies every answer into a
 * typed outcome, retries only `not-sent` + `retry_safe` after the advertised
 * wait and within the caller's budget, never resends queued, duplicate or
 * uncertain transactions, and reconciles uncertain ones through the caller's
 * own chain RPC. What the relay did after acknowledging is read through the
 * status API (docs/protocol.md#status).
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { HttpTransport, header, safeJson, sleep, errorText, neverSent, type HttpResponse } from './http.js';
import { RPC_RATE_LIMITED, RPC_UNAVAILABLE } from '../shared/codes.js';
import { DEFAULT_RETRY_WAIT_MS, isRetrySafe, type BatchOutcome, type RetryBudget, type RetryInstruction, type TxOutcome } from './outcome.js';
import { fetchStatus, fetchStatuses, waitForward, waitLanded, type ForwardWait, type LandedWait, type StatusObject, type WaitForwardOptions, type WaitLandedOptions, type WithRequestId } from './status.js';

export interface EvmClientOptions {
  url: string;
  uuid: string;
  /** The caller's own chain JSON-RPC, used only by `reconcile`. */
  chainRpc?: string;
  heartbeatMs?: number;
  retryBudget?: RetryBudget;
}

export interface SendOptions {
  via?: 'jsonrpc' | 'text';
}

/** A batch outcome plus the request id of every batch sent, when the answers carried one (docs/protocol.md#status). */
export interface EvmBatchOutcome extends BatchOutcome {
  requestIds?: string[];
}

const OLD_NODE_STATUSES = new Set(['dispatched', 'in-flight', 'unknown']);

export class EvmClient {
  private readonly http: HttpTransport;
  private readonly url: string;
  private readonly uuid: string;
  private readonly chainRpc: string | undefined;
  private readonly budget: RetryBudget;
  private nextId = 1;

  constructor(o: EvmClientOptions) {
    this.http = new HttpTransport(o.url, o.heartbeatMs ?? 4000);
    this.url = o.url;
    this.uuid = o.uuid;
    this.chainRpc = o.chainRpc;
    this.budget = o.retryBudget ?? { maxRetries: 2, maxWaitMs: 10_000 };
  }

  async sendRawTransaction(hex: string, opts: SendOptions = {}): Promise<WithRequestId<TxOutcome>> {
    const via = opts.via ?? 'jsonrpc';
    const local = localTxHash(hex);
    let retries = 0;
    let waited = 0;
    for (;;) {
      const out = await this.sendOnce(hex, via, local);
      if (!isRetrySafe(out) || retries >= this.budget.maxRetries) return out;
      const wait = out.retryAfterMs ?? DEFAULT_RETRY_WAIT_MS;
      if (waited + wait > this.budget.maxWaitMs) return out;
      await sleep(wait);
      waited += wait;
      retries++;
    }
  }

  private async sendOnce(hex: string, via: 'jsonrpc' | 'text', local: string | undefined): Promise<WithRequestId<TxOutcome>> {
    let res: HttpResponse;
    try {
      res =
        via === 'text'
          ? await this.http.request({
              method: 'POST',
              path: `/v2/svc_send_raw_transaction?auth=${encodeURIComponent(this.uuid)}`,
              headers: { 'content-type': 'text/plain' },
              body: hex,
            })
          : await this.http.request({
              method: 'POST',
              path: '/',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${this.uuid}` },
              body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method: 'eth_sendRawTransaction', params: [hex] }),
            });
    } catch (e) {
      if (neverSent(e)) return { kind: 'not-sent', hash: local, retry: 'retry_safe', code: RPC_UNAVAILABLE, message: `no connection to the relay: ${errorText(e)}` };
      // The request may or may not have reached the relay: reconcile, never resend.
      return { kind: 'uncertain', hash: local, reason: `connection failed: ${errorText(e)}` };
    }
    return withRequestId(classifySingle(res, local), res);
  }

  /**
   * Sends a family A batch. Only items `not-sent` + `retry_safe` are retried,
   * in a new batch, after waiting; the whole batch is never resent.
   */
  async sendBatch(hexes: string[]): Promise<EvmBatchOutcome> {
    const locals = hexes.map(localTxHash);
    const first = await this.batchOnce(hexes, locals);
    const out: EvmBatchOutcome = { batchId: first.batchId, batchIds: first.batchId ? [first.batchId] : [], items: first.items };
    if (first.requestId) out.requestIds = [first.requestId];
    let retries = 0;
    let waited = 0;
    for (;;) {
      const idx = out.items.flatMap((o, i) => (isRetrySafe(o) ? [i] : []));
      if (idx.length === 0 || retries >= this.budget.maxRetries) return out;
      const wait = Math.max(...idx.map((i) => (out.items[i] as { retryAfterMs?: number }).retryAfterMs ?? DEFAULT_RETRY_WAIT_MS));
      if (waited + wait > this.budget.maxWaitMs) return out;
      await sleep(wait);
      waited += wait;
      retries++;
      const again = await this.batchOnce(
        idx.map((i) => hexes[i]!),
        idx.map((i) => locals[i]),
      );
      if (again.batchId) out.batchIds.push(again.batchId);
      if (again.requestId) (out.requestIds ??= []).push(again.requestId);
      idx.forEach((i, k) => (out.items[i] = again.items[k]!));
    }
  }

  private async batchOnce(hexes: string[], locals: (string | undefined)[]): Promise<{ batchId?: string; requestId?: string; items: TxOutcome[] }> {
    let res: HttpResponse;
    try {
      res = await this.http.request({
        method: 'POST',
        path: '/',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.uuid}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method: 'svc_sendRawTransactionBatch', params: hexes }),
      });
    } catch (e) {
      if (neverSent(e)) {
        const message = `no connection to the relay: ${errorText(e)}`;
        return { items: locals.map((hash) => ({ kind: 'not-sent', hash, retry: 'retry_safe', code: RPC_UNAVAILABLE, message })) };
      }
      const reason = `connection failed: ${errorText(e)}`;
      return { items: locals.map((hash) => ({ kind: 'uncertain', hash, reason })) };
    }
    const requestId = acknowledged(res) ? header(res.headers, 'x-svc-request-id') : undefined;
    return requestId ? { ...classifyBatch(res, locals), requestId } : classifyBatch(res, locals);
  }

  /**
   * What the relay did with each id after acknowledging it (docs/protocol.md#status):
   * a transaction hash, batch id or request id; another account's is `unknown`.
   */
  status(ids: string[]): Promise<StatusObject[]> {
    return fetchStatuses(this.http, this.url, this.credentials(), ids, { budget: this.budget });
  }

  /** Reads `id`'s status until it is final; on timeout resolves with the last one and `timedOut: true`. */
  waitForward(id: string, opts: WaitForwardOptions = {}): Promise<ForwardWait> {
    return waitForward((i) => fetchStatus(this.http, this.url, this.credentials(), i, { budget: this.budget }), id, opts);
  }

  /** Reads the status until the chain's word on it (docs/protocol.md#status); see `waitLanded` in status.ts. */
  waitLanded(id: string, opts: WaitLandedOptions = {}): Promise<LandedWait> {
    return waitLanded((i) => fetchStatus(this.http, this.url, this.credentials(), i, { budget: this.budget }), id, opts);
  }

  private credentials(): Record<string, string> {
    return { authorization: `Bearer ${this.uuid}` };
  }

  /**
   * For an uncertain outcome, asks the caller's chain RPC whether the
   * transaction is known. Never resubmits; `not-found-yet` does not prove
   * that nothing was sent.
   */
  async reconcile(outcome: TxOutcome): Promise<'found' | 'not-found-yet'> {
    if (!this.chainRpc) throw new TypeError('reconcile needs the chainRpc option');
    const hash = 'hash' in outcome ? outcome.hash : undefined;
    if (!hash) throw new TypeError('reconcile needs an outcome that carries a transaction hash');
    const r = await fetch(this.chainRpc, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionByHash', params: [hash] }),
    });
    const j = (await r.json()) as { result?: unknown; error?: { message?: string } };
    if (j.error) throw new Error(`chain RPC error: ${j.error.message ?? 'unknown'}`);
    return j.result ? 'found' : 'not-found-yet';
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

function acknowledged(res: HttpResponse): boolean {
  return res.status === 200 || res.status === 202;
}

/** Only acknowledgements carry `x-svc-request-id` (docs/protocol.md#status). */
function withRequestId(o: TxOutcome, res: HttpResponse): WithRequestId<TxOutcome> {
  const id = header(res.headers, 'x-svc-request-id');
  return id && acknowledged(res) && (o.kind === 'queued' || o.kind === 'duplicate') ? { ...o, requestId: id } : o;
}

function retryAfterMs(res: HttpResponse): number | undefined {
  const ms = Number(header(res.headers, 'x-ratelimit-retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && header(res.headers, 'x-ratelimit-retry-after-ms') !== undefined) return ms;
  const s = header(res.headers, 'retry-after');
  if (s !== undefined && /^\d+$/.test(s.trim())) return Number(s) * 1000;
  return undefined;
}

function asRetry(v: unknown): RetryInstruction | undefined {
  return v === 'retry_safe' || v === 'do_not_retry_automatically' ? v : undefined;
}

/** The client rules for one single-transaction answer, older nodes' answers included. */
function classifySingle(res: HttpResponse, local: string | undefined): TxOutcome {
  const body = safeJson(res.text);
  const ok2xx = res.status >= 200 && res.status < 300;
  if (body === undefined || typeof body !== 'object' || body === null) {
    if (res.status >= 400 && res.status < 500 && res.status !== 429) return { kind: 'rejected', code: 0, message: res.text.slice(0, 200), status: res.status };
    return { kind: 'uncertain', hash: local, reason: `unparseable response (HTTP ${res.status})` };
  }
  const err = body.error as { code?: number; message?: string; data?: { retry?: unknown; tx_hash?: unknown } } | undefined;
  const result = typeof body.result === 'string' ? body.result : undefined;
  if (!err) {
    if (res.status === 202 && result) {
      return header(res.headers, 'x-svc-duplicate') === 'true' ? { kind: 'duplicate', hash: result } : { kind: 'queued', hash: result };
    }
    // Legacy HTTP 200: some upstream acknowledged, which is not our acknowledgement of queueing.
    return { kind: 'uncertain', hash: result ?? local, reason: `legacy acknowledgement (HTTP ${res.status})` };
  }
  const code = typeof err.code === 'number' ? err.code : 0;
  const message = String(err.message ?? '');
  if (code === -32008) {
    const h = typeof err.data?.tx_hash === 'string' ? err.data.tx_hash : local;
    return { kind: 'uncertain', hash: h, reason: 'legacy -32008: outcome uncertain' };
  }
  if (ok2xx) return { kind: 'uncertain', hash: result ?? local, reason: `HTTP ${res.status} with error ${code}` };
  const retry = asRetry(err.data?.retry) ?? (res.status === 429 || code === RPC_RATE_LIMITED ? 'retry_safe' : undefined);
  if (retry === 'retry_safe') return { kind: 'not-sent', hash: local, retry, code, message, retryAfterMs: retryAfterMs(res) };
  // Any other 4xx is final: the request itself must change.
  if (res.status >= 400 && res.status < 500) return { kind: 'rejected', code, message, status: res.status };
  if (retry || code === RPC_UNAVAILABLE) return { kind: 'not-sent', hash: local, retry: 'do_not_retry_automatically', code, message };
  // A 5xx with no explicit "not sent": it may have been sent.
  return { kind: 'uncertain', hash: local, reason: `HTTP ${res.status} error ${code}: ${message}` };
}

/** The client rules for a batch answer, older nodes' answers included: each item on its own. */
function classifyBatch(res: HttpResponse, locals: (string | undefined)[]): { batchId?: string; items: TxOutcome[] } {
  const body = safeJson(res.text);
  const batchId = (typeof body?.result?.batch_id === 'string' ? body.result.batch_id : undefined) ?? header(res.headers, 'x-svc-batch-id');
  const list = body?.result?.transactions;
  const after = retryAfterMs(res);
  if (Array.isArray(list)) {
    const items: TxOutcome[] = locals.map((hash) => ({ kind: 'uncertain', hash, reason: 'item missing from batch response' }));
    list.forEach((it: any, pos: number) => {
      const i = Number.isInteger(it?.tx_index) ? it.tx_index : pos;
      if (i < 0 || i >= items.length) return;
      items[i] = classifyItem(it, locals[i], after);
    });
    return { batchId, items };
  }
  // No per-item results: the top-level error (if any) speaks for every item.
  const single = classifySingle(res, undefined);
  const items = locals.map((hash): TxOutcome => {
    if (single.kind === 'queued' || single.kind === 'duplicate') return { kind: 'uncertain', hash, reason: 'batch response without items' };
    if (single.kind === 'rejected') return single;
    return { ...single, hash };
  });
  return { batchId, items };
}

function classifyItem(it: any, local: string | undefined, after: number | undefined): TxOutcome {
  const hash = typeof it?.tx_hash === 'string' ? it.tx_hash : local;
  const status = it?.status;
  const err = it?.error as { code?: number; message?: string; data?: { retry?: unknown; tx_hash?: unknown } } | undefined;
  const code = typeof err?.code === 'number' ? err.code : 0;
  if (code === -32008) return { kind: 'uncertain', hash: typeof err?.data?.tx_hash === 'string' ? err.data.tx_hash : hash, reason: 'legacy -32008: outcome uncertain' };
  if (status === 'queued' && hash) return it.duplicate === true ? { kind: 'duplicate', hash } : { kind: 'queued', hash };
  if (status === 'duplicate' && hash) return { kind: 'duplicate', hash };
  if (status === 'not-sent') {
    const retry = asRetry(it.retry) ?? asRetry(err?.data?.retry) ?? 'do_not_retry_automatically';
    const o: TxOutcome = { kind: 'not-sent', hash, retry, code, message: String(err?.message ?? '') };
    if (after !== undefined) o.retryAfterMs = after;
    return o;
  }
  if (typeof status === 'string' && OLD_NODE_STATUSES.has(status)) return { kind: 'uncertain', hash, reason: `older node status ${status}` };
  return { kind: 'uncertain', hash, reason: `unrecognised item status ${String(status)}` };
}

/** Keccak-256 of the raw bytes, the hash of every form but the blob network form (undefined: its hash covers the inner body). */
export function localTxHash(hex: string): string | undefined {
  const s = hex.trim();
  if (!/^0x([0-9a-fA-F]{2})+$/.test(s)) return undefined;
  const raw = Buffer.from(s.slice(2), 'hex');
  if (raw[0] === 0x03 && isBlobNetworkForm(raw)) return undefined;
  return '0x' + Buffer.from(keccak_256(raw)).toString('hex');
}

/** Network form: 0x03 || rlp([tx_body_list, ...]) — the first element is itself a list. */
function isBlobNetworkForm(raw: Uint8Array): boolean {
  const b = raw[1];
  if (b === undefined || b < 0xc0) return false;
  const headerLen = b >= 0xf8 ? 1 + (b - 0xf7) : 1;
  const first = raw[1 + headerLen];
  return first !== undefined && first >= 0xc0;
}
