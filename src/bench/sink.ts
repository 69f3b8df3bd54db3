/**
 * `txrelay bench sink`: a JSON-RPC upstream that answers every call with
 * success as cheaply as possible, so that in a bench the relay, not its
 * upstream, is what is measured. Accepts single calls and JSON-RPC arrays,
 * counts items by method.
 *
 * No JSON.parse on the hot path: the relay writes its upstream bodies by
 * concatenation (src/forward/upstream.ts) with no whitespace, so items are
 * found by scanning for `"method":"` and `"id":`. When the two counts
 * disagree (someone else's client, odd formatting) the body is parsed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface SinkCounts {
  requests: number;
  items: number;
  byMethod: Record<string, number>;
}

export interface Sink {
  url: string;
  port: number;
  counts(): SinkCounts;
  close(): Promise<void>;
}

const METHOD = '"method":"';
const ID = '"id":';
const OK_HEAD = '{"jsonrpc":"2.0","id":';
const OK_TAIL = ',"result":"ok"}';

interface Scanned {
  ids: string[];
  methods: string[];
  batch: boolean;
}

/** Ids (raw JSON tokens) and methods of a JSON-RPC body; exported for tests. */
export function scanJsonRpc(body: string): Scanned {
  const batch = body.trimStart().startsWith('[');
  const methods: string[] = [];
  for (let i = body.indexOf(METHOD); i !== -1; i = body.indexOf(METHOD, i)) {
    i += METHOD.length;
    const end = body.indexOf('"', i);
    if (end === -1) break;
    methods.push(body.slice(i, end));
    i = end;
  }
  const ids: string[] = [];
  for (let i = body.indexOf(ID); i !== -1; i = body.indexOf(ID, i)) {
    i += ID.length;
    let end = i;
    if (body[i] === '"') end = body.indexOf('"', i + 1) + 1;
    else while (end < body.length && body[end] !== ',' && body[end] !== '}' && body[end] !== ']') end++;
    ids.push(body.slice(i, end).trim() || 'null');
    i = end;
  }
  if (ids.length === methods.length && methods.length > 0) return { ids, methods, batch };
  // Fallback: parse properly.
  try {
    const v = JSON.parse(body) as unknown;
    const calls = (Array.isArray(v) ? v : [v]) as { id?: unknown; method?: unknown }[];
    return {
      ids: calls.map((c) => JSON.stringify(c?.id ?? null)),
      methods: calls.map((c) => (typeof c?.method === 'string' ? c.method : '?')),
      batch: Array.isArray(v),
    };
  } catch {
    return { ids: [], methods: [], batch };
  }
}

export async function startSink(opts: { host?: string; port?: number } = {}): Promise<Sink> {
  const counts: SinkCounts = { requests: 0, items: 0, byMethod: Object.create(null) as Record<string, number> };
  const sockets = new Set<Socket>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('latin1');
      const s = scanJsonRpc(body);
      counts.requests++;
      counts.items += s.methods.length;
      for (const m of s.methods) counts.byMethod[m] = (counts.byMethod[m] ?? 0) + 1;
      let out: string;
      if (s.methods.length === 0) {
        out = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';
      } else if (s.batch) {
        out = '[' + s.ids.map((id) => OK_HEAD + id + OK_TAIL).join(',') + ']';
      } else out = OK_HEAD + s.ids[0] + OK_TAIL;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    });
  };

  const server = createServer({ keepAliveTimeout: 65_000 }, handle);
  server.on('connection', (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 8899, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const hostForUrl = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${hostForUrl}:${addr.port}/`,
    port: addr.port,
    counts: () => ({ requests: counts.requests, items: counts.items, byMethod: { ...counts.byMethod } }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
