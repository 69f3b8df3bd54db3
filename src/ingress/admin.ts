/**
 * The admin API on its own listener (docs/protocol.md#admin-api): accounts
 * and batch records behind the bearer token; /metrics and /healthz open.
 * Account changes are in effect on every thread before the answer.
 */
import { timingSafeEqual } from 'node:crypto';
import { E, TxrelayError, type ErrorSpec } from '../errors.js';
import type { AccountInput, Registry } from '../store/accounts.js';
import type { Plans } from '../store/accounts.js';
import type { Metrics } from '../obs/metrics.js';
import type { Uws, HttpRequest, HttpResponse, TemplatedApp } from './uws.js';
import { readBodyTo, type BodyTarget } from './body.js';
import { write } from '../answers/answer.js';
import { adminRefusal, renderAdminError, renderAdminResult } from '../answers/admin.js';
import { JSON_TYPE, TEXT_TYPE, type Replier, type Res } from './reply.js';
import { TOO_DEEP_DETAIL, tooDeep } from './doors/rpc-scan.js';
import { uwsTlsOptions, type TlsPair } from './tls.js';

const MAX_ADMIN_BODY = 64 * 1024;

interface AdminDeps {
  uws: Uws;
  reply: Replier;
  plans: Plans;
  token: string;
  accounts: Registry;
  /** Resolves once an account change has reached every thread that admits. */
  settled: () => Promise<void>;
  batches: { get(id: string): unknown } | null;
  metrics: Metrics;
  health: () => { ok: boolean; [k: string]: unknown };
  /** HTTPS with this pair (docs/operations.md#tls). */
  tls?: TlsPair | null;
}

/** A key's digest stays inside the registry: an operator addresses accounts by id or key. */
const publicFields = (k: string, v: unknown): unknown => (k === 'key_sha256' ? undefined : v);

type Handler = (params: string[], body: unknown) => Promise<[number, unknown] | [number, unknown, [string, string][]]>;

/** Accounts per page of `GET /admin/accounts`: a page is serialised on the thread that admits, so it stays small. */
const PAGE_DEFAULT = 1000;
const PAGE_MAX = 10_000;

export function createAdminApp(d: AdminDeps): TemplatedApp {
  const app = d.tls ? d.uws.SSLApp(uwsTlsOptions(d.tls)) : d.uws.App();
  const reply = d.reply;
  const expected = Buffer.from(d.token);

  const authorized = (req: HttpRequest): boolean => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.getHeader('authorization'));
    if (!m) return false;
    const got = Buffer.from(m[1]!);
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  const fail = (res: Res, spec: ErrorSpec, message = spec.message): void => write(reply, res, adminRefusal(spec, message));

  const run = (res: Res, fn: Handler, params: string[], body: unknown): void => {
    fn(params, body).then(
      ([status, out, headers]) => write(reply, res, renderAdminResult(status, out, headers, publicFields)),
      (e: unknown) => write(reply, res, renderAdminError(e)),
    );
  };

  class JsonBody implements BodyTarget {
    readonly wantsInto = false;
    constructor(
      private readonly res: Res,
      private readonly fn: Handler,
      private readonly params: string[],
    ) {}
    into(): Uint8Array | null {
      return null;
    }
    bodyBytes(buf: Uint8Array): void {
      let body: unknown = {};
      const text = Buffer.from(buf).toString('utf8').trim();
      if (text !== '') {
        if (tooDeep(buf)) return fail(this.res, E.JSON_TOO_DEEP, TOO_DEEP_DETAIL);
        try {
          body = JSON.parse(text);
        } catch {
          return fail(this.res, E.PARSE, 'body is not valid JSON');
        }
      }
      run(this.res, this.fn, this.params, body);
    }
    tooLarge(): void {
      fail(this.res, E.TOO_LARGE, `admin bodies are limited to ${MAX_ADMIN_BODY} bytes`);
    }
    // Admin bodies are read without a budget (their size is bounded, the token checked first).
    overBudget(): void {
      fail(this.res, E.CAPACITY, 'request bodies being read are over budget');
    }
  }

  /** A handler behind the token; writes read their JSON body first. */
  const route = (withBody: boolean, fn: Handler) => {
    return (r: HttpResponse, req: HttpRequest) => {
      const res = reply.guard(r);
      if (!authorized(req)) return fail(res, E.ADMIN_AUTH);
      const params = [req.getParameter(0) ?? '', req.getQuery('after') ?? '', req.getQuery('limit') ?? ''];
      if (!withBody) return run(res, fn, params, undefined);
      readBodyTo(res, req, MAX_ADMIN_BODY, new JsonBody(res, fn, params), null);
    };
  };

  const applied = async <T>(rec: Promise<T>): Promise<T> => {
    const r = await rec;
    await d.settled();
    return r;
  };
  app.post('/admin/accounts', route(true, async (_p, body) => [201, await applied(d.accounts.create(body as AccountInput, d.plans))]));
  app.get(
    '/admin/accounts',
    route(false, async ([, after, limit]) => {
      const from = after === '' ? 0 : Number(after);
      const n = limit === '' ? PAGE_DEFAULT : Number(limit);
      if (!Number.isSafeInteger(from) || from < 0) throw new TxrelayError(E.ACCOUNT_INVALID, 'after must be an account id (a non-negative integer)');
      if (!Number.isInteger(n) || n < 1 || n > PAGE_MAX) throw new TxrelayError(E.ACCOUNT_INVALID, `limit must be 1 to ${PAGE_MAX}`);
      const page = d.accounts.page(from, n);
      // More after this page: the client asks again with after = the last id (docs/protocol.md#admin-api).
      const more = page.length === n && d.accounts.page(page[n - 1]!.id, 1).length > 0;
      return more ? [200, page, [['x-svc-next-after', String(page[n - 1]!.id)]]] : [200, page];
    }),
  );
  app.get('/admin/accounts/:id', route(false, async ([id]) => [200, d.accounts.require(id!)]));
  app.patch('/admin/accounts/:id', route(true, async ([id], body) => [200, await applied(d.accounts.update(id!, body as AccountInput))]));
  app.del('/admin/accounts/:id', route(false, async ([id]) => [200, await applied(d.accounts.revoke(id!))]));
  app.get(
    '/admin/batches/:id',
    route(false, async ([id]) => {
      const rec = d.batches?.get(id!);
      if (!rec) throw new TxrelayError(E.BATCH_NOT_FOUND);
      return [200, rec];
    }),
  );

  app.get('/metrics', (r) => {
    const res = reply.guard(r);
    d.metrics.render().then(
      (m) => reply.send(res, 200, m.contentType, m.body),
      () => reply.send(res, 500, TEXT_TYPE, 'metrics unavailable'),
    );
  });
  app.get('/healthz', (r) => {
    const res = reply.guard(r);
    const h = d.health();
    reply.send(res, h.ok ? 200 : 503, JSON_TYPE, JSON.stringify(h));
  });
  app.any('/*', (r) => fail(reply.guard(r), E.NOT_FOUND, 'no such admin route'));
  return app;
}
