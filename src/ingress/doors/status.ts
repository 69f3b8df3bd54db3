/**
 * The status API over HTTP (docs/protocol.md#status): `GET /v1/status/{id}`
 * and `POST /v1/status` with `{"ids": [...]}`. Same credentials as
 * submission, either family's header; a read of its own rate, never the
 * account's submission quota. Answers are JSON; errors are the JSON-RPC
 * error object with id null, as on the EVM doors.
 */
import { RelayError } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import { Kind, query, refusedAt, type Sink, type Submission } from '../../pipeline/submission.js';
import type { Family } from '../../pipeline/accounts.js';
import { TAKES_STATUS, write, type DoorWords } from '../../answers/answer.js';
import { renderStatuses } from '../../answers/rpc.js';
import { watchAbort, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, type DoorContext, type Parse } from './context.js';
import { bearer } from './evm.js';
import { statusIds } from './jsonrpc.js';
import { parseJsonBody } from './rpc-scan.js';
import { apiKeyQuery } from './api-key.js';

/** `{"ids": [100 ids of 128 characters]}` fits with room to spare. */
const MAX_STATUS_BODY = 16 * 1024;

export function registerStatusDoor(ctx: DoorContext): void {
  const { app, reply, pipeline } = ctx;
  const words: DoorWords = { takes: TAKES_STATUS, tips: '' };
  /** `{"ids": [...]}`: the ids, or why not. */
  const parse: Parse = (_sub, body) => {
    const msg = parseJsonBody(body);
    return msg instanceof RelayError ? msg : statusIds((msg as { ids?: unknown } | null)?.ids);
  };

  const answer = (one: boolean): Sink => (sub: Submission, o: Outcome) => write(reply, sub.ctx as Res, renderStatuses(o, one, words));
  const one = answer(true);
  const many = answer(false);

  const timer = ctx.timer('status');
  /** A read of `ids` (null: in the body, of at most `maxBody` bytes), or `invalid` its ids' refusal. */
  const read = (r: HttpResponse, req: HttpRequest, res: Res, ids: string[] | RelayError | null, maxBody: number): Submission => {
    // The family only picks whose credential header is read first; reads are the account's, across families.
    const family: Family = req.getHeader('api-key') ? 'solana' : 'evm';
    const credential = pipeline.arrive(Kind.Query, family) ?? credentialOf(req);
    if (credential instanceof RelayError) return refusedAt(Kind.Query, family, 'status', credential, { ctx: res, conn: res, corked: true });
    const invalid = ids instanceof RelayError ? ids : null;
    return query('status', family, { credential, ip: ctx.ip(r, req), ctx: res, conn: res, corked: true, maxBody, invalid, queryIds: ids instanceof RelayError ? null : ids });
  };
  app.get('/v1/status/:id', (r: HttpResponse, req: HttpRequest) => {
    const res = reply.begin(r, timer);
    let id = '';
    try {
      id = decodeURIComponent(req.getParameter(0) ?? '');
    } catch {
      // Broken percent-encoding: refused below as an empty id.
    }
    const sub = read(r, req, res, statusIds([id]), 0);
    // With acceptor threads the answer waits for the others' trackers: the abort handler first.
    watchAbort(res);
    admitHttp(ctx, sub, one, res, req);
  });
  app.post('/v1/status', (r: HttpResponse, req: HttpRequest) => {
    const res = reply.begin(r, timer);
    admitHttp(ctx, read(r, req, res, null, MAX_STATUS_BODY), many, res, req, parse);
  });
}

/** Either family's header, or `?api-key=` (docs/protocol.md#status): the credential, or the head's refusal. */
function credentialOf(req: HttpRequest): string | null | RelayError {
  const q = req.getQuery();
  const fromQuery = q ? apiKeyQuery(q) : null;
  if (fromQuery instanceof RelayError) return fromQuery;
  return req.getHeader('api-key') || bearer(req.getHeader('authorization') || null) || fromQuery;
}
