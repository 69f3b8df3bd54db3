/**
 * Solana UDP ingress (docs/protocol.md#udp): one datagram is one transaction,
 * fire-and-forget; nothing is sent back, and what is not admitted is counted
 * by reason.
 *
 * A pool of sockets on one port with SO_REUSEPORT (Node >= 22.12): the kernel
 * spreads senders by address hash, so one sender's burst does not overflow
 * everybody's queue. Without reusePort (Node 20) the pool is one socket. All
 * are read on the main thread, through the same pipeline as HTTP.
 */
import dgram from 'node:dgram';
import { availableParallelism } from 'node:os';
import { PACKET_DATA_SIZE } from '../chains/solana/decode.js';
import type { Pipeline } from '../pipeline/admit.js';
import type { Outcome } from '../pipeline/outcome.js';
import { Kind, refusedAt, solanaTx, type Sink } from '../pipeline/submission.js';
import { CounterSet } from '../obs/metrics.js';

/** docs/protocol.md#udp. */
const MAGIC = [43, 6, 58, 10] as const;
const METHOD_SEND = 0;
const KEY_OFFSET = 5;
const LEN_OFFSET = 21;
const HEADER = 23;
/** ~6,000 full-size datagrams of burst per socket; the kernel caps it at net.core.rmem_max. */
const RECV_BUFFER_BYTES = 8 * 1024 * 1024;
/** One socket per core; beyond 8 the queues only add memory. */
const MAX_AUTO_SOCKETS = 8;

interface UdpListenResult {
  port: number;
  sockets: number;
  reusePort: boolean;
}

export class UdpIngress {
  readonly outcomes = new CounterSet<string>();
  /** Per socket, in binding order. */
  readonly received: number[] = [];
  private sockets: dgram.Socket[] = [];

  constructor(private readonly pipeline: Pipeline) {}

  handle(msg: Buffer, ip: string): void {
    const o = this.outcomes;
    if (msg.length < HEADER) return o.inc('short');
    if (msg[0] !== MAGIC[0] || msg[1] !== MAGIC[1] || msg[2] !== MAGIC[2] || msg[3] !== MAGIC[3]) return o.inc('bad_magic');
    if (msg[4] !== METHOD_SEND) return o.inc('bad_method');
    const txLen = msg[LEN_OFFSET]! | (msg[LEN_OFFSET + 1]! << 8);
    if (txLen > PACKET_DATA_SIZE) return o.inc('too_large');
    if (msg.length !== HEADER + txLen || txLen === 0) return o.inc('bad_length');
    const off = this.pipeline.arrive(Kind.SolanaTx, 'solana');
    const sub =
      off !== null
        ? refusedAt(Kind.SolanaTx, 'solana', 'udp', off, { overUdp: true, ip })
        : solanaTx('udp', { overUdp: true, ip, keyBytes: msg, keyOffset: KEY_OFFSET, bytes: msg, start: HEADER, end: msg.length });
    this.pipeline.admit(sub, this.done);
  }

  private readonly done: Sink = (_sub, r: Outcome): void => {
    this.outcomes.inc(r.error !== null ? r.error.spec.code : r.status === 'duplicate' ? 'duplicate' : 'admitted');
  };

  /** Binds `want` sockets (0: one per core, at most 8), or one where the port cannot be shared. */
  async listen(host: string, port: number, want = 0): Promise<UdpListenResult> {
    const n = want > 0 ? want : Math.min(MAX_AUTO_SOCKETS, availableParallelism());
    const type = host.includes(':') ? 'udp6' : 'udp4';
    // reusePort sockets would join another process's group on the port, splitting datagrams between two
    // dedup filters: bind the port alone first, which fails if anyone holds it.
    if (n > 1 && port !== 0) await this.probeFree(type, host, port);
    const first = await this.bindOne(type, host, port, n > 1);
    const bound = first.address().port;
    let reusePort = n > 1;
    for (let i = 1; i < n && reusePort; i++) {
      try {
        await this.bindOne(type, host, bound, true);
      } catch (e) {
        // The runtime ignored reusePort (Node 20): the port is ours alone, so one socket it is.
        if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
        reusePort = false;
      }
    }
    return { port: bound, sockets: this.sockets.length, reusePort: reusePort && this.sockets.length > 1 };
  }

  /** Rejects when another socket holds host:port. */
  private probeFree(type: 'udp4' | 'udp6', host: string, port: number): Promise<void> {
    const s = dgram.createSocket({ type });
    return new Promise((resolve, reject) => {
      s.once('error', (e) => {
        s.close();
        reject(new Error(`udp: cannot listen on ${host}:${port} (${(e as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'in use' : e.message})`));
      });
      s.bind(port, host, () => s.close(() => resolve()));
    });
  }

  private bindOne(type: 'udp4' | 'udp6', host: string, port: number, reusePort: boolean): Promise<dgram.Socket> {
    const s = dgram.createSocket({ type, recvBufferSize: RECV_BUFFER_BYTES, reusePort } as dgram.SocketOptions);
    return new Promise((resolve, reject) => {
      s.once('error', (e) => {
        s.close();
        reject(e);
      });
      s.bind(port, host, () => {
        s.removeAllListeners('error');
        const index = this.received.push(0) - 1;
        s.on('message', (msg, rinfo) => {
          this.received[index]!++;
          this.handle(msg, rinfo.address);
        });
        // A UDP socket error (e.g. ICMP) must never take the relay down.
        s.on('error', () => this.outcomes.inc('socket_error'));
        this.sockets.push(s);
        resolve(s);
      });
    });
  }

  async close(): Promise<void> {
    const all = this.sockets;
    this.sockets = [];
    await Promise.all(all.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}
