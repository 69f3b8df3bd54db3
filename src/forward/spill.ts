/**
 * The forwarding spill (docs/operations.md#graceful-shutdown): what a stop's
 * drain could not forward is written to `<data_dir>/spill/` and sent by the
 * next start, so no acknowledged transaction leaves the node without reaching
 * an upstream or being written down.
 *
 * One file per stop, written whole to a temporary name, fsync'd, renamed and
 * the directory fsync'd: a file is there complete or not at all. A start
 * re-queues every file's entries into its lanes and deletes the files only
 * once those entries are final (accepted, refused or expired) or written into
 * its own stop's spill: a crash at any point loses nothing, and may send an
 * entry twice (at-least-once).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LANE_NAMES, type Lane, type LaneName } from './lane.js';

/**
 * An acknowledged item no upstream accepted by the end of the drain, taken out
 * of its lane to be written to the data directory and resent on the next
 * start (src/forward/spill.ts). Plain data: it crosses threads and files.
 */
export interface SpillEntry {
  lane: LaneName;
  family: 'evm' | 'solana';
  /** As queued: `0x…` hex, base64, or a bundle's base64 transactions. */
  item: string | string[];
  /** When it was admitted (wall-clock ms). */
  ackedAt: number;
  /** The account that sent it (its id, never its key); -1 unknown. */
  account: number;
}

export const SPILL_DIR = 'spill';
const FORMAT = 1;
/** How often a replay looks for room in a full lane and for its entries to be final. */
const REPLAY_POLL_MS = 100;

/** Items are spliced into JSON without escaping (lane.ts): only pure hex or base64 is taken back. */
const HEX = /^0x[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

type Log = (level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown>) => void;

/** Writes `entries` durably; returns the file, or null when there is nothing to write. Throws what the file system says. */
export function writeSpill(dataDir: string, entries: readonly SpillEntry[]): string | null {
  if (entries.length === 0) return null;
  const dir = join(dataDir, SPILL_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = `${Date.now()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.json`;
  const tmp = join(dir, `.${name}.tmp`);
  const file = join(dir, name);
  const body = JSON.stringify({ format: FORMAT, written_at: Date.now(), entries });
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  syncDir(dir);
  return file;
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function validEntry(e: unknown): e is SpillEntry {
  if (typeof e !== 'object' || e === null) return false;
  const x = e as Record<string, unknown>;
  if (!LANE_NAMES.includes(x.lane as LaneName)) return false;
  const evm = x.lane === 'evm-paid' || x.lane === 'evm-free';
  if (x.family !== (evm ? 'evm' : 'solana')) return false;
  if (typeof x.ackedAt !== 'number' || !Number.isFinite(x.ackedAt) || typeof x.account !== 'number') return false;
  if (x.lane === 'solana-bundle') return Array.isArray(x.item) && x.item.length > 0 && x.item.every((s) => typeof s === 'string' && BASE64.test(s));
  return typeof x.item === 'string' && (evm ? HEX : BASE64).test(x.item);
}

/** Every complete spill file in the data directory and its valid entries; unreadable files are logged and left in place. */
export function readSpills(dataDir: string, log: Log): { files: string[]; entries: SpillEntry[] } {
  const dir = join(dataDir, SPILL_DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return { files: [], entries: [] };
    throw e;
  }
  const files: string[] = [];
  const entries: SpillEntry[] = [];
  for (const name of names.sort()) {
    const file = join(dir, name);
    if (name.startsWith('.')) {
      // A write a crash interrupted: its stop never finished, so never told itself it was written down.
      if (name.endsWith('.tmp')) unlinkQuiet(file);
      continue;
    }
    if (!name.endsWith('.json')) continue;
    let parsed: { format?: unknown; entries?: unknown };
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8')) as typeof parsed;
    } catch (e) {
      log('error', 'forwarding spill file unreadable: left in place, not sent', { file, error: e instanceof Error ? e.message.slice(0, 200) : String(e) });
      continue;
    }
    if (parsed.format !== FORMAT || !Array.isArray(parsed.entries)) {
      log('error', 'forwarding spill file of an unknown format: left in place, not sent', { file });
      continue;
    }
    let bad = 0;
    for (const e of parsed.entries) {
      if (validEntry(e)) entries.push(e);
      else bad++;
    }
    if (bad > 0) log('error', 'forwarding spill file: invalid entries skipped', { file, items: bad });
    files.push(file);
  }
  return { files, entries };
}

function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already, or left for the next start.
  }
}

interface ReplayOptions {
  dataDir: string;
  lane: (name: LaneName) => Lane;
  /** solana.spill_max_age_s in ms. */
  solanaMaxAgeMs: number;
  log: Log;
  now?: () => number;
}

/**
 * A start's replay of the spill: Solana entries older than the maximum age
 * are counted and logged as expired, the rest re-queued (waiting for room
 * when a lane is full), and the files deleted once everything re-queued is
 * final.
 */
export class Replay {
  readonly files: string[];
  readonly loaded: number;
  readonly expired: number;
  private pending: SpillEntry[];
  private requeued = 0;
  private readonly marks = new Map<LaneName, number>();
  private timer: NodeJS.Timeout | null = null;
  private finished = false;

  private constructor(
    private readonly o: ReplayOptions,
    files: string[],
    entries: SpillEntry[],
  ) {
    this.files = files;
    this.loaded = entries.length;
    const now = (o.now ?? Date.now)();
    const expiredBy = new Map<LaneName, number>();
    this.pending = [];
    for (const e of entries) {
      if (e.family === 'solana' && now - e.ackedAt > o.solanaMaxAgeMs) expiredBy.set(e.lane, (expiredBy.get(e.lane) ?? 0) + 1);
      else this.pending.push(e);
    }
    let expired = 0;
    for (const [lane, n] of expiredBy) {
      o.lane(lane).expiredAfterRestart(n);
      expired += n;
      o.log('warn', 'acknowledged Solana transactions written down at shutdown are too old to send: dropped as expired', {
        lane,
        reason: 'expired_after_restart',
        items: n,
        max_age_s: o.solanaMaxAgeMs / 1000,
      });
    }
    this.expired = expired;
  }

  /** Null when the data directory holds no spill. */
  static start(o: ReplayOptions): Replay | null {
    const { files, entries } = readSpills(o.dataDir, o.log);
    if (files.length === 0) return null;
    const r = new Replay(o, files, entries);
    o.log('info', 'resending transactions written down at the last shutdown', { files: files.length, items: r.loaded, expired: r.expired, resending: r.pending.length });
    r.step();
    return r;
  }

  /** Entries re-queued so far. */
  get resent(): number {
    return this.requeued;
  }

  /** Whether the files are gone: every entry re-queued and final. */
  get done(): boolean {
    return this.finished;
  }

  private step(): void {
    this.timer = null;
    let k = 0;
    for (; k < this.pending.length; k++) {
      const e = this.pending[k]!;
      const lane = this.o.lane(e.lane);
      if (!lane.offer(e.item as never, undefined, e.account)) break;
      this.marks.set(e.lane, lane.position());
      this.requeued++;
    }
    if (k > 0) this.pending = this.pending.slice(k);
    if (this.pending.length === 0 && [...this.marks].every(([name, at]) => this.o.lane(name).settledUpTo(at))) {
      this.finished = true;
      for (const f of this.files) unlinkQuiet(f);
      this.o.log('info', 'transactions written down at the last shutdown are all sent: spill removed', { items: this.requeued });
      return;
    }
    this.timer = setTimeout(() => this.step(), REPLAY_POLL_MS);
    this.timer.unref();
  }

  /**
   * At stop, before the drain: entries not yet re-queued, for this stop's
   * spill (what was re-queued is in the lanes and spilled with them).
   */
  stop(): SpillEntry[] {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const left = this.finished ? [] : this.pending;
    this.pending = [];
    return left;
  }

  /** After this stop's spill is durable: the old files are in it, or final. */
  removeFiles(): void {
    for (const f of this.files) unlinkQuiet(f);
  }
}
