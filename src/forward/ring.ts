/**
 * A lane's items (docs/protocol.md#forwarding): one shared power-of-two ring,
 * one send cursor per upstream (two shown; the cursors live in outlet.ts):
 *
 *          head                      cursor[B]             cursor[A]      tail
 *           v                           v                     v             v
 *   ring:  | sent to A and B, some      | sent to A, not to B | sent to     | free ...
 *          | still awaiting an answer   |                     | neither     |
 *          |<------------- held = tail - head, at most capacity ----------->|
 *
 * An item is stored once, every upstream sees admission order, and a slot is
 * freed once every upstream is done with it: one bit of `done[slot]` each, set
 * when it answered (accepted or refused) or gave the item up (overrun,
 * expired, shutdown). Each item's status trace (docs/protocol.md#status), where
 * one is kept, rides along and ends with it. Sequence numbers are never reset; `&` takes them modulo
 * 2^32, which the power-of-two size divides.
 */
import type { Clock } from '../clock.js';
import { R_REJECTED, R_SHUTDOWN, R_SPILLED } from './drops.js';
import type { Trace } from '../status/tracker.js';

/** Per-item verdict: no answer yet, some upstream accepted, or every answer so far refused. */
export const Verdict = { NONE: 0, ACCEPTED: 1, REJECTED: 2 } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** The per-item done set is one 32-bit mask. */
export const MAX_UPSTREAMS = 32;

/** Called once per item that ends with no upstream having accepted it, with its reason (drops.ts). */
type Dropped = (reason: number) => void;

export class Ring<T> {
  /** Every upstream's bit. */
  readonly allMask: number;
  private readonly mask: number;
  private readonly items: (T | undefined)[];
  /** The status trace of each item (docs/protocol.md#status), where one is kept. */
  private readonly traces: (Trace | undefined)[];
  private readonly done: Uint32Array;
  private readonly verdicts: Uint8Array;
  /** Admission time; monotone in seq, so expiry is always a prefix of the ring. */
  private readonly born: Float64Array;
  /** The sending account's id (-1 unknown), for the spill. */
  private readonly account: Int32Array;
  /** Oldest item some upstream is not done with; every seq below is free. */
  head = 0;
  tail = 0;
  /** Items with verdict NONE, not ended: what admission compares with capacity. */
  open = 0;
  /** Items every upstream is done with. */
  settled = 0;
  /** Items some upstream accepted. */
  accepted = 0;

  constructor(
    capacity: number,
    upstreams: number,
    private readonly now: Clock,
    private readonly dropped: Dropped,
  ) {
    let size = 1;
    while (size < capacity) size *= 2;
    this.mask = size - 1;
    this.allMask = upstreams === 32 ? 0xffffffff : (1 << upstreams) - 1;
    this.items = new Array<T | undefined>(size).fill(undefined);
    this.traces = new Array<Trace | undefined>(size).fill(undefined);
    this.done = new Uint32Array(size);
    this.verdicts = new Uint8Array(size);
    this.born = new Float64Array(size);
    this.account = new Int32Array(size);
  }

  /** Items some upstream is not done with. */
  get held(): number {
    return this.tail - this.head;
  }

  /** Appends an item (room checked by the caller); returns its seq. */
  push(item: T, trace: Trace | undefined, account: number, now: number): number {
    const i = this.tail & this.mask;
    this.items[i] = item;
    this.traces[i] = trace;
    this.done[i] = 0;
    this.verdicts[i] = Verdict.NONE;
    this.born[i] = now;
    this.account[i] = account;
    this.open++;
    return this.tail++;
  }

  item(seq: number): T {
    return this.items[seq & this.mask]!;
  }

  trace(seq: number): Trace | undefined {
    return this.traces[seq & this.mask];
  }

  bornAt(seq: number): number {
    return this.born[seq & this.mask]!;
  }

  accountOf(seq: number): number {
    return this.account[seq & this.mask]!;
  }

  verdict(seq: number): Verdict {
    return this.verdicts[seq & this.mask] as Verdict;
  }

  /** Whether the upstream with `bit` is done with `seq`. */
  isDone(seq: number, bit: number): boolean {
    return (this.done[seq & this.mask]! & bit) !== 0;
  }

  /** Every upstream is done with it. */
  isSettled(seq: number): boolean {
    return this.done[seq & this.mask] === this.allMask;
  }

  /** Given up by this upstream, or its slot freed and maybe reused: an answer for it is ignored. */
  stale(seq: number, bit: number): boolean {
    return seq < this.head || (this.done[seq & this.mask]! & bit) !== 0;
  }

  /**
   * The upstream with `bit` is done with `seq`: answered (ACCEPTED, REJECTED)
   * or gave up (NONE, for `reason`). After the last upstream the item ends:
   * forwarded if anyone accepted, else dropped as `rejected` if refused,
   * otherwise for `reason`; its trace gets its final state and its slot is freed.
   */
  mark(bit: number, seq: number, v: Verdict, reason: number): void {
    const i = seq & this.mask;
    const was = this.verdicts[i]!;
    if (v === Verdict.ACCEPTED && was !== Verdict.ACCEPTED) {
      if (was === Verdict.NONE) this.open--;
      this.verdicts[i] = Verdict.ACCEPTED;
      this.accepted++;
    } else if (v === Verdict.REJECTED && was === Verdict.NONE) {
      this.open--;
      this.verdicts[i] = Verdict.REJECTED;
    }
    const d = (this.done[i]! | bit) >>> 0;
    this.done[i] = d;
    if (d !== this.allMask) return;
    this.settled++;
    const final = this.verdicts[i] as Verdict;
    if (final === Verdict.NONE) this.open--;
    const t = this.traces[i];
    this.traces[i] = undefined;
    this.items[i] = undefined;
    while (this.head < this.tail && this.done[this.head & this.mask] === this.allMask) this.head++;
    if (final !== Verdict.ACCEPTED) this.dropped(final === Verdict.REJECTED && reason !== R_SPILLED ? R_REJECTED : reason);
    if (t !== undefined) t.final(...endOf(final, reason, t), this.now());
  }

  /** Marks `seq` done, for `reason`, for every upstream in `bits` not done with it yet. */
  markAll(seq: number, bits: readonly number[], reason: number): void {
    for (let k = 0; k < bits.length; k++) {
      if (!this.isDone(seq, bits[k]!)) this.mark(bits[k]!, seq, Verdict.NONE, reason);
    }
  }
}

type TraceEnd = ['forwarded' | 'upstream_rejected' | 'failed' | 'dropped', string | null];

/** How an item ended, for its status: accepted by some upstream, refused by all that answered, or given up. */
export function endOf(verdict: Verdict, reason: number, t: Trace): TraceEnd {
  if (verdict === Verdict.ACCEPTED) return ['forwarded', null];
  if (verdict === Verdict.REJECTED) return ['upstream_rejected', 'every upstream that answered refused it'];
  if (reason === R_SHUTDOWN) return ['dropped', 'the node shut down before an upstream accepted it'];
  if (reason === R_SPILLED) return ['dropped', 'the node shut down before an upstream accepted it: written to the data directory, to be resent when the node starts again'];
  // Expired: tried and failed everywhere it went, or never got out (breakers open, a backlog).
  return t.tried ? ['failed', 'no upstream accepted it before it expired'] : ['dropped', 'expired in the queue before any upstream took it'];
}
