/**
 * `/ws`: the WebSocket door (docs/protocol.md#websocket).
 *
 * The upgrade is a status read through the pipeline (no ids): the gate checks
 * the node is not draining, the per-IP limit and the credential (`api-key`,
 * `Authorization: Bearer` or `?api-key=`), and the status reads' limit, and a
 * refused upgrade gets the HTTP answer before any upgrade. Each message is
 * then a JSON-RPC body for jsonrpc.ts, with the socket's credential, in the
 * same quota, dedup and lanes as HTTP; its answer is the HTTP door's body.
 *
 * Bounds: a message over `http.max_body_bytes` is answered with the JSON-RPC
 * error; one over twice that drops the connection (uWS's limit, so a socket
 * never buffers more); a reader that leaves more than `ws.max_buffered_bytes`
 * unread is closed (4008); a silent socket is pinged, then closed
 * (`ws.idle_timeout_s`); a revoked account's sockets close (4001); an
 * account's subscriptions on all its sockets are capped
 * (`ws.max_account_subscriptions`), so one change is pushed a bounded number
 * of times however many sockets the account opens. A closed
 * socket gives its place in the connection caps back itself: uWS's filter
 * sees no close of an upgraded connection.
 *
 * Fairness: a socket's messages are handled up to TURN_BYTES / TURN_MESSAGES
 * per event-loop turn; the rest wait, copied, for the next turns (one round per
 * turn over every socket with some waiting), so one socket that pipelines
 * messages cannot hold the acceptor while other sockets and connections wait.
 * Past MAX_WAITING messages (or 8 x `http.max_body_bytes`) waiting on one
 * socket, a message is answered `TXR_CAPACITY` unread (docs/protocol.md#websocket).
 */
import { E, RelayError } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import type { Family } from '../../pipeline/accounts.js';
import { Kind, query, refusedAt, type Sink, type Submission } from '../../pipeline/submission.js';
import type { AccountRecord } from '../../store/accounts.js';
import type { StatusFeed, Subscriber } from '../../status/feed.js';
import { refusalLimits } from '../../pipeline/accounts.js';
import { TAKES_WS, write, rpcError, type DoorWords } from '../../answers/answer.js';
import { rpcRefusal } from '../../answers/rpc.js';
import { watchAbort, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse, WebSocket } from '../uws.js';
import type { DoorContext } from './context.js';
import { addressKey, upgradedClosed } from '../conn-caps.js';
import { bearer } from './evm.js';
import { Pace, type RpcMessage, type RpcSocket } from './jsonrpc.js';

/** A socket's work per event-loop turn before its next messages wait for the next turn. */
const TURN_BYTES = 64 * 1024;
const TURN_MESSAGES = 16;
/** Messages waiting on one socket before more are answered TXR_CAPACITY unread. */
const MAX_WAITING = 1024;
/** Messages in a row refused for the account's rate before the socket is closed (CLOSE_FLOOD). */
const MAX_LIMITED = 128;
/** After a socket is closed for flooding, its account's next upgrade on this thread waits this long (429). */
const FLOOD_COOLDOWN_MS = 10_000;

/** Close codes (docs/protocol.md#websocket). */
const CLOSE_SHUTDOWN = 1001;
const CLOSE_REVOKED = 4001;
const CLOSE_SLOW_READER = 4008;
/** Policy violation: a socket kept sending after MAX_WAITING of its messages in a row were refused unread or for its account's rate. */
const CLOSE_FLOOD = 1008;

interface WsOptions {
  idleTimeoutS: number;
  maxBufferedBytes: number;
  maxSubscriptions: number;
  /** Subscriptions of one account across this thread's sockets: a status change is pushed at most this many times. */
  maxAccountSubscriptions: number;
}

export interface WsDoor {
  /** Open sockets. */
  readonly size: number;
  /** An account changed: a revoked one (or one with no family left) loses its sockets. */
  accountChanged(rec: AccountRecord): void;
  /** Shutdown: every socket gets a close frame (1001). */
  closeAll(): void;
}

/** What the upgrade read off the request while it was valid. */
interface Upgrade {
  res: Res;
  key: string;
  protocol: string;
  extensions: string;
  context: unknown;
  ip: string;
  /** The connection's key in the connection caps. */
  capKey: string;
  credential: string;
}

/** uWS copies the user data's own properties to the socket, so the Socket travels as one of them. */
interface Holder {
  s: Socket;
}

class Socket implements RpcSocket, Subscriber {
  ws: WebSocket<Holder> | null = null;
  open = false;
  aborted = false;
  /** Subscription ids, in the order made. */
  subs: number[] = [];
  /** Messages waiting for a later turn (copies: uWS takes a message's memory back after its callback). */
  waiting: Uint8Array[] = [];
  waitingBytes = 0;
  /** Messages refused unread since the socket's backlog last emptied. */
  unread = 0;
  /** Messages refused whole for the account's rate since a call last went through. */
  limited = 0;
  /** The turn `turnBytes` and `turnMessages` count in. */
  turn = -1;
  turnBytes = 0;
  turnMessages = 0;

  constructor(
    private readonly door: Door,
    readonly credential: string,
    readonly ip: string,
    readonly family: Family,
    readonly accountId: number,
    readonly capKey: string,
  ) {}

  answer(body: string, holdMs: number, pace = Pace.Ok): void {
    // A client that goes on sending into its account's empty bucket is closed: each 429 still costs an answer.
    // Only a call that went through ends the run: a refusal for the body's shape refills nothing.
    if (pace === Pace.Ok) this.limited = 0;
    else if (pace === Pace.Limited && ++this.limited > MAX_LIMITED) return this.end(CLOSE_FLOOD, `more than ${MAX_LIMITED} messages refused for the account's rate: wait as told`);
    if (holdMs > 0) setTimeout(() => this.send(body), holdMs);
    else this.send(body);
  }

  send(body: string): void {
    if (!this.open) return;
    const ws = this.ws!;
    ws.cork(() => ws.send(body, false));
    if (ws.getBufferedAmount() > this.door.o.maxBufferedBytes) this.end(CLOSE_SLOW_READER, `send buffer over ${this.door.o.maxBufferedBytes} bytes: read faster`);
  }

  subscribe(): number | RelayError {
    const max = this.door.o.maxSubscriptions;
    if (this.subs.length >= max) return new RelayError(E.INVALID_PARAMS, `a socket holds at most ${max} subscriptions (ws.max_subscriptions)`);
    // Pushes per change grow with the account's subscriptions on all its sockets, not one socket's.
    const held = this.door.accountSubs.get(this.accountId) ?? 0;
    const cap = this.door.o.maxAccountSubscriptions;
    if (held >= cap) return new RelayError(E.INVALID_PARAMS, `an account holds at most ${cap} subscriptions across its sockets (ws.max_account_subscriptions)`);
    this.door.accountSubs.set(this.accountId, held + 1);
    const id = this.door.nextSubscription++;
    if (this.subs.length === 0) this.door.feed.add(this.accountId, this);
    this.subs.push(id);
    return id;
  }

  unsubscribe(id: number): boolean {
    const i = this.subs.indexOf(id);
    if (i < 0) return false;
    this.subs.splice(i, 1);
    this.door.release(this.accountId, 1);
    if (this.subs.length === 0) this.door.feed.remove(this.accountId, this);
    return true;
  }

  push(json: string): void {
    // Copied: a slow reader closed by the first push must not be written again.
    for (const id of this.subs.slice()) this.send(`{"jsonrpc":"2.0","method":"txrelay_status","params":{"subscription":${id},"result":${json}}}`);
  }

  end(code: number, reason: string): void {
    if (code === CLOSE_FLOOD) this.door.cooled(this.accountId);
    if (!this.open) return;
    this.open = false;
    this.aborted = true;
    this.ws!.end(code, reason);
  }

  /** The socket closed, whoever closed it. */
  closed(): void {
    this.open = false;
    this.aborted = true;
    this.ws = null;
    if (this.subs.length > 0) {
      this.door.feed.remove(this.accountId, this);
      this.door.release(this.accountId, this.subs.length);
    }
    this.subs = [];
    this.waiting = [];
    this.waitingBytes = 0;
  }

  /** Room left in this turn's budget (counted from the turn's first message). */
  mayRun(turn: number): boolean {
    if (this.turn !== turn) {
      this.turn = turn;
      this.turnBytes = 0;
      this.turnMessages = 0;
    }
    return this.turnBytes < TURN_BYTES && this.turnMessages < TURN_MESSAGES;
  }

  spend(bytes: number): void {
    this.turnBytes += bytes;
    this.turnMessages++;
  }
}

class Door implements WsDoor {
  readonly sockets = new Set<Socket>();
  nextSubscription = 1;
  /** Subscriptions each account holds on this thread's sockets (absent: none). */
  readonly accountSubs = new Map<number, number>();
  /** Event-loop turns, as counted by `round`. */
  private turn = 0;
  private scheduled = false;
  /** Sockets with messages waiting, in the order they began to wait. */
  private readonly queued = new Set<Socket>();
  private readonly maxWaitingBytes: number;
  private handle: RpcMessage = () => {};

  constructor(
    readonly o: WsOptions,
    readonly feed: StatusFeed,
    maxBody: number,
  ) {
    this.maxWaitingBytes = 8 * maxBody;
  }

  setHandler(h: RpcMessage): void {
    this.handle = h;
  }

  /** A message from uWS: handled now while the socket's turn budget lasts, else waits its turn. */
  message(s: Socket, data: ArrayBuffer): void {
    if (!s.open) return;
    this.schedule();
    if (s.waiting.length === 0 && s.mayRun(this.turn)) {
      s.unread = 0;
      s.spend(data.byteLength);
      return this.handle(s, new Uint8Array(data));
    }
    if (s.waiting.length >= MAX_WAITING || s.waitingBytes + data.byteLength > this.maxWaitingBytes) {
      // Unread: a client that sends this far ahead of its answers is told to slow down, at no parse cost;
      // one that goes on regardless is closed, since even an unread refusal's answer costs the acceptor.
      if (++s.unread > MAX_WAITING) return s.end(CLOSE_FLOOD, `more than ${MAX_WAITING} messages refused unread: wait for answers`);
      // Sent as is: it neither counts as nor breaks a run of rate refusals (`answer`).
      s.send(rpcError(new RelayError(E.CAPACITY, `more than ${MAX_WAITING} messages or ${this.maxWaitingBytes} bytes waiting on this socket`), 'null'));
      return;
    }
    s.waiting.push(new Uint8Array(data.slice(0)));
    s.waitingBytes += data.byteLength;
    this.queued.add(s);
  }

  /** One round per event-loop turn: the turn counter moves on, and each waiting socket runs its budget. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.round);
  }

  private readonly round = (): void => {
    this.scheduled = false;
    this.turn++;
    if (this.queued.size === 0) return;
    for (const s of [...this.queued]) {
      while (s.open && s.waiting.length > 0 && s.mayRun(this.turn)) {
        const m = s.waiting.shift()!;
        s.waitingBytes -= m.length;
        s.spend(m.length);
        this.handle(s, m);
      }
      if (!s.open || s.waiting.length === 0) {
        s.unread = 0;
        this.queued.delete(s);
      }
    }
    if (this.queued.size > 0) this.schedule();
  };

  get size(): number {
    return this.sockets.size;
  }

  /** Accounts whose socket was closed for flooding, and until when (ms) their upgrades are refused. */
  private readonly cooldown = new Map<number, number>();

  cooled(accountId: number): void {
    const now = Date.now();
    // Bounded by the accounts flooding within one cool-down: expired entries go when a new one comes.
    for (const [id, until] of this.cooldown) if (until <= now) this.cooldown.delete(id);
    this.cooldown.set(accountId, now + FLOOD_COOLDOWN_MS);
  }

  cooldownLeft(accountId: number): number {
    const until = this.cooldown.get(accountId);
    return until === undefined ? 0 : Math.max(0, until - Date.now());
  }

  release(accountId: number, n: number): void {
    const left = (this.accountSubs.get(accountId) ?? 0) - n;
    if (left > 0) this.accountSubs.set(accountId, left);
    else this.accountSubs.delete(accountId);
  }

  accountChanged(rec: AccountRecord): void {
    if (!rec.revoked && (rec.evm.enabled || rec.solana.enabled)) return;
    for (const s of this.sockets) if (s.accountId === rec.id) s.end(CLOSE_REVOKED, 'account revoked');
  }

  forget(s: Socket): void {
    this.queued.delete(s);
  }

  closeAll(): void {
    for (const s of [...this.sockets]) s.end(CLOSE_SHUTDOWN, 'node shutting down');
  }
}

export function registerWsDoor(ctx: DoorContext, message: RpcMessage, feed: StatusFeed, o: WsOptions): WsDoor {
  const { app, pipeline, reply } = ctx;
  const words: DoorWords = { takes: TAKES_WS, tips: '' };
  const door = new Door(o, feed, ctx.maxBody);
  door.setHandler(message);
  const enabled = ctx.enabled;

  const upgraded: Sink = (sub: Submission, out: Outcome) => {
    const u = sub.ctx as Upgrade;
    const err = out.error;
    if (err !== null) return write(reply, u.res, rpcRefusal(err, words));
    const rec = out.account!;
    // An account whose socket was just closed for flooding waits before its next one: reconnecting at once
    // would put the flood straight back on the acceptor.
    const wait = door.cooldownLeft(rec.id);
    if (wait > 0) {
      return write(reply, u.res, rpcRefusal(new RelayError(E.RATE_ACCOUNT, String(refusalLimits(rec).tps), wait), words));
    }
    if (u.res.aborted || u.res.done) return;
    u.res.done = true;
    // Status reads and subscriptions are made as a family the account has and the node serves.
    const family: Family = rec.solana.enabled && enabled.solana ? 'solana' : 'evm';
    const s = new Socket(door, u.credential, u.ip, family, rec.id, u.capKey);
    u.res.cork(() => u.res.upgrade<Holder>({ s }, u.key, u.protocol, u.extensions, u.context));
  };

  const timer = ctx.timer('ws-upgrade');
  app.ws<Holder>('/ws', {
    maxPayloadLength: 2 * ctx.maxBody,
    idleTimeout: o.idleTimeoutS,
    // Room for the answer that crosses the bound: the socket is closed on it, never dropped into.
    maxBackpressure: 2 * o.maxBufferedBytes,
    closeOnBackpressureLimit: false,
    sendPingsAutomatically: true,
    upgrade: (r: HttpResponse, req: HttpRequest, context: unknown) => {
      const res = reply.begin(r, timer);
      const credential = req.getHeader('api-key') || bearer(req.getHeader('authorization') || null) || req.getQuery('api-key') || '';
      const family = enabled.solana ? 'solana' : 'evm';
      const u: Upgrade = {
        res,
        key: req.getHeader('sec-websocket-key'),
        protocol: req.getHeader('sec-websocket-protocol'),
        extensions: req.getHeader('sec-websocket-extensions'),
        context,
        ip: ctx.ip(res, req),
        capKey: addressKey(res.getRemoteAddress()),
        credential,
      };
      // An upgrade is a read: authenticated, of the reads' limit, answered by opening the socket.
      const off = pipeline.arrive(Kind.Query, family);
      const sub: Submission =
        off !== null ? refusedAt(Kind.Query, family, 'ws', off, { ctx: u, conn: res }) : query('ws', family, { credential: credential || null, ip: u.ip, ctx: u, conn: res, queryIds: [] });
      // A held refusal answers after the handler returned.
      watchAbort(res);
      pipeline.admit(sub, upgraded);
    },
    open: (ws) => {
      const s = ws.getUserData().s;
      s.ws = ws;
      s.open = true;
      door.sockets.add(s);
    },
    message: (ws, data) => {
      door.message(ws.getUserData().s, data);
    },
    close: (ws) => {
      const s = ws.getUserData().s;
      door.sockets.delete(s);
      s.closed();
      door.forget(s);
      upgradedClosed(app, s.capKey);
    },
  });
  return door;
}
