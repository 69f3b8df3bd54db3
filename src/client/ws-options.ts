/**
 * What a `RelaySocket` is configured with (and its defaults), what it emits,
 * and its reconnect back-off (docs/client.md, docs/protocol.md#websocket).
 */
import { socketUrl, type WebSocketConstructor } from './ws-transport.js';

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

/** The options with their defaults applied, the URL made a `/ws` URL. */
export interface SocketSettings {
  readonly url: URL;
  readonly apiKey: string;
  readonly auth: 'header' | 'query' | undefined;
  readonly impl: WebSocketConstructor | undefined;
  readonly initialMs: number;
  readonly maxMs: number;
  readonly jitter: number;
  readonly maxPending: number;
  readonly maxQueued: number;
  readonly timeoutMs: number;
}

export function socketSettings(o: RelaySocketOptions): SocketSettings {
  const initialMs = Math.max(1, o.reconnect?.initialMs ?? 250);
  return {
    url: socketUrl(o.url),
    apiKey: o.apiKey,
    auth: o.auth,
    impl: o.WebSocket,
    initialMs,
    maxMs: Math.max(initialMs, o.reconnect?.maxMs ?? 30_000),
    jitter: Math.min(1, Math.max(0, o.reconnect?.jitter ?? 0.5)),
    maxPending: o.maxPending ?? 1024,
    maxQueued: o.maxQueued ?? 256,
    timeoutMs: o.timeoutMs ?? 30_000,
  };
}

/**
 * The wait before reconnect attempt `attempt` (0-based): doubling from
 * `initialMs` up to `maxMs`, less a random `jitter` fraction, and never
 * shorter than the relay's `Retry-After`.
 */
export function backoffDelay(o: SocketSettings, attempt: number, retryAfterMs = 0): number {
  const base = Math.min(o.maxMs, o.initialMs * 2 ** Math.min(attempt, 30));
  return Math.max(Math.round(base * (1 - o.jitter * Math.random())), retryAfterMs);
}
