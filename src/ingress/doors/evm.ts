/**
 * The EVM plain-text door (docs/protocol.md#evm-single-transactions):
 * `POST /v2/svc_send_raw_transaction`, one `0x` transaction as the body,
 * exactly one of `?auth=` or a Bearer token, readable by browsers (CORS).
 */
import { E, RelayError } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import { Kind, evmTx, refusedAt, type Sink, type Submission } from '../../pipeline/submission.js';
import { TAKES_EVM, write, PREFLIGHT, type DoorWords } from '../../answers/answer.js';
import { renderEvmText } from '../../answers/evm.js';
import type { Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, type DoorContext } from './context.js';

/** `Authorization: Bearer <uuid>` -> the UUID; '' when the header is present but not a Bearer credential. */
/** An Authorization header that is not `Bearer <uuid>` is told the form (AUTH_MISSING's detail). */
export const BEARER_FORM = ' (the Authorization header must read `Bearer <uuid>`)';

export function bearer(authorization: string | null): string | null {
  if (authorization === null) return null;
  // The usual form, matched as the expression below would, without its match array (~150 B per request).
  if (authorization.length > 7 && authorization.charCodeAt(6) === 0x20 && bearerWord(authorization) && visibleFrom(authorization, 7)) {
    return authorization.slice(7);
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : '';
}

function bearerWord(s: string): boolean {
  const word = 'bearer';
  for (let i = 0; i < word.length; i++) if ((s.charCodeAt(i) | 0x20) !== word.charCodeAt(i)) return false;
  return true;
}

function visibleFrom(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/** Empty, or exactly one `auth` parameter, well-formed: the UUID, null when absent, or the refusal. */
export function parseAuthQuery(query: string): string | null | RelayError {
  if (query === '') return null;
  // The usual `auth=<uuid>`: nothing to decode or split.
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

function plainValue(s: string, from: number): boolean {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT || c === PLUS || c === AMP) return false;
  }
  return true;
}

export function registerEvmTextDoor(ctx: DoorContext): void {
  const { app, reply, pipeline } = ctx;
  const words: DoorWords = { takes: TAKES_EVM, tips: '' };

  const sink: Sink = (sub: Submission, o: Outcome) => {
    const res = sub.ctx as Res;
    res.requestId = o.requestId;
    write(reply, res, renderEvmText(o, words));
  };

  app.options('/v2/svc_send_raw_transaction', (res) => {
    res.cork(() => {
      res.writeStatus('204 No Content');
      for (const [k, v] of PREFLIGHT) res.writeHeader(k, v);
      res.end();
    });
  });

  const timer = ctx.timer('evm-text');
  app.post('/v2/svc_send_raw_transaction', (r: HttpResponse, req: HttpRequest) => {
    const res = reply.begin(r, timer);
    // Shed or draining: refused before a header is read.
    const credential = pipeline.arrive(Kind.EvmTx, 'evm') ?? credentialOf(req);
    const sub: Submission =
      credential instanceof RelayError
        ? refusedAt(Kind.EvmTx, 'evm', 'evm-text', credential, { ctx: res, conn: res, corked: true })
        : evmTx('evm-text', { credential, ip: ctx.ip(r, req), ctx: res, conn: res, corked: true, maxBody: ctx.maxBody });
    admitHttp(ctx, sub, sink, res, req);
  });
}

/** Plain text, and exactly one of `?auth=` or Bearer (docs/protocol.md#authentication): the credential, or the head's refusal. */
function credentialOf(req: HttpRequest): string | null | RelayError {
  if (!/^text\/plain\s*(;|$)/i.test(req.getHeader('content-type'))) return new RelayError(E.UNSUPPORTED_MEDIA, 'use text/plain');
  const fromQuery = parseAuthQuery(req.getQuery() ?? '');
  if (fromQuery instanceof RelayError) return fromQuery;
  const fromHeader = bearer(req.getHeader('authorization') || null);
  if (fromQuery !== null && fromHeader !== null) return new RelayError(E.INVALID_REQUEST, 'use exactly one authentication method');
  const credential = fromQuery ?? fromHeader;
  if (credential === '') return new RelayError(E.AUTH_MISSING, BEARER_FORM);
  return credential;
}
