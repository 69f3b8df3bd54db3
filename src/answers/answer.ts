/**
 * What every answer module returns, and the bodies and headers the modules
 * share. A door renders the Outcome and writes; it decides nothing about
 * status, type, headers or body (docs/architecture.md#answers).
 *
 * Bodies are built by concatenation (docs/protocol.md#errors, #statuses): the
 * parts are fixed words, hashes, signatures and ids already in JSON form, and
 * JSON.stringify would build and walk an object per answer.
 */
import { E, RelayError, type ErrorSpec } from '../errors.js';
import type { Outcome } from '../pipeline/outcome.js';
import { fixedHeaders, joinHeaders, type Headers } from '../ingress/headers.js';
import type { Replier, Res } from '../ingress/reply.js';

export interface Answer {
  status: number;
  /** Content-Type. */
  type: string;
  body: string;
  headers: Headers | undefined;
  /** Ms to hold a shed's answer (docs/protocol.md#capacity); 0: at once. */
  holdMs: number;
}

/**
 * One Answer per module, filled by each render and written at once: a door
 * answering tens of thousands of requests a second allocates no object for it.
 */
export function answer(a: Answer, status: number, type: string, body: string, headers: Headers | undefined, holdMs = 0): Answer {
  a.status = status;
  a.type = type;
  a.body = body;
  a.headers = headers;
  a.holdMs = holdMs;
  return a;
}

export function blank(): Answer {
  return { status: 0, type: '', body: '', headers: undefined, holdMs: 0 };
}

/** What a door says in the refusals that depend on it (docs/protocol.md#authentication, #solana-bundles). */
export interface DoorWords {
  /** How this door takes the credential, for a request that came without one: ` (...)`. */
  takes: string;
  /** The tip accounts, for a bundle without a tip: ` (...)`; '' where the door takes no bundle. */
  tips: string;
}

export const TAKES_SOLANA = ' (send the account UUID in the api-key header or as ?api-key=)';
export const TAKES_JITO = ' (send the account UUID in the api-key header, the x-jito-auth header, ?uuid= or ?api-key=)';
export const TAKES_EVM = ' (send the account UUID as `Authorization: Bearer <uuid>` or ?auth=)';
export const TAKES_RPC = ' (Solana methods take the api-key header or ?api-key=; EVM methods take `Authorization: Bearer <uuid>`)';
export const TAKES_STATUS = ' (send the account UUID in the api-key header, as `Authorization: Bearer <uuid>` or as ?api-key=)';
export const TAKES_WS = ' (send the account UUID in the api-key header, as `Authorization: Bearer <uuid>` or as ?api-key=)';

/** ` (tip one of: A, B, ...)`: the accounts a bundle's tip may go to. */
export function tipsWords(accounts: readonly string[]): string {
  return accounts.length === 0 ? '' : ` (tip one of: ${accounts.join(', ')})`;
}

const worded = new WeakMap<DoorWords, { missing: RelayError; tip: RelayError }>();

/**
 * The refusal as this door words it: a missing credential names what the door
 * takes, a bundle without a tip names the tip accounts. Other refusals, and
 * these when raised with a detail of their own, are as raised.
 */
export function inDoorWords(err: RelayError, words: DoorWords): RelayError {
  if (err.detail !== '' || (err.spec !== E.AUTH_MISSING && err.spec !== E.TIP_NOT_FOUND)) return err;
  let w = worded.get(words);
  if (w === undefined) {
    w = { missing: new RelayError(E.AUTH_MISSING, words.takes), tip: new RelayError(E.TIP_NOT_FOUND, words.tips) };
    worded.set(words, w);
  }
  return err.spec === E.AUTH_MISSING ? w.missing : w.tip;
}

/** Writes a rendered answer: held when it says so, else at once (ingress/reply.ts). */
export function write(reply: Replier, res: Res, a: Answer): void {
  reply.sendHeld(res, a.holdMs, a.status, a.type, a.body, a.headers);
}

// ---- bodies and headers ------------------------------------------------------

/** Display text only: clients must not read state from it. */
const FORWARDED_MESSAGE = 'Successfully forwarded';
/** The same place on a node whose lane has no upstream (docs/protocol.md#dry-run): it will not be forwarded. */
const DRY_MESSAGE = 'Accepted, not forwarded: this node has no upstream for it (dry run)';

// ---- JSON-RPC (EVM doors, the Solana JSON-RPC door) --------------------------

/** `id` is JSON text. */
export function rpcError(err: RelayError, id: string): string {
  // A flood over one limit asks for the same body per request: the last one is reused.
  if (err.spec === last.spec && err.detail === last.detail && id === last.id) return last.body;
  const data = err.spec.retry ? `,"data":{"retry":"${err.spec.retry}"}` : '';
  const body = `{"jsonrpc":"2.0","id":${id},"error":{"code":${err.spec.rpc},"message":${JSON.stringify(err.message)}${data}}}`;
  last.spec = err.spec;
  last.detail = err.detail;
  last.id = id;
  last.body = body;
  return body;
}
const last: { spec: ErrorSpec | null; detail: string; id: string; body: string } = { spec: null, detail: '', id: '', body: '' };

export function evmAccepted(hash: string, id: string, dry = false): string {
  return `{"jsonrpc":"2.0","id":${id},"result":"${hash}","message":"${dry ? DRY_MESSAGE : FORWARDED_MESSAGE}"}`;
}

export function solanaResult(result: string, id: string): string {
  return `{"jsonrpc":"2.0","result":${result},"id":${id}}`;
}

/** A status read's answer: `{"statuses":[...]}` over HTTP, the array as a JSON-RPC result (docs/protocol.md#status). */
export function statusesJson(o: Outcome): string {
  return JSON.stringify(o.statuses);
}

export function signaturesJson(o: Outcome): string {
  if (o.ids === null) return `"${o.id}"`;
  return '["' + o.ids.join('","') + '"]';
}

export function evmBatch(o: Outcome, id: string, dry = false): string {
  let items = '';
  const all = o.items!;
  for (let i = 0; i < all.length; i++) {
    const x = all[i]!;
    if (i > 0) items += ',';
    const hash = x.id === null ? 'null' : `"${x.id}"`;
    items += `{"tx_index":${i},"tx_hash":${hash},"status":"${x.status}","duplicate":${x.status === 'duplicate'},"retry":"${x.retry}"`;
    if (x.status === 'queued') items += `,"message":"${dry ? DRY_MESSAGE : FORWARDED_MESSAGE}"}`;
    else if (x.error !== null) items += `,"error":{"code":${x.error.spec.rpc},"message":${JSON.stringify(x.error.message)}}}`;
    else items += '}';
  }
  return `{"jsonrpc":"2.0","id":${id},"result":{"batch_id":"${o.id}","transactions":[${items}]}}`;
}

// ---- headers ----------------------------------------------------------------

export const QUEUED = fixedHeaders([['x-svc-submission-state', 'queued']]);
export const QUEUED_DUPLICATE = fixedHeaders([
  ['x-svc-submission-state', 'queued'],
  ['x-svc-duplicate', 'true'],
]);
export const DUPLICATE = fixedHeaders([['x-svc-duplicate', 'true']]);
const DRY_RUN = fixedHeaders([['x-svc-dry-run', 'true']]);

/** A success's headers; with `x-svc-dry-run: true` when its lane has no upstream (docs/protocol.md#dry-run). */
export function withDryRun(dry: boolean, headers: Headers | undefined): Headers | undefined {
  if (!dry) return headers;
  return headers === undefined ? DRY_RUN : joinHeaders(headers, DRY_RUN);
}

/** A browser may read these response headers of the plain-text door (docs/protocol.md#evm-single-transactions). */
export const CORS = fixedHeaders([
  ['access-control-allow-origin', '*'],
  ['access-control-expose-headers', 'x-svc-submission-state, x-svc-duplicate, x-svc-dry-run, retry-after, x-ratelimit-retry-after-ms, x-svc-node, x-svc-request-id'],
]);
export const QUEUED_CORS = fixedHeaders([...QUEUED, ...CORS]);
export const QUEUED_DUPLICATE_CORS = fixedHeaders([...QUEUED_DUPLICATE, ...CORS]);
export const PREFLIGHT: Headers = fixedHeaders([
  ...CORS,
  ['access-control-allow-methods', 'POST, OPTIONS'],
  ['access-control-allow-headers', 'authorization, content-type'],
  ['access-control-max-age', '86400'],
]);
