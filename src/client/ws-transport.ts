/**
 * The socket under a `RelaySocket`: which WebSocket implementation to use
 * (a browser's, the `ws` package, Node's global), the `/ws` URL, and what a
 * refused upgrade said (docs/protocol.md#websocket). Nothing here imports a
 * Node module, so a browser bundle can take it.
 */

/**
 * The part of a WHATWG WebSocket this client uses: browsers', Node ≥ 22's
 * (undici) and the `ws` package's all fit.
 */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** Called as `new WebSocket(url)`, or `new WebSocket(url, { headers })` when the key goes in a header. */
export type WebSocketConstructor = new (url: string, init?: any) => WebSocketLike;

/** What a refused upgrade answered. */
export interface Refusal {
  status: number;
  message: string;
  code?: number;
  retryAfterMs?: number;
}

/** The `ws` package's `unexpected-response` response (an IncomingMessage). */
export interface UpgradeResponse {
  statusCode?: number;
  headers: Record<string, string | string[] | undefined>;
  on(ev: 'data', f: (c: Uint8Array) => void): void;
  on(ev: 'end' | 'error' | 'close', f: () => void): void;
}

/** The refusal's status, its JSON-RPC error and `Retry-After`; the body is read up to 4 KiB. */
export function readRefusal(res: UpgradeResponse): Promise<Refusal> {
  return new Promise((resolve) => {
    let body = '';
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const h = res.headers['retry-after'];
      const after = Number(Array.isArray(h) ? h[0] : h);
      resolve({ status: res.statusCode ?? 0, ...errorBody(body), retryAfterMs: Number.isFinite(after) && after >= 0 ? after * 1000 : undefined });
    };
    res.on('data', (c) => {
      if (body.length < 4096) body += new TextDecoder().decode(c);
    });
    res.on('end', finish);
    res.on('error', finish);
    res.on('close', finish);
    const timer = setTimeout(finish, 2000);
  });
}

function errorBody(text: string): { message: string; code?: number } {
  try {
    const e = JSON.parse(text)?.error;
    if (typeof e?.message === 'string') return { message: e.message, code: typeof e.code === 'number' ? e.code : undefined };
  } catch {
    // Not JSON: the text itself.
  }
  return { message: text.trim().slice(0, 200) || 'no body' };
}

/** Ends a socket at once, whatever its state: `terminate` where there is one (ws), else `close`. */
export function abandon(sock: WebSocketLike): void {
  try {
    const t = (sock as { terminate?: () => void }).terminate;
    if (typeof t === 'function') t.call(sock);
    else sock.close();
  } catch {
    // Already closed.
  }
}

/** The `/ws` URL of a relay given as an http(s) or ws(s) base, or as its `/ws` URL. */
export function socketUrl(url: string): URL {
  const u = new URL(url);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  else if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new TypeError(`url must be http(s) or ws(s), got ${u.protocol}`);
  const path = u.pathname.replace(/\/+$/, '');
  u.pathname = path.endsWith('/ws') ? path : path + '/ws';
  return u;
}

let wsPackage: WebSocketConstructor | undefined;
let wsLoading: Promise<WebSocketConstructor> | undefined;

/** The `ws` package, imported on first use only: a browser bundle never needs it. */
function loadWsPackage(): Promise<WebSocketConstructor> {
  const name = 'ws';
  wsLoading ??= import(/* webpackIgnore: true */ /* @vite-ignore */ name).then((m: any) => {
    wsPackage = (m.default ?? m.WebSocket) as WebSocketConstructor;
    return wsPackage;
  });
  return wsLoading;
}

function isNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string';
}

/** The implementation to use: `impl` if given; in Node the `ws` package, else the global `WebSocket`. */
export function loadWebSocket(impl: WebSocketConstructor | undefined): Promise<WebSocketConstructor> {
  if (impl) return Promise.resolve(impl);
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  // In Node the ws package first, even where a global WebSocket exists (Node >= 22): it reports the
  // upgrade's HTTP status (a 401 stops reconnecting) where undici's hides it.
  if (isNode()) return loadWsPackage().catch((e: unknown) => (typeof global === 'function' ? global : Promise.reject(e)));
  if (typeof global === 'function') return Promise.resolve(global);
  return loadWsPackage();
}

/**
 * Where the key goes by default: the `api-key` header where the
 * implementation can set headers (the `ws` package, Node's global), else
 * `?api-key=` (a browser cannot set a WebSocket's headers).
 */
export function defaultAuth(Impl: WebSocketConstructor): 'header' | 'query' {
  return Impl === wsPackage || isNode() ? 'header' : 'query';
}

/**
 * For a WHATWG WebSocket whose handshake failed: one status read with the
 * key (`GET /v1/status/-`), whose `401` says the key is refused. Anything
 * else (another status, no `fetch`, a browser's CORS refusal) says nothing,
 * and the socket goes on reconnecting.
 */
export async function probeRefusal(url: URL, apiKey: string): Promise<Refusal | null> {
  const f = (globalThis as { fetch?: (u: string, i: object) => Promise<{ status: number; text(): Promise<string> }> }).fetch;
  if (typeof f !== 'function') return null;
  const u = new URL(url);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  u.pathname = u.pathname.replace(/\/ws$/, '') + '/v1/status/-';
  u.search = '';
  try {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), 5000);
    const res = await f(u.toString(), { headers: { 'api-key': apiKey }, signal: ac.signal }).finally(() => clearTimeout(t));
    const text = await res.text();
    return res.status === 401 ? { status: 401, ...errorBody(text) } : null;
  } catch {
    return null;
  }
}

/** The relay's address without credentials, for messages. */
export function where(u: URL): string {
  return u.origin + u.pathname;
}
