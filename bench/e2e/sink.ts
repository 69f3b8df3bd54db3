/**
 * The upstream for the end-to-end run: src/bench/sink.ts when it is built
 * (dist/src/bench/sink.js), else this minimal stand-in. Either answers every
 * JSON-RPC call (single or batch) with a result at once and counts items, so
 * forwarding costs the relay what it costs against a fast real upstream.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface E2eSink {
  url: string;
  impl: string;
  items(): number;
  close(): Promise<void>;
}

async function fallbackSink(): Promise<E2eSink> {
  let items = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const one = (c: { id?: unknown }) => {
        items++;
        return { jsonrpc: '2.0', id: c?.id ?? null, result: 'ok' };
      };
      const out = Array.isArray(body) ? body.map(one) : one(body as { id?: unknown });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    impl: 'bench/e2e/sink.ts (fallback)',
    items: () => items,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface SharedSink {
  url: string;
  counts(): { requests: number; items: number };
  close(): Promise<void>;
}

export async function startE2eSink(): Promise<E2eSink> {
  try {
    const mod = (await import(new URL('../../src/bench/sink.js', import.meta.url).href)) as {
      startSink?: (o: { host?: string; port?: number }) => Promise<SharedSink>;
    };
    if (typeof mod.startSink === 'function') {
      const s = await mod.startSink({ host: '127.0.0.1', port: 0 });
      return { url: s.url, impl: 'src/bench/sink.ts', items: () => s.counts().items, close: () => s.close() };
    }
  } catch {
    // Not built yet: use the stand-in.
  }
  return fallbackSink();
}
