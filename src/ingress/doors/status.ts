/**
 * The status API over HTTP (docs/protocol.md#status): `GET /v1/status/{id}`
 * and `POST /v1/status` with `{"ids": [...]}`. Same credentials as
 * submission, either family's header; a read of its own rate, never the
 * account's submission quota. Answers are JSON; errors are the JSON-RPC
 * error object with id null, as on the EVM doors.
 */
import { E, RelayError } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import { Kind, Submission, type DoorIo, type Sink } from '../../pipeline/submission.js';
import { TAKES_STATUS, write, type DoorWords } from '../../answers/answer.js';
import { renderStatuses } from '../../answers/rpc.js';
import { watchAbort, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, httpIo, type DoorContext } from './context.js';
import { bearer } from './evm.js';
import { statusIds } from './jsonrpc.js';
import { TOO_DEEP_DETAIL, tooDeep } from './rpc-scan.js';
import { apiKeyQuery } from './api-key.js';

/** `{"ids": [100 ids of 128 characters]}` fits with room to spare. */
const MAX_STATUS_BODY = 16 * 1024;

export function registerStatusDoor(ctx: DoorContext): void {
  const { app, reply } = ctx;
  const words: DoorWords = { takes: TAKES_STATUS, tips: '' };
  const io: DoorIo = {
    ...httpIo(ctx),
    head: (sub) => {
      const req = sub.req as HttpRequest;
      const query = req.getQuery();
      const fromQuery = query ? apiKeyQuery(query) : null;
      if (fromQuery instanceof RelayError) return fromQuery;
      sub.credential = req.getHeader('api-key') || bearer(req.getHeader('authorization') || null) || fromQuery;
      return null;
    },
    parse: (sub, body) => {
      if (tooDeep(body)) return new RelayError(E.JSON_TOO_DEEP, TOO_DEEP_DETAIL);
      let msg: unknown;
      try {
        msg = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
      } catch {
        return new RelayError(E.PARSE, 'body is not valid JSON');
      }
      const ids = statusIds((msg as { ids?: unknown } | null)?.ids);
      if (ids instanceof RelayError) return ids;
      sub.queryIds = ids;
      return null;
    },
  };

  const answer = (one: boolean): Sink => (sub: Submission, o: Outcome) => write(reply, sub.ctx as Res, renderStatuses(o, one, words));
  const one = answer(true);
  const many = answer(false);

  const timer = ctx.timer('status');
  const start = (r: HttpResponse, req: HttpRequest): Submission => {
    // The family only picks whose credential header is read first; reads are the account's, across families.
    const sub = new Submission(Kind.Query, req.getHeader('api-key') ? 'solana' : 'evm', io);
    sub.door = 'status';
    sub.ctx = reply.begin(r, timer);
    sub.req = req;
    return sub;
  };
  app.get('/v1/status/:id', (r: HttpResponse, req: HttpRequest) => {
    const sub = start(r, req);
    let id = '';
    try {
      id = decodeURIComponent(req.getParameter(0) ?? '');
    } catch {
      // Broken percent-encoding: refused below as an empty id.
    }
    const ids = statusIds([id]);
    if (ids instanceof RelayError) sub.invalid = ids;
    else sub.queryIds = ids;
    // With acceptor threads the answer waits for the others' trackers: the abort handler first.
    watchAbort(sub.ctx as Res);
    admitHttp(ctx, sub, one, sub.ctx as Res);
  });
  app.post('/v1/status', (r: HttpResponse, req: HttpRequest) => {
    const sub = start(r, req);
    sub.maxBody = MAX_STATUS_BODY;
    admitHttp(ctx, sub, many, sub.ctx as Res);
  });
}
