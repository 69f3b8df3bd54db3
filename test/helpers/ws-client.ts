/**
 * A WebSocket client for the tests of /ws: the `ws` package's socket, every
 * message kept (parsed and raw), calls by id, waits for a message or the close.
 */
import WebSocket from 'ws';

export /** A `ws` client that keeps every message and close, to wait on. */
class WsClient {
  readonly messages: any[] = [];
  readonly raw: string[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: (() => void)[] = [];
  private nextId = 1;

  protected constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const text = data.toString();
      this.raw.push(text);
      this.messages.push(JSON.parse(text));
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
  }

  static open(url: string, opts: WebSocket.ClientOptions = {}): Promise<WsClient> {
    const ws = new WebSocket(url, opts);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new WsClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body })));
      });
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async until<T>(find: () => T | undefined, ms = 5000, what = 'a message'): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = find();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(0, 800)}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  /** Sends a call and waits for the answer with its id. */
  async call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return this.until(() => this.messages.find((m) => m.id === id), 5000, `the answer to ${method}`);
  }

  /** The raw text of the answer with this id. */
  rawOf(id: number): string {
    return this.raw.find((x) => JSON.parse(x).id === id)!;
  }

  async closedWith(ms = 5000): Promise<{ code: number; reason: string }> {
    return this.until(() => this.closed ?? undefined, ms, 'the close');
  }
}

