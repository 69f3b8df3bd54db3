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
 *
 * This module is the connection's state machine and the call bookkeeping;
 * the socket implementation and refused upgrades are ws-transport.ts, the
 * classification of a lost call ws-errors.ts, options and back-off
 * ws-options.ts.
 */
import type { StatusObject } from './status.js';
import { backoffDelay, socketSettings, type RelaySocketEvents, type RelaySocketOptions, type RelaySocketState, type SocketSettings } from './ws-options.js';
import { RelaySocketError, again, errorText, lost, rpcError, type Call } from './ws-errors.js';
import { abandon, defaultAuth, loadWebSocket, probeRefusal, readRefusal, where, type Refusal, type UpgradeResponse, type WebSocketConstructor, type WebSocketLike } from './ws-transport.js';

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
  private readonly o: SocketSettings;

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
    this.o = socketSettings(o);
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
      if (this.inFlight.size + this.queue.length >= this.o.maxPending) {
        return reject(new RelaySocketError(`${method} not sent: ${this.o.maxPending} calls already await an answer (maxPending); wait for some`, 'retry-safe', method, undefined, undefined, 'retry_safe'));
      }
      const writable = this.writable();
      // The bound is for outages: behind a subscription being made (one round trip), calls just wait.
      if (!writable && !this.opened && this.queue.length >= this.o.maxQueued) {
        return reject(new RelaySocketError(`${method} not sent: ${this.o.maxQueued} calls already wait for a connection to the relay (maxQueued)`, 'retry-safe', method, undefined, undefined, 'retry_safe'));
      }
      const call: Call = { id: this.nextId++, method, params, resolve, reject, timer: undefined, sent: false };
      if (this.o.timeoutMs > 0 && Number.isFinite(this.o.timeoutMs)) call.timer = setTimeout(() => this.timedOut(call), this.o.timeoutMs);
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
      Impl = await loadWebSocket(this.o.impl);
    } catch (e) {
      const err = new RelaySocketError(`no WebSocket implementation: pass options.WebSocket, or install the ws package (${errorText(e)})`, 'closed', undefined, undefined, undefined, 'do_not_retry_automatically');
      this.stop(err, { code: 1006, reason: 'no WebSocket implementation' }, true);
      return;
    }
    if (this.stopped) return;
    const auth = this.o.auth ?? defaultAuth(Impl);
    const url = new URL(this.o.url);
    if (auth === 'query') url.searchParams.set('api-key', this.o.apiKey);
    let sock: WebSocketLike;
    try {
      sock = auth === 'header' ? new Impl(url.toString(), { headers: { 'api-key': this.o.apiKey } }) : new Impl(url.toString());
    } catch (e) {
      // A URL or implementation the WebSocket refuses: no later attempt would do better.
      const err = new RelaySocketError(`cannot open a WebSocket to ${where(this.o.url)}: ${errorText(e)}`, 'closed', undefined, undefined, undefined, 'do_not_retry_automatically');
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
    if (!wasOpen && !seesRefusals) refusal = await probeRefusal(this.o.url, this.o.apiKey);
    if (this.stopped) return;
    if (refusal?.status === 401) {
      return this.stop(new RelaySocketError(`unauthorized: the relay refused the upgrade with 401 (${refusal.message}); check the key (a revoked one stays refused)`, 'unauthorized', undefined, refusal.code, undefined, 'do_not_retry_automatically'), { code, reason }, true);
    }
    if (refusal !== null && refusal.status !== 429 && refusal.status !== 503) {
      this.emit('error', new RelaySocketError(`the relay refused the upgrade with ${refusal.status}: ${refusal.message}`, 'rpc', undefined, refusal.code));
    }
    this.emit('close', { code, reason, reconnect: true });
    const delayMs = backoffDelay(this.o, this.attempt++, refusal?.retryAfterMs);
    this.emit('reconnecting', { attempt: this.attempt, delayMs });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) void this.connect();
    }, delayMs);
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
      if (this.inFlight.get(call.id) === call) this.settle(call, lost(call, `no answer within ${this.o.timeoutMs} ms`));
      return;
    }
    const i = this.queue.indexOf(call);
    if (i < 0) return;
    this.queue.splice(i, 1);
    this.settle(call, new RelaySocketError(`${call.method} not sent: no connection to the relay within ${this.o.timeoutMs} ms`, 'retry-safe', call.method, undefined, undefined, 'retry_safe'));
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
        const delay = Math.min(this.o.maxMs, Math.max(this.o.initialMs, 1000));
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
      call.timer = setTimeout(() => this.timedOut(call), this.o.timeoutMs > 0 && Number.isFinite(this.o.timeoutMs) ? this.o.timeoutMs : 30_000);
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
