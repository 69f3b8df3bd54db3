/**
 * One upstream JSON-RPC endpoint over keep-alive HTTP/1.1. Our own client,
 * since the request is always a POST of ASCII JSON, one at a time per
 * connection: written into one buffer per connection and sent with one write;
 * plain-TCP reads land in one buffer (net's `onread`), framed by http1.ts and
 * read by answer.ts without JSON.parse; one coarse timer per upstream, not
 * per request. bench/forward.ts: 16-20 µs of CPU per serial item, against
 * 75-85 µs with undici and JSON.parse.
 *
 * `post` never throws and calls back exactly once, asynchronously: every
 * failure becomes a counted, classified result.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { readAnswer, type AnswerScan } from './answer.js';
import { Parse, ResponseParser } from './http1.js';
import { PostStatus, failed, type PostDone, type PostResult } from './result.js';
import { upstreamLabel } from './url.js';
import { decimalDigits, writeDecimal, type RequestBody } from './wire.js';
import { HistogramSeries, type SeriesData } from '../obs/metrics.js';

/** Also the lane's in-flight bound per upstream; four keep a 10-50 ms RTT upstream busy while batching absorbs bursts. */
export const UPSTREAM_CONNECTIONS = 4;
/** Whole request, connect included: a live node answers a send well under 100 ms, so 2 s means dead or stuck. */
const UPSTREAM_TIMEOUT_MS = 2_000;
/** Idle keep-alive, cut to the server's `Keep-Alive: timeout` hint minus the margin, so reuse does not race its close. */
const KEEP_ALIVE_MS = 10_000;
/** Covers a round trip and the sweep's resolution. */
const KEEP_ALIVE_MARGIN_MS = 1_000;
/** About 100 bytes per item are expected; bounds what a misbehaving upstream can make us buffer. */
const MAX_RESPONSE_BYTES = 1 << 20;
/** A 64-signature batch answer (~8 KB) usually fits one read; the parser joins larger ones. */
const READ_BUFFER_BYTES = 16 * 1024;
/** A single Solana v1 call (5.5 KB of base64) fits. */
const MIN_WRITE_BUFFER = 8 * 1024;
/** A full batch (MAX_BATCH_BYTES) and its head fit; larger buffers are not kept. */
const MAX_KEPT_WRITE_BUFFER = 64 * 1024;
/** Time-outs fire within a quarter of the time-out, clamped to 10-250 ms. */
const SWEEP_MIN_MS = 10;
const SWEEP_MAX_MS = 250;

/** Counters in items (a batch of 10 counts 10), except `requests`. sent = ok + rpcErrors + httpErrors + timeouts + connErrors + aborted + in flight. */
export interface UpstreamStats {
  /** Origin only (path and query may carry an API key). */
  upstream: string;
  requests: number;
  sent: number;
  ok: number;
  /** Answered with a JSON-RPC error, or missing from a batch answer. */
  rpcErrors: number;
  /** Non-2xx status, an unparseable answer, or broken HTTP framing. */
  httpErrors: number;
  timeouts: number;
  connErrors: number;
  aborted: number;
  /** Of the last request answered; 0 before any. */
  lastLatencyMs: number;
  /** Seconds from a request's write to its whole answer, answered requests only (FORWARD_BUCKETS). */
  latency: SeriesData;
}

/** Seconds: a colocated node answers in well under a millisecond, a distant one in tens; the time-out is 2 s. */
export const FORWARD_BUCKETS = [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2];

export interface UpstreamOptions {
  connections?: number;
  timeoutMs?: number;
  /** PEM certificates to trust instead of the system store, e.g. a private CA. */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

/** One keep-alive connection and the request on it (at most one). */
class Connection {
  socket: Socket | null = null;
  busy = false;
  done: PostDone | null = null;
  firstId = 0;
  count = 0;
  batch = false;
  t0 = 0;
  deadline = 0;
  idleSince = 0;
  idleLimit = KEEP_ALIVE_MS;
  readBuf: Buffer | null = null;
  /** Grows to the largest request sent here, up to MAX_KEPT_WRITE_BUFFER. */
  writeBuf: Buffer | null = null;
  readonly parser = new ResponseParser({ maxBodyBytes: MAX_RESPONSE_BYTES });
  readonly scan: AnswerScan = { bad: '', accepted: new Uint8Array(64), okCount: 0, reason: '', batchRefused: false };
  readonly result: PostResult = { outcome: PostStatus.OK, accepted: null, okCount: 0, reason: '', batchRefused: false, httpStatus: 0 };
}

export class UpstreamClient {
  readonly label: string;
  private readonly host: string;
  private readonly port: number;
  private readonly tls: boolean;
  private readonly servername: string | undefined;
  private readonly ca: UpstreamOptions['ca'];
  /** Everything of a request before the Content-Length value. */
  private readonly head: Buffer;
  private readonly timeout: number;
  private readonly sweepMs: number;
  private readonly conns: Connection[];
  private session: Buffer | undefined;
  private timer: NodeJS.Timeout | null = null;
  private readonly sweepFn = (): void => this.sweep();
  private live = 0;
  private closing = false;
  private closed: (() => void) | null = null;
  private whenAllClosed: Promise<void> | null = null;

  private requests = 0;
  private sent = 0;
  private ok = 0;
  private rpcErrors = 0;
  private httpErrors = 0;
  private timeouts = 0;
  private connErrors = 0;
  private aborted = 0;
  private lastLatencyMs = 0;
  private readonly latency = new HistogramSeries(FORWARD_BUCKETS);

  constructor(url: URL, opts: UpstreamOptions = {}) {
    this.label = upstreamLabel(url);
    this.tls = url.protocol === 'https:';
    this.host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port === '' ? (this.tls ? 443 : 80) : Number(url.port);
    this.servername = isIP(this.host) === 0 ? this.host : undefined;
    this.ca = opts.ca;
    this.timeout = opts.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
    this.sweepMs = Math.min(Math.max(Math.floor(this.timeout / 4), SWEEP_MIN_MS), SWEEP_MAX_MS);
    // Credentials in the URL's user-info become Basic auth.
    const basic = url.username || url.password ? Buffer.from(decodeURIComponent(url.username) + ':' + decodeURIComponent(url.password)).toString('base64') : '';
    // URL has already percent-encoded the path and punycoded the host: the head is ASCII.
    this.head = Buffer.from(
      'POST ' + ((url.pathname || '/') + url.search) + ' HTTP/1.1\r\nHost: ' + url.host + '\r\nContent-Type: application/json\r\n' +
        (basic === '' ? '' : 'Authorization: Basic ' + basic + '\r\n') +
        'Content-Length: ',
      'latin1',
    );
    this.conns = Array.from({ length: opts.connections ?? UPSTREAM_CONNECTIONS }, () => new Connection());
  }

  /**
   * Sends `body` (its bytes are copied behind the request head during this
   * call, so the caller may reuse its buffer at once). At most `connections`
   * in flight.
   */
  post(body: RequestBody, done: PostDone): void {
    const count = body.count;
    this.requests++;
    this.sent += count;
    const c = this.closing ? null : this.pick();
    if (c === null) {
      // Only a caller bug (more in flight than connections) or a post after close gets here.
      const r: PostResult = { outcome: this.closing ? PostStatus.ABORTED : PostStatus.CONN_ERROR, accepted: null, okCount: 0, reason: 'no free connection', batchRefused: false, httpStatus: 0 };
      if (this.closing) this.aborted += count;
      else this.connErrors += count;
      queueMicrotask(() => done(r));
      return;
    }
    c.busy = true;
    c.done = done;
    c.firstId = body.firstId;
    c.count = count;
    c.batch = body.batch;
    c.t0 = performance.now();
    c.deadline = c.t0 + this.timeout;
    c.parser.reset();
    const bodyLen = body.length;
    const head = this.head;
    const total = head.length + decimalDigits(bodyLen) + 4 + bodyLen;
    let buf = c.writeBuf;
    if (buf === null || buf.length < total) {
      buf = Buffer.allocUnsafe(Math.max(total, MIN_WRITE_BUFFER));
      // An outlier (one huge item) gets a buffer of its own, so what a connection keeps stays bounded.
      if (buf.length <= MAX_KEPT_WRITE_BUFFER) c.writeBuf = buf;
    }
    buf.set(head, 0);
    let off = writeDecimal(buf, head.length, bodyLen);
    buf[off] = 13;
    buf[off + 1] = 10;
    buf[off + 2] = 13;
    buf[off + 3] = 10;
    off += 4;
    // Head and body in one write: one copy of the body per upstream, since each upstream's head differs.
    off += body.buf.copy(buf, off, 0, bodyLen);
    let sock = c.socket;
    if (sock === null) sock = this.open(c);
    else sock.ref();
    // The buffer is rewritten only by this connection's next request, which waits for this one's answer (see `answered`).
    sock.write(buf.subarray(0, off));
    if (this.timer === null) this.arm();
  }

  stats(): UpstreamStats {
    return {
      upstream: this.label,
      requests: this.requests,
      sent: this.sent,
      ok: this.ok,
      rpcErrors: this.rpcErrors,
      httpErrors: this.httpErrors,
      timeouts: this.timeouts,
      connErrors: this.connErrors,
      aborted: this.aborted,
      lastLatencyMs: this.lastLatencyMs,
      latency: { counts: [...this.latency.counts], sum: this.latency.sum, count: this.latency.count },
    };
  }

  /** Lets in-flight requests finish, then closes the sockets. */
  close(): Promise<void> {
    this.closing = true;
    for (const c of this.conns) if (!c.busy) this.drop(c);
    return this.whenClosed();
  }

  /** Aborts in-flight requests (they are answered ABORTED) and closes the sockets. */
  destroy(): Promise<void> {
    this.closing = true;
    for (const c of this.conns) {
      if (c.busy) this.fail(c, PostStatus.ABORTED, 'aborted by shutdown');
      this.drop(c);
    }
    return this.whenClosed();
  }

  // ---- connections ---------------------------------------------------------------

  /** An idle open connection still inside its keep-alive, else one to open. */
  private pick(): Connection | null {
    const now = performance.now();
    let fresh: Connection | null = null;
    for (const c of this.conns) {
      if (c.busy) continue;
      if (c.socket !== null) {
        if (now - c.idleSince < c.idleLimit) return c;
        this.drop(c);
      }
      fresh ??= c;
    }
    return fresh;
  }

  private open(c: Connection): Socket {
    let sock: Socket;
    if (this.tls) {
      sock = tlsConnect({ host: this.host, port: this.port, servername: this.servername, ALPNProtocols: ['http/1.1'], ca: this.ca as string[] | undefined, session: this.session });
      sock.setNoDelay(true);
      sock.on('session', (s: Buffer) => (this.session = s));
      sock.on('data', (chunk: Buffer) => this.onData(c, sock, chunk, chunk.length));
    } else {
      c.readBuf ??= Buffer.allocUnsafe(READ_BUFFER_BYTES);
      sock = netConnect({
        host: this.host,
        port: this.port,
        noDelay: true,
        onread: {
          buffer: c.readBuf,
          callback: (n, buf) => {
            this.onData(c, sock, buf as Buffer, n);
            return true;
          },
        },
      });
    }
    sock.on('error', (err: NodeJS.ErrnoException) => this.onError(c, sock, err));
    sock.on('end', () => this.onEnd(c, sock));
    sock.on('close', () => this.onClose(c, sock));
    c.socket = sock;
    this.live++;
    return sock;
  }

  private onData(c: Connection, sock: Socket, buf: Buffer, n: number): void {
    if (c.socket !== sock) return;
    if (!c.busy) {
      // Bytes nobody asked for: the stream is out of step; start over on a fresh connection.
      this.drop(c);
      return;
    }
    const p = c.parser.execute(buf, 0, n);
    if (p === Parse.MORE) return;
    if (p === Parse.ERROR) {
      this.httpErrors += c.count;
      this.drop(c);
      this.fail(c, PostStatus.BAD_RESPONSE, c.parser.error);
      return;
    }
    // An answer that came before our request was fully written (an early error) leaves the write buffer in use: do not reuse.
    const reuse = c.parser.keepAlive && c.parser.consumed === n && !this.closing && sock.writableLength === 0;
    this.answered(c, reuse);
  }

  private onEnd(c: Connection, sock: Socket): void {
    if (c.socket !== sock) return;
    if (c.busy) {
      if (c.parser.started && c.parser.finish() === Parse.DONE) {
        this.answered(c, false);
        return;
      }
      this.connErrors += c.count;
      this.drop(c);
      this.fail(c, PostStatus.CONN_ERROR, c.parser.started ? c.parser.error || 'closed mid-answer' : 'closed before answering');
      return;
    }
    this.drop(c);
  }

  private onError(c: Connection, sock: Socket, err: NodeJS.ErrnoException): void {
    if (c.socket !== sock) return;
    this.drop(c);
    if (c.busy) {
      this.connErrors += c.count;
      this.fail(c, PostStatus.CONN_ERROR, typeof err.code === 'string' ? err.code : 'socket error');
    }
  }

  private onClose(c: Connection, sock: Socket): void {
    this.live--;
    if (c.socket === sock) {
      c.socket = null;
      if (c.busy) {
        this.connErrors += c.count;
        this.fail(c, PostStatus.CONN_ERROR, 'closed');
      }
    }
    if (this.live === 0 && this.closed !== null) {
      const resolve = this.closed;
      this.closed = null;
      resolve();
    }
  }

  private drop(c: Connection): void {
    const s = c.socket;
    if (s === null) return;
    c.socket = null;
    s.destroy();
  }

  private whenClosed(): Promise<void> {
    if (this.live === 0) return Promise.resolve();
    this.whenAllClosed ??= new Promise((resolve) => (this.closed = resolve));
    return this.whenAllClosed;
  }

  // ---- answers -------------------------------------------------------------------

  /** A full HTTP answer is in the parser: judge it, settle the connection, then call back. */
  private answered(c: Connection, reuse: boolean): void {
    const p = c.parser;
    const now = performance.now();
    this.lastLatencyMs = now - c.t0;
    this.latency.observe(this.lastLatencyMs / 1000);
    const r = c.result;
    const count = c.count;
    if (p.status < 200 || p.status >= 300) {
      this.httpErrors += count;
      failed(r, p.status >= 400 && p.status < 500 && p.status !== 408 && p.status !== 429 ? PostStatus.REFUSED : PostStatus.HTTP_ERROR, 'http ' + p.status, p.status);
    } else {
      const scan = c.scan;
      if (scan.accepted.length < count) scan.accepted = new Uint8Array(count);
      readAnswer(p.bodyBuffer(), p.bodyStart(), p.bodyEnd(), c.firstId, count, c.batch, scan);
      if (scan.bad !== '') {
        this.httpErrors += count;
        failed(r, PostStatus.BAD_RESPONSE, scan.bad, p.status);
      } else {
        if (scan.batchRefused) this.rpcErrors += count;
        else {
          this.ok += scan.okCount;
          this.rpcErrors += count - scan.okCount;
        }
        r.outcome = PostStatus.OK;
        r.httpStatus = p.status;
        r.accepted = scan.accepted;
        r.okCount = scan.okCount;
        r.reason = scan.reason;
        r.batchRefused = scan.batchRefused;
      }
    }
    if (reuse) {
      c.idleSince = now;
      const hint = p.keepAliveHintMs;
      c.idleLimit = hint >= 0 ? Math.min(KEEP_ALIVE_MS, hint - KEEP_ALIVE_MARGIN_MS) : KEEP_ALIVE_MS;
      // An idle keep-alive socket must not keep the process alive on its own.
      c.socket!.unref();
    } else {
      this.drop(c);
    }
    this.settle(c, r);
  }

  private fail(c: Connection, outcome: PostStatus, reason: string): void {
    if (!c.busy) return;
    if (outcome === PostStatus.TIMEOUT) this.timeouts += c.count;
    else if (outcome === PostStatus.ABORTED) this.aborted += c.count;
    this.settle(c, failed(c.result, outcome, reason));
  }

  private settle(c: Connection, r: PostResult): void {
    const done = c.done!;
    c.done = null;
    c.busy = false;
    try {
      done(r);
    } catch {
      // The caller's bug must not corrupt this connection's state; the lane catches its own.
    }
  }

  // ---- time --------------------------------------------------------------------

  private arm(): void {
    this.timer = setTimeout(this.sweepFn, this.sweepMs);
    this.timer.unref();
  }

  /** One coarse tick for every connection: requests past their deadline fail, idle sockets past their keep-alive close. */
  private sweep(): void {
    this.timer = null;
    const now = performance.now();
    let any = false;
    for (const c of this.conns) {
      if (c.busy) {
        if (now >= c.deadline) {
          this.drop(c);
          this.fail(c, PostStatus.TIMEOUT, 'timeout');
        } else any = true;
      } else if (c.socket !== null) {
        if (now - c.idleSince >= c.idleLimit) this.drop(c);
        else any = true;
      }
    }
    if (any) this.arm();
  }
}
