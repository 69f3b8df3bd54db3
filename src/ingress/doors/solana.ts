/**
 * Solana HTTP doors (docs/protocol.md#solana-raw-transactions,
 * #solana-bundles, #ping): `POST /v2`, `POST /v2/batch`, `GET /ping`.
 * Answers are a JSON result, or the error's plain text.
 */
import { E, RelayError, SOLANA_HEADER } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import { Kind, bundle, refusedAt, solanaTx, type Sink, type Submission } from '../../pipeline/submission.js';
import { MAX_V1_TX_SIZE } from '../../chains/solana/decode.js';
import { MAX_BUNDLE_BODY } from '../../pipeline/bundle.js';
import { TAKES_SOLANA, tipsWords, write, type DoorWords } from '../../answers/answer.js';
import { renderSolana } from '../../answers/solana.js';
import { TEXT_TYPE, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, type DoorContext } from './context.js';
import { apiKeyQuery } from './api-key.js';

export function registerSolanaDoors(ctx: DoorContext): void {
  const { app, reply, pipeline } = ctx;
  const words: DoorWords = { takes: TAKES_SOLANA, tips: tipsWords(ctx.tipAccounts) };

  const sink: Sink = (sub: Submission, o: Outcome) => {
    const res = sub.ctx as Res;
    res.requestId = o.requestId;
    write(reply, res, renderSolana(o, words));
  };

  const door = (path: string, label: string, kind: Kind, maxBody: number): void => {
    const timer = ctx.timer(label);
    // Content-Type is ignored: the body is the transaction's bytes whatever it says.
    app.post(path, (r: HttpResponse, req: HttpRequest) => {
      const res = reply.begin(r, timer);
      // Shed or draining: refused before a header is read.
      const off = pipeline.arrive(kind, 'solana');
      const credential = off ?? credentialOf(req);
      let sub: Submission;
      if (credential instanceof RelayError) sub = refusedAt(kind, 'solana', label, credential, { ctx: res, conn: res, corked: true });
      else if (kind === Kind.SolanaTx) sub = solanaTx(label, { credential, ip: ctx.ip(r, req), ctx: res, conn: res, corked: true, maxBody });
      else sub = bundle(label, { credential, ip: ctx.ip(r, req), ctx: res, conn: res, corked: true, maxBody });
      admitHttp(ctx, sub, sink, res, req);
    });
  };
  door('/v2', 'solana-v2', Kind.SolanaTx, MAX_V1_TX_SIZE);
  door('/v2/batch', 'solana-batch', Kind.Bundle, MAX_BUNDLE_BODY);
}

/** The api-key header or `?api-key=` (docs/protocol.md#authentication), null when neither, or the head's refusal. */
function credentialOf(req: HttpRequest): string | null | RelayError {
  const query = req.getQuery();
  // Most requests have no query string: the parser is not even entered.
  const fromQuery = query ? apiKeyQuery(query) : null;
  if (fromQuery instanceof RelayError) return fromQuery;
  const fromHeader = req.getHeader('api-key') || null;
  if (fromQuery !== null && fromHeader !== null) return new RelayError(E.INVALID_REQUEST, 'send the account UUID in one of the api-key header or ?api-key=');
  const credential = fromHeader ?? fromQuery;
  // Only the EVM header: name the one to use (the body still begins with `Not Found api-key`).
  if (credential === null && req.getHeader('authorization') !== '') return new RelayError(E.AUTH_MISSING, SOLANA_HEADER);
  return credential;
}

/** `GET /ping`: liveness, and the heartbeat that keeps a client's connection open. */
export function registerPing(ctx: DoorContext): void {
  const node = ctx.node;
  ctx.app.get('/ping', (res) => {
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', TEXT_TYPE).writeHeader('x-svc-node', node).end('pong');
    });
  });
}
