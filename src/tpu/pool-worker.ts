/**
 * The QUIC connections to the leaders, on a thread of their own
 * (docs/protocol.md#forwarding): the QUIC library spends about 0.4 ms of CPU
 * per stream (docs/benchmarks.md#tpu), which on the main thread would come out
 * of admission. The main thread's TpuPoolThread (pool-thread.ts) posts the
 * leader window and each turn's sends; this thread runs them on a TpuPool and
 * posts each turn's results back, with what the pool counted meanwhile.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadQuic, type SendResult } from './conn.js';
import type { TpuIdentity } from './identity.js';
import type { Leader } from './leaders.js';
import { TpuPool } from './pool.js';

/** Main thread to this one. */
export type ToPoolThread =
  | { t: 'window'; leaders: Leader[] }
  /** Flat: id, leader identity, address, bytes, repeated. */
  | { t: 'send'; sends: (number | string | Uint8Array)[] }
  | { t: 'close' };

/** This thread to the main one. */
export type FromPoolThread =
  | { t: 'ready' }
  | { t: 'failed'; why: string }
  | {
      t: 'done';
      /** Flat: id, result, why, repeated. */
      results: (number | string | null)[];
      open: number;
      warm: number;
      cold: number;
      handshakes: number;
      handshakeFailures: number;
      handshakeMs: number[];
    }
  | { t: 'closed' };

interface PoolThreadData {
  me: TpuIdentity;
  handshakeTimeoutMs?: number;
}

const port = parentPort!;
const data = workerData as PoolThreadData;
const lib = await loadQuic();
if (typeof lib === 'string') {
  port.postMessage({ t: 'failed', why: `the QUIC library @matrixai/quic cannot load (${lib})` } satisfies FromPoolThread);
} else {
  const pool = new TpuPool(lib, data.me, data.handshakeTimeoutMs);
  const stats = pool.stats;
  let results: (number | string | null)[] = [];
  let handshakeMs: number[] = [];
  // Counted here since the last post: the main thread adds them to its own TpuStats.
  const last = { warm: 0, cold: 0, handshakes: 0, handshakeFailures: 0 };
  let scheduled = false;
  const soon = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(post);
  };
  // A connection opened: the main thread's `open` (and the metrics) see it now, not at the next result.
  stats.opened = (ms) => {
    handshakeMs.push(ms);
    soon();
  };
  let lastOpen = 0;
  const post = (): void => {
    scheduled = false;
    const m: FromPoolThread = {
      t: 'done',
      results,
      open: pool.open,
      warm: stats.warm - last.warm,
      cold: stats.cold - last.cold,
      handshakes: stats.handshakes - last.handshakes,
      handshakeFailures: stats.handshakeFailures - last.handshakeFailures,
      handshakeMs,
    };
    lastOpen = m.open;
    last.warm = stats.warm;
    last.cold = stats.cold;
    last.handshakes = stats.handshakes;
    last.handshakeFailures = stats.handshakeFailures;
    results = [];
    handshakeMs = [];
    port.postMessage(m);
  };
  const answered = (id: number, r: SendResult, why: string | null): void => {
    results.push(id, r, why);
    soon();
  };
  // Connections closed or failed, and handshakes started, between results: told within a tenth of a second.
  setInterval(() => {
    if (pool.open !== lastOpen || stats.handshakes !== last.handshakes || stats.handshakeFailures !== last.handshakeFailures) soon();
  }, 100).unref();
  port.on('message', (m: ToPoolThread) => {
    if (m.t === 'window') pool.window(m.leaders);
    else if (m.t === 'send') {
      const s = m.sends;
      for (let i = 0; i < s.length; i += 4) {
        const id = s[i] as number;
        const leader: Leader = { identity: s[i + 1] as string, address: s[i + 2] as string, slot: 0 };
        pool.send(leader, s[i + 3] as Uint8Array, (r, why) => answered(id, r, why));
      }
    } else {
      void pool.close().then(() => {
        if (scheduled) post();
        port.postMessage({ t: 'closed' } satisfies FromPoolThread);
        port.close();
      });
    }
  });
  port.postMessage({ t: 'ready' } satisfies FromPoolThread);
}
