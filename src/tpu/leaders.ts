/**
 * Who leads which slot, and where its TPU listens (docs/protocol.md#forwarding).
 * Read from `solana.chain_rpc`: `getEpochInfo` for where the epoch starts,
 * `getLeaderSchedule` once per epoch (the next one fetched ahead, before the
 * boundary), `getClusterNodes` for each identity's `tpuQuic` address,
 * refreshed on an interval, and the current slot from `slotSubscribe` on
 * `solana.tpu.slot_ws` or `getSlot` polling. A failed read keeps what was
 * known and is tried again on the next round: leader knowledge going stale
 * makes sends go to the wrong leaders (counted, logged), never admission wait.
 */
import WebSocket from 'ws';
import { ChainRpc } from '../landing/chain-rpc.js';

/** Agave's NUM_CONSECUTIVE_LEADER_SLOTS. */
const SLOTS_PER_LEADER = 4;
const POLL_MS = 200;
const NODES_REFRESH_MS = 30_000;
/** The next epoch's schedule is fetched this many slots before the boundary. */
const PREFETCH_SLOTS = 64;
const WS_RETRY_MS = 1_000;
/** How many runs of repeated leaders the walk for the next distinct ones looks through, per leader asked for. */
const MAX_RUNS_PER_LEADER = 8;

export interface Leader {
  identity: string;
  /** `host:port` of its QUIC TPU; null when the cluster does not list one. */
  address: string | null;
  /** The first slot of its run that the window covers. */
  slot: number;
}

interface Schedule {
  start: number;
  length: number;
  /** Identity per slot index (strings shared with the identity table, not copied). */
  bySlot: (string | undefined)[];
}

type Log = (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;

interface TrackerOptions {
  rpc: string;
  slotWs?: string;
  log?: Log;
  pollMs?: number;
  nodesRefreshMs?: number;
}

export class LeaderTracker {
  private readonly rpc: ChainRpc;
  private readonly log: Log;
  private readonly pollMs: number;
  private readonly nodesRefreshMs: number;
  private readonly slotWs: string;
  private schedules: Schedule[] = [];
  private addresses = new Map<string, string>();
  private slotNow = -1;
  /** When the slot was last heard of (performance.now()). */
  private slotAt = 0;
  private timers: NodeJS.Timeout[] = [];
  private ws: WebSocket | null = null;
  private stopped = false;
  private fetching = new Set<number>();
  private readonly warned = new Set<string>();
  /** Called on each slot read (the pool opens and closes connections on it). */
  onSlot: ((slot: number) => void) | null = null;

  constructor(opts: TrackerOptions) {
    this.rpc = new ChainRpc(opts.rpc);
    this.slotWs = opts.slotWs ?? '';
    this.log = opts.log ?? (() => {});
    this.pollMs = opts.pollMs ?? POLL_MS;
    this.nodesRefreshMs = opts.nodesRefreshMs ?? NODES_REFRESH_MS;
  }

  /** The last slot heard of; -1 before the first. */
  get slot(): number {
    return this.slotNow;
  }

  /** Milliseconds since the slot was last heard of (Infinity before the first). */
  slotAgeMs(now = performance.now()): number {
    return this.slotNow < 0 ? Infinity : now - this.slotAt;
  }

  /** Reads the epoch, its schedule and the nodes once, then follows the slot. Resolves even when the RPC is down (it keeps trying). */
  async start(): Promise<void> {
    await Promise.all([this.refreshNodes(), this.refreshEpoch()]);
    this.every(this.nodesRefreshMs, () => void this.refreshNodes());
    if (this.slotWs) this.subscribe();
    else this.every(this.pollMs, () => void this.pollSlot());
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.ws?.terminate();
    this.ws = null;
    void this.rpc.close().catch(() => {});
  }

  /**
   * The `n` distinct leaders from `slot` on, in order: the one holding `slot`
   * first. A leader with consecutive runs counts once; slots whose schedule is
   * not known yet end the list early.
   */
  leaders(slot: number, n: number): Leader[] {
    const out: Leader[] = [];
    if (slot < 0) return out;
    // Run by run from the one holding `slot`; a cluster of few leaders repeats them, so the walk is bounded.
    const end = slot + n * SLOTS_PER_LEADER * MAX_RUNS_PER_LEADER;
    for (let s = slot - (slot % SLOTS_PER_LEADER); out.length < n && s < end; s += SLOTS_PER_LEADER) {
      const id = this.leaderAt(Math.max(s, slot));
      if (id === undefined) break;
      if (out.some((l) => l.identity === id)) continue;
      out.push({ identity: id, address: this.addresses.get(id) ?? null, slot: Math.max(s, slot) });
    }
    return out;
  }

  private leaderAt(slot: number): string | undefined {
    for (const sc of this.schedules) if (slot >= sc.start && slot < sc.start + sc.length) return sc.bySlot[slot - sc.start];
    return undefined;
  }

  /**
   * The slot read or notified: a new one keeps the schedules ahead of it. The
   * pool hears every read, a repeated slot too, so a leader whose handshake
   * failed is tried again within its slots.
   */
  private heard(slot: number): void {
    if (slot < this.slotNow) return;
    if (slot > this.slotNow) {
      this.slotNow = slot;
      this.slotAt = performance.now();
      const cur = this.schedules.find((sc) => slot >= sc.start && slot < sc.start + sc.length);
      if (cur === undefined) void this.refreshEpoch();
      else if (slot + PREFETCH_SLOTS >= cur.start + cur.length) void this.fetchSchedule(cur.start + cur.length, cur.length);
      // Schedules behind the current one are of no more use.
      this.schedules = this.schedules.filter((sc) => sc.start + sc.length > slot);
    }
    try {
      this.onSlot?.(slot);
    } catch {
      // The pool's own errors are its own; following the slot goes on.
    }
  }

  private async refreshEpoch(): Promise<void> {
    try {
      const e = await this.rpc.call<{ absoluteSlot: number; slotIndex: number; slotsInEpoch: number }>('getEpochInfo', []);
      const start = e.absoluteSlot - e.slotIndex;
      await this.fetchSchedule(start, e.slotsInEpoch);
      this.heard(e.absoluteSlot);
    } catch (err) {
      this.failed('getEpochInfo', err);
    }
  }

  /** The schedule of the epoch starting at `start` (its length assumed, as for every epoch after warm-up). */
  private async fetchSchedule(start: number, length: number): Promise<void> {
    if (this.schedules.some((sc) => sc.start === start) || this.fetching.has(start)) return;
    this.fetching.add(start);
    try {
      const byIdentity = await this.rpc.call<Record<string, number[]> | null>('getLeaderSchedule', [start]);
      if (byIdentity === null) throw new Error(`no schedule for the epoch starting at slot ${start}`);
      const bySlot: (string | undefined)[] = new Array(length);
      for (const [id, idx] of Object.entries(byIdentity)) for (const i of idx) if (i >= 0 && i < length) bySlot[i] = id;
      if (!this.schedules.some((sc) => sc.start === start)) this.schedules.push({ start, length, bySlot });
      this.schedules.sort((a, b) => a.start - b.start);
    } catch (err) {
      this.failed('getLeaderSchedule', err);
    } finally {
      this.fetching.delete(start);
    }
  }

  private async refreshNodes(): Promise<void> {
    try {
      const nodes = await this.rpc.call<{ pubkey: string; tpuQuic?: string | null }[]>('getClusterNodes', []);
      const m = new Map<string, string>();
      for (const n of nodes) if (typeof n.tpuQuic === 'string' && n.tpuQuic !== '') m.set(n.pubkey, n.tpuQuic);
      this.addresses = m;
    } catch (err) {
      this.failed('getClusterNodes', err);
    }
  }

  private async pollSlot(): Promise<void> {
    try {
      this.heard(await this.rpc.call<number>('getSlot', [{ commitment: 'processed' }]));
    } catch (err) {
      this.failed('getSlot', err);
    }
  }

  /** `slotSubscribe`: one notification per slot as it starts; reconnects after a second when the socket ends. */
  private subscribe(): void {
    if (this.stopped) return;
    const ws = new WebSocket(this.slotWs);
    this.ws = ws;
    ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe', params: [] })));
    ws.on('message', (data) => {
      try {
        const msg = JSON.parse(String(data)) as { method?: string; params?: { result?: { slot?: number } } };
        const slot = msg.params?.result?.slot;
        if (msg.method === 'slotNotification' && typeof slot === 'number') this.heard(slot);
      } catch {
        // Not JSON: ignored; the next notification comes within a slot.
      }
    });
    ws.on('error', (err) => this.failed('slotSubscribe', err));
    ws.on('close', () => {
      if (this.ws !== ws || this.stopped) return;
      this.ws = null;
      const t = setTimeout(() => this.subscribe(), WS_RETRY_MS);
      t.unref();
    });
  }

  private every(ms: number, fn: () => void): void {
    const t = setInterval(fn, ms);
    t.unref();
    this.timers.push(t);
  }

  /** Each method's failure is logged once until it works again (the RPC URL never: it may carry a key). */
  private failed(method: string, err: unknown): void {
    if (this.stopped || this.warned.has(method)) return;
    this.warned.add(method);
    const t = setTimeout(() => this.warned.delete(method), 60_000);
    t.unref();
    this.log('warn', `TPU leader tracking: ${method} failed; the last known leaders are used`, { method, error: (err instanceof Error ? err.message : String(err)).slice(0, 200) });
  }
}
