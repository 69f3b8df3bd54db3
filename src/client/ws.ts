/**
 * The WebSocket client (docs/protocol.md#websocket): one long-lived socket
 * to `/ws` for both families, JSON-RPC calls matched to their answers by id,
 * and status pushes that survive reconnects.
 *
 * What a dropped socket means for a call is the point of this module: a
 * submission written to a socket that then dropped may have been admitted
 * (`uncertain`); a read, or a call never written, changed nothing
 * (`retry-safe`). Calls made while no socket is open wait in a bounded queue
 * and are written once one opens. The socket reconnects by itself, with
 * exponential back-off and jitter, except after close `4001` (account
 * revoked), a `401` at the upgrade, or `close()`.
 *
 * Browser-safe: nothing here imports Node modules. Browsers use their
 * global `WebSocket`; Node uses the `ws` package (imported only when needed),
 * or its own global `WebSocket` (Node >= 22) when the package is missing.
 */
import type { RetryInstruction } from './outcome.js';
import type { StatusObject } from './status.js';

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

export interface ReconnectOptions {
  /** The wait before the first reconnect (default 250 ms); it doubles with each attempt that fails. */
  initialMs?: number;
  /** The longest wait (default 30 s). */
  maxMs?: number;
  /**
   * The fraction of each wait drawn at random, 0 to 1 (default 0.5): the
   * sockets one node restart drops do not all come back in the same instant.
   */
  jitter?: number;
}

export interface RelaySocketOptions {
  /** The relay's `http(s)://` or `ws(s)://` base URL, or its `/ws` URL. */
  url: string;
  /** The account UUID. */
  apiKey: string;
  reconnect?: ReconnectOptions;
  /** The WebSocket implementation; default the global `WebSocket`, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /**
   * Where the key goes at the upgrade: the `api-key` header (default in Node;
   * the `ws` package and Node's global WebSocket can set headers) or
   * `?api-key=` (default elsewhere: a browser cannot set a WebSocket's headers).
   */
  auth?: 'header' | 'query';
  /** Calls without an answer yet, queued ones included (default 1024); more are refused as `retry-safe`. */
  maxPending?: number;
  /** Calls waiting for a socket to open (default 256); more are refused as `retry-safe`. */
  maxQueued?: number;
  /**
   * How long a call waits for its answer, from the call, queueing included
   * (default 30 s; 0: no limit). A call never written is then `retry-safe`,
   * a submission written `uncertain`.
   */
  timeoutMs?: number;
}

/**
 * - `rpc`: the relay answered with a JSON-RPC error: `code`, `data`, and
 *   `retry` when it gave advice (`retry_safe`: nothing was sent).
 * - `uncertain`: a submission was written but its answer never came (the
 *   socket dropped, or `timeoutMs` ran out): the relay may have admitted it.
 * - `retry-safe`: nothing changed: the call was never written (no socket in
 *   time, a full queue, too many pending calls), or it was a read whose answer
 *   was lost. Send it again.
 * - `unauthorized`: the upgrade was refused with `401` (an unknown key, or one
 *   revoked while disconnected); the client stops.
 * - `revoked`: the relay closed the socket with `4001`; the client stops.
 * - `closed`: `close()` was called, or no WebSocket implementation could be
 *   loaded; the client stops.
 */
export type RelaySocketErrorKind = 'rpc' | 'uncertain' | 'retry-safe' | 'unauthorized' | 'revoked' | 'closed';

/** Every rejection of a `RelaySocket` call, and what its `error` event carries. */
export class RelaySocketError extends Error {
  constructor(
    message: string,
    readonly kind: RelaySocketErrorKind,
    /** The JSON-RPC method of the call, when the error is about one. */
    readonly method?: string,
    /** The relay's JSON-RPC error code (kind `rpc`). */
    readonly code?: number,
    /** The relay's JSON-RPC error `data` (kind `rpc`). */
    readonly data?: unknown,
    /**
     * `retry_safe` when sending again cannot do harm and nothing was done;
     * `do_not_retry_automatically` when the request (or the key) must change.
     * Absent for `uncertain` and for relay errors without advice.
     */
    readonly retry?: RetryInstruction,
  ) {
    super(message);
    this.name = 'RelaySocketError';
  }
}

export interface RelaySocketEvents {
  /**
   * A socket opened, the first or a new one (the status subscription is made
   * again by itself). Pushes made while no socket was open are not replayed:
   * re-read what you are waiting for with `statuses()`.
   */
  open: () => void;
  /** A socket closed, or an attempt failed; `reconnect` is false when the client stopped for good. */
  close: (e: { code: number; reason: string; reconnect: boolean }) => void;
  /** The next connection attempt, after `delayMs`. */
  reconnecting: (e: { attempt: number; delayMs: number }) => void;
  /**
   * Why the client stopped (`unauthorized`, `revoked`), and what went wrong
   * on the way without stopping it: a refused upgrade, a failed
   * re-subscription, an error answer no call can be matched to, a status
   * listener that threw.
   */
  error: (e: Error) => void;
}

export type RelaySocketState = 'connecting' | 'open' | 'reconnecting' | 'closed';

interface Call {
  id: number;
  method: string;
  params: unknown;
  resolve: (v: any) => void;
  reject: (e: RelaySocketError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Written to a socket: from then on its loss is classified by method. */
  sent: boolean;
}

/** Calls that change nothing: losing their answer is always retry-safe. */
const READS = new Set(['txrelay_getStatuses', 'txrelay_subscribe', 'txrelay_unsubscribe']);
/** `txrelay_getStatuses` takes at most this many ids (status.ts's MAX_STATUS_IDS, not imported: status.ts pulls in undici). */
const STATUS_IDS_PER_CALL = 100;
/** A connection that lived this long resets the back-off; shorter ones (a refusal loop) keep it growing. */
const STABLE_MS = 10_000;
/** A handshake that neither opens nor fails by then is abandoned and retried. */
const CONNECT_TIMEOUT_MS = 10_000;
const OPEN = 1;
const CLOSE_REVOKED = 4001;

/**
 * A WebSocket client for txrelay: `request()` any JSON-RPC method of
 * docs/protocol.md#websocket, or use `sendSolana`, `sendEvm`, `statuses` and
 * `subscribeStatuses`. It connects at construction; `close()` ends it.
 */
export class RelaySocket {
  private readonly url: URL;
  private readonly apiKey: string;
  private readonly auth: 'header' | 'query' | undefined;
  private readonly impl: WebSocketConstructor | undefined;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly jitter: number;
  private readonly maxPending: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;

  private sock: WebSocketLike | null = null;
  private opened = false;
  private everOpened = false;
  private openedAt = 0;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private connectTimer: ReturnType<typeof setTimeout> | undefined;
  private subTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped: RelaySocketError | null = null;
  private closing: Promise<void> | null = null;
  private nextId = 1;
  /** Written calls awaiting their answers, by id. */
  private readonly inFlight = new Map<number, Call>();
  /** Calls waiting for a socket (or for the subscription to be made again), in call order. */
  private queue: Call[] = [];
  private readonly statusListeners = new Set<{ f: (s: StatusObject) => void }>();
  /** The server's subscription id on the current socket. */
  private subId: number | null = null;
  /** A subscribe is in flight: calls wait for it, so that every call made after subscribing has its statuses pushed. */
  private subscribing = false;
  private readonly events: { [K in keyof RelaySocketEvents]: Set<RelaySocketEvents[K]> } = {
    open: new Set(),
    close: new Set(),
    reconnecting: new Set(),
    error: new Set(),
  };

  constructor(o: RelaySocketOptions) {
    this.url = socketUrl(o.url);
    this.apiKey = o.apiKey;
    this.auth = o.auth;
    this.impl = o.WebSocket;
    this.initialMs = Math.max(1, o.reconnect?.initialMs ?? 250);
    this.maxMs = Math.max(this.initialMs, o.reconnect?.maxMs ?? 30_000);
    this.jitter = Math.min(1, Math.max(0, o.reconnect?.jitter ?? 0.5));
    this.maxPending = o.maxPending ?? 1024;
    this.maxQueued = o.maxQueued ?? 256;
    this.timeoutMs = o.timeoutMs ?? 30_000;
    void this.connect();
  }

  get state(): RelaySocketState {
    if (this.stopped) return 'closed';
    if (this.opened) return 'open';
    return this.everOpened ? 'reconnecting' : 'connecting';
  }

  /** Adds an event listener; returns the function that removes it. */
  on<K extends keyof RelaySocketEvents>(event: K, listener: RelaySocketEvents[K]): () => void {
    const set = this.events[event] as Set<RelaySocketEvents[K]>;
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * One JSON-RPC call; resolves with its `result`, rejects with a
   * `RelaySocketError` (see `RelaySocketErrorKind` for what may be resent).
   * Subscribe with `subscribeStatuses`: the pushes of a subscription made
   * here are not delivered (and it ends with its socket).
   */
  request<T = unknown>(method: string, params: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.stopped) return reject(again(this.stopped, method));
      if (this.inFlight.size + this.queue.length >= this.maxPending) {
        return reject(new RelaySocketError(`${method} not sent: ${this.maxPending} calls already await an answer (maxPending); wait for some`, 'retry-safe', method, undefined, undefined, 'retry_safe'));
      }
      const writable = this.writable();
      // The bound is for outages: behind a subscription being made (one round trip), calls just wait.
      if (!writable && !this.opened && this.queue.length >= this.maxQueued) {
        return reject(new RelaySocketError(`${method} not sent: ${this.maxQueued} calls already wait for a connection to the relay (maxQueued)`, 'retry-safe', method, undefined, undefined, 'retry_safe'));
      }
      const call: Call = { id: this.nextId++, method, params, resolve, reject, timer: undefined, sent: false };
      if (this.timeoutMs > 0 && Number.isFinite(this.timeoutMs)) call.timer = setTimeout(() => this.timedOut(call), this.timeoutMs);
      if (writable) this.write(call);
      else this.queue.push(call);
    });
  }

  /** `sendTransaction`: a signed Solana transaction (bytes, or base64 text); resolves with its first signature. */
  sendSolana(tx: Uint8Array | string): Promise<string> {
    const b64 = typeof tx === 'string' ? tx : base64(tx);
    return this.request<string>('sendTransaction', [b64, { encoding: 'base64' }]);
  }

  /** `eth_sendRawTransaction`: a signed EVM transaction as `0x` hex; resolves with its hash once queued. */
  sendEvm(hex: string): Promise<string> {
    return this.request<string>('eth_sendRawTransaction', [hex]);
  }

  /**
   * `txrelay_getStatuses`: the statuses of `ids`, in order (docs/protocol.md#status);
   * more than 100 ids go as several calls at once.
   */
  async statuses(ids: string[]): Promise<StatusObject[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += STATUS_IDS_PER_CALL) chunks.push(ids.slice(i, i + STATUS_IDS_PER_CALL));
    const got = await Promise.all(
      chunks.map(async (chunk) => {
        const list = await this.request<unknown>('txrelay_getStatuses', [chunk]);
        if (!Array.isArray(list) || list.length !== chunk.length || !list.every(isStatus)) {
          throw new RelaySocketError(`txrelay_getStatuses: expected ${chunk.length} statuses, got ${JSON.stringify(list).slice(0, 200)}`, 'rpc', 'txrelay_getStatuses');
        }
        return list;
      }),
    );
    return got.flat();
  }

  /**
   * Calls `onStatus` with every status change of the account's transactions,
   * whichever door sent them (docs/protocol.md#websocket). One server
   * subscription serves every listener, and it is made again on each new
   * socket: changes while no socket was open are missed (see the `open`
   * event). Calls made after this one wait until the subscription is made,
   * so their statuses are pushed. Returns the function that stops it;
   * throws the reason once the client has stopped.
   */
  subscribeStatuses(onStatus: (status: StatusObject) => void): () => void {
    if (this.stopped) throw again(this.stopped, 'txrelay_subscribe');
    const entry = { f: onStatus };
    this.statusListeners.add(entry);
    if (this.statusListeners.size === 1 && this.opened && this.subId === null && !this.subscribing) this.subscribe();
    return () => {
      if (!this.statusListeners.delete(entry) || this.statusListeners.size > 0) return;
      const id = this.subId;
      this.subId = null;
      if (id !== null && this.writable()) this.internal('txrelay_unsubscribe', [id]).catch(() => {});
    };
  }

  /**
   * Closes for good: queued calls are rejected as `closed` (never sent),
   * calls awaiting an answer as their loss is classified. Resolves once the
   * socket is closed.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    const err = new RelaySocketError('the RelaySocket was closed with close()', 'closed', undefined, undefined, undefined, 'do_not_retry_automatically');
    const sock = this.sock;
    this.stop(err, { code: 1000, reason: 'close()' }, false, true);
    this.closing = new Promise<void>((resolve) => {
      if (!sock || sock.readyState === 3) return resolve();
      // The close handshake waits for the relay; a relay gone silent must not hold the caller.
      const t = setTimeout(() => {
        (sock as { terminate?: () => void }).terminate?.();
        resolve();
      }, 1000);
      sock.onclose = () => {
        clearTimeout(t);
        resolve();
      };
      try {
        sock.close(1000, 'client closed');
      } catch {
        clearTimeout(t);
        resolve();
      }
    });
    return this.closing;
  }

  // ---- connection ----

  private async connect(): Promise<void> {
    let Impl: WebSocketConstructor;
    try {
      Impl = await this.implementation();
    } catch (e) {
      const err = new RelaySocketError(`no WebSocket implementation: pass options.WebSocket, or install the ws package (${errorText(e)})`, 'closed', undefined, undefined, undefined, 'do_not_retry_automatically');
      this.stop(err, { code: 1006, reason: 'no WebSocket implementation' }, true);
      return;
    }
    if (this.stopped) return;
    const auth = this.auth ?? (Impl === wsPackage || isNode() ? 'header' : 'query');
    const url = new URL(this.url);
    if (auth === 'query') url.searchParams.set('api-key', this.apiKey);
    let sock: WebSocketLike;
    try {
      sock = auth === 'header' ? new Impl(url.toString(), { headers: { 'api-key': this.apiKey } }) : new Impl(url.toString());
    } catch (e) {
      // A URL or implementation the WebSocket refuses: no later attempt would do better.
      const err = new RelaySocketError(`cannot open a WebSocket to ${where(this.url)}: ${errorText(e)}`, 'closed', undefined, undefined, undefined, 'do_not_retry_automatically');
      this.stop(err, { code: 1006, reason: errorText(e) }, true);
      return;
    }
    this.sock = sock;
    let refusal: Refusal | null = null;
    let failure = '';
    clearTimeout(this.connectTimer);
    const connectTimer = (this.connectTimer = setTimeout(() => {
      if (this.sock === sock && !this.opened) {
        failure = `no handshake within ${CONNECT_TIMEOUT_MS} ms`;
        abandon(sock);
      }
    }, CONNECT_TIMEOUT_MS));
    // Only the ws package shows a refused upgrade's HTTP answer; a WHATWG WebSocket reports a bare failure (see `probe`).
    const on = (sock as unknown as { on?: (ev: string, f: (...a: any[]) => void) => void }).on;
    const seesRefusals = typeof on === 'function';
    if (seesRefusals) {
      on.call(sock, 'unexpected-response', (_req: unknown, res: UpgradeResponse) => {
        readRefusal(res).then((r) => {
          refusal = r;
          abandon(sock);
        });
      });
    }
    sock.onopen = () => {
      clearTimeout(connectTimer);
      if (this.sock === sock) this.onOpen();
    };
    sock.onmessage = (ev: { data: unknown }) => {
      if (this.sock === sock) this.onMessage(ev.data);
    };
    sock.onerror = (ev: { message?: string; error?: unknown }) => {
      failure ||= ev?.message ?? (ev?.error !== undefined ? errorText(ev.error) : '');
    };
    sock.onclose = (ev: { code?: number; reason?: string }) => {
      clearTimeout(connectTimer);
      if (this.sock !== sock) return;
      void this.onClose(ev?.code ?? 1006, ev?.reason || failure, refusal, seesRefusals);
    };
  }

  private implementation(): Promise<WebSocketConstructor> {
    if (this.impl) return Promise.resolve(this.impl);
    const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    // In Node the ws package first, even where a global WebSocket exists (Node >= 22): it reports the
    // upgrade's HTTP status (a 401 stops reconnecting) where undici's hides it.
    if (isNode()) return loadWsPackage().catch((e: unknown) => (typeof global === 'function' ? global : Promise.reject(e)));
    if (typeof global === 'function') return Promise.resolve(global);
    return loadWsPackage();
  }

  private onOpen(): void {
    this.opened = true;
    this.everOpened = true;
    this.openedAt = Date.now();
    if (this.statusListeners.size > 0) this.subscribe();
    this.emit('open');
    this.flush();
  }

  private async onClose(code: number, reason: string, refusal: Refusal | null, seesRefusals: boolean): Promise<void> {
    const wasOpen = this.opened;
    this.sock = null;
    this.opened = false;
    this.subId = null;
    this.subscribing = false;
    clearTimeout(this.subTimer);
    const why = `close ${code}${reason ? ` ${reason}` : ''}`;
    for (const call of [...this.inFlight.values()]) this.settle(call, lost(call, `the connection dropped (${why})`));
    if (this.stopped) return;
    if (wasOpen && Date.now() - this.openedAt >= STABLE_MS) this.attempt = 0;

    if (code === CLOSE_REVOKED) {
      return this.stop(new RelaySocketError(`account revoked: the relay closed the socket (${why}); this key will not be accepted again`, 'revoked', undefined, undefined, undefined, 'do_not_retry_automatically'), { code, reason }, true);
    }
    // A WHATWG WebSocket hides the upgrade's HTTP status: ask the status API whether the key is the reason.
    if (!wasOpen && !seesRefusals) refusal = await this.probe();
    if (this.stopped) return;
    if (refusal?.status === 401) {
      return this.stop(new RelaySocketError(`unauthorized: the relay refused the upgrade with 401 (${refusal.message}); check the key (a revoked one stays refused)`, 'unauthorized', undefined, refusal.code, undefined, 'do_not_retry_automatically'), { code, reason }, true);
    }
    if (refusal !== null && refusal.status !== 429 && refusal.status !== 503) {
      this.emit('error', new RelaySocketError(`the relay refused the upgrade with ${refusal.status}: ${refusal.message}`, 'rpc', undefined, refusal.code));
    }
    this.emit('close', { code, reason, reconnect: true });
    const base = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    const delayMs = Math.max(Math.round(base * (1 - this.jitter * Math.random())), refusal?.retryAfterMs ?? 0);
    this.emit('reconnecting', { attempt: this.attempt, delayMs });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) void this.connect();
    }, delayMs);
  }

  /**
   * For a WHATWG WebSocket whose handshake failed: one status read with the
   * key (`GET /v1/status/-`), whose `401` says the key is refused. Anything
   * else (another status, no `fetch`, a browser's CORS refusal) says nothing,
   * and the socket goes on reconnecting.
   */
  private async probe(): Promise<Refusal | null> {
    const f = (globalThis as { fetch?: (u: string, i: object) => Promise<{ status: number; text(): Promise<string> }> }).fetch;
    if (typeof f !== 'function') return null;
    const u = new URL(this.url);
    u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
    u.pathname = u.pathname.replace(/\/ws$/, '') + '/v1/status/-';
    u.search = '';
    try {
      const ac = new AbortController();
      const t = setTimeout(() => ac.abort(), 5000);
      const res = await f(u.toString(), { headers: { 'api-key': this.apiKey }, signal: ac.signal }).finally(() => clearTimeout(t));
      const text = await res.text();
      return res.status === 401 ? { status: 401, ...errorBody(text) } : null;
    } catch {
      return null;
    }
  }

  /**
   * Stops for good: every call is rejected (queued ones with `err`, written
   * ones as their loss is classified), the socket closed, and `close` (and
   * for anything but `close()`, `error`) emitted.
   */
  private stop(err: RelaySocketError, closed: { code: number; reason: string }, emitError: boolean, graceful = false): void {
    if (this.stopped) return;
    this.stopped = err;
    clearTimeout(this.retryTimer);
    clearTimeout(this.connectTimer);
    clearTimeout(this.subTimer);
    const why = err.kind === 'closed' ? 'close() was called' : err.message;
    for (const call of [...this.inFlight.values()]) this.settle(call, lost(call, `the socket was closed before the answer came (${why})`));
    const queued = this.queue;
    this.queue = [];
    for (const call of queued) this.settle(call, again(err, call.method));
    const sock = this.sock;
    this.sock = null;
    this.opened = false;
    this.subId = null;
    this.subscribing = false;
    // `close()` closes its socket with the close handshake itself.
    if (sock && !graceful) abandon(sock);
    if (emitError) this.emit('error', err);
    this.emit('close', { ...closed, reconnect: false });
  }

  // ---- calls ----

  private writable(): boolean {
    return this.opened && !this.subscribing && this.sock !== null && this.sock.readyState === OPEN;
  }

  private write(call: Call): void {
    const sock = this.sock!;
    call.sent = true;
    this.inFlight.set(call.id, call);
    try {
      sock.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, method: call.method, params: call.params }));
    } catch (e) {
      // Refused synchronously (e.g. not serialisable): nothing left the client.
      call.sent = false;
      this.settle(call, new RelaySocketError(`${call.method} not sent: ${errorText(e)}`, 'retry-safe', call.method, undefined, undefined, 'retry_safe'));
    }
  }

  private flush(): void {
    while (this.queue.length > 0 && this.writable()) this.write(this.queue.shift()!);
  }

  private settle(call: Call, outcome: RelaySocketError | { result: unknown }): void {
    clearTimeout(call.timer);
    this.inFlight.delete(call.id);
    if (outcome instanceof RelaySocketError) call.reject(outcome);
    else call.resolve(outcome.result);
  }

  private timedOut(call: Call): void {
    if (call.sent) {
      if (this.inFlight.get(call.id) === call) this.settle(call, lost(call, `no answer within ${this.timeoutMs} ms`));
      return;
    }
    const i = this.queue.indexOf(call);
    if (i < 0) return;
    this.queue.splice(i, 1);
    this.settle(call, new RelaySocketError(`${call.method} not sent: no connection to the relay within ${this.timeoutMs} ms`, 'retry-safe', call.method, undefined, undefined, 'retry_safe'));
  }

  private onMessage(data: unknown): void {
    const text = typeof data === 'string' ? data : data instanceof ArrayBuffer || ArrayBuffer.isView(data) ? new TextDecoder().decode(data as ArrayBuffer) : null;
    if (text === null) return;
    let m: any;
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return;
    if (m.method === 'txrelay_status') {
      const p = m.params;
      if (p?.subscription !== this.subId || this.subId === null || !isStatus(p.result)) return;
      for (const l of [...this.statusListeners]) {
        try {
          l.f(p.result);
        } catch (e) {
          this.emit('error', e instanceof Error ? e : new Error(String(e)));
        }
      }
      return;
    }
    const call = typeof m.id === 'number' ? this.inFlight.get(m.id) : undefined;
    if (call) return this.settle(call, m.error !== undefined ? rpcError(call.method, m.error) : { result: m.result });
    if (m.id === null && m.error !== undefined) {
      // A refusal of a whole message (a shed, the per-IP limit, an oversized message) has no id: it is
      // one call's only when one is in flight; otherwise that call will time out, as uncertain.
      const only = this.inFlight.size === 1 ? [...this.inFlight.values()][0]! : undefined;
      if (only) return this.settle(only, rpcError(only.method, m.error));
      this.emit('error', rpcError('(unknown call)', m.error, `an error answer with id null, not matched to one of ${this.inFlight.size} calls in flight: `));
    }
  }

  // ---- the status subscription ----

  private subscribe(): void {
    const sock = this.sock;
    this.subscribing = true;
    this.internal<number>('txrelay_subscribe', ['statuses']).then(
      (id) => {
        if (this.sock !== sock || this.stopped) return;
        this.subscribing = false;
        if (this.statusListeners.size === 0) this.internal('txrelay_unsubscribe', [id]).catch(() => {});
        else this.subId = id;
        this.flush();
      },
      (e: RelaySocketError) => {
        if (this.sock !== sock || this.stopped) return;
        // Not made (a read limit, ws.max_subscriptions, ws.max_account_subscriptions): calls go on, and it is tried again.
        this.subscribing = false;
        this.emit('error', new RelaySocketError(`the status subscription was not made: ${e.message}`, e.kind, 'txrelay_subscribe', e.code, e.data, e.retry));
        this.flush();
        const delay = Math.min(this.maxMs, Math.max(this.initialMs, 1000));
        clearTimeout(this.subTimer);
        this.subTimer = setTimeout(() => {
          if (this.sock === sock && this.opened && this.statusListeners.size > 0 && this.subId === null && !this.subscribing) this.subscribe();
        }, delay);
      },
    );
  }

  /** The client's own call: written at once, whatever the gate, the queue or the caps say. */
  private internal<T>(method: string, params: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call: Call = { id: this.nextId++, method, params, resolve, reject, timer: undefined, sent: false };
      // Always bounded: calls wait behind a subscribe, so a subscribe without an answer must end.
      call.timer = setTimeout(() => this.timedOut(call), this.timeoutMs > 0 && Number.isFinite(this.timeoutMs) ? this.timeoutMs : 30_000);
      this.write(call);
    });
  }

  private emit<K extends keyof RelaySocketEvents>(event: K, ...args: Parameters<RelaySocketEvents[K]>): void {
    for (const f of [...this.events[event]]) {
      try {
        (f as (...a: unknown[]) => void)(...args);
      } catch {
        // A listener's failure is its own; the socket goes on.
      }
    }
  }
}

/** What a refused upgrade answered. */
interface Refusal {
  status: number;
  message: string;
  code?: number;
  retryAfterMs?: number;
}

/** The `ws` package's `unexpected-response` response (an IncomingMessage). */
interface UpgradeResponse {
  statusCode?: number;
  headers: Record<string, string | string[] | undefined>;
  on(ev: 'data', f: (c: Uint8Array) => void): void;
  on(ev: 'end' | 'error' | 'close', f: () => void): void;
}

/** The refusal's status, its JSON-RPC error and `Retry-After`; the body is read up to 4 KiB. */
function readRefusal(res: UpgradeResponse): Promise<Refusal> {
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
function abandon(sock: WebSocketLike): void {
  try {
    const t = (sock as { terminate?: () => void }).terminate;
    if (typeof t === 'function') t.call(sock);
    else sock.close();
  } catch {
    // Already closed.
  }
}

/**
 * A written call whose answer will not come: a read changed nothing; a
 * submission may have been admitted.
 */
function lost(call: Call, why: string): RelaySocketError {
  if (READS.has(call.method)) {
    return new RelaySocketError(`${call.method}: ${why}; a read changes nothing, so it is safe to send again`, 'retry-safe', call.method, undefined, undefined, 'retry_safe');
  }
  return new RelaySocketError(
    `${call.method} was sent but ${why}: the outcome is UNCERTAIN, the relay may have admitted it. Sending the same signed transaction again is safe ` +
      '(the relay answers a duplicate, and no chain executes one signed transaction twice); or read its status once reconnected',
    'uncertain',
    call.method,
  );
}

/** The client's stop reason, for one more call. */
function again(err: RelaySocketError, method: string): RelaySocketError {
  return new RelaySocketError(`${method} not sent: ${err.message}`, err.kind, method, err.code, err.data, err.retry);
}

function rpcError(method: string, e: any, prefix = ''): RelaySocketError {
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : JSON.stringify(e);
  const retry = e?.data?.retry === 'retry_safe' || e?.data?.retry === 'do_not_retry_automatically' ? (e.data.retry as RetryInstruction) : undefined;
  return new RelaySocketError(`${prefix}${method}: ${message}`, 'rpc', method, code, e?.data, retry);
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

function base64(b: Uint8Array): string {
  const B = (globalThis as { Buffer?: { from(a: ArrayBufferLike, o: number, l: number): { toString(enc: string): string } } }).Buffer;
  if (B) return B.from(b.buffer, b.byteOffset, b.length).toString('base64');
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return (globalThis as unknown as { btoa(s: string): string }).btoa(s);
}

function isStatus(v: unknown): v is StatusObject {
  return typeof v === 'object' && v !== null && typeof (v as StatusObject).id === 'string' && typeof (v as StatusObject).state === 'string';
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The relay's address without credentials, for messages. */
function where(u: URL): string {
  return u.origin + u.pathname;
}
