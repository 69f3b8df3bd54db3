/**
 * A real HTTP JSON-RPC upstream for tests (node:http): records every request
 * body it receives and answers as told. Understands JSON-RPC batch arrays.
 *
 *   const up = await startUpstream();
 *   up.url                    // http://127.0.0.1:PORT/ (or opts.path)
 *   up.requests               // parsed bodies in arrival order: an object, or an array for a batch
 *   up.raw                    // the same bodies as received text
 *   up.calls()                // every call flattened: { id, method, params }
 *   up.results                // the calls answered with a result, in answer order
 *   up.setMode('http-500')    // see UpstreamMode
 *   await up.waitForCalls(10) // resolves once 10 calls have arrived
 *   await up.close()
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface UpstreamCall {
  id: unknown;
  method: string;
  params: any;
}

/**
 * How the upstream answers:
 * - 'ok': a result for every call (a fake hash, signature or bundle id);
 * - 'rpc-error': a JSON-RPC error for every call (HTTP 200);
 * - 'http-500': HTTP 500 with a plain-text body;
 * - { status }: that HTTP status with a plain-text body;
 * - 'drop': destroys the connection without answering;
 * - 'hang': never answers (the request stays open until the client gives up or the server closes);
 * - 'garbage': HTTP 200 with a body that is not JSON;
 * - 'no-batch': answers a batch array with one error object, single calls with results;
 * - { rejectIf, message }: a JSON-RPC error (with `message(call)` as text, if given) for the calls
 *   the predicate picks, results for the rest;
 * - { delayMs, then }: waits, then answers per `then` (default 'ok'); a long delay is a time-out;
 * - { first, mode, then }: the first `first` requests (from now) are answered per `mode`, later ones per `then`.
 */
export type UpstreamMode =
  | 'ok'
  | 'rpc-error'
  | 'http-500'
  | { status: number }
  | 'drop'
  | 'hang'
  | 'garbage'
  | 'no-batch'
  | { rejectIf: (call: UpstreamCall) => boolean; message?: (call: UpstreamCall) => string }
  | { delayMs: number; then?: UpstreamMode }
  | { first: number; mode: UpstreamMode; then: UpstreamMode };

export interface StartUpstreamOptions {
  mode?: UpstreamMode;
  /** Path part of `url`, e.g. '/v2/SECRET' to check that logs never show it. */
  path?: string;
}

export interface TestUpstream {
  url: string;
  requests: any[];
  raw: string[];
  results: UpstreamCall[];
  calls(): UpstreamCall[];
  setMode(mode: UpstreamMode): void;
  waitForCalls(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startUpstream(opts: StartUpstreamOptions = {}): Promise<TestUpstream> {
  let mode: UpstreamMode = opts.mode ?? 'ok';
  const requests: any[] = [];
  const raw: string[] = [];
  const results: UpstreamCall[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let waiters: { n: number; resolve: () => void }[] = [];

  const callCount = (): number => requests.reduce((n: number, r) => n + (Array.isArray(r) ? r.length : 1), 0);
  const notify = (): void => {
    const have = callCount();
    const due = waiters.filter((w) => w.n <= have);
    waiters = waiters.filter((w) => w.n > have);
    for (const w of due) w.resolve();
  };

  const answer = (m: UpstreamMode, req: IncomingMessage, res: ServerResponse, body: any): void => {
    if (typeof m === 'object' && 'first' in m) {
      if (m.first > 0) {
        m.first--;
        answer(m.mode, req, res, body);
      } else answer(m.then, req, res, body);
      return;
    }
    if (typeof m === 'object' && 'delayMs' in m) {
      const t = setTimeout(() => {
        timers.delete(t);
        answer(m.then ?? 'ok', req, res, body);
      }, m.delayMs);
      timers.add(t);
      return;
    }
    if (m === 'drop') {
      req.socket.destroy();
      return;
    }
    if (m === 'hang') return;
    if (typeof m === 'object' && 'status' in m) {
      res.writeHead(m.status, { 'content-type': 'text/plain' });
      res.end('status ' + m.status);
      return;
    }
    if (m === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>bad gateway</html>');
      return;
    }
    if (m === 'http-500') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error');
      return;
    }
    let out: unknown;
    if (Array.isArray(body)) {
      out = m === 'no-batch' ? { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } } : body.map((c) => one(m, c));
    } else {
      out = one(m, body);
    }
    for (const r of Array.isArray(out) ? out : [out]) {
      if (r && typeof r === 'object' && 'result' in r) {
        const call = (Array.isArray(body) ? body : [body]).find((c: any) => c?.id === (r as any).id);
        if (call) results.push({ id: call.id, method: call.method, params: call.params });
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(out));
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        body = { unparseable: text };
      }
      raw.push(text);
      requests.push(body);
      notify();
      answer(mode, req, res, body);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}${opts.path ?? '/'}`,
    requests,
    raw,
    results,
    calls: () => requests.flatMap((r) => (Array.isArray(r) ? r : [r])).map((c) => ({ id: c.id, method: c.method, params: c.params })),
    setMode: (m) => {
      mode = m;
    },
    waitForCalls: (n, timeoutMs = 5_000) =>
      new Promise<void>((resolve, reject) => {
        if (callCount() >= n) return resolve();
        const t = setTimeout(() => reject(new Error(`upstream saw ${callCount()} calls, expected ${n}`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      }),
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function one(m: UpstreamMode, call: any): unknown {
  const id = call?.id ?? null;
  const c: UpstreamCall = { id, method: call?.method, params: call?.params };
  const custom = typeof m === 'object' && 'rejectIf' in m ? m : null;
  if (m === 'rpc-error' || (custom !== null && custom.rejectIf(c))) {
    return { jsonrpc: '2.0', id, error: { code: -32000, message: custom?.message?.(c) ?? 'rejected by test upstream' } };
  }
  return { jsonrpc: '2.0', id, result: fakeResult(call?.method, id) };
}

function fakeResult(method: unknown, id: unknown): string {
  const n = String(id).padStart(8, '0');
  if (method === 'eth_sendRawTransaction') return '0x' + n.padEnd(64, '0');
  if (method === 'sendBundle') return 'bundle-' + n;
  return 'sig' + n;
}
