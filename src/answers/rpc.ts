/**
 * JSON-RPC answers, both families (docs/protocol.md#json-rpc, #solana-json-rpc,
 * #jito-compatible-api, #websocket, #status): `POST /`, Jito's paths, each
 * `/ws` message, the status API and the `/ws` upgrade's refusals.
 *
 * The Solana rule lives here once: a Solana caller over HTTP gets 401 and 429
 * as the plain text its clients know, and every other refused call as HTTP
 * 200 with the JSON-RPC error object, the only form Solana clients show the
 * code and message of. Over `/ws` every answer is the JSON-RPC object, and a
 * success carries in `svc` what HTTP says in its `x-svc-*` headers.
 */
import { E, type RelayError } from '../errors.js';
import { joinHeaders, retryAfterHeaders, retryHeaders, type Headers } from '../ingress/headers.js';
import { JSON_TYPE } from '../ingress/reply.js';
import type { Outcome } from '../pipeline/outcome.js';
import { answer, blank, inDoorWords, DUPLICATE, QUEUED, QUEUED_DUPLICATE, evmAccepted, evmBatch, rpcError, signaturesJson, solanaResult, statusesJson, withDryRun, type Answer, type DoorWords } from './answer.js';
import { plainRefusal } from './solana.js';

/** What a call asked for, as far as its answer's shape goes. */
export const enum Shape {
  EvmTx,
  EvmBatch,
  SolanaTx,
  Bundle,
  /** Jito's `sendTransaction` with `bundleOnly`: the signature, the bundle id in `x-bundle-id`. */
  BundleOfOne,
  /** `txrelay_getStatuses`. */
  Statuses,
  /** A read the door answered itself (`getTipAccounts`, subscriptions): `result` below. */
  Read,
}

export interface Call {
  shape: Shape;
  /** JSON text, echoed. */
  rpcId: string;
  /** Over HTTP from a Solana client (a Solana method, Jito's paths, or the api-key header alone): the Solana rule above. */
  solanaWire: boolean;
  /** The request came with the api-key header and no Authorization: a Solana client, whatever it asked. */
  solanaClient: boolean;
  /** Over `/ws`: no plain text, and `svc` on a success. */
  socket: boolean;
  /** A bundle's id (Bundle, BundleOfOne). */
  bundleId: string;
  /** A Read's result as JSON text, or why it was refused. */
  result: string | RelayError | null;
}

const out = blank();

/** One call's answer; a JSON-RPC array over HTTP takes only its body. */
export function renderCall(c: Call, o: Outcome, words: DoorWords): Answer {
  const err = o.error;
  if (err !== null) {
    const e = inDoorWords(err, words);
    // A method the relay does not serve, asked by a Solana client (a read, usually), is answered the same way.
    if (!c.socket && (c.solanaWire || (c.solanaClient && e.spec === E.METHOD_NOT_FOUND))) {
      if (e.spec.http === 401 || e.spec.http === 429) return plainRefusal(e, words, out);
      return answer(out, 200, JSON_TYPE, rpcError(e, c.rpcId), undefined);
    }
    return answer(out, e.spec.http, JSON_TYPE, rpcError(e, c.rpcId), retryHeaders(e));
  }
  const dup = o.status === 'duplicate';
  switch (c.shape) {
    case Shape.EvmBatch: {
      const status = o.httpStatus(202);
      const batchId: Headers = [['x-svc-batch-id', o.id!]];
      const headers = status === 429 ? joinHeaders(batchId, retryAfterHeaders(o.retryAfterMs)) : status === 202 ? withDryRun(o.dry, batchId) : batchId;
      return answer(out, status, JSON_TYPE, svc(c, evmBatch(o, c.rpcId, o.dry), o, false), headers);
    }
    case Shape.SolanaTx:
      return answer(out, 200, JSON_TYPE, svc(c, solanaResult(signaturesJson(o), c.rpcId), o, dup), withDryRun(o.dry, dup ? DUPLICATE : undefined));
    case Shape.Bundle:
      return answer(out, 200, JSON_TYPE, svc(c, solanaResult(`"${c.bundleId}"`, c.rpcId), o, dup), withDryRun(o.dry, dup ? DUPLICATE : undefined));
    case Shape.BundleOfOne: {
      const headers: Headers = [['x-bundle-id', c.bundleId], ...(dup ? DUPLICATE : [])];
      return answer(out, 200, JSON_TYPE, svc(c, solanaResult(`"${o.id}"`, c.rpcId), o, dup), withDryRun(o.dry, headers));
    }
    case Shape.Statuses:
      return answer(out, 200, JSON_TYPE, solanaResult(statusesJson(o), c.rpcId), undefined);
    case Shape.Read: {
      const r = c.result!;
      if (typeof r !== 'string') return answer(out, r.spec.http, JSON_TYPE, rpcError(r, c.rpcId), undefined);
      return answer(out, 200, JSON_TYPE, solanaResult(r, c.rpcId), undefined);
    }
    default:
      return answer(out, 202, JSON_TYPE, svc(c, evmAccepted(o.id!, c.rpcId, o.dry), o, dup), withDryRun(o.dry, dup ? QUEUED_DUPLICATE : QUEUED));
  }
}

/**
 * Over `/ws` only: `"svc":{"request_id":..,"duplicate":true,"dry_run":true}`
 * added to the response object, the members present as HTTP's `x-svc-request-id`,
 * `x-svc-duplicate` and `x-svc-dry-run` would be (docs/protocol.md#websocket).
 */
function svc(c: Call, body: string, o: Outcome, duplicate: boolean): string {
  if (!c.socket) return body;
  let m = o.requestId === null ? '' : `"request_id":"${o.requestId}"`;
  if (duplicate) m += (m === '' ? '' : ',') + '"duplicate":true';
  if (o.dry) m += (m === '' ? '' : ',') + '"dry_run":true';
  if (m === '') return body;
  return `${body.slice(0, -1)},"svc":{${m}}}`;
}

/**
 * A refusal of a whole request (before its calls were read) on `POST /` or
 * Jito's paths. A Solana caller gets a shed, a per-IP 429 or a 401 as plain
 * text; any other refusal on Jito's paths is HTTP 200, as Jito answers.
 */
export function renderWhole(err: RelayError, solanaCaller: boolean, jito: boolean, words: DoorWords): Answer {
  const e = inDoorWords(err, words);
  if ((solanaCaller || jito) && (e.spec.http === 429 || e.spec.http === 401 || e.spec === E.CAPACITY)) return plainRefusal(e, words, out);
  return answer(out, jito ? 200 : e.spec.http, JSON_TYPE, rpcError(e, 'null'), e.spec.http === 429 ? retryHeaders(e) : undefined, err.holdMs);
}

/** A refusal as the JSON-RPC error object with id null at the error's own status (the status API, the `/ws` upgrade). */
export function rpcRefusal(err: RelayError, words: DoorWords): Answer {
  const e = inDoorWords(err, words);
  return answer(out, e.spec.http, JSON_TYPE, rpcError(e, 'null'), retryHeaders(e), err.holdMs);
}

/** A status read over HTTP: one object for `GET /v1/status/{id}`, `{"statuses":[...]}` for `POST /v1/status`. */
export function renderStatuses(o: Outcome, one: boolean, words: DoorWords): Answer {
  if (o.error !== null) return rpcRefusal(o.error, words);
  const body = statusesJson(o);
  return answer(out, 200, JSON_TYPE, one ? body.slice(1, -1) : `{"statuses":${body}}`, undefined);
}
