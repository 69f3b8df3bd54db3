/**
 * The leader connections' pool as the main thread sees it: the TpuPool runs
 * on a thread of its own (pool-worker.ts), so the QUIC library's CPU is not
 * admission's. Sends made in one turn go over in one message, as their
 * results come back; the counts the metrics read stay here (`stats`, `open`).
 */
import { Worker } from 'node:worker_threads';
import type { SendDone, SendResult } from './conn.js';
import type { TpuIdentity } from './identity.js';
import type { Leader } from './leaders.js';
import type { LeaderPool } from './pool.js';
import type { FromPoolThread, ToPoolThread } from './pool-worker.js';
import { TpuStats } from './stats.js';

export class TpuPoolThread implements LeaderPool {
  readonly stats = new TpuStats();
  open = 0;
  private readonly pending = new Map<number, SendDone>();
  private nextId = 1;
  private sends: (number | string | Uint8Array)[] = [];
  private scheduled = false;
  /** Why sends are skipped now (shutting down, the thread stopped); null while it runs. */
  private down: string | null = null;
  private closed: Promise<void> | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: FromPoolThread) => this.heard(m));
    worker.on('exit', () => this.stopped('the TPU thread stopped'));
    worker.on('error', () => this.stopped('the TPU thread stopped'));
  }

  /** The thread, started and its QUIC library loaded; or why it could not be. */
  static async start(me: TpuIdentity, handshakeTimeoutMs?: number): Promise<TpuPoolThread | string> {
    const worker = new Worker(new URL('./pool-worker.js', import.meta.url), { workerData: { me, handshakeTimeoutMs } });
    const first = await new Promise<FromPoolThread | string>((resolve) => {
      worker.once('message', resolve);
      worker.once('error', (e) => resolve(e.message));
      worker.once('exit', (code) => resolve(`the TPU thread exited (${code}) before it was ready`));
    });
    if (typeof first !== 'string' && first.t === 'ready') return new TpuPoolThread(worker);
    await worker.terminate();
    return typeof first === 'string' ? first : first.t === 'failed' ? first.why : `unexpected ${first.t}`;
  }

  window(leaders: readonly Leader[]): void {
    if (this.down === null) this.post({ t: 'window', leaders: [...leaders] });
  }

  send(l: Leader, bytes: Uint8Array, done: SendDone): void {
    if (this.down !== null) return done('skipped', this.down);
    if (l.address === null) return done('skipped', 'no TPU QUIC address for this leader in getClusterNodes');
    const id = this.nextId++;
    this.pending.set(id, done);
    this.sends.push(id, l.identity, l.address, bytes);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.flush);
    }
  }

  close(): Promise<void> {
    if (this.closed !== null) return this.closed;
    this.flush();
    this.down = 'shutting down';
    this.closed = new Promise<void>((resolve) => {
      this.worker.once('exit', () => resolve());
      this.post({ t: 'close' });
      // A thread stuck in the library must not hold shutdown up.
      setTimeout(() => void this.worker.terminate(), 5_000).unref();
    });
    return this.closed;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.sends.length === 0) return;
    const sends = this.sends;
    this.sends = [];
    this.post({ t: 'send', sends });
  };

  private post(m: ToPoolThread): void {
    this.worker.postMessage(m);
  }

  private heard(m: FromPoolThread): void {
    if (m.t !== 'done') return;
    const s = this.stats;
    this.open = m.open;
    s.warm += m.warm;
    s.cold += m.cold;
    s.handshakes += m.handshakes;
    s.handshakeFailures += m.handshakeFailures;
    for (const ms of m.handshakeMs) s.opened(ms);
    const r = m.results;
    for (let i = 0; i < r.length; i += 3) {
      const id = r[i] as number;
      const done = this.pending.get(id);
      if (done === undefined) continue;
      this.pending.delete(id);
      s.result(r[i + 1] as SendResult);
      done(r[i + 1] as SendResult, r[i + 2] as string | null);
    }
  }

  /** Every send not answered yet is skipped; later ones too. */
  private stopped(why: string): void {
    this.down ??= why;
    this.open = 0;
    const left = [...this.pending.values()];
    this.pending.clear();
    for (const done of left) {
      this.stats.result('skipped');
      done('skipped', this.down);
    }
  }
}
