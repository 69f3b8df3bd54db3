/**
 * Family A doors (SPEC 4.1-4.3, DECISIONS 3-4): JSON-RPC
 * `eth_sendRawTransaction` (also inside standard JSON-RPC arrays), the
 * plain-text `POST /v2/svc_send_raw_transaction` with its URL-auth and CORS
 * rules, and the `svc_sendRawTransactionBatch` batch with its durable record.
 */
import { E, RelayError } from '../../errors.js';
import { decodeHexInto, hexTransactionLength, parseHexTransaction } from '../../chains/evm/hex.js';
import type { Admission, BatchInput, BatchItem, Block, EvmOutcome, LaneName } from '../../pipeline/admission.js';
import { FORWARDED_MESSAGE } from '../../pipeline/admission.js';
import type { AccountRecord } from '../../store/accounts.js';
import { begin, fixedHeaders, joinHeaders, readBodyTo, retryAfterHeaders, retryHeaders, send, sendHeld, type BodyTarget, type Headers, type Res } from '../http.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import type { DoorContext } from './context.js';
import { rpcErrorBody, type Reply } from './jsonrpc.js';

const JSON_CT = 'application/json';
const QUEUED = fixedHeaders([['x-svc-submission-state', 'queued']]);
const QUEUED_DUP = fixedHeaders([
  ['x-svc-submission-state', 'queued'],
  ['x-svc-duplicate', 'true'],
]);

/** SPEC 4.1: browsers may read these response headers. */
const CORS = fixedHeaders([
  ['access-control-allow-origin', '*'],
  ['access-control-expose-headers', 'x-svc-submission-state, x-svc-duplicate, retry-after, x-ratelimit-retry-after-ms'],
]);
const QUEUED_CORS = fixedHeaders([...QUEUED, ...CORS]);
const QUEUED_DUP_CORS = fixedHeaders([...QUEUED_DUP, ...CORS]);
const PREFLIGHT: Headers = [
  ...CORS,
  ['access-control-allow-methods', 'POST, OPTIONS'],
  ['access-control-allow-headers', 'authorization, content-type'],
  ['access-control-max-age', '86400'],
];

/** The durable batch receive record (DECISIONS 7), implemented by the store. */
export interface BatchRecorder {
  newId(): string;
  persist(rec: { batch_id: string; received_at: string; account_id: number; client_ip: string; tx_hashes: (string | null)[] }): Promise<void>;
  /** Resolves once the items' outcomes are durable (fsync'd); rejects if they could not be written. */
  updateOutcome(batchId: string, items: BatchItem[]): Promise<void>;
}

/** `Authorization: Bearer <uuid>` → the UUID; '' when the header is present but not a Bearer credential. */
export function bearer(authorization: string | null): string | null {
  if (authorization === null) return null;
  // The usual `Bearer <token>`, one space and visible ASCII after it, is what the expression below
  // matches it as, without its match array (~150 B of heap per request).
  if (authorization.length > 7 && authorization.charCodeAt(6) === 0x20 && bearerWord(authorization) && visibleFrom(authorization, 7)) {
    return authorization.slice(7);
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : '';
}

/** Whether `s` starts with "Bearer" in any case (ASCII letters only, as the expression's `i` flag has it). */
function bearerWord(s: string): boolean {
  const word = 'bearer';
  for (let i = 0; i < word.length; i++) if ((s.charCodeAt(i) | 0x20) !== word.charCodeAt(i)) return false;
  return true;
}

/** Whether every character of `s` from `from` on is visible ASCII (0x21-0x7e). */
function visibleFrom(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

function okBody(hash: string, id: string): string {
  return `{"jsonrpc":"2.0","id":${id},"result":"${hash}","message":"${FORWARDED_MESSAGE}"}`;
}

function errorReply(reply: Reply, err: RelayError, id: string, extra?: Headers): void {
  const h = retryHeaders(err);
  reply(err.spec.http, JSON_CT, rpcErrorBody(err, id), extra ? joinHeaders(h, extra) : h);
}

/**
 * SPEC 5 rules for the plain-text door's query: either empty, or exactly one
 * `auth` parameter and nothing else, percent-encoding well formed.
 * Returns the UUID, null when absent, or a RelayError.
 */
export function parseAuthQuery(query: string): string | null | RelayError {
  if (query === '') return null;
  // The usual `auth=<uuid>`: nothing to decode or split (no '%', '+' or '&'), the value as it stands.
  if (query.startsWith('auth=') && plainValue(query, 5)) return query.slice(5);
  const bad = (m: string) => new RelayError(E.INVALID_REQUEST, m);
  const parts = query.split('&');
  let auth: string | null = null;
  for (const p of parts) {
    const eq = p.indexOf('=');
    const rawKey = eq < 0 ? p : p.slice(0, eq);
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent(rawKey.replace(/\+/g, ' '));
      value = eq < 0 ? '' : decodeURIComponent(p.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      return bad('malformed percent-encoding in the query string');
    }
    if (key !== 'auth') return bad('only the auth query parameter is allowed');
    if (auth !== null) return bad('duplicate auth parameter');
    auth = value;
  }
  return auth;
}

const PERCENT = 0x25;
const PLUS = 0x2b;
const AMP = 0x26;

/** Whether `s` from `from` on holds no character that would change under query decoding or start another parameter. */
function plainValue(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT || c === PLUS || c === AMP) return false;
  }
  return true;
}

/**
 * A `0x`-hex transaction decoded straight into the slab (the one copy), or
 * why not: TX_INVALID with parseHexTransaction's message, or a full slab. A
 * malformed transaction is told so even when the slab is full.
 */
function hexIn(admission: Admission, hex: string): Block | RelayError {
  let len: number;
  try {
    len = hexTransactionLength(hex);
  } catch (e) {
    return new RelayError(E.TX_INVALID, (e as Error).message);
  }
  const block = admission.reserve(len);
  if (block !== null) {
    if (admission.decodeInto(block, hex, decodeHexInto)) return block;
    admission.release(block);
  }
  // Node's decoder refused, or there was no room. The table names the bad digit; it refuses exactly
  // what Node's decoder refuses (test/chains/evm/hex.test.ts), so a text it accepts only lacked room.
  try {
    parseHexTransaction(hex);
  } catch (e) {
    return new RelayError(E.TX_INVALID, (e as Error).message);
  }
  return admission.capacityError('slab full');
}

/** The plain-text door's errors: JSON-RPC bodies with id null, readable by browsers (CORS). */
function failText(res: Res, err: RelayError): void {
  const h = retryHeaders(err);
  sendHeld(res, err.holdMs, err.spec.http, JSON_CT, rpcErrorBody(err, 'null'), joinHeaders(h, CORS));
}

type Submit = (reply: Reply, rec: AccountRecord, hex: string, id: string, cors: Headers | undefined) => void;

/** One plain-text request's body (readBodyTo): one object per request instead of a closure per callback. */
class EvmTextBody implements BodyTarget {
  constructor(
    private readonly res: Res,
    private readonly rec: AccountRecord,
    private readonly submit: Submit,
    private readonly maxBody: number,
  ) {}

  body(bytes: Uint8Array): void {
    const res = this.res;
    // SPEC 4.1: leading and trailing ASCII whitespace is allowed.
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1').trim();
    this.submit((status, ct, body, headers) => send(res, status, ct, body, headers), this.rec, text, 'null', CORS);
  }

  tooLarge(n: number): void {
    failText(this.res, new RelayError(E.TOO_LARGE, `body of ${n} bytes exceeds http.max_body_bytes (${this.maxBody})`));
  }
}

export function registerEvmDoors(ctx: DoorContext): void {
  const { app, admission } = ctx;

  const submit: Submit = (reply, rec, hex, id, cors) => {
    const block = hexIn(admission, hex);
    if (block instanceof RelayError) return errorReply(reply, block, id, cors);
    const lane: LaneName = admission.laneFor('evm', rec);
    admission.evmSingle(block, hex, lane, (o: EvmOutcome) => {
      if (!o.ok) return errorReply(reply, o.error, id, cors);
      const h = cors ? (o.duplicate ? QUEUED_DUP_CORS : QUEUED_CORS) : o.duplicate ? QUEUED_DUP : QUEUED;
      reply(202, JSON_CT, okBody(o.hash, id), h);
    });
  };

  // JSON-RPC single (SPEC 4.2): Bearer only; `?auth=` authenticates nothing here (DECISIONS 4).
  ctx.rpc.register('eth_sendRawTransaction', (reply, info, call) => {
    const rec = admission.gate('evm', bearer(info.authorization), null, 1);
    if (rec instanceof RelayError) return errorReply(reply, rec, call.id);
    const p = call.params;
    if (!Array.isArray(p) || p.length !== 1 || typeof p[0] !== 'string') {
      return errorReply(reply, new RelayError(E.INVALID_PARAMS, 'params must be ["0x…"]'), call.id);
    }
    submit(reply, rec, p[0], call.id, undefined);
  });

  // Plain text (SPEC 4.1).
  app.options('/v2/svc_send_raw_transaction', (res) => {
    res.cork(() => {
      res.writeStatus('204 No Content');
      for (const [k, v] of PREFLIGHT) res.writeHeader(k, v);
      res.end();
    });
  });

  const textTimer = ctx.timer('evm-text');
  const maxBody = ctx.config.http.max_body_bytes;
  app.post('/v2/svc_send_raw_transaction', (r: HttpResponse, req: HttpRequest) => {
    const res = begin(r, textTimer);
    const shed = admission.arrive('evm');
    if (shed) return failText(res, shed);
    const ip = ctx.ip(res, req);
    const ctype = req.getHeader('content-type');
    if (!/^text\/plain\s*(;|$)/i.test(ctype)) return failText(res, new RelayError(E.UNSUPPORTED_MEDIA, 'use text/plain'));
    const fromQuery = parseAuthQuery(req.getQuery() ?? '');
    if (fromQuery instanceof RelayError) return failText(res, fromQuery);
    const fromHeader = bearer(req.getHeader('authorization') || null);
    if (fromQuery !== null && fromHeader !== null) return failText(res, new RelayError(E.INVALID_REQUEST, 'use exactly one authentication method'));
    const rec = admission.gate('evm', fromQuery ?? fromHeader, ip, 1);
    if (rec instanceof RelayError) return failText(res, rec);
    readBodyTo(res, req, maxBody, new EvmTextBody(res, rec, submit, maxBody));
  });

  // Batch (SPEC 4.3, DECISIONS 6): record first, then rate checks and admission per item.
  ctx.rpc.register('svc_sendRawTransactionBatch', (reply, info, call) => {
    const rec = admission.authenticate('evm', bearer(info.authorization));
    if (rec instanceof RelayError) return errorReply(reply, rec, call.id);
    const p = call.params;
    const max = ctx.config.evm.max_batch;
    if (!Array.isArray(p) || p.length < 1 || p.length > max || !p.every((x) => typeof x === 'string')) {
      return errorReply(reply, new RelayError(E.INVALID_PARAMS, `params must be 1 to ${max} "0x…" strings`), call.id);
    }
    const batches = ctx.batches;
    if (!batches) return errorReply(reply, new RelayError(E.BATCH_RECORD), call.id);
    // The record budget (issue 8): records per account are bounded by its own family A rate,
    // so a refused flood writes nothing. Such a batch is answered like an all-limited one.
    const wait = admission.takeRecordCredit(rec);
    if (wait > 0) {
      const err = new RelayError(E.RATE_ACCOUNT, String(rec.evm.tps), wait);
      return errorReply(reply, err, call.id);
    }
    const inputs: BatchInput[] = (p as string[]).map((hex) => {
      const block = hexIn(admission, hex);
      return block instanceof RelayError ? admission.evmPrepare(null, hex, block) : admission.evmPrepare(block, hex, null);
    });
    const batchId = batches.newId();
    const releaseAll = () => inputs.forEach((x) => x.block && admission.release(x.block));
    batches
      .persist({
        batch_id: batchId,
        received_at: new Date().toISOString(),
        account_id: rec.id,
        client_ip: info.ip,
        tx_hashes: inputs.map((x) => x.hash),
      })
      .then(
        () => {
          admission.evmBatch(rec, inputs, (items, status, retryAfterMs) => {
            const answer = () => {
              const body = `{"jsonrpc":"2.0","id":${call.id},"result":${JSON.stringify({ batch_id: batchId, transactions: items })}}`;
              const headers: Headers = [['x-svc-batch-id', batchId]];
              const retry = status === 429 ? retryAfterHeaders(retryAfterMs) : [];
              reply(status, JSON_CT, body, [...headers, ...retry]);
            };
            // The outcome is durable before the answer, so a crash right after it leaves the
            // record complete. If it cannot be written the items are queued all the same: the
            // answer stands (the record still holds every hash) and the failure is counted.
            batches.updateOutcome(batchId, items).then(answer, answer);
          });
        },
        () => {
          releaseAll();
          errorReply(reply, new RelayError(E.BATCH_RECORD), call.id);
        },
      );
  });
}
