/**
 * One keep-alive undici Pool per client plus a heartbeat: the relay closes
 * idle HTTP connections after ~10 s (docs/protocol.md#deviations), so while the client is
 * idle it sends `GET /ping` every `heartbeatMs` to keep its connections warm.
 */
// undici's Pool rather than Node's global fetch (itself undici): `request()` skips fetch's
// WHATWG Request/Response/stream layer, several times more requests per second on one
// core against a local server, and the pool's connection count and keep-alive times are
// set here rather than on the process-wide dispatcher.
import { Pool } from 'undici';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

interface RequestOptions {
  method: 'GET' | 'POST';
  /** Path relative to the base URL, starting with '/'. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

export class HttpTransport {
  private readonly pool: Pool;
  private readonly prefix: string;
  private lastUse = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(url: string, heartbeatMs: number) {
    const u = new URL(url);
    this.prefix = u.pathname.replace(/\/+$/, '');
    this.pool = new Pool(u.origin, { connections: 4, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
    if (heartbeatMs > 0) {
      this.timer = setInterval(() => {
        if (Date.now() - this.lastUse >= heartbeatMs) void this.ping();
      }, heartbeatMs);
      // The heartbeat must never keep a process alive on its own.
      this.timer.unref();
    }
  }

  async request(o: RequestOptions): Promise<HttpResponse> {
    this.lastUse = Date.now();
    const path = o.path === '/' && this.prefix !== '' ? this.prefix : this.prefix + o.path;
    const res = await this.pool.request({ method: o.method, path, headers: o.headers, body: o.body });
    const text = await res.body.text();
    this.lastUse = Date.now();
    return { status: res.statusCode, headers: res.headers, text };
  }

  /** One `GET /ping`; failures are ignored (the next real request reconnects). */
  async ping(): Promise<boolean> {
    if (this.closed) return false;
    try {
      const r = await this.request({ method: 'GET', path: '/ping' });
      return r.status === 200;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.pool.close();
  }
}

export function header(h: HttpResponse['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

export function safeJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Connect errors: no connection was made (refused, no route, no such host),
 * so no request left this host and resending is safe. Any other failure may
 * come after the request was written.
 */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

export function neverSent(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NEVER_CONNECTED.has(code);
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
