/**
 * The fallback HTTP acceptor: node:http behind the uWS interfaces of ./uws.ts,
 * for where no uWS build loads. It enforces uWS's rules (no request object
 * after its handler returned, no response touched after it ended or aborted,
 * no handler returning without answering or onAborted), so the tests catch
 * those bugs on either acceptor.
 *
 * Where node:http differs from uWS:
 * - idle keep-alive connections close after 60 s (uWS: ~10 s, docs/protocol.md#deviations);
 * - pipelined requests are answered in order (uWS closes the connection when a
 *   request arrives before the previous answer, unless that was synchronous);
 * - slow clients are bounded: the header block within 10 s, the whole request within 60 s;
 * - a missing Host or a malformed request gets a 400 before the close (uWS
 *   closes without one), and so does a repeated Content-Length (uWS accepts
 *   equal ones);
 * - body chunks are handed over as their own ArrayBuffers (still valid after the call);
 * - with ws routes, a request that asks for an upgrade is answered on a
 *   connection of its own: it closes after the answer (uWS keeps it alive).
 * One request and its answer: node-exchange.ts. WebSocket routes: node-ws.ts.
 */
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import { NodeWsHub } from './node-ws.js';
import type { FilterSocket, RouteHandler, SslOptions, TemplatedApp, Uws, WebSocketBehavior, us_listen_socket } from './uws.js';
import { TLS_ALPN, TLS_MIN_VERSION } from './tls.js';
import { CONNECTION, Connection, NodeRequest, NodeResponse, rawHeader, type Upgrading } from './node-exchange.js';

/** The idle time-out the protocol promises (node:http adds a second of grace). */
const IDLE_TIMEOUT_MS = 60_000;
/** Slowloris (uWS drops a connection after 10 s without progress). */
const HEADERS_TIMEOUT_MS = 10_000;
/** The largest body http.max_body_bytes allows (64 MiB) at ~1 MB/s. */
const REQUEST_TIMEOUT_MS = 60_000;
/** node:http's default (30 s) would let the time-outs above run 30 s late. */
const TIMEOUT_CHECK_MS = 1000;
/** uWS's default (UWS_HTTP_MAX_HEADERS_SIZE), so a 431 does not depend on the acceptor. */
const MAX_HEADER_BYTES = 4096;


// ---------------------------------------------------------------- routing

const enum Seg {
  Static = 0,
  Param = 1,
  Wildcard = 2,
}

interface Route {
  /** Lower-case method, or '*' for any. */
  method: string;
  segments: string[];
  kinds: Seg[];
  handler: RouteHandler;
  order: number;
  /** A ws route: it passes on (uWS: yields) every request but a WebSocket handshake. */
  ws: boolean;
}

function parsePattern(pattern: string): { segments: string[]; kinds: Seg[] } {
  const segments = pattern.split('/').slice(1);
  const kinds = segments.map((s) => (s === '*' ? Seg.Wildcard : s.startsWith(':') ? Seg.Param : Seg.Static));
  const wild = kinds.indexOf(Seg.Wildcard);
  if (wild >= 0 && wild !== kinds.length - 1) throw new Error(`route ${pattern}: '*' must be the last segment`);
  return { segments, kinds };
}

/** uWS's priority: static segments before parameters before wildcards, then a method before `any`, then order. */
function compareRoutes(a: Route, b: Route): number {
  const n = Math.max(a.kinds.length, b.kinds.length);
  for (let i = 0; i < n; i++) {
    const ka = a.kinds[i] ?? -1;
    const kb = b.kinds[i] ?? -1;
    if (ka !== kb) return ka - kb;
  }
  if ((a.method === '*') !== (b.method === '*')) return a.method === '*' ? 1 : -1;
  return a.order - b.order;
}

/** Matches a path's segments; fills `params`; a wildcard takes the rest (even nothing). */
function matchRoute(r: Route, segs: string[], params: string[]): boolean {
  params.length = 0;
  for (let i = 0; i < r.kinds.length; i++) {
    const k = r.kinds[i]!;
    if (k === Seg.Wildcard) return true;
    if (i >= segs.length) return false;
    if (k === Seg.Param) params.push(segs[i]!);
    else if (segs[i] !== r.segments[i]) return false;
  }
  return segs.length === r.kinds.length;
}

// ---------------------------------------------------------------- app

interface ListenToken extends us_listen_socket {
  server: http.Server;
}

const HTTP_505 = 'HTTP Version Not Supported: use HTTP/1.1';
const FORBIDDEN_RETURN = 'Returning from a request handler without responding or attaching an onAborted handler is forbidden (uWS terminates)';

class NodeApp implements TemplatedApp {
  private readonly routes: Route[] = [];
  /** Exact static paths by `method path`: the doors' routes resolve without a scan. */
  private exact = new Map<string, Route>();
  private sorted = true;
  private readonly filters: ((conn: FilterSocket, count: number) => void)[] = [];
  private readonly servers: http.Server[] = [];
  private readonly params: string[] = [];
  private hub: NodeWsHub | null = null;
  /** Sockets of upgrade requests not answered yet: node:http no longer tracks them. */
  private readonly upgrading = new Set<Socket>();

  /** With a pair: node:https, TLS 1.2+, ALPN http/1.1 (docs/operations.md#tls). */
  constructor(private tls: SslOptions | null = null) {}

  /** New handshakes use the new pair; established connections keep theirs. */
  setTls(options: SslOptions): void {
    this.tls = options;
    for (const s of this.servers) (s as https.Server).setSecureContext(secureContext(options));
  }

  get(p: string, h: RouteHandler): TemplatedApp {
    return this.add('get', p, h);
  }
  post(p: string, h: RouteHandler): TemplatedApp {
    return this.add('post', p, h);
  }
  options(p: string, h: RouteHandler): TemplatedApp {
    return this.add('options', p, h);
  }
  del(p: string, h: RouteHandler): TemplatedApp {
    return this.add('delete', p, h);
  }
  patch(p: string, h: RouteHandler): TemplatedApp {
    return this.add('patch', p, h);
  }
  put(p: string, h: RouteHandler): TemplatedApp {
    return this.add('put', p, h);
  }
  any(p: string, h: RouteHandler): TemplatedApp {
    return this.add('*', p, h);
  }

  /** A GET route for WebSocket handshakes (a 24-character Sec-WebSocket-Key, as uWS checks). */
  ws<U>(pattern: string, behavior: WebSocketBehavior<U>): TemplatedApp {
    const context = (this.hub ??= new NodeWsHub()).route(behavior as WebSocketBehavior<unknown>);
    this.add('get', pattern, (res, req) => behavior.upgrade(res, req, context), true);
    for (const s of this.servers) this.takeUpgrades(s);
    return this;
  }

  private add(method: string, pattern: string, handler: RouteHandler, ws = false): TemplatedApp {
    const r: Route = { method, ...parsePattern(pattern), handler, order: this.routes.length, ws };
    this.routes.push(r);
    this.sorted = false;
    return this;
  }

  private resolve(method: string, path: string, params: string[], handshake: boolean): Route | null {
    if (!this.sorted) {
      this.routes.sort(compareRoutes);
      this.exact = new Map();
      for (const r of this.routes) {
        if (!r.ws && r.kinds.every((k) => k === Seg.Static)) {
          const key = `${r.method} /${r.segments.join('/')}`;
          if (!this.exact.has(key)) this.exact.set(key, r);
        }
      }
      this.sorted = true;
    }
    params.length = 0;
    // The exact map leaves ws routes out: a handshake takes the scan, which sees them in priority order.
    if (!handshake) {
      const hit = this.exact.get(`${method} ${path}`) ?? this.exact.get(`* ${path}`);
      if (hit) return hit;
    }
    const segs = path.split('/').slice(1);
    for (const r of this.routes) {
      if (r.ws && !handshake) continue;
      if ((r.method === method || r.method === '*') && matchRoute(r, segs, params)) return r;
    }
    return null;
  }

  filter(cb: (conn: FilterSocket, count: number) => void): TemplatedApp {
    this.filters.push(cb);
    return this;
  }

  /** The -1 event, once per connection, whoever closes first (its socket or a filter's close()). */
  closed(conn: Connection): void {
    if (conn.reported) return;
    conn.reported = true;
    for (const f of this.filters) f(conn, -1);
  }

  listen(host: string, port: number, cb: (listenSocket: us_listen_socket | false) => void): TemplatedApp;
  listen(host: string, port: number, options: number, cb: (listenSocket: us_listen_socket | false) => void): TemplatedApp;
  /** node:http listens without SO_REUSEPORT (Node's default), so a port in use fails either way: the options change nothing. */
  listen(host: string, port: number, a: number | ((s: us_listen_socket | false) => void), b?: (s: us_listen_socket | false) => void): TemplatedApp {
    const cb = typeof a === 'function' ? a : b!;
    const options = {
      keepAliveTimeout: IDLE_TIMEOUT_MS,
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      maxHeaderSize: MAX_HEADER_BYTES,
      noDelay: true,
    };
    const server: http.Server = this.tls
      ? https.createServer({ ...options, ...secureContext(this.tls), ALPNProtocols: TLS_ALPN, handshakeTimeout: HEADERS_TIMEOUT_MS })
      : http.createServer(options);
    // Over TLS the requests' socket is the TLSSocket, known once its handshake is done.
    server.on(this.tls ? 'secureConnection' : 'connection', (socket: Socket) => this.onConnection(socket));
    if (this.tls) server.on('tlsClientError', (_e: Error, socket: Socket) => socket.destroy());
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.onRequest(req, res, null));
    if (this.hub) this.takeUpgrades(server);
    const onListenError = () => cb(false);
    server.once('error', onListenError);
    server.listen({ host, port }, () => {
      server.off('error', onListenError);
      // After listening, an 'error' is a failed accept (EMFILE): libuv has already closed that
      // connection, and the total connection cap keeps the process below the limit. Not fatal.
      server.on('error', () => {});
      this.servers.push(server);
      cb({ server } as ListenToken);
    });
    return this;
  }

  /**
   * Connections with no request in progress, longest idle first (a Map keeps
   * insertion order; a connection is re-inserted each time it goes idle).
   */
  private readonly idle = new Map<Connection, true>();

  evictIdle(): boolean {
    for (const conn of this.idle.keys()) {
      this.idle.delete(conn);
      if (conn.reported) continue;
      conn.close();
      return true;
    }
    return false;
  }

  private onConnection(socket: Socket): void {
    const conn = new Connection(socket, socket.remoteAddress ?? '', this);
    (socket as Socket & { [CONNECTION]?: Connection })[CONNECTION] = conn;
    this.idle.set(conn, true);
    socket.once('close', () => {
      this.idle.delete(conn);
      this.closed(conn);
    });
    for (const f of this.filters) {
      f(conn, 1);
      if (conn.reported) return;
    }
  }

  /**
   * Only with ws routes: node:http serves upgrade requests as plain ones while
   * no 'upgrade' listener exists, and a plain one keeps its connection alive.
   */
  private takeUpgrades(server: http.Server): void {
    if (server.listenerCount('upgrade') === 0) {
      server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => this.onUpgrade(req, socket, head));
    }
  }

  /** node:http has let go of the socket: its errors, its time-out and its close after the answer are ours. */
  private onUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const upgrading = this.upgrading;
    upgrading.add(socket);
    socket.once('close', () => upgrading.delete(socket));
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
    // Reading on is how a client that leaves is noticed (onAborted), as uWS does; at its FIN uWS closes.
    // A client sends nothing before the 101, but whatever came is the WebSocket's.
    const early: Buffer[] = [head];
    const onData = (b: Buffer) => early.push(b);
    const onEnd = () => socket.destroy();
    socket.on('data', onData);
    socket.on('end', onEnd);
    const res = new http.ServerResponse(req);
    try {
      // Throws when a pipelined request before it is still unanswered.
      res.assignSocket(socket);
    } catch {
      socket.destroy();
      return;
    }
    res.shouldKeepAlive = false;
    res.once('finish', () => {
      res.detachSocket(socket);
      socket.destroySoon();
    });
    const conn = (socket as Socket & { [CONNECTION]?: Connection })[CONNECTION]!;
    this.onRequest(req, res, {
      hub: this.hub!,
      socket,
      take: () => {
        socket.off('data', onData);
        socket.off('end', onEnd);
        return early.length === 1 ? early[0]! : Buffer.concat(early);
      },
      opened: () => {
        upgrading.delete(socket);
        // uWS moves an upgraded socket out of its HTTP context, whose close is what calls the filters:
        // an upgraded connection never gets its -1 there.
        conn.reported = true;
      },
    });
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse, upgrade: Upgrading | null): void {
    const conn = (req.socket as Socket & { [CONNECTION]?: Connection })[CONNECTION]!;
    // Busy until its answer is out; an upgraded one is a WebSocket, never idle HTTP.
    this.idle.delete(conn);
    if (upgrade === null) {
      res.once('finish', () => {
        if (!conn.reported && !req.socket.destroyed) this.idle.set(conn, true);
      });
    }
    if (req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) {
      // HTTP/1.1 only, as uWS (it answers HTTP/1.0 with 505 too).
      res.writeHead(505, 'HTTP Version Not Supported', ['content-type', 'text/plain; charset=utf-8', 'connection', 'close']);
      res.end(HTTP_505);
      return;
    }
    const url = req.url!;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method!.toLowerCase();
    const handshake = upgrade !== null && method === 'get' && rawHeader(req, 'sec-websocket-key')?.length === 24;
    const route = this.resolve(method, path, this.params, handshake);
    const response = new NodeResponse(res, req, conn);
    if (route === null) {
      // uWS answers an unrouted request with 404 and no body.
      response.writeStatus('404 Not Found').end();
      return;
    }
    if (route.ws) response.upgrading = upgrade;
    const request = new NodeRequest(req, this.params.slice(), url);
    try {
      route.handler(response, request);
    } finally {
      request.valid = false;
    }
    if (!response.ended && !response.aborted && response.abortHandler === null) throw new Error(FORBIDDEN_RETURN);
  }

  /** Upgraded and upgrading sockets too: node:http's connection list no longer holds them. */
  close(): TemplatedApp {
    for (const s of this.servers) {
      s.close();
      s.closeAllConnections();
    }
    this.servers.length = 0;
    for (const socket of this.upgrading) socket.destroy();
    this.hub?.closeAll();
    return this;
  }
}

function secureContext(o: SslOptions): { cert: Buffer; key: Buffer; minVersion: typeof TLS_MIN_VERSION } {
  return { cert: readFileSync(o.cert_file_name), key: readFileSync(o.key_file_name), minVersion: TLS_MIN_VERSION };
}

export function createNodeAcceptor(): Uws {
  return {
    App: () => new NodeApp(),
    SSLApp: (options) => new NodeApp(options),
    // Stops accepting only: http.Server#close() would also drop idle keep-alive connections,
    // which uWS keeps open (a draining relay answers them with 503 retry_safe).
    us_listen_socket_close: (s) => void net.Server.prototype.close.call((s as ListenToken).server),
    us_socket_local_port: (s) => {
      const a = (s as ListenToken).server.address();
      return typeof a === 'object' && a ? a.port : -1;
    },
  };
}
