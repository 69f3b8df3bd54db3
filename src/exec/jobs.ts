/**
 * The job table: how the acceptor hands transaction checks to itself or a
 * verification worker without a message per job. It is one SharedArrayBuffer,
 * so a hand-off is a few Atomics operations (~0.2 µs, against 25-35 µs of
 * main-thread time for a piscina task).
 *
 * Ownership: the main thread owns slot allocation (a free list in its own
 * memory) and is the only producer of the submit ring and the only consumer
 * of the done ring. Any consumer claims a job with one compareExchange on
 * CLAIMED.
 *
 *   control (Int32, 16 words)
 *     SUBMITTED  jobs pushed to the submit ring (main writes)
 *     CLAIMED    jobs taken from it (CAS by any consumer)
 *     DONE_TAIL  entries reserved in the done ring (Atomics.add by workers)
 *     SLEEPERS   workers parked in Atomics.wait on SUBMITTED (and the main
 *                thread standing in for each worker whose task ended idle)
 *     COMPLETED  bumped after each done entry is published (main waits on it)
 *     STOP       1 asks the workers to return
 *
 *   submit ring:  slot ids, index = sequence & RING_MASK
 *                 [ claimed ...... | waiting ...... | free ...... ]
 *                               CLAIMED        SUBMITTED
 *   done ring:    slot id + 1, 0 = not yet published; main reads in order and
 *                 zeroes each entry it consumes
 *
 *   slot (Int32, 16 words): state, kind, offset, length, flags, result,
 *                 aux0-aux4 (what the main thread already decoded), error
 *                 length, worker index, the Solana recent blockhash's offset
 *                 (what landing follows it by), spare...
 *   slot (Float64, 3): submitted, started, finished (ms, each thread's
 *                 systemClock: wall-clock based, so comparable across threads)
 *   slot (bytes, 224): the transaction hash (32 B), the EVM signing hash
 *                 (32 B), the EVM sender (20 B) and nonce (8 B, big-endian)
 *                 that landing follows it by, then an error message (128 B)
 *
 * Both rings hold RING entries, a power of two >= the slot count, so neither
 * can overflow: a slot is in at most one ring position at a time.
 */

import { prefault } from '../tables/prefault.js';

/** ES2024's Atomics.waitAsync, present since Node 16; the project compiles against the ES2023 library. */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/** Jobs in flight at most: ~80 ms of work for two verifiers at 20 µs each (sheds start far sooner, see controller.ts). */
const DEFAULT_JOB_SLOTS = 8192;

const CTRL_WORDS = 16;
const C_SUBMITTED = 0;
const C_CLAIMED = 1;
const C_DONE_TAIL = 2;
const C_SLEEPERS = 3;
export const C_COMPLETED = 4;
const C_STOP = 5;

/** Int32 words per slot: one 64-byte cache line, so workers on different slots do not share lines. */
const SLOT_WORDS = 16;
const S_STATE = 0;
export const S_KIND = 1;
export const S_OFFSET = 2;
export const S_LENGTH = 3;
export const S_FLAGS = 4;
export const S_RESULT = 5;
export const S_AUX0 = 6;
export const S_AUX1 = 7;
const S_ERRLEN = 8;
export const S_WORKER = 9;
export const S_AUX2 = 10;
export const S_AUX3 = 11;
export const S_AUX4 = 12;
/** A Solana transaction's recent blockhash, its offset in the transaction: landing ends it `blockhash_expired` by it (docs/protocol.md#status). */
export const S_BLOCKHASH = 13;

const SLOT_TIMES = 3;
const T_SUBMIT = 0;
export const T_START = 1;
export const T_END = 2;

/** Per-slot bytes: an EVM transaction hash, its signing hash, sender and nonce, and 128 of error text, which is all a rejection needs. */
const SLOT_BYTES = 224;
const KEY_AT = 0;
export const KEY_BYTES = 32;
const MSG_AT = 32;
const SENDER_AT = 64;
const NONCE_AT = 84;
const ERROR_AT = 96;
const ERROR_BYTES = 128;

/** Slot states: for ownership checks and crash recovery (a dead worker leaves CLAIMED slots). */
export const enum SlotState {
  Free = 0,
  Held = 1,
  Submitted = 2,
  Claimed = 3,
  Done = 4,
}

export const enum JobKind {
  SolanaTx = 1,
  /**
   * A bundle member decoded on the main thread, which owns the bundle's dedup
   * key: signatures only (aux0 signatures offset, aux1 count, aux2 account
   * keys offset, aux3 message offset, aux4 message length).
   */
  SolanaVerify = 2,
  EvmTx = 3,
  /**
   * An EVM batch item decoded and hashed on the main thread (hashes in the
   * slot's bytes; aux0-aux3 r and s offsets and lengths, aux4 recovery id).
   */
  EvmRecover = 4,
}

export const F_OVER_UDP = 1;
/** Set by a check just before its dedup claim: a worker that dies after it leaves the claim for the main thread to withdraw. */
export const F_CLAIMING = 2;

export const enum JobResult {
  Ok = 0,
  /** Seen on this node within the dedup window (peek or lost the claim race). */
  Duplicate = 1,
  /** Failed strict decoding or a stateless check; the message is in the slot. */
  Invalid = 2,
  /** A signature does not verify / no sender recovers. */
  BadSignature = 3,
  /** The check itself failed (a bug, or the worker died): not the client's fault, retry-safe. */
  Internal = 4,
  /** Waited past `limits.queue_max_ms`, not checked (retry-safe, like a shed). */
  Expired = 5,
}

export interface JobTableHandle {
  readonly sab: SharedArrayBuffer;
  readonly slots: number;
}

function ringSize(slots: number): number {
  let r = 1;
  while (r < slots) r *= 2;
  return r;
}

function layout(slots: number): { ring: number; submitAt: number; doneAt: number; intsAt: number; timesAt: number; bytesAt: number; total: number } {
  const ring = ringSize(slots);
  const submitAt = CTRL_WORDS * 4;
  const doneAt = submitAt + ring * 4;
  const intsAt = doneAt + ring * 4;
  // Float64 views need 8-byte alignment; every section above is a multiple of 8 bytes (ring >= 1 word pairs).
  const timesAt = (intsAt + slots * SLOT_WORDS * 4 + 7) & ~7;
  const bytesAt = timesAt + slots * SLOT_TIMES * 8;
  return { ring, submitAt, doneAt, intsAt, timesAt, bytesAt, total: bytesAt + slots * SLOT_BYTES };
}

export class JobTable {
  readonly slots: number;
  readonly ctrl: Int32Array;
  readonly ints: Int32Array;
  readonly times: Float64Array;
  readonly bytes: Uint8Array;
  private readonly sab: SharedArrayBuffer;
  private readonly submitRing: Int32Array;
  private readonly doneRing: Int32Array;
  private readonly mask: number;
  /** Main thread only: free slot ids (a stack) and the done ring's read position. */
  private readonly free: Int32Array | null;
  private freeTop = 0;
  private doneHead = 0;

  private constructor(sab: SharedArrayBuffer, slots: number, owner: boolean) {
    const l = layout(slots);
    this.sab = sab;
    this.slots = slots;
    this.mask = l.ring - 1;
    this.ctrl = new Int32Array(sab, 0, CTRL_WORDS);
    this.submitRing = new Int32Array(sab, l.submitAt, l.ring);
    this.doneRing = new Int32Array(sab, l.doneAt, l.ring);
    this.ints = new Int32Array(sab, l.intsAt, slots * SLOT_WORDS);
    this.times = new Float64Array(sab, l.timesAt, slots * SLOT_TIMES);
    this.bytes = new Uint8Array(sab, l.bytesAt, slots * SLOT_BYTES);
    if (owner) {
      this.free = new Int32Array(slots);
      for (let i = 0; i < slots; i++) this.free[i] = slots - 1 - i;
      this.freeTop = slots;
    } else {
      this.free = null;
    }
  }

  static create(slots = DEFAULT_JOB_SLOTS): JobTable {
    if (!Number.isInteger(slots) || slots < 1 || slots > 1 << 20) throw new RangeError('job slots must be an integer in [1, 2^20]');
    const sab = new SharedArrayBuffer(layout(slots).total);
    prefault(sab);
    return new JobTable(sab, slots, true);
  }

  static attach(h: JobTableHandle): JobTable {
    return new JobTable(h.sab, h.slots, false);
  }

  handle(): JobTableHandle {
    return { sab: this.sab, slots: this.slots };
  }

  // ---- main thread: slots ------------------------------------------------------

  get available(): number {
    return this.freeTop;
  }

  /** A free slot id, or -1 when every slot is in flight (answer 503: in-flight work is bounded). */
  acquire(): number {
    if (this.free === null) throw new Error('JobTable.acquire is for the thread that created the table');
    if (this.freeTop === 0) return -1;
    const s = this.free[--this.freeTop]!;
    const w = s * SLOT_WORDS;
    this.ints[w + S_STATE] = SlotState.Held;
    this.ints[w + S_RESULT] = 0;
    this.ints[w + S_ERRLEN] = 0;
    this.ints[w + S_FLAGS] = 0;
    return s;
  }

  release(s: number): void {
    if (this.free === null) throw new Error('JobTable.release is for the thread that created the table');
    const w = s * SLOT_WORDS;
    const st = Atomics.load(this.ints, w + S_STATE);
    if (st === SlotState.Free || st === SlotState.Submitted || st === SlotState.Claimed) {
      throw new Error(`job slot ${s} released in state ${st}`);
    }
    this.ints[w + S_STATE] = SlotState.Free;
    this.free[this.freeTop++] = s;
  }

  set(s: number, kind: JobKind, offset: number, length: number, flags: number): void {
    const w = s * SLOT_WORDS;
    this.ints[w + S_KIND] = kind;
    this.ints[w + S_OFFSET] = offset;
    this.ints[w + S_LENGTH] = length;
    this.ints[w + S_FLAGS] = flags;
  }

  // ---- the submit ring ---------------------------------------------------------

  /** Publishes a held slot to the consumers (main thread only). Returns whether a worker sleeps and wants a wake-up. */
  submit(s: number, nowMs: number): boolean {
    const w = s * SLOT_WORDS;
    this.times[s * SLOT_TIMES + T_SUBMIT] = nowMs;
    Atomics.store(this.ints, w + S_STATE, SlotState.Submitted);
    const seq = this.ctrl[C_SUBMITTED]!;
    this.submitRing[seq & this.mask] = s;
    // The store of SUBMITTED publishes the ring entry and the slot (Atomics are sequentially consistent).
    Atomics.store(this.ctrl, C_SUBMITTED, seq + 1);
    return Atomics.load(this.ctrl, C_SLEEPERS) > 0;
  }

  waiting(): number {
    return Atomics.load(this.ctrl, C_SUBMITTED) - Atomics.load(this.ctrl, C_CLAIMED);
  }

  /** Claims the oldest waiting job for `worker` (-1: main thread) and stamps its start; -1 when nothing waits. */
  claim(worker: number, nowMs: number): number {
    const c = this.ctrl;
    for (;;) {
      const seq = Atomics.load(c, C_CLAIMED);
      if (seq >= Atomics.load(c, C_SUBMITTED)) return -1;
      if (Atomics.compareExchange(c, C_CLAIMED, seq, seq + 1) !== seq) continue;
      const s = Atomics.load(this.submitRing, seq & this.mask);
      const w = s * SLOT_WORDS;
      this.ints[w + S_WORKER] = worker;
      this.times[s * SLOT_TIMES + T_START] = nowMs;
      Atomics.store(this.ints, w + S_STATE, SlotState.Claimed);
      return s;
    }
  }

  /** Parks a worker until something is submitted (or `timeoutMs`); returns at once if it already was. */
  park(timeoutMs: number): void {
    const c = this.ctrl;
    Atomics.add(c, C_SLEEPERS, 1);
    const seen = Atomics.load(c, C_SUBMITTED);
    if (Atomics.load(c, C_CLAIMED) >= seen && Atomics.load(c, C_STOP) === 0) Atomics.wait(c, C_SUBMITTED, seen, timeoutMs);
    Atomics.sub(c, C_SLEEPERS, 1);
  }

  /**
   * The main thread's stand-in for a worker whose task ended idle
   * (src/exec/workers.ts): counted as parked, so `submit` asks for a wake-up
   * and `wake` ends it; resolves once something waits or the table stops.
   */
  parkAsync(): Promise<void> {
    const c = this.ctrl;
    Atomics.add(c, C_SLEEPERS, 1);
    const seen = Atomics.load(c, C_SUBMITTED);
    const up = (): void => void Atomics.sub(c, C_SLEEPERS, 1);
    if (Atomics.load(c, C_CLAIMED) < seen || Atomics.load(c, C_STOP) !== 0) return Promise.resolve(up());
    const w = waitAsync(c, C_SUBMITTED, seen);
    return w.async ? (w.value as Promise<string>).then(up) : Promise.resolve(up());
  }

  /** Whether a worker is parked (or about to park) and needs `wake` to see new jobs. */
  hasSleeper(): boolean {
    return Atomics.load(this.ctrl, C_SLEEPERS) > 0;
  }

  /** A woken worker that finds nothing parks again. */
  wake(n: number): void {
    Atomics.notify(this.ctrl, C_SUBMITTED, n);
  }

  // ---- the done ring -------------------------------------------------------------

  /**
   * A worker publishes a finished job; `announce` wakes a main thread that waits for it.
   * `startedMs` restamps its start: jobs checked together each get their share of the time.
   */
  complete(s: number, nowMs: number, startedMs?: number): void {
    if (startedMs !== undefined) this.times[s * SLOT_TIMES + T_START] = startedMs;
    this.times[s * SLOT_TIMES + T_END] = nowMs;
    Atomics.store(this.ints, s * SLOT_WORDS + S_STATE, SlotState.Done);
    const seq = Atomics.add(this.ctrl, C_DONE_TAIL, 1);
    Atomics.store(this.doneRing, seq & this.mask, s + 1);
    Atomics.add(this.ctrl, C_COMPLETED, 1);
  }

  /** Wakes the main thread if it waits for answers (Atomics.waitAsync on COMPLETED). */
  announce(): void {
    Atomics.notify(this.ctrl, C_COMPLETED);
  }

  /** The next finished job in publication order, or -1 (main thread only). */
  nextDone(): number {
    const i = this.doneHead & this.mask;
    const v = Atomics.load(this.doneRing, i);
    if (v === 0) return -1;
    this.doneRing[i] = 0;
    this.doneHead++;
    return v - 1;
  }

  /** Main thread only. */
  hasDone(): boolean {
    return Atomics.load(this.doneRing, this.doneHead & this.mask) !== 0;
  }

  /** Ms between submission and claim. */
  waited(s: number): number {
    return this.times[s * SLOT_TIMES + T_START]! - this.times[s * SLOT_TIMES + T_SUBMIT]!;
  }

  /** Ms the oldest unclaimed job has waited (0 when none waits). */
  oldestWaitingAge(nowMs: number): number {
    const c = this.ctrl;
    const seq = Atomics.load(c, C_CLAIMED);
    if (seq >= Atomics.load(c, C_SUBMITTED)) return 0;
    const s = Atomics.load(this.submitRing, seq & this.mask);
    return Math.max(0, nowMs - this.times[s * SLOT_TIMES + T_SUBMIT]!);
  }

  completedCount(): number {
    return Atomics.load(this.ctrl, C_COMPLETED);
  }

  /** Jobs claimed from the ring so far (by any thread; expired ones included). */
  claimedCount(): number {
    return Atomics.load(this.ctrl, C_CLAIMED);
  }

  stop(): void {
    Atomics.store(this.ctrl, C_STOP, 1);
    Atomics.notify(this.ctrl, C_SUBMITTED);
  }

  get stopping(): boolean {
    return Atomics.load(this.ctrl, C_STOP) !== 0;
  }

  // ---- slot fields -------------------------------------------------------------

  state(s: number): SlotState {
    return Atomics.load(this.ints, s * SLOT_WORDS + S_STATE) as SlotState;
  }

  /** Marks a slot done without the ring (inline check on the main thread, or a job recovered from a dead worker). */
  markDone(s: number): void {
    Atomics.store(this.ints, s * SLOT_WORDS + S_STATE, SlotState.Done);
  }

  field(s: number, f: number): number {
    return this.ints[s * SLOT_WORDS + f]!;
  }

  setField(s: number, f: number, v: number): void {
    this.ints[s * SLOT_WORDS + f] = v;
  }

  time(s: number, t: number): number {
    return this.times[s * SLOT_TIMES + t]!;
  }

  keyAt(s: number): number {
    return s * SLOT_BYTES + KEY_AT;
  }

  msgAt(s: number): number {
    return s * SLOT_BYTES + MSG_AT;
  }

  /** Where a checked EVM transaction's 20-byte sender is written (landing matches a taken nonce by it). */
  senderAt(s: number): number {
    return s * SLOT_BYTES + SENDER_AT;
  }

  /** An EVM transaction's nonce, kept for landing (a u64, big-endian in the slot's bytes). */
  setNonce(s: number, nonce: bigint): void {
    const at = s * SLOT_BYTES + NONCE_AT;
    let n = nonce;
    for (let i = 7; i >= 0; i--) {
      this.bytes[at + i] = Number(n & 0xffn);
      n >>= 8n;
    }
  }

  nonce(s: number): bigint {
    const at = s * SLOT_BYTES + NONCE_AT;
    let n = 0n;
    for (let i = 0; i < 8; i++) n = (n << 8n) | BigInt(this.bytes[at + i]!);
    return n;
  }

  /** Writes the result and, for a rejection, its message (ASCII; longer text is cut). */
  setResult(s: number, result: JobResult, message: string): void {
    const at = s * SLOT_BYTES + ERROR_AT;
    const n = Math.min(message.length, ERROR_BYTES);
    for (let i = 0; i < n; i++) {
      const c = message.charCodeAt(i);
      this.bytes[at + i] = c < 0x80 ? c : 0x3f;
    }
    const w = s * SLOT_WORDS;
    this.ints[w + S_ERRLEN] = n;
    this.ints[w + S_RESULT] = result;
  }

  message(s: number): string {
    const n = this.ints[s * SLOT_WORDS + S_ERRLEN]!;
    const at = s * SLOT_BYTES + ERROR_AT;
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + at, n).toString('latin1');
  }
}
