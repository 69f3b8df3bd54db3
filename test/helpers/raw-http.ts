/**
 * Raw HTTP/1.1 over a real TCP socket, for what fetch would hide: protocol
 * errors, pipelining, exactly which connection an answer came on, and whether
 * the server closed it.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  reason: string;
  /** Header names in lower case; repeated headers keep every value. */
  headers: [string, string][];
  body: string;
}

export interface RawReply {
  /** Everything the server sent. */
  data: string;
  responses: RawResponse[];
  /** The server closed the connection (within the wait). */
  closed: boolean;
}

export interface RawOptions {
  host?: string;
  /** Client address to bind, e.g. 127.0.0.2 to come from another loopback IP. */
  localAddress?: string;
  /** Give up waiting after this long (the connection is then left to the caller or destroyed). */
  waitMs?: number;
  /** Stop waiting once this many complete responses arrived. */
  responses?: number;
}

/** Parses complete responses (Content-Length framed, or up to the close) from a byte stream. */
export function parseResponses(data: string, closed = false): RawResponse[] {
  const out: RawResponse[] = [];
  let pos = 0;
  while (pos < data.length) {
    const end = data.indexOf('\r\n\r\n', pos);
    if (end < 0) break;
    const lines = data.slice(pos, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(lines[0]!);
    if (!m) break;
    const headers = lines.slice(1).map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()] as [string, string];
    });
    const cl = headers.find(([k]) => k === 'content-length');
    let bodyEnd: number;
    if (cl) bodyEnd = end + 4 + Number(cl[1]);
    else if (closed) bodyEnd = data.length;
    else bodyEnd = end + 4;
    if (bodyEnd > data.length) break;
    out.push({ status: Number(m[1]), reason: m[2]!, headers, body: data.slice(end + 4, bodyEnd) });
    pos = bodyEnd;
  }
  return out;
}

export function header(r: RawResponse, name: string): string | undefined {
  return r.headers.find(([k]) => k === name)?.[1];
}

/** An open connection that collects what the server sends. */
export class RawConnection {
  data = '';
  closed = false;
  readonly socket: net.Socket;
  private readonly ready: Promise<void>;
  private wake: (() => void) | null = null;

  constructor(port: number, opts: RawOptions = {}) {
    this.socket = net.connect({ port, host: opts.host ?? '127.0.0.1', ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    this.socket.setEncoding('latin1');
    this.socket.on('data', (d: string) => {
      this.data += d;
      this.wake?.();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
  }

  connected(): Promise<void> {
    return this.ready;
  }

  async write(payload: string | Buffer): Promise<void> {
    await this.ready;
    this.socket.write(payload);
  }

  responses(): RawResponse[] {
    return parseResponses(this.data, this.closed);
  }

  /** Waits until `cond` holds or the server closes; false if `waitMs` passed first. */
  async until(cond: () => boolean, waitMs = 3000): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    while (!cond() && !this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
    return cond() || this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Sends `payload` on a new connection and collects the answer(s). */
export async function rawExchange(port: number, payload: string | Buffer, opts: RawOptions = {}): Promise<RawReply> {
  const c = new RawConnection(port, opts);
  await c.write(payload);
  const want = opts.responses ?? 1;
  await c.until(() => c.responses().length >= want, opts.waitMs ?? 3000);
  const reply = { data: c.data, responses: c.responses(), closed: c.closed };
  c.destroy();
  return reply;
}
