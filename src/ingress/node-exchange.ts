/**
 * One request and its answer on the node:http fallback acceptor
 * (node-acceptor.ts): the uWS HttpRequest and HttpResponse interfaces over
 * node's, enforcing uWS's rules (no request object after its handler
 * returned, no response touched after it ended or aborted), and the peer
 * address as uWS gives it.
 */
import http from 'node:http';
import { isIPv4, type Socket } from 'node:net';
import type { FilterSocket, HttpRequest, HttpResponse } from './uws.js';
import type { NodeWsHub } from './node-ws.js';

const EMPTY = new ArrayBuffer(0);
const utf8 = new TextEncoder();
// ---------------------------------------------------------------- addresses

/** The peer address as uWS gives it: 4 bytes on an IPv4 socket, 16 on an IPv6 one. */
export function addressBytes(text: string): ArrayBuffer {
  if (isIPv4(text)) return new Uint8Array(text.split('.').map(Number)).buffer;
  const out = new Uint8Array(16);
  let s = text;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted IPv4 (::ffff:1.2.3.4) fills the last 4 bytes.
  const lastColon = s.lastIndexOf(':');
  let tail: number[] = [];
  if (s.includes('.', lastColon)) {
    tail = s.slice(lastColon + 1).split('.').map(Number);
    s = s.slice(0, lastColon + 1) + '0:0';
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const hs = head ? head.split(':') : [];
  const rs = rest ? rest.split(':') : [];
  const groups = rest === undefined ? hs : [...hs, ...new Array(8 - hs.length - rs.length).fill('0'), ...rs];
  for (let i = 0; i < 8; i++) {
    const g = parseInt(groups[i] ?? '0', 16) || 0;
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  }
  if (tail.length === 4) out.set(tail, 12);
  return out.buffer;
}

export class Connection implements FilterSocket {
  /** The -1 filter event was sent (each connection gets exactly one, like uWS). */
  reported = false;
  private bytes: ArrayBuffer | null = null;

  constructor(
    readonly socket: Socket,
    /** Read at accept time: node cannot tell it once the socket is closed. */
    readonly address: string,
    private readonly app: { closed(c: Connection): void },
  ) {}

  /** A fresh copy each call, as uWS gives. */
  getRemoteAddress(): ArrayBuffer {
    return (this.bytes ??= addressBytes(this.address)).slice(0);
  }

  getRemoteAddressAsText(): ArrayBuffer {
    // node writes IPv4 clients of a dual-stack socket as ::ffff:1.2.3.4, which clientIp() expects.
    return utf8.encode(this.address).buffer as ArrayBuffer;
  }

  /** Closes at once; from a filter's +1 call, its -1 arrives inside this call, as on uWS. */
  close(): void {
    this.socket.destroy();
    this.app.closed(this);
  }
}

export const CONNECTION = Symbol('txrelay.connection');

// ---------------------------------------------------------------- request / response

const FORBIDDEN_REQ = 'uWS.HttpRequest must not be accessed after its route handler returns (copy what you need first)';
/** uWS takes protocol text as a string or as its bytes; node:http wants strings. */
function text(v: string | Uint8Array): string {
  return typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('latin1');
}

const FORBIDDEN_RES = 'uWS.HttpResponse must not be accessed after onAborted fired or after the response was ended';
const FORBIDDEN_UPGRADE = "HttpResponse.upgrade is only for a ws route's request, in its upgrade handler or after its onAborted";
/** uWS writes a status line at the first writeStatus or writeHeader: the 101 would come after it. */
const UPGRADE_AFTER_WRITE = 'HttpResponse.upgrade after writeStatus or writeHeader (uWS would answer with that status instead of 101)';

/** What `res.upgrade` needs of a request node:http has let go of ('upgrade' event). */
export interface Upgrading {
  hub: NodeWsHub;
  socket: Socket;
  /** Hands the socket over: the bytes read past the request. */
  take: () => Buffer;
  /** The handshake succeeded: the socket is the WebSocket's now. */
  opened: () => void;
}

export class NodeRequest implements HttpRequest {
  valid = true;
  private headers: Record<string, string> | null = null;
  private readonly path: string;
  private readonly query: string | undefined;

  constructor(
    private readonly req: http.IncomingMessage,
    readonly params: string[],
    url: string,
  ) {
    const q = url.indexOf('?');
    this.path = q < 0 ? url : url.slice(0, q);
    this.query = q < 0 ? undefined : url.slice(q + 1);
  }

  private check(): void {
    if (!this.valid) throw new Error(FORBIDDEN_REQ);
  }

  getHeader(lowerCaseKey: string): string {
    this.check();
    if (this.headers === null) {
      // uWS answers with the first of repeated headers; node's req.headers joins some and drops others.
      const h: Record<string, string> = Object.create(null);
      const raw = this.req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        const k = raw[i]!.toLowerCase();
        if (h[k] === undefined) h[k] = raw[i + 1]!;
      }
      this.headers = h;
    }
    return this.headers[lowerCaseKey] ?? '';
  }

  getParameter(index: number): string | undefined {
    this.check();
    return this.params[index];
  }

  getUrl(): string {
    this.check();
    return this.path;
  }

  getMethod(): string {
    this.check();
    return this.req.method!.toLowerCase();
  }

  getQuery(): string | undefined;
  getQuery(key: string): string | undefined;
  getQuery(key?: string): string | undefined {
    this.check();
    if (key === undefined || this.query === undefined) return this.query;
    for (const part of this.query.split('&')) {
      const eq = part.indexOf('=');
      if ((eq < 0 ? part : part.slice(0, eq)) !== key) continue;
      const v = eq < 0 ? '' : part.slice(eq + 1);
      try {
        return decodeURIComponent(v);
      } catch {
        return v;
      }
    }
    return undefined;
  }

  forEach(cb: (key: string, value: string) => void): void {
    this.check();
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) cb(raw[i]!.toLowerCase(), raw[i + 1]!);
  }
}

export class NodeResponse implements HttpResponse {
  ended = false;
  aborted = false;
  abortHandler: (() => void) | null = null;
  /** Set for a ws route's request. */
  upgrading: Upgrading | null = null;
  private written = false;
  private status = 200;
  private reason = 'OK';
  /** name, value, name, value: node's writeHead takes them flat, repeats allowed (as uWS sends them). */
  private headers: string[] = [];

  constructor(
    private readonly res: http.ServerResponse,
    private readonly req: http.IncomingMessage,
    private readonly conn: Connection,
  ) {
    res.on('close', () => this.abort());
  }

  private abort(): void {
    if (this.ended || this.aborted) return;
    this.aborted = true;
    const h = this.abortHandler;
    this.abortHandler = null;
    if (h) h();
  }

  private check(): void {
    if (this.ended || this.aborted) throw new Error(FORBIDDEN_RES);
  }

  onAborted(handler: () => void): HttpResponse {
    this.check();
    this.abortHandler = handler;
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): HttpResponse {
    this.check();
    const declared = rawHeader(this.req, 'content-length');
    const expected = declared === undefined ? -1 : Number(declared);
    let received = 0;
    let last = false;
    this.req.on('data', (b: Buffer) => {
      if (last || this.aborted) return;
      received += b.length;
      // With a Content-Length the last chunk is known when it arrives, as on uWS; chunked bodies end on 'end'.
      last = expected >= 0 && received >= expected;
      handler(ownBuffer(b), last);
    });
    this.req.on('end', () => {
      if (last || this.aborted) return;
      last = true;
      handler(EMPTY, true);
    });
    return this;
  }

  cork(cb: () => void): HttpResponse {
    this.check();
    // node writes the head and a whole body in one write already.
    cb();
    return this;
  }

  writeStatus(line: string | Uint8Array): HttpResponse {
    this.check();
    const status = text(line);
    const code = Number(status.slice(0, 3));
    if (!Number.isInteger(code) || code < 100) throw new Error(`writeStatus: not a status line: ${JSON.stringify(status)}`);
    this.written = true;
    this.status = code;
    this.reason = status.slice(4);
    return this;
  }

  writeHeader(key: string | Uint8Array, value: string | Uint8Array): HttpResponse {
    this.check();
    this.written = true;
    this.headers.push(text(key), text(value));
    return this;
  }

  end(body?: string | Uint8Array, closeConnection?: boolean): HttpResponse {
    this.check();
    this.ended = true;
    this.abortHandler = null;
    const h = this.headers;
    const len = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    // An explicit length keeps node from switching to chunked encoding once the head is written.
    h.push('content-length', String(len));
    if (closeConnection) h.push('connection', 'close');
    this.res.writeHead(this.status, this.reason, h);
    this.res.end(body);
    return this;
  }

  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): HttpResponse {
    this.check();
    this.ended = true;
    this.abortHandler = null;
    const h = this.headers;
    if (reportedContentLength !== undefined) h.push('content-length', String(reportedContentLength));
    if (closeConnection) h.push('connection', 'close');
    this.res.writeHead(this.status, this.reason, h);
    this.res.end();
    return this;
  }

  /** Closes the connection; onAborted runs inside the call, as on uWS. */
  close(): HttpResponse {
    this.check();
    this.conn.socket.destroy();
    this.abort();
    return this;
  }

  getRemoteAddress(): ArrayBuffer {
    this.check();
    return this.conn.getRemoteAddress();
  }

  getRemoteAddressAsText(): ArrayBuffer {
    this.check();
    return this.conn.getRemoteAddressAsText();
  }

  pause(): void {
    this.req.pause();
  }

  resume(): void {
    this.req.resume();
  }

  /** `open` runs inside, as on uWS. The key and extensions are the request's (no compression). */
  upgrade<U>(userData: U, _secWebSocketKey: string, secWebSocketProtocol: string, _secWebSocketExtensions: string, context: unknown): void {
    this.check();
    const up = this.upgrading;
    if (up === null) throw new Error(FORBIDDEN_UPGRADE);
    if (this.written) throw new Error(UPGRADE_AFTER_WRITE);
    const route = up.hub.routeOf(context, userData);
    this.ended = true;
    this.abortHandler = null;
    this.res.detachSocket(up.socket);
    const conn = this.conn;
    up.hub.upgrade(route, this.req, up.socket, up.take(), userData as object, secWebSocketProtocol, () => conn.getRemoteAddressAsText(), up.opened);
  }
}

/** The first value of a header (node's parser has already rejected conflicting Content-Lengths). */
export function rawHeader(req: http.IncomingMessage, lowerCaseKey: string): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === lowerCaseKey.length && raw[i]!.toLowerCase() === lowerCaseKey) return raw[i + 1];
  }
  return undefined;
}

/** A chunk as an ArrayBuffer of exactly its bytes; node's chunks are views into a larger read buffer. */
function ownBuffer(b: Buffer): ArrayBuffer {
  const ab = b.buffer as ArrayBuffer;
  return b.byteOffset === 0 && b.byteLength === ab.byteLength ? ab : ab.slice(b.byteOffset, b.byteOffset + b.byteLength);
}
