/**
 * The HTTP acceptor: uWebSockets.js where a build loads, node:http otherwise.
 *
 * uWS's authors do not publish it to the npm registry, so pinned registry
 * mirrors of the official builds are tried in order (docs/operations.md#http-acceptor):
 *
 *   @btc-vision/uwebsockets.js  uWS 20.57  Node 20/22/24/25  glibc >= 2.38
 *   uws-pack                    uWS 20.4x  Node 18/20/21/22  glibc >= 2.27
 *   @trufflesuite/uws-js-...    uWS 20.30  Node 16/18/20     glibc >= 2.27
 *
 * Each binary is required directly by its `uws_<platform>_<arch>_<abi>.node`
 * name: the packages' loaders hide the real error (and trufflesuite's falls
 * back to a slow JavaScript shim silently). When none loads, node:http behind
 * the same API subset (node-acceptor.ts) serves every door.
 *
 * The interfaces below are exactly the part of uWS txrelay uses: the fallback
 * implements them, so code reaching for more fails to type-check.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNodeAcceptor } from './node-acceptor.js';
import { AcceptorError } from '../errors.js';

export interface HttpRequest {
  /** The first when repeated; '' when absent. */
  getHeader(lowerCaseKey: string): string;
  /** The i-th `:param` of the route pattern, not percent-decoded. */
  getParameter(index: number): string | undefined;
  /** The path, without the query, not percent-decoded. */
  getUrl(): string;
  /** Lower case. */
  getMethod(): string;
  /** Raw, without '?' (undefined without '?'); with a key, its percent-decoded value. */
  getQuery(): string | undefined;
  getQuery(key: string): string | undefined;
  forEach(cb: (key: string, value: string) => void): void;
}

export interface HttpResponse {
  onAborted(handler: () => void): HttpResponse;
  /** A chunk's memory is only valid during the call (uWS neuters it after): copy what you keep. */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): HttpResponse;
  cork(cb: () => void): HttpResponse;
  /** e.g. '202 Accepted'; non-standard codes (605) go out as written. */
  writeStatus(status: string | Uint8Array): HttpResponse;
  writeHeader(key: string | Uint8Array, value: string | Uint8Array): HttpResponse;
  end(body?: string | Uint8Array, closeConnection?: boolean): HttpResponse;
  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): HttpResponse;
  close(): HttpResponse;
  /** 4 bytes (IPv4 socket) or 16 (IPv6 socket, IPv4 clients mapped). */
  getRemoteAddress(): ArrayBuffer;
  getRemoteAddressAsText(): ArrayBuffer;
  pause(): void;
  resume(): void;
  /**
   * Answers a WebSocket upgrade request (only inside a `ws` route's `upgrade`,
   * synchronously, or after `onAborted`): `userData` is what `getUserData`
   * returns for the socket's life.
   */
  upgrade<U>(userData: U, secWebSocketKey: string, secWebSocketProtocol: string, secWebSocketExtensions: string, context: unknown): void;
}

/** `WebSocket.send`: queued without backpressure, queued past the kernel's buffer, or dropped (over `maxBackpressure`). */
export const enum SendStatus {
  Backpressure = 0,
  Success = 1,
  Dropped = 2,
}

/**
 * One WebSocket. Every method throws once the socket closed (after `close`
 * ran): whoever keeps a socket must track that itself.
 */
export interface WebSocket<U> {
  send(message: string | Uint8Array, isBinary?: boolean): SendStatus;
  /** Closes gracefully: a close frame with `code` and a short reason, then the connection. */
  end(code?: number, shortMessage?: string): void;
  /** Closes at once, without a close frame. */
  close(): void;
  /** Bytes written but not yet taken by the kernel. */
  getBufferedAmount(): number;
  getUserData(): U;
  cork(cb: () => void): WebSocket<U>;
  getRemoteAddressAsText(): ArrayBuffer;
}

/**
 * A WebSocket route, as uWS takes it. `message`'s ArrayBuffer is valid only
 * during the call. With `sendPingsAutomatically`, a quiet socket is pinged
 * a few seconds before `idleTimeout` and closed at it when nothing (not even
 * a pong) arrived. uWS reports no filter -1 for an upgraded connection.
 */
export interface WebSocketBehavior<U> {
  /** A larger message drops the connection (uWS: no close frame; node: 1009); uWS buffers a fragmented message up to it. */
  maxPayloadLength: number;
  /** Seconds; 0 (never) or at least 8, rounded by uWS to a multiple of 4. */
  idleTimeout: number;
  /** Bytes held for a slow reader; past it `send` drops (returns Dropped). */
  maxBackpressure: number;
  closeOnBackpressureLimit: boolean;
  sendPingsAutomatically: boolean;
  upgrade(res: HttpResponse, req: HttpRequest, context: unknown): void;
  open(ws: WebSocket<U>): void;
  message(ws: WebSocket<U>, message: ArrayBuffer, isBinary: boolean): void;
  /** The buffered amount went down after backpressure. */
  drain?(ws: WebSocket<U>): void;
  close(ws: WebSocket<U>, code: number, message: ArrayBuffer): void;
}

/** What a connection filter sees of a connection (uWS passes an HttpResponse). */
export interface FilterSocket {
  getRemoteAddress(): ArrayBuffer;
  getRemoteAddressAsText(): ArrayBuffer;
  close(): unknown;
}

export type RouteHandler = (res: HttpResponse, req: HttpRequest) => void;

/** Opaque listen-socket token. */
export interface us_listen_socket {
  readonly __listenSocket?: never;
}

export interface TemplatedApp {
  get(pattern: string, handler: RouteHandler): TemplatedApp;
  post(pattern: string, handler: RouteHandler): TemplatedApp;
  options(pattern: string, handler: RouteHandler): TemplatedApp;
  del(pattern: string, handler: RouteHandler): TemplatedApp;
  patch(pattern: string, handler: RouteHandler): TemplatedApp;
  put(pattern: string, handler: RouteHandler): TemplatedApp;
  any(pattern: string, handler: RouteHandler): TemplatedApp;
  ws<U>(pattern: string, behavior: WebSocketBehavior<U>): TemplatedApp;
  listen(host: string, port: number, cb: (listenSocket: us_listen_socket | false) => void): TemplatedApp;
  /** With uSockets' listen options (`LISTEN_EXCLUSIVE_PORT`). */
  listen(host: string, port: number, options: number, cb: (listenSocket: us_listen_socket | false) => void): TemplatedApp;
  /**
   * Open (+1) and close (-1) events; absent in uWS 20.30. On uWS the address
   * is readable on +1 only, and a connection closed during its +1 call gets
   * its -1 synchronously, inside `close()`.
   */
  filter?(cb: (conn: FilterSocket, count: number) => void): TemplatedApp;
  close(): TemplatedApp;
  /**
   * Closes the connection idle the longest (between requests, or never sent
   * one) to make room for a new one at the total cap; false when none is idle.
   * node:http only: uWS hands a filter no way to tell which connection a
   * request came on, nor a safe handle to close one later.
   */
  evictIdle?(): boolean;
  /** A handle another thread's listening app can hand connections to (absent in uWS 20.30 and on node:http). */
  getDescriptor?(): number;
  /** Hands accepted connections to these apps in turn instead of serving them here. */
  addChildAppDescriptor?(descriptor: number): TemplatedApp;
  removeChildAppDescriptor?(descriptor: number): TemplatedApp;
  /**
   * node:https only: new connections get this pair, live ones keep theirs
   * (`server.setSecureContext`). uWS cannot swap an app's certificate: a new
   * SSLApp takes the new connections instead (docs/operations.md#tls).
   */
  setTls?(options: SslOptions): void;
}

/** What SSLApp takes: PEM files, read by the acceptor. */
export interface SslOptions {
  cert_file_name: string;
  key_file_name: string;
}

export interface Uws {
  App(): TemplatedApp;
  /** HTTPS and wss:// (TLS 1.2 and 1.3). */
  SSLApp(options: SslOptions): TemplatedApp;
  us_listen_socket_close(listenSocket: us_listen_socket): void;
  us_socket_local_port(listenSocket: us_listen_socket): number;
}

/**
 * uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT. Without it uWS uses SO_REUSEPORT, and
 * a second process on the same port starts silently and the kernel splits
 * connections between two dedup filters and sets of rate buckets; with it,
 * start-up fails instead.
 */
export const LISTEN_EXCLUSIVE_PORT = 1;

export type AcceptorMode = 'auto' | 'uws' | 'node';

export interface Acceptor {
  uws: Uws;
  kind: 'uws' | 'node';
  /** The package and version that runs, or 'node:http'. */
  name: string;
  /** Connection caps need `App().filter`. */
  filter: boolean;
  /** Why each candidate tried before did not load. */
  skipped: string[];
}

/** The fallback's CPU per request relative to uWS (`npm run bench:acceptor`), quoted at start-up. */
const NODE_ACCEPTOR_COST = '2.6-3.6x';

const require = createRequire(import.meta.url);
const ABI = process.versions.modules;
const BINARY = `uws_${process.platform}_${process.arch}_${ABI}.node`;

export interface Candidate {
  name: string;
  binDir: () => string;
}

const packageDir = (specifier: string) => dirname(fileURLToPath(import.meta.resolve(specifier)));

const CANDIDATES: Candidate[] = [
  { name: '@btc-vision/uwebsockets.js@20.57.0', binDir: () => packageDir('@btc-vision/uwebsockets.js') },
  // Its ESM entry is dist/index.mjs; the binaries sit in dist/bin.
  { name: 'uws-pack@20.0.8', binDir: () => join(packageDir('uws-pack'), 'bin') },
  {
    name: '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0',
    binDir: () => join(dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json')), 'binaries'),
  },
];

/** '' on musl, macOS, Windows. */
export function glibcVersion(): string {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ?? '';
}

/** One line, without the stack or long paths. */
function loadFailure(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const msg = String(err?.message ?? e);
  const glibc = /GLIBC_([\d.]+)' not found/.exec(msg);
  if (glibc) return `needs glibc >= ${glibc[1]} (this system has ${glibcVersion() || 'another C library'})`;
  if (err?.code === 'MODULE_NOT_FOUND' || err?.code === 'ERR_MODULE_NOT_FOUND') {
    return msg.includes(BINARY) ? `no build for Node ${process.versions.node} (ABI ${ABI}) on ${process.platform}-${process.arch}` : 'not installed';
  }
  if (err?.code === 'ERR_DLOPEN_FAILED') return msg.split('\n')[0]!.replace(/^.*\.node: /, '').slice(0, 200);
  return msg.split('\n')[0]!.slice(0, 200);
}

interface UwsProbe {
  found: { uws: Uws; name: string; filter: boolean } | null;
  /** Candidates tried before the one that loaded (all of them when none did). */
  skipped: string[];
}

function probeUws(candidates: readonly Candidate[]): UwsProbe {
  const skipped: string[] = [];
  for (const c of candidates) {
    try {
      const uws = require(join(c.binDir(), BINARY)) as Uws;
      if (typeof uws.App !== 'function') throw new Error('module has no App()');
      const app = uws.App();
      const filter = typeof app.filter === 'function';
      app.close();
      return { found: { uws, name: c.name, filter }, skipped };
    } catch (e) {
      skipped.push(`${c.name}: ${loadFailure(e)}`);
    }
  }
  return { found: null, skipped };
}

/** Once per process: a loaded addon stays loaded. */
let probed: UwsProbe | null = null;

/** `auto`: the first uWS build that loads, else node:http; `uws`: fails with every reason when none loads; `node`: node:http. */
export function loadAcceptor(mode: AcceptorMode = 'auto', candidates?: readonly Candidate[]): Acceptor {
  if (mode === 'node') return { uws: createNodeAcceptor(), kind: 'node', name: 'node:http', filter: true, skipped: [] };
  const p = candidates ? probeUws(candidates) : (probed ??= probeUws(CANDIDATES));
  if (p.found) return { ...p.found, kind: 'uws', skipped: p.skipped };
  if (mode === 'uws') {
    throw new AcceptorError(
      `http.acceptor = "uws" but no uWebSockets.js build loads for Node ${process.versions.node} on ${platformText()}:\n  ` + p.skipped.join('\n  '),
    );
  }
  return { uws: createNodeAcceptor(), kind: 'node', name: 'node:http', filter: true, skipped: p.skipped };
}

function platformText(): string {
  const glibc = glibcVersion();
  return `${process.platform}-${process.arch}${glibc ? `, glibc ${glibc}` : ''}`;
}

export function describeAcceptor(a: Acceptor, mode: AcceptorMode): string {
  if (a.kind === 'uws') {
    const why = a.skipped.length ? ` (skipped ${a.skipped.join('; ')})` : '';
    return `HTTP acceptor: uWebSockets.js from ${a.name}${why}`;
  }
  const cost = `about ${NODE_ACCEPTOR_COST} the CPU per request of uWS (npm run bench:acceptor)`;
  if (mode === 'node') return `HTTP acceptor: node:http, as http.acceptor = "node" asks; ${cost}`;
  return (
    `HTTP acceptor: node:http fallback, ${cost}: no uWebSockets.js build loads for Node ${process.versions.node} ` +
    `(ABI ${ABI}) on ${platformText()}: ${a.skipped.join('; ')}`
  );
}

/** uWS only, for the acceptor ceiling of the benchmarks; throws when no build loads. */
export function loadUws(): { uws: Uws; name: string } {
  const a = loadAcceptor('uws');
  return { uws: a.uws, name: a.name };
}
