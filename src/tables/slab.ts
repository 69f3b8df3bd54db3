/**
 * The transaction slab: a SharedArrayBuffer the main thread copies each
 * incoming transaction into once, so workers verify it in place.
 *
 * Only the creating (main) thread allocates, shrinks and frees; the allocator
 * state lives in that object, not the SAB. Workers `attach()` read-only and
 * read offsets handed to them in a task message, posted after the copy: Node's
 * mutex-guarded message queue orders the copy before their reads. A block is
 * freed only after the worker's answer, so it is never rewritten under a reader.
 *
 * Allocation is a ring: a bump pointer that wraps to 0 when a block does not
 * fit before the end (blocks never straddle it). Frees come in any order; the
 * tail advances over freed blocks from the oldest, so one long-held block holds
 * back reuse behind it. alloc() returns -1 when full and the caller answers
 * 503, which bounds the bytes in flight.
 *
 *   not wrapped:   0          tail                  head             capacity
 *                  |  free     | blocks...           |  free          |
 *   wrapped:       0          head       tail              wrapAt     capacity
 *                  | blocks... |  free    | blocks...       | skipped |
 *
 *   block:  | len | state | size | 0 | data (len bytes, padded to 8) |
 *           ^ offset - 16             ^ offset returned by alloc()
 *
 * Header words are u32: len as asked (or shrunk to), size including the
 * header, and state a magic LIVE or FREED so freeing a non-block offset is caught.
 */

import { prefault } from './prefault.js';

/** Header bytes per block: four u32 words. Blocks are 8-aligned, so header words are Int32-aligned. */
const HEADER = 16;
const H_LEN = 0;
const H_STATE = 1;
const H_SIZE = 2;
const LIVE = 0x51ab0001;
const FREED = 0x51ab0002;

/** 32 MiB: ~255 bodies at the 128 KiB http.max_body_bytes, or ~26,900 Solana transactions of 1232 bytes. */
export const DEFAULT_SLAB_BYTES = 32 * 1024 * 1024;

export interface SlabHandle {
  readonly sab: SharedArrayBuffer;
  readonly capacity: number;
}

interface SlabOptions {
  /** Bytes; rounded up to a multiple of 8. */
  readonly capacity?: number;
}

function blockSize(len: number): number {
  return HEADER + ((len + 7) & ~7);
}

export class Slab {
  readonly capacity: number;
  /** The whole region; a block is bytes[offset, offset + lengthOf(offset)). */
  readonly bytes: Uint8Array;
  private readonly sab: SharedArrayBuffer;
  private readonly words: Int32Array;
  private readonly owner: boolean;
  private head = 0;
  private tail = 0;
  private wrapAt = 0;
  private wrapped = false;
  private liveBlocks = 0;
  private usedBytes = 0;

  private constructor(sab: SharedArrayBuffer, capacity: number, owner: boolean) {
    this.sab = sab;
    this.capacity = capacity;
    this.owner = owner;
    this.bytes = new Uint8Array(sab, 0, capacity);
    this.words = new Int32Array(sab, 0, capacity >>> 2);
  }

  static create(opts: SlabOptions = {}): Slab {
    const capacity = ((opts.capacity ?? DEFAULT_SLAB_BYTES) + 7) & ~7;
    if (!(capacity >= 16 && capacity <= 2 ** 30)) throw new RangeError('slab capacity must be in [16, 2^30] bytes');
    const sab = new SharedArrayBuffer(capacity);
    prefault(sab);
    return new Slab(sab, capacity, true);
  }

  /** A read-only view for a worker: lengthOf / view / bytes work, allocation throws. */
  static attach(h: SlabHandle): Slab {
    return new Slab(h.sab, h.capacity, false);
  }

  handle(): SlabHandle {
    return { sab: this.sab, capacity: this.capacity };
  }

  /** Bytes between tail and head, headers and not-yet-reclaimed frees included (for metrics). */
  get used(): number {
    return this.usedBytes;
  }

  /** Blocks allocated and not freed. */
  get live(): number {
    return this.liveBlocks;
  }

  /**
   * Reserves `len` bytes and returns the offset of the first one in `bytes`,
   * or -1 when the ring has no room (answer 503; in-flight work is bounded).
   */
  alloc(len: number): number {
    if (!this.owner) throw new Error('Slab.alloc is for the thread that created the slab');
    if (!(len >= 0 && Number.isInteger(len))) throw new RangeError(`slab alloc length must be a non-negative integer: ${len}`);
    if (len > this.capacity) return -1;
    const size = blockSize(len);
    if (this.usedBytes === 0) {
      // Empty: restart at 0 so the next blocks get the longest straight run.
      this.head = 0;
      this.tail = 0;
      this.wrapped = false;
    }
    let start: number;
    if (!this.wrapped) {
      if (this.head + size <= this.capacity) {
        start = this.head;
      } else if (size <= this.tail) {
        this.wrapAt = this.head;
        this.wrapped = true;
        this.usedBytes += this.capacity - this.head; // the skipped end counts as used until the tail passes it
        start = 0;
      } else {
        return -1;
      }
    } else if (this.head + size <= this.tail) {
      start = this.head;
    } else {
      return -1;
    }
    this.head = start + size;
    this.usedBytes += size;
    this.liveBlocks++;
    const w = start >>> 2;
    this.words[w + H_LEN] = len;
    this.words[w + H_STATE] = LIVE;
    this.words[w + H_SIZE] = size;
    return start + HEADER;
  }

  /** Length recorded for the block at `offset` (workers use it to find the end). */
  lengthOf(offset: number): number {
    return this.words[((offset - HEADER) >>> 2) + H_LEN];
  }

  /** A view of the block's bytes (allocates the view object, copies nothing). */
  view(offset: number): Uint8Array {
    return this.bytes.subarray(offset, offset + this.lengthOf(offset));
  }

  /**
   * Lowers a block's length once the real size is known. Space is returned at
   * once when it is the newest block, otherwise when the block is freed.
   */
  shrink(offset: number, newLen: number): void {
    const w = this.checkLive(offset);
    const len = this.words[w + H_LEN];
    if (!(newLen >= 0 && newLen <= len)) throw new RangeError(`slab shrink to ${newLen} from ${len}`);
    this.words[w + H_LEN] = newLen;
    const size = this.words[w + H_SIZE];
    if (offset - HEADER + size === this.head) {
      const saved = size - blockSize(newLen);
      this.words[w + H_SIZE] = size - saved;
      this.head -= saved;
      this.usedBytes -= saved;
    }
  }

  /** Frees a block; any order. */
  free(offset: number): void {
    const w = this.checkLive(offset);
    this.words[w + H_STATE] = FREED;
    this.liveBlocks--;
    if (offset - HEADER === this.tail) this.reclaim();
  }

  private checkLive(offset: number): number {
    if (!this.owner) throw new Error('Slab.free/shrink are for the thread that created the slab');
    if (!(offset >= HEADER && offset - HEADER < this.capacity && (offset & 7) === 0) || this.words[((offset - HEADER) >>> 2) + H_STATE] !== LIVE) {
      throw new Error(`slab offset ${offset} is not a live block`);
    }
    return (offset - HEADER) >>> 2;
  }

  /** Moves the tail over every freed block at its front. */
  private reclaim(): void {
    const words = this.words;
    for (;;) {
      if (this.wrapped && this.tail === this.wrapAt) {
        this.usedBytes -= this.capacity - this.wrapAt;
        this.tail = 0;
        this.wrapped = false;
        continue;
      }
      if (!this.wrapped && this.tail === this.head) break;
      const w = this.tail >>> 2;
      if (words[w + H_STATE] !== FREED) break;
      const size = words[w + H_SIZE];
      words[w + H_STATE] = 0;
      this.tail += size;
      this.usedBytes -= size;
    }
  }
}
