/**
 * One upstream JSON-RPC endpoint over keep-alive HTTP/1.1 (undici Pool), and
 * the wire format of the three kinds of send (DECISIONS 8):
 *
 *   EVM            {"jsonrpc":"2.0","id":N,"method":"eth_sendRawTransaction","params":["0x…"]}
 *   Solana single  … "method":"sendTransaction","params":["<b64>",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}
 *   Solana bundle  … "method":"sendBundle","params":[["<b64>",…],{"encoding":"base64"}]}
 *
 * Bodies are built by concatenation: the params are hex or base64 produced by
 * our own encoders, so they need no escaping, and JSON.stringify would build
 * and walk a fresh object per transaction. Measured on Node 20 (300-byte EVM,
 * 400-byte Solana transaction, including the byte length undici computes):
 * 1.0 vs 2.0 us per EVM call, 1.2 vs 3.3 us per Solana call.
 * The JSON-RPC id is the item's sequence number in its lane, so a batch
 * answer maps back to items whatever order it comes in, and an upstream's
 * logs correlate with ours.
 *
 * `post` never rejects: every failure becomes a counted, classified result.
 */
import { Pool } from 'undici';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** Where forwarding reports trouble. Fields never hold transaction bytes, UUIDs or upstream URL paths (API keys live there). */
export type LogSink = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

/** Connections per upstream. With pipelining 1 it is also the lane's in-flight bound per upstream (lane.ts); four keep a 10-50 ms RTT upstream busy while batching absorbs bursts. */
export const UPSTREAM_CONNECTIONS = 4;
/**
 * Connect, headers and body time-out each: a send is answered in well under
 * 100 ms by a live sequencer or RPC node, so 2 s means dead or stuck. undici
 * runs headers/body time-outs on its coarse timer (about 1 s resolution).
 */
export const UPSTREAM_TIMEOUT_MS = 2_000;
/** Idle keep-alive; undici shortens it when the server's Keep-Alive hint says less, so reuse does not race a server-side close. */
export const KEEP_ALIVE_MS = 10_000;
/** A send answer is a hash or signature per item (about 100 bytes); 1 MiB bounds what a misbehaving upstream can make us buffer. */
export const MAX_RESPONSE_BYTES = 1 << 20;
/** Upstream error text kept for a log line. */
const MAX_REASON_CHARS = 160;

/** Thrown at construction for a configuration that cannot work; the message names the lane and index, never the URL. */
export class ForwardConfigError extends Error {
  readonly code = 'TXR_FORWARD_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'ForwardConfigError';
  }
}

// ---- wire format -------------------------------------------------------------

const HEAD = '{"jsonrpc":"2.0","id":';
const EVM_MID = ',"method":"eth_sendRawTransaction","params":["';
const EVM_TAIL = '"]}';
const SOL_MID = ',"method":"sendTransaction","params":["';
const SOL_TAIL = '",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}';
const BUNDLE_MID = ',"method":"sendBundle","params":[["';
const BUNDLE_TAIL = '"],{"encoding":"base64"}]}';

/** `eth_sendRawTransaction` with the `0x…` hex exactly as admitted. */
export function evmCall(id: number, hex: string): string {
  return HEAD + id + EVM_MID + hex + EVM_TAIL;
}

/** `sendTransaction`: preflight off and no RPC-side retries, since the relay's job is to land bytes fast, not to simulate. */
export function solanaCall(id: number, base64: string): string {
  return HEAD + id + SOL_MID + base64 + SOL_TAIL;
}

/** `sendBundle` with the transactions in request order. */
export function bundleCall(id: number, txs: readonly string[]): string {
  let s = HEAD + id + BUNDLE_MID + txs[0];
  for (let i = 1; i < txs.length; i++) s += '","' + txs[i];
  return s + BUNDLE_TAIL;
}

// ---- results -----------------------------------------------------------------

export const Outcome = {
  /** A JSON-RPC answer arrived; per-item verdicts are in `accepted`. */
  OK: 0,
  /** Non-2xx status. */
  HTTP_ERROR: 1,
  /** 2xx with a body that is not a JSON-RPC answer (or is too large). */
  BAD_RESPONSE: 2,
  /** Connect, headers or body time-out. */
  TIMEOUT: 3,
  /** Refused, reset, closed by the other side. */
  CONN_ERROR: 4,
  /** Cut off by our own shutdown; not the upstream's fault. */
  ABORTED: 5,
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export interface PostResult {
  outcome: Outcome;
  /** Per item, 1 when the upstream answered it with a result; null when the request failed as a whole. */
  accepted: Uint8Array | null;
  okCount: number;
  /** For logs only: HTTP status, error code, or the first JSON-RPC error, with long hex/base64 runs cut to a prefix. */
  reason: string;
  /** A batch array answered by a single error object: this upstream does not take JSON-RPC batches. */
  batchRefused: boolean;
}

/** Counters in items (a batch of 10 counts 10), except `requests`. sent = ok + rpcErrors + httpErrors + timeouts + connErrors + aborted + in flight. */
export interface UpstreamStats {
  /** Origin only (path and query may carry an API key). */
  upstream: string;
  requests: number;
  sent: number;
  ok: number;
  /** Answered with a JSON-RPC error, or missing from a batch answer. */
  rpcErrors: number;
  /** Non-2xx status or an unparseable answer. */
  httpErrors: number;
  timeouts: number;
  connErrors: number;
  aborted: number;
  /** Milliseconds from send to the full answer of the last request that got one; 0 before any. */
  lastLatencyMs: number;
}

export interface UpstreamOptions {
  connections?: number;
  timeoutMs?: number;
}

const HEADERS = { 'content-type': 'application/json' } as const;

/** Scheme, host and port; anything after is shown as `/…` because paths and queries carry API keys. */
export function upstreamLabel(url: URL): string {
  const more = (url.pathname !== '/' && url.pathname !== '') || url.search !== '';
  return url.protocol + '//' + url.host + (more ? '/…' : '');
}

/** Parses an upstream URL; `where` names it in errors ("lane evm-paid upstream 0") instead of echoing it. */
export function parseUpstreamUrl(raw: string, where: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ForwardConfigError(`${where}: not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ForwardConfigError(`${where}: scheme must be http or https, not ${url.protocol.replace(':', '')}`);
  }
  return url;
}

export class UpstreamClient {
  readonly label: string;
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;

  private requests = 0;
  private sent = 0;
  private ok = 0;
  private rpcErrors = 0;
  private httpErrors = 0;
  private timeouts = 0;
  private connErrors = 0;
  private aborted = 0;
  private lastLatencyMs = 0;

  constructor(url: URL, opts: UpstreamOptions = {}) {
    const timeout = opts.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
    this.label = upstreamLabel(url);
    this.path = (url.pathname || '/') + url.search;
    // Credentials in the URL's user-info become Basic auth; undici would otherwise drop them.
    const basic = url.username || url.password ? Buffer.from(decodeURIComponent(url.username) + ':' + decodeURIComponent(url.password)).toString('base64') : '';
    this.headers = basic === '' ? HEADERS : { ...HEADERS, authorization: 'Basic ' + basic };
    this.pool = new Pool(url.origin, {
      connections: opts.connections ?? UPSTREAM_CONNECTIONS,
      pipelining: 1,
      keepAliveTimeout: KEEP_ALIVE_MS,
      connectTimeout: timeout,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      maxResponseSize: MAX_RESPONSE_BYTES,
    });
  }

  /**
   * Sends one body holding `count` calls with ids firstId..firstId+count-1
   * (a JSON-RPC array when `batch`). Never rejects.
   */
  async post(body: string, firstId: number, count: number, batch: boolean): Promise<PostResult> {
    this.requests++;
    this.sent += count;
    const t0 = performance.now();
    try {
      const res = await this.pool.request({ method: 'POST', path: this.path, headers: this.headers, body });
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump();
        this.lastLatencyMs = performance.now() - t0;
        this.httpErrors += count;
        return failed(Outcome.HTTP_ERROR, 'http ' + res.statusCode);
      }
      const text = await res.body.text();
      this.lastLatencyMs = performance.now() - t0;
      return this.judge(text, firstId, count, batch);
    } catch (err) {
      return this.classify(err, count);
    }
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
    };
  }

  /** Lets in-flight requests finish, then closes the sockets. */
  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }

  /** Aborts in-flight requests (they resolve as ABORTED) and closes the sockets. */
  async destroy(): Promise<void> {
    await this.pool.destroy().catch(() => undefined);
  }

  private judge(text: string, firstId: number, count: number, batch: boolean): PostResult {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      this.httpErrors += count;
      return failed(Outcome.BAD_RESPONSE, 'answer is not JSON');
    }
    const accepted = new Uint8Array(count);
    let okCount = 0;
    let reason = '';
    if (batch && Array.isArray(v)) {
      for (const r of v) {
        if (r === null || typeof r !== 'object') continue;
        const i = (r as { id?: unknown }).id;
        if (typeof i !== 'number') continue;
        const k = i - firstId;
        if (k < 0 || k >= count || accepted[k] === 1) continue;
        if (isResult(r)) {
          accepted[k] = 1;
          okCount++;
        } else if (reason === '') {
          reason = rpcReason(r);
        }
      }
      if (okCount < count && reason === '') reason = 'batch answer lacks some ids';
    } else if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      if (batch) {
        // One object for an array: the upstream refused the batch as a whole.
        if (!('error' in v)) {
          this.httpErrors += count;
          return failed(Outcome.BAD_RESPONSE, 'batch answered by a single non-error object');
        }
        this.rpcErrors += count;
        return { outcome: Outcome.OK, accepted, okCount: 0, reason: rpcReason(v), batchRefused: true };
      }
      if (isResult(v)) {
        accepted[0] = 1;
        okCount = 1;
      } else if ('error' in v) {
        reason = rpcReason(v);
      } else {
        this.httpErrors += count;
        return failed(Outcome.BAD_RESPONSE, 'answer has neither result nor error');
      }
    } else {
      this.httpErrors += count;
      return failed(Outcome.BAD_RESPONSE, 'answer is not a JSON-RPC response');
    }
    this.ok += okCount;
    this.rpcErrors += count - okCount;
    return { outcome: Outcome.OK, accepted, okCount, reason, batchRefused: false };
  }

  private classify(err: unknown, count: number): PostResult {
    const code = err !== null && typeof err === 'object' && typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : 'unknown';
    switch (code) {
      case 'UND_ERR_CONNECT_TIMEOUT':
      case 'UND_ERR_HEADERS_TIMEOUT':
      case 'UND_ERR_BODY_TIMEOUT':
        this.timeouts += count;
        return failed(Outcome.TIMEOUT, code);
      case 'UND_ERR_DESTROYED':
      case 'UND_ERR_CLOSED':
      case 'UND_ERR_ABORTED':
        this.aborted += count;
        return failed(Outcome.ABORTED, code);
      case 'UND_ERR_RES_EXCEEDED_MAX_SIZE':
        this.httpErrors += count;
        return failed(Outcome.BAD_RESPONSE, code);
      default:
        this.connErrors += count;
        return failed(Outcome.CONN_ERROR, code);
    }
  }
}

function failed(outcome: Outcome, reason: string): PostResult {
  return { outcome, accepted: null, okCount: 0, reason, batchRefused: false };
}

function isResult(r: object): boolean {
  const e = (r as { error?: unknown }).error;
  return 'result' in r && (e === undefined || e === null);
}

// Upstream messages sometimes echo a hash, a signature or worse the
// transaction; long hex/base64/base58 runs are cut to a 10-character prefix.
const LONG_RUN = /[0-9A-Za-z+/=_-]{24,}/g;

function rpcReason(r: object): string {
  const e = (r as { error?: unknown }).error;
  if (e === null || typeof e !== 'object') return 'rpc error';
  const code = (e as { code?: unknown }).code;
  const message = (e as { message?: unknown }).message;
  const text = typeof message === 'string' ? message.slice(0, 4 * MAX_REASON_CHARS).replace(LONG_RUN, (m) => m.slice(0, 10) + '…') : '';
  return ('rpc ' + (typeof code === 'number' ? code : '?') + (text ? ': ' + text : '')).slice(0, MAX_REASON_CHARS);
}
