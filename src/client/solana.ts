/**
 * Family B client: JSON-RPC `sendTransaction`, raw `/v2`, bundles on
 * `/v2/batch` (body checked before sending), the status API
 * (docs/protocol.md#status), and a UDP sender that resolves its host once
 * (docs/protocol.md#udp).
 */
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import bs58 from 'bs58';
import { uuidToBytes } from '../shared/uuid.js';
import { HttpTransport, header, safeJson, errorText, neverSent, type HttpResponse } from './http.js';
import type { BundleOutcome, RetryBudget, SolanaOutcome } from './outcome.js';
import { fetchStatus, fetchStatuses, waitForward, waitLanded, type ForwardWait, type LandedWait, type StatusObject, type WaitForwardOptions, type WaitLandedOptions, type WithRequestId } from './status.js';

export interface SolanaClientOptions {
  url: string;
  apiKey: string;
  heartbeatMs?: number;
  /** Retries of status reads (429, 503, connection failures); sends are never retried. */
  retryBudget?: RetryBudget;
}

export const MAX_TX_BYTES = 1232;
export const MAX_V1_TX_BYTES = 4096;

export class SolanaClient {
  private readonly http: HttpTransport;
  private readonly url: string;
  private readonly apiKey: string;
  private readonly budget: RetryBudget;
  private nextId = 1;

  constructor(o: SolanaClientOptions) {
    this.http = new HttpTransport(o.url, o.heartbeatMs ?? 4000);
    this.url = o.url;
    this.apiKey = o.apiKey;
    this.budget = o.retryBudget ?? { maxRetries: 2, maxWaitMs: 10_000 };
  }

  /** JSON-RPC `sendTransaction` with a base64 transaction. */
  async sendTransaction(bytes: Uint8Array): Promise<WithRequestId<SolanaOutcome>> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method: 'sendTransaction', params: [Buffer.from(bytes).toString('base64'), { encoding: 'base64' }] });
    return this.single(bytes, { method: 'POST', path: '/', headers: { 'content-type': 'application/json', 'api-key': this.apiKey }, body });
  }

  /** Raw binary submit on `/v2`. */
  async sendRaw(bytes: Uint8Array): Promise<WithRequestId<SolanaOutcome>> {
    return this.single(bytes, { method: 'POST', path: '/v2', headers: { 'content-type': 'application/octet-stream', 'api-key': this.apiKey }, body: bytes });
  }

  /** Bundle of 1-4 transactions on `/v2/batch`; throws TypeError before sending when the body would be invalid. */
  async sendBundle(txs: Uint8Array[]): Promise<WithRequestId<BundleOutcome>> {
    const body = bundleBody(txs);
    let res: HttpResponse;
    try {
      res = await this.http.request({ method: 'POST', path: '/v2/batch', headers: { 'content-type': 'application/octet-stream', 'api-key': this.apiKey }, body });
    } catch (e) {
      const signatures = txs.map(firstSignature).filter((s): s is string => s !== undefined);
      if (neverSent(e)) return { kind: 'not-sent', signatures, reason: `no connection to the relay: ${errorText(e)}`, retry: 'retry_safe' };
      return { kind: 'uncertain', signatures, reason: `connection failed: ${errorText(e)}` };
    }
    const j = res.status === 200 ? safeJson(res.text) : undefined;
    if (j && Array.isArray(j.result) && j.result.every((s: unknown) => typeof s === 'string')) {
      return withRequestId({ kind: 'accepted', signatures: j.result, duplicate: header(res.headers, 'x-svc-duplicate') === 'true' }, res);
    }
    const bad = failure(res);
    if (bad.kind === 'rejected') return bad;
    const signatures = txs.map(firstSignature).filter((s): s is string => s !== undefined);
    return bad.kind === 'not-sent' ? { kind: 'not-sent', signatures, reason: bad.reason, retry: 'retry_safe' } : { kind: 'uncertain', signatures, reason: bad.reason };
  }

  private async single(bytes: Uint8Array, req: Parameters<HttpTransport['request']>[0]): Promise<WithRequestId<SolanaOutcome>> {
    let res: HttpResponse;
    try {
      res = await this.http.request(req);
    } catch (e) {
      if (neverSent(e)) return { kind: 'not-sent', signature: firstSignature(bytes), reason: `no connection to the relay: ${errorText(e)}`, retry: 'retry_safe' };
      return { kind: 'uncertain', signature: firstSignature(bytes), reason: `connection failed: ${errorText(e)}` };
    }
    const j = res.status === 200 ? safeJson(res.text) : undefined;
    if (j && typeof j.result === 'string') return withRequestId({ kind: 'accepted', signature: j.result, duplicate: header(res.headers, 'x-svc-duplicate') === 'true' }, res);
    const bad = failure(res);
    if (bad.kind === 'rejected') return bad;
    const signature = firstSignature(bytes);
    return bad.kind === 'not-sent' ? { kind: 'not-sent', signature, reason: bad.reason, retry: 'retry_safe' } : { kind: 'uncertain', signature, reason: bad.reason };
  }

  /**
   * What the relay did with each id after acknowledging it (docs/protocol.md#status):
   * a first signature (of a transaction or a bundle) or a request id; another account's is `unknown`.
   */
  status(ids: string[]): Promise<StatusObject[]> {
    return fetchStatuses(this.http, this.url, this.credentials(), ids, { budget: this.budget });
  }

  /** Reads `id`'s status until it is final; on timeout resolves with the last one and `timedOut: true`. */
  waitForward(id: string, opts: WaitForwardOptions = {}): Promise<ForwardWait> {
    return waitForward((i) => fetchStatus(this.http, this.url, this.credentials(), i, { budget: this.budget }), id, opts);
  }

  /** Reads the status until the chain's word on it (docs/protocol.md#status); see `waitLanded` in status.ts. */
  waitLanded(id: string, opts: WaitLandedOptions = {}): Promise<LandedWait> {
    return waitLanded((i) => fetchStatus(this.http, this.url, this.credentials(), i, { budget: this.budget }), id, opts);
  }

  private credentials(): Record<string, string> {
    return { 'api-key': this.apiKey };
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/** Only acknowledgements carry `x-svc-request-id` (docs/protocol.md#status). */
function withRequestId<T extends object>(o: T, res: HttpResponse): WithRequestId<T> {
  const id = header(res.headers, 'x-svc-request-id');
  return id ? { ...o, requestId: id } : o;
}

/**
 * 4xx, the relay's "not sent" 503 and a JSON-RPC error object (HTTP 200, as Solana's JSON-RPC answers
 * errors) are final rejections, except an error object marked `retry_safe`, which is not-sent; any other
 * 5xx, or an unreadable 200, may have been forwarded.
 */
function failure(res: HttpResponse): { kind: 'rejected'; status: number; message: string } | { kind: 'uncertain' | 'not-sent'; reason: string } {
  const j = safeJson(res.text);
  const rpcError = typeof j?.error?.message === 'string';
  const message = rpcError ? j.error.message : res.text.trim().slice(0, 300);
  // A JSON-RPC error marked retry-safe (capacity, a failing lane, draining): nothing was sent.
  if (res.status === 200 && rpcError && j.error.data?.retry === 'retry_safe') return { kind: 'not-sent', reason: message };
  if ((res.status === 200 && rpcError) || res.status === 503 || res.status < 200 || res.status >= 600 || (res.status >= 400 && res.status < 500)) {
    return { kind: 'rejected', status: res.status, message };
  }
  return { kind: 'uncertain', reason: `HTTP ${res.status}: ${message}` };
}

/** The `/v2/batch` body (docs/protocol.md#solana-bundles); checks count and per-transaction size limits (docs/protocol.md#limits). */
export function bundleBody(txs: Uint8Array[]): Buffer {
  if (!Array.isArray(txs) || txs.length < 1 || txs.length > 4) {
    throw new TypeError(`a bundle holds 1 to 4 transactions, got ${Array.isArray(txs) ? txs.length : 'none'}`);
  }
  txs.forEach((t, i) => {
    const max = maxTxBytes(t);
    if (t.length === 0 || t.length > max) throw new TypeError(`bundle transaction ${i} is ${t.length} bytes; allowed 1 to ${max}`);
  });
  const total = 1 + 2 * txs.length + txs.reduce((n, t) => n + t.length, 0);
  const out = Buffer.alloc(total);
  out[0] = txs.length;
  txs.forEach((t, i) => out.writeUInt16LE(t.length, 1 + 2 * i));
  let off = 1 + 2 * txs.length;
  for (const t of txs) {
    out.set(t, off);
    off += t.length;
  }
  return out;
}

/** v1 transactions (first byte 0x81) get 4096 bytes; others 1232 (docs/protocol.md#limits). */
function maxTxBytes(t: Uint8Array): number {
  return t[0] === 0x81 ? MAX_V1_TX_BYTES : MAX_TX_BYTES;
}

/** Base58 of the first signature (after the compact-u16 count), for reconciliation. */
export function firstSignature(tx: Uint8Array): string | undefined {
  let n = 0;
  let shift = 0;
  let i = 0;
  for (; i < 3 && i < tx.length; i++) {
    n |= (tx[i]! & 0x7f) << shift;
    shift += 7;
    if ((tx[i]! & 0x80) === 0) break;
  }
  const start = i + 1;
  if (n < 1 || tx.length < start + 64) return undefined;
  return bs58.encode(tx.subarray(start, start + 64));
}

/**
 * The UDP datagram (docs/protocol.md#udp): magic 43 6 58 10, method 0, the 16 raw UUID bytes,
 * u16 LE length, the transaction. Throws TypeError above 1232 bytes.
 */
export function udpPacket(key: Uint8Array, tx: Uint8Array): Buffer {
  if (tx.length === 0 || tx.length > MAX_TX_BYTES) throw new TypeError(`UDP transaction is ${tx.length} bytes; allowed 1 to ${MAX_TX_BYTES}`);
  const p = Buffer.alloc(23 + tx.length);
  p.set([43, 6, 58, 10, 0]);
  p.set(key, 5);
  p.writeUInt16LE(tx.length, 21);
  p.set(tx, 23);
  return p;
}

export interface UdpSenderOptions {
  host: string;
  port?: number;
  apiKey: string;
}

/** Fire-and-forget UDP sender: one socket, host resolved once. */
export class UdpSender {
  private constructor(
    private readonly socket: dgram.Socket,
    private readonly address: string,
    private readonly port: number,
    private readonly key: Uint8Array,
  ) {}

  static async create(o: UdpSenderOptions): Promise<UdpSender> {
    const key = uuidBytes(o.apiKey);
    // Resolved once here so that no send pays for a DNS lookup.
    const { address, family } = await lookup(o.host);
    const socket = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
    socket.unref();
    return new UdpSender(socket, address, o.port ?? 16888, key);
  }

  /** The UDP datagram for `tx`; throws TypeError above 1232 bytes. */
  packet(tx: Uint8Array): Buffer {
    return udpPacket(this.key, tx);
  }

  /** Resolves once the datagram is handed to the OS; there is never a response. */
  send(tx: Uint8Array): Promise<void> {
    const p = this.packet(tx);
    return new Promise((resolve, reject) => this.socket.send(p, this.port, this.address, (e) => (e ? reject(e) : resolve())));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

/** The 16 raw bytes of a canonical Account UUID; the message never repeats the key. */
export function uuidBytes(uuid: string): Uint8Array {
  const b = uuidToBytes(uuid);
  if (!b) throw new TypeError('apiKey must be an Account UUID in canonical text form');
  return b;
}
