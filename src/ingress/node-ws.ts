/**
 * WebSocket routes for the node:http fallback (node-acceptor.ts): the `ws`
 * package in noServer mode behind uWS's WebSocket interfaces, with uWS's rules
 * where they can catch bugs: every method but getUserData throws from the
 * moment the socket closes (in `close` already), a message's ArrayBuffer is
 * detached after its call, getUserData is a copy of the upgrade's userData.
 *
 * Where it differs from uWS:
 * - a message over maxPayloadLength, invalid UTF-8 or a protocol error send the
 *   client a close frame (1009, 1007, 1002) before the connection closes (uWS
 *   closes it without one: the client sees 1006); `close` gets what uWS gives;
 * - a peer's close frame reaches `close` when the connection closes, a round
 *   trip later (uWS: on arrival); in between `send` returns Dropped;
 * - a handshake without Sec-WebSocket-Version 13 (or 8) is refused with 400;
 * - end() with a code no peer may send (1004, 1015, 5000...) throws (uWS sends it);
 * - idleTimeout is followed to the millisecond and may be below 8 s (uWS: at
 *   least 8, in steps of 4 s).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { createRequire } from 'node:module';
import type { default as WsSocket, WebSocketServer } from 'ws';
import { SendStatus, type WebSocket, type WebSocketBehavior } from './uws.js';

// The reasons uWS passes to `close` with 1006 (WebSocketProtocol.h).
const ERR_TOO_BIG_MESSAGE = 'Received too big message';
const ERR_WEBSOCKET_TIMEOUT = 'WebSocket timed out from inactivity';
const ERR_INVALID_TEXT = 'Received invalid UTF-8';
const ERR_INVALID_CLOSE_PAYLOAD = 'Received invalid close payload';
const ERR_PROTOCOL = 'Received invalid WebSocket frame';
const ERR_TCP_FIN = 'Received TCP FIN before WebSocket close frame';

const CLOSED = 'Invalid access of closed uWS.WebSocket/SSLWebSocket.';
/** uWS's cork buffer: sends inside cork() up to this are not backpressure. */
const CORK_BYTES = 16 * 1024;
/** Close frames carry at most 123 bytes of reason. */
const MAX_CLOSE_REASON = 123;
const BINARY = { binary: true };
const TEXT = { binary: false };
const EMPTY = Buffer.alloc(0);
/** ws's `OPEN`: the package loads with the first hub (a node:http acceptor's first WebSocket route), not with the relay. */
const OPEN = 1;
const require = createRequire(import.meta.url);

/** Which uWS reason a ws error stands for: a receiver's (WS_ERR_*), or none for a failed write. */
function errorReason(err: Error & { code?: string }): string {
  switch (err.code) {
    case 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH':
    case 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH':
      return ERR_TOO_BIG_MESSAGE;
    case 'WS_ERR_INVALID_UTF8':
      return ERR_INVALID_TEXT;
    case 'WS_ERR_INVALID_CLOSE_CODE':
      return ERR_INVALID_CLOSE_PAYLOAD;
    default:
      return err.code?.startsWith('WS_ERR_') ? ERR_PROTOCOL : '';
  }
}

/** A copy to lend and then detach: ws's buffers may be shared (its empty message is a module constant). */
function copyOf(b: Uint8Array): ArrayBuffer {
  const ab = new ArrayBuffer(b.byteLength);
  new Uint8Array(ab).set(b);
  return ab;
}

/** uWS neuters the memory it lent after the call: code that kept it reads nothing, on either acceptor. */
function detach(ab: ArrayBuffer): void {
  try {
    structuredClone(ab, { transfer: [ab] });
  } catch {
    // already detached by the callee
  }
}

/**
 * uWS's split of idleTimeout (calculateIdleTimeoutCompnents): with pings, a
 * ping after idle − margin of silence and the close after another margin
 * (margin 4, 8 or 16 s), so the close comes after idleTimeout either way.
 * Below uWS's 8 s minimum (node only) the margin is half.
 */
function idleParts(idleTimeout: number, pings: boolean): { quietMs: number; marginMs: number } {
  if (!(idleTimeout > 0)) return { quietMs: 0, marginMs: 0 };
  let margin = 4;
  while (idleTimeout - margin * 2 >= margin * 2 && margin < 16) margin *= 2;
  if (idleTimeout < 8) margin = idleTimeout / 2;
  return { quietMs: (pings ? idleTimeout - margin : idleTimeout) * 1000, marginMs: margin * 1000 };
}

/** A ws route: the context its upgrade handler passes back to `res.upgrade`. */
class WsRoute {
  readonly wss: WebSocketServer;
  readonly quietMs: number;
  readonly marginMs: number;
  /** The subprotocol of the handshake under way (handleUpgrade answers synchronously). */
  private protocol = '';

  constructor(readonly behavior: WebSocketBehavior<unknown>) {
    ({ quietMs: this.quietMs, marginMs: this.marginMs } = idleParts(behavior.idleTimeout, behavior.sendPingsAutomatically));
    const { WebSocketServer: Server } = require('ws') as typeof import('ws');
    this.wss = new Server({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      // ws reads 0 as no limit; uWS then takes empty messages only (here: up to a byte).
      maxPayload: behavior.maxPayloadLength > 0 ? behavior.maxPayloadLength : 1,
      handleProtocols: () => this.protocol || false,
    });
  }

  /** uWS answers with the first of the protocols `res.upgrade` was given. */
  handshake(req: IncomingMessage, socket: Socket, head: Buffer, protocol: string, cb: (ws: WsSocket) => void): void {
    this.protocol = protocol.split(',')[0]!.trim();
    try {
      this.wss.handleUpgrade(req, socket, head, cb);
    } finally {
      this.protocol = '';
    }
  }
}

/** One open WebSocket's state; NodeWebSocket is its face, free of any name a userData key could shadow. */
class WsState {
  closed = false;
  readonly wrapper: NodeWebSocket;
  /** Last data from the peer (or write progress), performance.now(). */
  private heardAt = performance.now();
  private pingedAt = -1;
  /** The buffered amount last reported as backpressure; -1 without: drain fires when it goes down. */
  private backpressure = -1;
  private corked = false;
  private corkBase = 0;
  private fin = false;
  private dropping = false;
  /** One callback for every write: node batches a tick's callbacks when they are the same function. */
  private readonly written = (err?: Error | null) => this.onWritten(err);

  constructor(
    private readonly ws: WsSocket,
    private readonly socket: Socket,
    private readonly route: WsRoute,
    private readonly hub: NodeWsHub,
    private readonly address: () => ArrayBuffer,
    userData: object,
  ) {
    this.wrapper = new NodeWebSocket(this);
    // uWS.js copies userData's own enumerable properties onto the socket object that getUserData returns.
    const target = this.wrapper as unknown as Record<string, unknown>;
    for (const k of Object.keys(userData)) target[k] = (userData as Record<string, unknown>)[k];
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('close', (code: number, reason: Buffer) => this.onClose(code, reason));
    ws.on('error', (err: Error) => this.forceClose(errorReason(err)));
    socket.on('data', () => this.heard());
    socket.on('end', () => {
      this.fin = true;
    });
  }

  live(): this {
    if (this.closed) throw new Error(CLOSED);
    return this;
  }

  private heard(): void {
    this.heardAt = performance.now();
    this.pingedAt = -1;
  }

  bufferedAmount(): number {
    const b = this.ws.bufferedAmount;
    return this.corked ? this.corkBase + Math.max(0, b - this.corkBase - CORK_BYTES) : b;
  }

  send(message: string | Uint8Array, isBinary: boolean): SendStatus {
    const ws = this.ws;
    // The peer's close frame came in: uWS would have run `close` already.
    if (ws.readyState !== OPEN) return SendStatus.Dropped;
    const b = this.route.behavior;
    if (b.maxBackpressure > 0 && ws.bufferedAmount > b.maxBackpressure) {
      if (b.closeOnBackpressureLimit && !this.dropping) {
        this.dropping = true;
        // uWS shuts reading down: the socket closes on the next loop iteration.
        setImmediate(() => this.forceClose(ERR_TCP_FIN));
      }
      return SendStatus.Dropped;
    }
    // uWS copies what it sends; a socket holding backpressure would keep the caller's bytes instead.
    ws.send(typeof message === 'string' ? message : Buffer.from(message), isBinary ? BINARY : TEXT, this.written);
    const after = ws.bufferedAmount;
    if (this.corked) return this.corkBase > 0 || after - this.corkBase > CORK_BYTES ? SendStatus.Backpressure : SendStatus.Success;
    if (after === 0) return SendStatus.Success;
    this.backpressure = after;
    return SendStatus.Backpressure;
  }

  /** uWS calls drain whenever a write to a backpressured socket made progress. */
  private onWritten(err?: Error | null): void {
    if (err || this.closed || this.backpressure < 0) return;
    const b = this.ws.bufferedAmount;
    if (b >= this.backpressure) return;
    this.backpressure = b > 0 ? b : -1;
    this.heard(); // a reader that drains is not idle (uWS resets the time-out too)
    this.route.behavior.drain?.(this.wrapper);
  }

  cork(cb: () => void): void {
    if (this.corked) return cb();
    this.corked = true;
    this.corkBase = this.ws.bufferedAmount;
    this.socket.cork();
    try {
      cb();
    } finally {
      this.corked = false;
      this.socket.uncork();
      if (!this.closed) {
        const b = this.ws.bufferedAmount;
        if (b > 0) this.backpressure = b;
      }
    }
  }

  end(code: number, message: string | undefined): void {
    const reason = Buffer.from(message ?? '');
    if (this.ws.readyState === OPEN) {
      // uWS sends no code for 0, 1005 and 1006; ws throws on codes a peer may not send (uWS sends them).
      if (code === 0 || code === 1005 || code === 1006) this.ws.close();
      else this.ws.close(code, reason.subarray(0, MAX_CLOSE_REASON));
    }
    this.finish(code, reason);
  }

  /** Closes at once, without a close frame; `close` gets 1006 and `reason`. */
  forceClose(reason: string): void {
    if (this.closed) return;
    this.ws.terminate();
    this.finish(1006, reason ? Buffer.from(reason) : EMPTY);
  }

  remoteAddressAsText(): ArrayBuffer {
    return this.address();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    // uWS emits nothing once it closes, even what was already read.
    if (this.closed) return;
    const ab = copyOf(data);
    try {
      this.route.behavior.message(this.wrapper, ab, isBinary);
    } finally {
      detach(ab);
    }
  }

  private onClose(code: number, reason: Buffer): void {
    if (code === 1006) this.finish(1006, this.fin ? Buffer.from(ERR_TCP_FIN) : EMPTY);
    else this.finish(code, reason);
  }

  /** `close` once; from here every method but getUserData throws, in `close` too, as on uWS. */
  private finish(code: number, reason: Uint8Array): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.forget(this);
    const ab = copyOf(reason);
    try {
      this.route.behavior.close(this.wrapper, code, ab);
    } finally {
      detach(ab);
    }
  }

  /** uWS's idle time-out, from the app's one timer. */
  idle(now: number): void {
    const r = this.route;
    if (r.quietMs === 0 || this.closed) return;
    if (this.pingedAt < 0) {
      if (now - this.heardAt < r.quietMs) return;
      if (!r.behavior.sendPingsAutomatically) return this.forceClose(ERR_WEBSOCKET_TIMEOUT);
      this.pingedAt = now;
      this.ws.ping();
    } else if (now - this.pingedAt >= r.marginMs) {
      this.forceClose(ERR_WEBSOCKET_TIMEOUT);
    }
  }

  tracksIdle(): boolean {
    return this.route.quietMs > 0;
  }

  tickMs(): number {
    return this.route.marginMs;
  }
}

/** What the app's handlers see: only the interface's methods and the copied userData. */
class NodeWebSocket implements WebSocket<unknown> {
  readonly #s: WsState;

  constructor(s: WsState) {
    this.#s = s;
  }

  send(message: string | Uint8Array, isBinary = false): SendStatus {
    return this.#s.live().send(message, isBinary);
  }

  end(code = 0, shortMessage?: string): void {
    this.#s.live().end(code, shortMessage);
  }

  close(): void {
    this.#s.live().forceClose('');
  }

  getBufferedAmount(): number {
    return this.#s.live().bufferedAmount();
  }

  /** The socket object itself, as uWS.js gives (it never throws). */
  getUserData(): unknown {
    return this;
  }

  cork(cb: () => void): WebSocket<unknown> {
    this.#s.live().cork(cb);
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return this.#s.live().remoteAddressAsText();
  }
}

/** An app's WebSocket side: its routes, its open sockets, one timer for their idle time-outs. */
export class NodeWsHub {
  private readonly routes = new Set<WsRoute>();
  private readonly open = new Set<WsState>();
  private timer: NodeJS.Timeout | null = null;
  private timerMs = 0;

  route(behavior: WebSocketBehavior<unknown>): WsRoute {
    const r = new WsRoute(behavior);
    this.routes.add(r);
    return r;
  }

  /** The route `res.upgrade` names; throws where uWS would crash or never open. */
  routeOf(context: unknown, userData: unknown): WsRoute {
    if (!(context instanceof WsRoute) || !this.routes.has(context)) {
      throw new Error("HttpResponse.upgrade: the context must be the one this app's ws route passed to its upgrade handler");
    }
    // uWS.js crashes on a number and never opens with other primitives.
    if (typeof userData !== 'object' || userData === null) throw new TypeError('HttpResponse.upgrade: userData must be an object');
    return context;
  }

  /** Completes the handshake (or ws answers 4xx and closes); `opened` then `open` run inside, as on uWS. */
  upgrade(
    route: WsRoute,
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
    userData: object,
    protocol: string,
    address: () => ArrayBuffer,
    opened: () => void,
  ): void {
    route.handshake(req, socket, head, protocol, (ws) => {
      opened();
      const s = new WsState(ws, socket, route, this, address, userData);
      this.open.add(s);
      if (s.tracksIdle()) this.watch(s.tickMs());
      route.behavior.open(s.wrapper);
    });
  }

  forget(s: WsState): void {
    this.open.delete(s);
  }

  /** uWS's App.close() closes its WebSockets at once, `close` getting 1006. */
  closeAll(): void {
    for (const s of this.open) s.forceClose('');
    this.stop();
  }

  /** Ticks at a quarter of the shortest margin, at most a second apart (uWS: 4 s). */
  private watch(marginMs: number): void {
    const ms = Math.max(25, Math.min(1000, marginMs / 4));
    if (this.timer !== null && ms >= this.timerMs) return;
    this.stop();
    this.timerMs = ms;
    this.timer = setInterval(() => this.tick(), ms).unref();
  }

  private tick(): void {
    if (this.open.size === 0) return this.stop();
    const now = performance.now();
    for (const s of this.open) s.idle(now);
  }

  private stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
