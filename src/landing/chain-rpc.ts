/**
 * A read-only JSON-RPC client for a chain's own node or provider: where the
 * relay learns whether a forwarded transaction landed (docs/protocol.md#status).
 * It is off the request path, so Node's fetch (undici, keep-alive by default)
 * is enough; each call has a deadline so a slow node makes tracking fall
 * behind instead of piling up calls.
 */

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

  constructor(
    /** Never logged in full: a provider URL may carry its own key in the path or query. */
    private readonly url: string,
    private readonly timeoutMs = 2_000,
  ) {}

  async call<T>(method: string, params: readonly unknown[]): Promise<T> {
    this.calls.set(method, (this.calls.get(method) ?? 0) + 1);
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.text();
      let body: { result?: T; error?: { code?: number; message?: string } };
      try {
        body = JSON.parse(text);
      } catch {
        throw new ChainRpcError(method, 0, `HTTP ${res.status}, not JSON`);
      }
      if (body.error) throw new ChainRpcError(method, body.error.code ?? 0, body.error.message ?? 'error');
      if (!('result' in body)) throw new ChainRpcError(method, 0, `HTTP ${res.status}, no result`);
      return body.result as T;
    } catch (e) {
      this.errors.set(method, (this.errors.get(method) ?? 0) + 1);
      if (e instanceof ChainRpcError) throw e;
      const name = (e as Error).name;
      throw new ChainRpcError(method, 0, name === 'TimeoutError' ? `no answer in ${this.timeoutMs} ms` : (e as Error).message);
    }
  }
}
