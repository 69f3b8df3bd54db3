/**
 * A read-only JSON-RPC client for a chain's own node or provider: where the
 * relay learns whether a forwarded transaction landed (docs/protocol.md#status)
 * and who the next Solana leaders are. Off the request path, but its cost
 * grows with what is followed: a keep-alive pool of undici's `request`
 * (several times cheaper per call than `fetch`), and `batch` for many calls of
 * one method in one JSON-RPC array. Each request has a deadline, so a slow
 * node makes tracking fall behind instead of piling up calls.
 */
import { Pool } from 'undici';

class ChainRpcError extends Error {
  constructor(
    readonly method: string,
    /** The node's JSON-RPC error code, or 0 for transport failures and time-outs. */
    readonly rpcCode: number,
    detail: string,
  ) {
    super(`${method}: ${detail}`);
    this.name = 'ChainRpcError';
  }
}

interface ChainRpcStats {
  /** Calls made, by method. */
  readonly calls: Map<string, number>;
  /** Calls that failed (transport, time-out or a JSON-RPC error), by method. */
  readonly errors: Map<string, number>;
}

export class ChainRpc implements ChainRpcStats {
  readonly calls = new Map<string, number>();
  readonly errors = new Map<string, number>();
  private nextId = 1;
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;

  constructor(
    /** Never logged in full: a provider URL may carry its own key in the path or query. */
    url: string,
    private readonly timeoutMs = 2_000,
  ) {
    const u = new URL(url);
    this.pool = new Pool(u.origin, { connections: 4 });
    this.path = (u.pathname || '/') + u.search;
    this.headers = { 'content-type': 'application/json' };
    if (u.username !== '') this.headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  }

  async call<T>(method: string, params: readonly unknown[]): Promise<T> {
    this.count(this.calls, method, 1);
    const body = (await this.post(method, 1, JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }))) as Answer<T>;
    return this.resultOf(method, body, 1);
  }

  /**
   * `paramsList.length` calls of `method` in one JSON-RPC array: each call's
   * result in order, or null where the node answered that call with an error.
   * A failed request throws, as `call` does.
   */
  async batch<T>(method: string, paramsList: readonly (readonly unknown[])[]): Promise<(T | null)[]> {
    const n = paramsList.length;
    if (n === 0) return [];
    this.count(this.calls, method, n);
    const first = this.nextId;
    this.nextId += n;
    const calls = paramsList.map((params, i) => ({ jsonrpc: '2.0', id: first + i, method, params }));
    const body = await this.post(method, n, JSON.stringify(calls));
    if (!Array.isArray(body)) return [this.resultOf(method, body as Answer<T>, n)];
    // A node may answer an array's calls in any order: matched by id.
    const out: (T | null)[] = new Array(n).fill(null);
    let failed = 0;
    for (const a of body as Answer<T>[]) {
      const i = typeof a?.id === 'number' ? a.id - first : -1;
      if (i < 0 || i >= n) continue;
      if (a.error !== undefined || !('result' in a)) failed++;
      else out[i] = a.result as T;
    }
    if (failed > 0) this.count(this.errors, method, failed);
    return out;
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async post(method: string, n: number, payload: string): Promise<unknown> {
    try {
      const res = await this.pool.request({ path: this.path, method: 'POST', headers: this.headers, body: payload, signal: AbortSignal.timeout(this.timeoutMs) });
      const text = await res.body.text();
      try {
        return JSON.parse(text);
      } catch {
        throw new ChainRpcError(method, 0, `HTTP ${res.statusCode}, not JSON`);
      }
    } catch (e) {
      this.count(this.errors, method, n);
      if (e instanceof ChainRpcError) throw e;
      const err = e as Error & { code?: string };
      throw new ChainRpcError(method, 0, err.name === 'TimeoutError' || err.code === 'UND_ERR_ABORTED' ? `no answer in ${this.timeoutMs} ms` : err.message);
    }
  }

  private resultOf<T>(method: string, body: Answer<T>, n: number): T {
    if (body?.error) {
      this.count(this.errors, method, n);
      throw new ChainRpcError(method, body.error.code ?? 0, body.error.message ?? 'error');
    }
    if (body === null || typeof body !== 'object' || !('result' in body)) {
      this.count(this.errors, method, n);
      throw new ChainRpcError(method, 0, 'no result');
    }
    return body.result as T;
  }

  private count(m: Map<string, number>, method: string, n: number): void {
    m.set(method, (m.get(method) ?? 0) + n);
  }
}

interface Answer<T> {
  id?: number;
  result?: T;
  error?: { code?: number; message?: string };
}
