/**
 * The upstream for the end-to-end run: `txrelay bench sink`
 * (src/bench/sink.ts), which answers every JSON-RPC call (single or batch)
 * at once and counts items, so forwarding costs the relay what it costs
 * against a fast real upstream.
 */
import { startSink } from '../../src/bench/sink.js';

export interface E2eSink {
  url: string;
  impl: string;
  items(): number;
  close(): Promise<void>;
}

export async function startE2eSink(): Promise<E2eSink> {
  const s = await startSink({ host: '127.0.0.1', port: 0 });
  return { url: s.url, impl: 'src/bench/sink.ts', items: () => s.counts().items, close: () => s.close() };
}
