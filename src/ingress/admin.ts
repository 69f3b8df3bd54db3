/**
 * Admin API and observability on their own listener (DECISIONS 3, 5):
 * accounts CRUD and batch records behind the admin bearer token; /metrics
 * and /healthz open. Account changes are applied to the live node before the
 * response is written.
 */
import { timingSafeEqual } from 'node:crypto';
import type { AccountStore } from '../store/accounts.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../obs/metrics.js';
import type { Uws, HttpRequest, HttpResponse, TemplatedApp } from './uws.js';
import { guard, readBody, send, sendJson, sendText, type Res } from './http.js';

/** Admin bodies are small JSON documents. */
const MAX_ADMIN_BODY = 64 * 1024;

export interface AdminDeps {
  uws: Uws;
  config: Config;
  token: string;
  accounts: AccountStore;
  batches: { get(id: string): unknown } | null;
  metrics: Metrics;
  health: () => { ok: boolean; [k: string]: unknown };
}

function httpStatusOf(e: unknown): number {
  const code = (e as { code?: string }).code;
  if (code === 'TXR_ACCOUNT_NOT_FOUND') return 404;
  if (code === 'TXR_ACCOUNT_INVALID') return 400;
  // 507 Insufficient Storage: the node cannot hold another live account; nothing was stored.
  if (code === 'TXR_ACCOUNT_LIMIT') return 507;
  return 500;
}

function errJson(e: unknown): string {
  const code = (e as { code?: string }).code ?? 'TXR_INTERNAL';
  const message = httpStatusOf(e) === 500 ? 'internal error' : (e as Error).message;
  return JSON.stringify({ error: { code, message } });
}

export function createAdminApp(d: AdminDeps): TemplatedApp {
  const app = d.uws.App();
  const expected = Buffer.from(d.token);

  const authorized = (req: HttpRequest): boolean => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.getHeader('authorization'));
    if (!m) return false;
    const got = Buffer.from(m[1]!);
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  /** Wraps a handler: token check, JSON body (for writes), errors rendered from their codes. */
  const route = (withBody: boolean, fn: (res: Res, params: string[], body: unknown) => Promise<[number, unknown]>) => {
    return (r: HttpResponse, req: HttpRequest) => {
      const res = guard(r);
      if (!authorized(req)) return sendJson(res, 401, JSON.stringify({ error: { code: 'TXR_ADMIN_AUTH', message: 'admin bearer token required' } }));
      const params = [req.getParameter(0) ?? ''];
      const run = (body: unknown) =>
        fn(res, params, body).then(
          ([status, out]) => sendJson(res, status, JSON.stringify(out)),
          (e) => sendJson(res, httpStatusOf(e), errJson(e)),
        );
      if (!withBody) return void run(undefined);
      readBody(
        res,
        req,
        MAX_ADMIN_BODY,
        (buf) => {
          let body: unknown = {};
          const text = Buffer.from(buf).toString('utf8').trim();
          if (text !== '') {
            try {
              body = JSON.parse(text);
            } catch {
              return sendJson(res, 400, JSON.stringify({ error: { code: 'TXR_PARSE', message: 'body is not valid JSON' } }));
            }
          }
          void run(body);
        },
        () => sendJson(res, 413, JSON.stringify({ error: { code: 'TXR_TOO_LARGE', message: `admin bodies are limited to ${MAX_ADMIN_BODY} bytes` } })),
      );
    };
  };

  app.post('/admin/accounts', route(true, async (_res, _p, body) => [201, await d.accounts.create(body as any, d.config.plans)]));
  app.get('/admin/accounts', route(false, async () => [200, d.accounts.list()]));
  app.get('/admin/accounts/:id', route(false, async (_r, [id]) => [200, requireAccount(d.accounts.get(id!))]));
  app.patch('/admin/accounts/:id', route(true, async (_r, [id], body) => [200, await d.accounts.update(id!, body as any)]));
  app.del('/admin/accounts/:id', route(false, async (_r, [id]) => [200, await d.accounts.revoke(id!)]));
  app.get(
    '/admin/batches/:id',
    route(false, async (_r, [id]) => {
      const rec = d.batches?.get(id!);
      if (!rec) return [404, { error: { code: 'TXR_BATCH_NOT_FOUND', message: 'no batch record with that id' } }];
      return [200, rec];
    }),
  );

  app.get('/metrics', (r) => {
    const res = guard(r);
    d.metrics.render().then(
      (m) => send(res, 200, m.contentType, m.body),
      () => sendText(res, 500, 'metrics unavailable'),
    );
  });
  app.get('/healthz', (r) => {
    const res = guard(r);
    const h = d.health();
    sendJson(res, h.ok ? 200 : 503, JSON.stringify(h));
  });
  app.any('/*', (r) => sendJson(guard(r), 404, JSON.stringify({ error: { code: 'TXR_NOT_FOUND', message: 'no such admin route' } })));
  return app;
}

function requireAccount<T>(rec: T | undefined): T {
  if (!rec) throw Object.assign(new Error('no account with that id'), { code: 'TXR_ACCOUNT_NOT_FOUND' });
  return rec;
}
