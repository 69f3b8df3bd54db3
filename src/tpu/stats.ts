/**
 * What the TPU route counts (src/obs/tpu-metrics.ts exports it): plain numbers
 * bumped on the send path, read at scrape time.
 */
import { HistogramSeries } from '../obs/metrics.js';
import type { SendResult } from './conn.js';

/** Handshake seconds: loopback is well under a millisecond, a far leader a few round trips. */
export const HANDSHAKE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class TpuStats {
  readonly results: Record<SendResult, number> = { written: 0, connect_failed: 0, skipped: 0 };
  /** Sends that found their leader's connection open (warm) or not (cold: handshaking, failed or none yet). */
  warm = 0;
  cold = 0;
  handshakes = 0;
  handshakeFailures = 0;
  readonly handshakeSeconds = new HistogramSeries(HANDSHAKE_BUCKETS);
  /** Transactions over 1232 bytes that went by RPC only (or nowhere, in `only` mode). */
  oversize = 0;
  /** Sends made with no leader known for the slot (the schedule not read yet). */
  noLeader = 0;

  sendsAt(warm: boolean): void {
    if (warm) this.warm++;
    else this.cold++;
  }

  result(r: SendResult): void {
    this.results[r]++;
  }

  opened(ms: number): void {
    this.handshakeSeconds.observe(ms / 1000);
  }
}
