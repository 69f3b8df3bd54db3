/**
 * Acceptor threads (`http.acceptors` > 1): the main thread's listener takes
 * each connection and hands it to the threads' uWS apps in turn (uWS child
 * app descriptors), and each thread runs a whole HTTP service over the
 * node's shared tables (acceptor-thread.ts). The main thread keeps what is
 * one per node: the store, the account registry, the admin API, UDP.
 *
 * What crosses threads, by message:
 *   accounts  every change, in order, acknowledged by each thread; an admin
 *             call answers only once every thread has it (`settled`). A thread
 *             starts from a msgpack snapshot (up to 2^20 accounts, far cheaper
 *             than structured cloning);
 *   records   an EVM batch's receive record and outcome, written by the main
 *             thread's store, awaited by the thread;
 *   stats     gathered at each scrape and added up (src/obs/service-stats.ts);
 *   logs      through the main thread's logger.
 * A dead thread stops getting connections and is restarted within the
 * restart policy of every relay thread (src/exec/restarts.ts).
 */
import { Worker } from 'node:worker_threads';
import { pack } from 'msgpackr';
import type { Config } from '../config/schema.js';
import type { Logger } from '../obs/log.js';
import { scrub } from '../obs/log.js';
import type { StatusView, Trace } from '../status/tracker.js';
import type { Landed } from '../status/trace.js';
import type { Landing } from '../landing/landing.js';
import type { ServiceStats } from '../obs/service-stats.js';
import type { AccountRegistry, SeatedRecord } from '../pipeline/accounts.js';
import type { BatchStore, NewBatch, StoredItem } from '../store/batches.js';
import type { DedupFilter } from '../tables/dedup.js';
import type { IpLimiter } from '../tables/ip-limiter.js';
import type { TemplatedApp } from './uws.js';
import type { AcceptorData } from './acceptor-thread.js';
import type { StatusFeed } from '../status/feed.js';
import type { SpillEntry } from '../forward/lane.js';
import { RestartBudget } from '../exec/restarts.js';

export type ToAcceptor =
  | { t: 'account'; seq: number; r: SeatedRecord }
  | { t: 'listening'; host: string; port: number }
  | { t: 'stats'; id: number }
  | { t: 'record'; id: number; ok: boolean }
  | { t: 'drain'; deadline: number }
  | { t: 'close' }
  /** Read the TLS pair again and serve new connections from a new app with it (docs/operations.md#tls). */
  | { t: 'tls'; id: number }
  /** Asks a thread for what its tracker holds of these ids. */
  | { t: 'statuses'; id: number; account: number; ids: readonly string[] }
  /** Answers a thread's `statuses`: every other tracker's views. */
  | { t: 'statuses-elsewhere'; id: number; lists: StatusView[][] }
  /** Whether another thread's WebSockets watch this account's status changes. */
  | { t: 'watched'; account: number; on: boolean }
  /** A status change another thread traced, for this thread's subscribers. */
  | { t: 'status-push'; account: number; json: string }
  /** What the chain said about a transaction this thread asked to follow. */
  | { t: 'landed'; id: string; l: Landed }
  /** Whether landing tracking has fallen behind, per family (statuses say `landing: "behind"`). */
  | { t: 'landing-behind'; behind: Record<'solana' | 'evm', boolean> };

export type FromAcceptor =
  | { t: 'ready'; descriptor: number }
  /** The app made for a reloaded pair (-1: the pair did not check out; the old app goes on). */
  | { t: 'tls'; id: number; descriptor: number }
  | { t: 'ack'; seq: number }
  | { t: 'stats'; id: number; stats: ServiceStats }
  | { t: 'persist'; id: number; rec: NewBatch }
  | { t: 'outcome'; id: number; batchId: string; items: StoredItem[] }
  | { t: 'drained'; abandoned: number; spill: SpillEntry[] }
  | { t: 'log'; line: string }
  /** A status read on a thread: what the node's other trackers hold. */
  | { t: 'statuses'; id: number; account: number; ids: readonly string[] }
  /** A thread's answer to `statuses`. */
  | { t: 'statuses-local'; id: number; views: StatusView[] }
  /** This thread's WebSockets started (or stopped) watching an account. */
  | { t: 'watch'; account: number; on: boolean }
  /** A status change for the other threads' subscribers. */
  | { t: 'status-push'; account: number; json: string }
  /** A forwarded transaction to follow on chain: the main thread's landing follows for every thread. */
  | { t: 'follow'; id: string; landingRef: NonNullable<Trace['landingRef']>; receivedAt: number };

/** A scrape renders without a thread's figures after this. */
const STATS_TIMEOUT_MS = 2000;
const PINO_LEVELS: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

interface AcceptorOptions {
  n: number;
  cfg: Config;
  /** The main thread's listening app: it hands connections to the threads. */
  listener: TemplatedApp;
  registry: AccountRegistry;
  batches: BatchStore;
  dedup: DedupFilter;
  ipLimiter: IpLimiter;
  udpIpLimiter: IpLimiter;
  statusReads: IpLimiter;
  log: Logger;
  /** The main thread's own tracker (UDP submissions). */
  localStatuses: (accountId: number, ids: readonly string[]) => StatusView[];
  /** The main thread's feed: told which accounts the threads watch. */
  feed: StatusFeed;
  /** Null: no family is followed on chain. */
  landing: Landing | null;
}

/** A thread that does not answer a status question in this long is left out of the answer. */
const STATUS_TIMEOUT_MS = 1000;

class Thread {
  acked: number;
  descriptor = -1;
  alive = true;
  readonly waiting = new Map<number, (s: ServiceStats | null) => void>();
  readonly asked = new Map<number, (views: StatusView[] | null) => void>();
  drained: ((left: { abandoned: number; spill: SpillEntry[] }) => void) | null = null;
  tlsDone: ((descriptor: number) => void) | null = null;

  constructor(
    readonly index: number,
    readonly worker: Worker,
    seq: number,
  ) {
    this.acked = seq;
  }

  post(m: ToAcceptor): void {
    if (this.alive) this.worker.postMessage(m);
  }
}

export class AcceptorThreads {
  private readonly threads: Thread[] = [];
  private seq = 0;
  private nextQuestion = 0;
  private nextStats = 0;
  private closing = false;
  private listening: { host: string; port: number } | null = null;
  private readonly restarts = new RestartBudget();
  private settledWaiters: { seq: number; resolve(): void }[] = [];
  /** Account id -> the threads whose WebSockets watch it. */
  private readonly watchers = new Map<number, Set<number>>();

  private constructor(private readonly o: AcceptorOptions) {
    o.registry.onSeated((r) => {
      const seq = ++this.seq;
      for (const t of this.threads) t.post({ t: 'account', seq, r });
    });
  }

  /** Starts `n` threads; resolves once each has its app ready and handed to the listener. */
  static async start(o: AcceptorOptions): Promise<AcceptorThreads> {
    const a = new AcceptorThreads(o);
    try {
      await Promise.all(Array.from({ length: o.n }, (_, i) => a.spawn(i)));
    } catch (e) {
      await a.close();
      throw e;
    }
    return a;
  }

  get size(): number {
    return this.threads.filter((t) => t.alive).length;
  }

  /** Resolves once every live thread has applied every account change made so far. */
  settled(): Promise<void> {
    const seq = this.seq;
    if (this.threads.every((t) => !t.alive || t.acked >= seq)) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push({ seq, resolve }));
  }

  /** The threads' connection caps recount by port. */
  listen(host: string, port: number): void {
    this.listening = { host, port };
    for (const t of this.threads) t.post({ t: 'listening', host, port });
  }

  /** Every live thread's figures; a thread that does not answer in time is left out. */
  async stats(): Promise<ServiceStats[]> {
    const all = await Promise.all(
      this.threads
        .filter((t) => t.alive)
        .map(
          (t) =>
            new Promise<ServiceStats | null>((resolve) => {
              const id = this.nextStats++;
              const timer = setTimeout(() => {
                t.waiting.delete(id);
                resolve(null);
              }, STATS_TIMEOUT_MS);
              t.waiting.set(id, (s) => {
                clearTimeout(timer);
                resolve(s);
              });
              t.post({ t: 'stats', id });
            }),
        ),
    );
    return all.filter((s): s is ServiceStats => s !== null);
  }

  /** As service.ts `drain`, in every thread; resolves to what was abandoned and what each thread's lanes left to write down. */
  async drain(deadline: number): Promise<{ abandoned: number; spill: SpillEntry[] }> {
    this.closing = true;
    const each = await Promise.all(
      this.threads
        .filter((t) => t.alive)
        .map(
          (t) =>
            new Promise<{ abandoned: number; spill: SpillEntry[] }>((resolve) => {
              t.drained = resolve;
              t.post({ t: 'drain', deadline });
              t.worker.once('exit', () => resolve({ abandoned: 0, spill: [] }));
            }),
        ),
    );
    return { abandoned: each.reduce((a, b) => a + b.abandoned, 0), spill: each.flatMap((b) => b.spill) };
  }

  /**
   * Each thread makes a new app with the listener's pair as it now reads;
   * the listener hands it new connections, the old app keeps its live ones.
   */
  async reloadTls(): Promise<void> {
    await Promise.all(
      this.threads
        .filter((t) => t.alive)
        .map(
          (t) =>
            new Promise<void>((resolve) => {
              t.tlsDone = (descriptor) => {
                if (descriptor >= 0) {
                  this.o.listener.addChildAppDescriptor!(descriptor);
                  this.o.listener.removeChildAppDescriptor?.(t.descriptor);
                  t.descriptor = descriptor;
                }
                resolve();
              };
              t.worker.once('exit', () => resolve());
              t.post({ t: 'tls', id: 0 });
            }),
        ),
    );
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.threads.map(
        (t) =>
          new Promise<void>((resolve) => {
            if (!t.alive) return resolve();
            t.worker.once('exit', () => resolve());
            t.post({ t: 'close' });
          }),
      ),
    );
  }

  private spawn(index: number): Promise<void> {
    const o = this.o;
    const data: AcceptorData = {
      index,
      of: o.n,
      cfg: o.cfg,
      dedup: o.dedup.handle(),
      ipLimiter: o.ipLimiter.handle(),
      udpIpLimiter: o.udpIpLimiter.handle(),
      statusReads: o.statusReads.handle(),
      buckets: o.registry.buckets.handle(),
      accounts: pack(o.registry.snapshot()),
    };
    const worker = new Worker(new URL('./acceptor-thread.js', import.meta.url), { workerData: data });
    const t = new Thread(index, worker, this.seq);
    this.threads[index] = t;
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: FromAcceptor) => {
        if (m.t === 'ready') {
          ready = true;
          t.descriptor = m.descriptor;
          o.listener.addChildAppDescriptor!(m.descriptor);
          if (this.listening) t.post({ t: 'listening', ...this.listening });
          return resolve();
        }
        this.receive(t, m);
      });
      worker.on('error', (e) => {
        if (!ready) return reject(e);
        o.log.error({ acceptor: index, error: scrub(e instanceof Error ? e.message : String(e)) }, 'acceptor thread failed');
      });
      worker.on('exit', (code) => {
        t.alive = false;
        for (const w of t.waiting.values()) w(null);
        t.waiting.clear();
        for (const w of t.asked.values()) w(null);
        t.asked.clear();
        this.checkSettled();
        // Its sockets are gone with it.
        for (const [account, set] of [...this.watchers]) if (set.has(index)) this.watch(index, account, false);
        if (!ready) return reject(new Error(`acceptor thread ${index} exited (code ${code}) before it was ready`));
        if (t.descriptor >= 0) o.listener.removeChildAppDescriptor?.(t.descriptor);
        if (this.closing) return;
        if (!this.restarts.take()) {
          o.log.error({ acceptor: index }, 'acceptor thread stopped and is not restarted: too many restarts in a minute');
          return;
        }
        o.log.warn({ acceptor: index, code }, 'acceptor thread stopped; starting it again');
        this.spawn(index).catch((e: unknown) => o.log.error({ acceptor: index, error: scrub(String(e)) }, 'acceptor thread could not be started again'));
      });
    });
  }

  private receive(t: Thread, m: FromAcceptor): void {
    switch (m.t) {
      case 'ack':
        t.acked = m.seq;
        return this.checkSettled();
      case 'stats': {
        const w = t.waiting.get(m.id);
        t.waiting.delete(m.id);
        return w?.(m.stats);
      }
      case 'persist':
        this.o.batches.persist(m.rec).then(
          () => t.post({ t: 'record', id: m.id, ok: true }),
          () => t.post({ t: 'record', id: m.id, ok: false }),
        );
        return;
      case 'outcome':
        this.o.batches.updateOutcome(m.batchId, m.items).then(
          () => t.post({ t: 'record', id: m.id, ok: true }),
          (e: unknown) => {
            this.o.log.error({ component: 'store', error: scrub(e instanceof Error ? e.message : String(e)) }, 'batch outcome could not be made durable; the record keeps its hashes');
            t.post({ t: 'record', id: m.id, ok: false });
          },
        );
        return;
      case 'tls':
        t.tlsDone?.(m.descriptor);
        t.tlsDone = null;
        return;
      case 'drained':
        t.drained?.({ abandoned: m.abandoned, spill: m.spill });
        t.drained = null;
        return;
      case 'statuses':
        return this.statusesFor(t, m.id, m.account, m.ids);
      case 'statuses-local': {
        const w = t.asked.get(m.id);
        t.asked.delete(m.id);
        return w?.(m.views);
      }
      case 'log':
        return this.relayLog(t, m.line);
      case 'watch':
        return this.watch(t.index, m.account, m.on);
      case 'status-push':
        return this.publish(m.account, m.json, t.index);
      case 'follow': {
        const list = this.following.get(m.id);
        if (list === undefined) this.following.set(m.id, [t.index]);
        else if (!list.includes(t.index)) list.push(t.index);
        return this.o.landing?.follow(m);
      }
    }
  }

  /** Transaction id -> the threads that asked to follow it: what the chain says goes back to them only. */
  private readonly following = new Map<string, number[]>();

  /** What the chain said about `id`, to the threads following it. */
  landed(id: string, l: Landed): void {
    const list = this.following.get(id);
    if (list === undefined) return;
    if (!l.following) this.following.delete(id);
    for (const i of list) this.threads[i]?.post({ t: 'landed', id, l });
  }

  /** Landing fell behind or caught up: every thread's statuses say so. */
  landingBehind(behind: Record<'solana' | 'evm', boolean>): void {
    for (const t of this.threads) t.post({ t: 'landing-behind', behind });
  }

  /** A change traced on thread `from` (-1: the main thread) to every other thread watching its account. */
  publish(account: number, json: string, from = -1): void {
    const set = this.watchers.get(account);
    if (set === undefined) return;
    for (const i of set) if (i !== from) this.threads[i]?.post({ t: 'status-push', account, json });
  }

  /** Thread `index` watches `account` (or stopped): each thread learns whether another does, the main thread whether any does. */
  private watch(index: number, account: number, on: boolean): void {
    const before = this.watchers.get(account) ?? new Set<number>();
    const after = new Set(before);
    if (on) after.add(index);
    else after.delete(index);
    if (after.size === 0) this.watchers.delete(account);
    else this.watchers.set(account, after);
    const others = (set: Set<number>, i: number): boolean => set.size > (set.has(i) ? 1 : 0);
    for (const t of this.threads) {
      if (t !== undefined && others(before, t.index) !== others(after, t.index)) t.post({ t: 'watched', account, on: others(after, t.index) });
    }
    this.o.feed.setRemote(account, after.size > 0);
  }

  /** Every tracker but the asking thread's: the main thread's, and each other thread's (those that answer in time). */
  private statusesFor(asker: Thread, id: number, account: number, ids: readonly string[]): void {
    const lists: StatusView[][] = [this.o.localStatuses(account, ids)];
    const others = this.threads.filter((t) => t !== asker && t.alive);
    let pending = others.length;
    const reply = () => asker.post({ t: 'statuses-elsewhere', id, lists });
    if (pending === 0) return reply();
    for (const t of others) {
      const q = this.nextQuestion++;
      const timer = setTimeout(() => t.asked.get(q)?.(null), STATUS_TIMEOUT_MS);
      t.asked.set(q, (views) => {
        clearTimeout(timer);
        t.asked.delete(q);
        if (views !== null) lists.push(views);
        if (--pending === 0) reply();
      });
      t.post({ t: 'statuses', id: q, account, ids });
    }
  }

  private checkSettled(): void {
    if (this.settledWaiters.length === 0) return;
    const done = this.settledWaiters.filter((w) => this.threads.every((t) => !t.alive || t.acked >= w.seq));
    if (done.length === 0) return;
    this.settledWaiters = this.settledWaiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve();
  }

  private relayLog(t: Thread, line: string): void {
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const { level, msg, time: _t, pid: _p, hostname: _h, svc: _s, ...fields } = o;
    const method = PINO_LEVELS[level as number] ?? 'info';
    this.o.log[method]({ ...fields, acceptor: t.index }, String(msg ?? ''));
  }
}
