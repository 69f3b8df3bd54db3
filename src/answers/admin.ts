/**
 * Admin API answers (docs/protocol.md#admin-api): JSON bodies, errors as
 * `{"error":{"code","message"}}` from the error table. An internal error's
 * own message is never shown.
 */
import { specOf, type ErrorSpec } from '../errors.js';
import { JSON_TYPE } from '../ingress/reply.js';
import type { Headers } from '../ingress/headers.js';
import { answer, blank, type Answer } from './answer.js';

const out = blank();

export function adminRefusal(spec: ErrorSpec, message: string = spec.message): Answer {
  const body = JSON.stringify({ error: { code: spec.code, message: spec.http === 500 ? 'internal error' : message } });
  return answer(out, spec.http, JSON_TYPE, body, undefined);
}

/** What a handler threw: its table entry (TxrelayError), else an internal error. */
export function renderAdminError(e: unknown): Answer {
  return adminRefusal(specOf(e), (e as Error).message);
}

/** A handler's result; `replacer` keeps what is not for the wire out of the body. */
export function renderAdminResult(status: number, result: unknown, headers: Headers | undefined, replacer: (k: string, v: unknown) => unknown): Answer {
  return answer(out, status, JSON_TYPE, JSON.stringify(result, replacer), headers);
}
