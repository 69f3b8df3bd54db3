/**
 * The TPU route of the `solana-single` lane (docs/protocol.md#forwarding):
 * each transaction the lane admits also goes, after its acknowledgement, to
 * the leader of the slot it is sent in and the next `leaders_ahead - 1`
 * distinct leaders, one unidirectional QUIC stream each. Each send is a
 * `forwards` entry of the status (`upstream: "tpu:<identity>"`, the slot, the
 * address, `upstream_result` written / connect_failed / skipped).
 *
 * Where the lane has no RPC upstream (`mode = "only"`), this route ends the
 * trace: `forwarded` at the first stream written, `failed` when every leader's
 * send failed, `dropped` when it could not go at all (over 1232 bytes, no
 * leader known yet).
 */
import { systemClock, type Clock } from '../clock.js';
import { PACKET_DATA_SIZE } from '../chains/solana/decode.js';
import type { LaneTap } from '../forward/tap.js';
import type { LeaderSend, Trace } from '../status/trace.js';
import type { LeaderTracker } from './leaders.js';
import type { LeaderPool } from './pool.js';

export class TpuRoute implements LaneTap {
  private items: string[] = [];
  private traces: (Trace | undefined)[] = [];
  private soles: boolean[] = [];
  private closed = false;

  constructor(
    readonly tracker: LeaderTracker,
    readonly pool: LeaderPool,
    /** The identity's base58 public key, for the start-up line. */
    readonly identity: string,
    private readonly leadersAhead: number,
    private readonly now: Clock = systemClock,
  ) {}

  /** Buffers one base64 transaction: the lane's pump, after acknowledgements, calls `flush`. */
  offer(item: string, trace: Trace | undefined, sole: boolean): void {
    if (this.closed) {
      if (sole) trace?.final('dropped', 'shutdown: not sent to any leader', this.now());
      return;
    }
    this.items.push(item);
    this.traces.push(trace);
    this.soles.push(sole);
  }

  flush(): void {
    const items = this.items;
    if (items.length === 0) return;
    const traces = this.traces;
    const soles = this.soles;
    this.items = [];
    this.traces = [];
    this.soles = [];
    for (let i = 0; i < items.length; i++) this.send(items[i]!, traces[i], soles[i]!);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const now = this.now();
    for (let i = 0; i < this.items.length; i++) if (this.soles[i]) this.traces[i]?.final('dropped', 'shutdown: not sent to any leader', now);
    this.items = [];
    this.traces = [];
    this.soles = [];
    this.tracker.stop();
    await this.pool.close();
  }

  private send(item: string, trace: Trace | undefined, sole: boolean): void {
    const stats = this.pool.stats;
    const bytes = Buffer.from(item, 'base64');
    if (bytes.length > PACKET_DATA_SIZE) {
      // A leader reads one packet's worth per transaction: larger ones go by RPC only.
      stats.oversize++;
      if (sole) trace?.final('dropped', `${bytes.length} bytes, over the ${PACKET_DATA_SIZE} a leader's TPU takes, and no RPC upstream is configured`, this.now());
      return;
    }
    const leaders = this.tracker.leaders(this.tracker.slot, this.leadersAhead);
    if (leaders.length === 0) {
      stats.noLeader++;
      if (sole) trace?.final('dropped', 'no leader known yet: the leader schedule or the current slot has not been read', this.now());
      return;
    }
    let left = leaders.length;
    let written = false;
    let why: string | null = null;
    const sentAt = this.now();
    for (const l of leaders) {
      let rec: LeaderSend | null = null;
      if (trace !== undefined) {
        rec = { upstream: `tpu:${l.identity}`, slot: l.slot, address: l.address, sentAt, doneAt: 0, result: null, error: null };
        (trace.leaderSends ??= []).push(rec);
      }
      this.pool.send(l, bytes, (r, err) => {
        const at = this.now();
        if (rec !== null) {
          rec.doneAt = at;
          rec.result = r;
          rec.error = err;
        }
        left--;
        if (r === 'written') {
          // The first leader that has it is enough for `forwarded`; landing follows from there.
          if (!written && sole) trace?.final('forwarded', null, at);
          written = true;
        } else why = err ?? r;
        if (left === 0 && !written && sole) trace?.final('failed', `no leader's TPU took it: ${why}`, at);
      });
    }
  }
}
