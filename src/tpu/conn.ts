/**
 * One QUIC connection to one leader's TPU (docs/protocol.md#forwarding), as
 * Solana clients make them: TLS 1.3 with ALPN `solana-tpu`, the identity's
 * self-signed certificate as the client certificate, the server's certificate
 * not verified (validators present self-signed ones too), a keep-alive every
 * second, and one transaction per unidirectional stream, written and
 * finished.
 *
 * Streams are written below the library's stream objects, on its quiche
 * connection: the whole transaction and the stream's end in one call, and the
 * packets flushed once per event-loop turn for every stream written in it.
 * The library's own path (a QUICStream with two WHATWG streams, a lock to
 * destroy it, a flush per write and another per close) cost about a
 * millisecond of CPU per stream (docs/benchmarks.md#tpu).
 *
 * A send never waits on the network: while the handshake runs, transactions
 * wait in a bounded queue; over it, or once the connection failed or closed,
 * they are answered `skipped` or `connect_failed` at once. The handshake has a
 * deadline, so an unreachable leader costs its own sends and nothing else.
 */
import { webcrypto } from 'node:crypto';
import type * as Quic from '@matrixai/quic';
import type { TpuIdentity } from './identity.js';

export type SendResult = 'written' | 'connect_failed' | 'skipped';
export type SendDone = (result: SendResult, why: string | null) => void;

/** The QUIC library as loaded (start.ts): its client and the logger it must be handed to stay quiet. */
export interface QuicLib {
  QUICClient: typeof Quic.QUICClient;
  logger: ConstructorParameters<typeof Quic.QUICServer>[0]['logger'];
}

/** The QUIC library, or why it cannot load (its binary is per platform, and optional). */
export async function loadQuic(): Promise<QuicLib | string> {
  try {
    const q = await import('@matrixai/quic');
    // Its default logger writes every connection's events to stderr: this one says nothing.
    const silent: Record<string, unknown> = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
    silent.getChild = () => silent;
    return { QUICClient: q.QUICClient, logger: silent as unknown as QuicLib['logger'] };
  } catch (e) {
    return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 200);
  }
}

const ALPN = 'solana-tpu';
const KEEP_ALIVE_MS = 1_000;
/** Agave's clients idle out after a few seconds; a leader's run is 1.6 s. */
const MAX_IDLE_MS = 4_000;
const HANDSHAKE_TIMEOUT_MS = 1_000;
/** Transactions waiting for the handshake, or for the leader's stream credit. */
const QUEUE_MAX = 256;
/** Out of stream credit (the leader has not granted more streams yet): the queue is tried again after this. */
const CREDIT_RETRY_MS = 5;
/** A transaction waiting longer than this in the queue is skipped: its leader's slots are about over. */
const QUEUE_WAIT_MS = 1_000;

const cryptoOps = {
  ops: {
    randomBytes: async (data: ArrayBuffer): Promise<void> => {
      webcrypto.getRandomValues(new Uint8Array(data));
    },
  },
};

type State = 'connecting' | 'open' | 'failed' | 'closed';

/** What is used of the library's connection beyond its typings: its quiche connection and its packet flush. */
interface RawConn {
  conn: {
    streamSend(id: number, data: Uint8Array, fin: boolean): number | null;
    streamShutdown(id: number, direction: number, err: number): void | null;
    peerStreamsLeftUni(): number;
  };
  send(): Promise<void>;
}
/** quiche's Shutdown.Write. */
const SHUTDOWN_WRITE = 1;

export class LeaderConn {
  state: State = 'connecting';
  /** Handshake time in ms, once open. */
  handshakeMs = 0;
  /** When the handshake failed (performance.now()). */
  failedAt = 0;
  private client: Quic.QUICClient | null = null;
  private readonly queue: { bytes: Uint8Array; done: SendDone; at: number }[] = [];
  /** The next client-initiated unidirectional stream id (2, 6, 10, ...). */
  private nextStream = 2;
  /** Streams written this turn: answered `written` once their packets are handed to the socket. */
  private flushing: SendDone[] = [];
  private flushArmed = false;
  /** Waiting for the leader to grant more streams (a retry timer is armed). */
  private noCredit: NodeJS.Timeout | null = null;
  private failure: string | null = null;

  constructor(
    readonly identity: string,
    readonly address: string,
    private readonly lib: QuicLib,
    private readonly me: TpuIdentity,
    private readonly onOpen: (c: LeaderConn) => void,
    private readonly onFail: (c: LeaderConn) => void,
    private readonly handshakeTimeoutMs = HANDSHAKE_TIMEOUT_MS,
  ) {
    void this.connect();
  }

  /** Hands one transaction to this connection; `done` is called once, maybe before this returns. */
  send(bytes: Uint8Array, done: SendDone): void {
    if (this.state === 'failed') return done('connect_failed', this.failure);
    if (this.state === 'closed') return done('skipped', 'connection closed');
    if (this.state === 'open' && this.noCredit === null && this.queue.length === 0) return void this.write(bytes, done, performance.now());
    if (this.queue.length >= QUEUE_MAX) return done('skipped', 'connection queue full');
    this.queue.push({ bytes, done, at: performance.now() });
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const was = this.state;
    this.state = 'closed';
    if (this.noCredit !== null) clearTimeout(this.noCredit);
    this.noCredit = null;
    this.drainQueue('skipped', 'connection closed');
    this.answerFlushing('skipped', 'connection closed');
    const c = this.client;
    this.client = null;
    if (c !== null && was === 'open') await c.destroy({ force: true }).catch(() => {});
  }

  private async connect(): Promise<void> {
    const t0 = performance.now();
    const colon = this.address.lastIndexOf(':');
    const host = this.address.slice(0, colon).replace(/^\[|\]$/g, '');
    const port = Number(this.address.slice(colon + 1));
    try {
      if (colon < 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad address ${this.address}`);
      const client = await this.lib.QUICClient.createQUICClient(
        {
          host,
          port,
          crypto: cryptoOps,
          logger: this.lib.logger,
          config: {
            key: this.me.keyPem,
            cert: this.me.certPem,
            verifyPeer: false,
            applicationProtos: [ALPN],
            keepAliveIntervalTime: KEEP_ALIVE_MS,
            maxIdleTimeout: MAX_IDLE_MS,
          },
        },
        { timer: this.handshakeTimeoutMs },
      );
      if (this.state === 'closed') {
        await client.destroy({ force: true }).catch(() => {});
        return;
      }
      this.client = client;
      this.handshakeMs = performance.now() - t0;
      this.state = 'open';
      // The leader (or idling) ends it: later sends for this leader open a new one.
      client.closedP.then(
        () => this.lost('connection closed by the leader'),
        () => this.lost('connection closed by the leader'),
      );
      this.onOpen(this);
      this.pumpQueue();
    } catch (err) {
      if (this.state === 'closed') return;
      this.state = 'failed';
      this.failedAt = performance.now();
      this.failure = `handshake: ${(err instanceof Error ? err.message : String(err)).slice(0, 160)}`;
      this.onFail(this);
      this.drainQueue('connect_failed', this.failure);
    }
  }

  private lost(why: string): void {
    if (this.state !== 'open') return;
    this.state = 'closed';
    this.client = null;
    this.drainQueue('skipped', why);
    this.answerFlushing('skipped', why);
  }

  /** False when the leader has granted no more streams (or no more bytes): the transaction goes back to the head of the queue. */
  private write(bytes: Uint8Array, done: SendDone, at: number): boolean {
    const raw = this.client!.connection as unknown as RawConn;
    const q = raw.conn;
    // Asking for a stream past the leader's grant is an error: the credit is asked first, and the
    // transaction waits as quinn's open_uni waits (the leader grants more as it reads the ones it has).
    if (q.peerStreamsLeftUni() === 0) return this.waitCredit(bytes, done, at);
    const id = this.nextStream;
    let n: number | null;
    try {
      n = q.streamSend(id, bytes, true);
    } catch (err) {
      done('skipped', `stream: ${err instanceof Error ? err.message : String(err)}`.slice(0, 160));
      // The connection cannot open streams any more: the next send opens a new one.
      const c = this.client;
      this.lost('stream could not be opened');
      void c?.destroy({ force: true }).catch(() => {});
      return true;
    }
    this.nextStream += 4;
    if (n !== bytes.length) {
      // The leader's flow-control window is full: a partial transaction is no transaction, so the
      // stream is reset (the leader drops it) and the transaction waits for the window to open.
      try {
        q.streamShutdown(id, SHUTDOWN_WRITE, 0);
      } catch {
        // Nothing of it was taken (no stream state to reset).
      }
      this.armFlush();
      return this.waitCredit(bytes, done, at);
    }
    this.flushing.push(done);
    this.armFlush();
    return true;
  }

  private waitCredit(bytes: Uint8Array, done: SendDone, at: number): false {
    this.queue.unshift({ bytes, done, at });
    this.noCredit = setTimeout(() => {
      this.noCredit = null;
      this.pumpQueue();
    }, CREDIT_RETRY_MS);
    this.noCredit.unref();
    return false;
  }

  /** One flush for every stream written in this turn: their frames share packets. */
  private armFlush(): void {
    if (this.flushArmed) return;
    this.flushArmed = true;
    setImmediate(() => {
      this.flushArmed = false;
      const c = this.client;
      const batch = this.flushing;
      if (c === null) return;
      this.flushing = [];
      const answer = (r: SendResult, why: string | null): void => {
        for (const done of batch) done(r, why);
      };
      (c.connection as unknown as RawConn).send().then(
        () => answer('written', null),
        (err: unknown) => answer('skipped', `send: ${err instanceof Error ? err.message : String(err)}`.slice(0, 160)),
      );
    });
  }

  private answerFlushing(r: SendResult, why: string | null): void {
    const f = this.flushing;
    if (f.length === 0) return;
    this.flushing = [];
    for (const done of f) done(r, why);
  }

  private pumpQueue(): void {
    const old = performance.now() - QUEUE_WAIT_MS;
    while (this.queue.length > 0 && this.queue[0]!.at < old) this.queue.shift()!.done('skipped', 'waited over a second for a stream');
    while (this.state === 'open' && this.noCredit === null && this.queue.length > 0) {
      const q = this.queue.shift()!;
      if (!this.write(q.bytes, q.done, q.at)) return;
    }
  }

  private drainQueue(r: SendResult, why: string | null): void {
    const q = this.queue.splice(0);
    for (const x of q) x.done(r, why);
  }
}
