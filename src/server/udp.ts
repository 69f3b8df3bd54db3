/**
 * Family B UDP ingress (SPEC 2.7, 4.8, 7.3): one datagram is one
 * transaction, fire-and-forget. Nothing is ever sent back; every datagram
 * that is not admitted is dropped and counted by reason.
 */
import dgram from 'node:dgram';
import { RelayError } from '../errors.js';
import { PACKET_DATA_SIZE } from '../chains/solana/decode.js';
import type { Admission } from '../pipeline/admission.js';
import { CounterSet } from '../obs/metrics.js';

/** SPEC 2.7 layout. */
const MAGIC = [43, 6, 58, 10] as const;
const METHOD_SEND = 0;
const KEY_OFFSET = 5;
const LEN_OFFSET = 21;
const HEADER = 23;

export type UdpOutcome =
  | 'admitted'
  | 'duplicate'
  | 'short'
  | 'bad_magic'
  | 'bad_method'
  | 'bad_length'
  | 'too_large'
  | 'rejected';

export class UdpIngress {
  readonly outcomes = new CounterSet<string>();
  private socket: dgram.Socket | null = null;

  constructor(private readonly admission: Admission) {}

  /** Parses and admits one datagram; returns the outcome when it is known synchronously. */
  handle(msg: Buffer, ip: string): void {
    const o = this.outcomes;
    if (msg.length < HEADER) return o.inc('short');
    if (msg[0] !== MAGIC[0] || msg[1] !== MAGIC[1] || msg[2] !== MAGIC[2] || msg[3] !== MAGIC[3]) return o.inc('bad_magic');
    if (msg[4] !== METHOD_SEND) return o.inc('bad_method');
    const txLen = msg[LEN_OFFSET]! | (msg[LEN_OFFSET + 1]! << 8);
    if (txLen > PACKET_DATA_SIZE) return o.inc('too_large');
    if (msg.length !== HEADER + txLen || txLen === 0) return o.inc('bad_length');
    try {
      this.admission.gateBytes('solana', msg, KEY_OFFSET, ip, 1);
    } catch (e) {
      return o.inc((e as RelayError).spec?.code ?? 'rejected');
    }
    const block = this.admission.copyIn(msg.subarray(HEADER));
    if (block === null) return o.inc('TXR_CAPACITY');
    this.admission.solanaSingle(block, true, (r) => {
      if (!r.ok) o.inc(r.error.spec.code);
      else o.inc(r.duplicate ? 'duplicate' : 'admitted');
    });
  }

  listen(host: string, port: number): Promise<number> {
    const type = host.includes(':') ? 'udp6' : 'udp4';
    const s = dgram.createSocket({ type, recvBufferSize: 8 * 1024 * 1024 });
    this.socket = s;
    s.on('message', (msg, rinfo) => this.handle(msg, rinfo.address));
    // A UDP socket error (e.g. ICMP) must never take the relay down.
    s.on('error', () => this.outcomes.inc('socket_error'));
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.bind(port, host, () => {
        s.off('error', reject);
        resolve(s.address().port);
      });
    });
  }

  close(): Promise<void> {
    const s = this.socket;
    this.socket = null;
    return new Promise((resolve) => (s ? s.close(() => resolve()) : resolve()));
  }
}
