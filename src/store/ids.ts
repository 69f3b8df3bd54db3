/**
 * Store identifiers. Batch ids are ULIDs (48-bit Unix ms, 80 random bits, 26
 * Crockford base32 characters in ASCII order): string order is time order, so
 * lmdb key order is upload order. Within a millisecond, or when the clock
 * steps back, the random part is incremented, so one process's ids strictly
 * increase. Account UUIDs are four 32-bit words, so hot lookups build no string.
 */
import { randomFillSync } from 'node:crypto';
import type { UuidWords } from '../shared/uuid.js';

// UUID text parsing is shared with the client (which sends raw UUID bytes over UDP); one parser for both.
export { uuidTextWords, uuidToBytes, type UuidWords } from '../shared/uuid.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** 2^40: the 80-bit random part is kept as two 40-bit halves, each exact in a double and 8 base32 characters long. */
const HALF = 2 ** 40;
/** 2^48 ms is the year 10889; the time field is 10 characters, its top 2 bits always zero. */
const MAX_TIME = 2 ** 48 - 1;
/** Random bytes drawn per syscall; 10 bytes per id, so one fill serves ~400 ids. */
const POOL_BYTES = 4096;

export const BATCH_ID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

function encode(value: number, chars: number): string {
  let out = '';
  for (let i = 0; i < chars; i++) {
    const digit = value % 32;
    out = CROCKFORD[digit] + out;
    value = (value - digit) / 32;
  }
  return out;
}

/** Generator state; one per process is enough (see `nextBatchId`), tests make their own with a fake clock. */
export class BatchIdGenerator {
  private lastTime = -1;
  private hi = 0;
  private lo = 0;
  private readonly pool = new Uint8Array(POOL_BYTES);
  private poolPos = POOL_BYTES;

  constructor(private readonly now: () => number = Date.now) {}

  next(): string {
    let time = Math.floor(this.now());
    if (!(time >= 0 && time <= MAX_TIME)) throw new RangeError('batch id clock out of range');
    if (time <= this.lastTime) {
      // Same millisecond or the wall clock stepped back: stay on the last time and count up.
      time = this.lastTime;
      if (++this.lo === HALF) {
        this.lo = 0;
        if (++this.hi === HALF) {
          // 2^80 ids in one millisecond cannot happen; borrow the next millisecond rather than break order.
          this.hi = 0;
          time = ++this.lastTime;
        }
      }
    } else {
      this.lastTime = time;
      this.draw();
    }
    return encode(time, 10) + encode(this.hi, 8) + encode(this.lo, 8);
  }

  private draw(): void {
    if (this.poolPos + 10 > POOL_BYTES) {
      randomFillSync(this.pool);
      this.poolPos = 0;
    }
    const p = this.pool;
    let i = this.poolPos;
    this.hi = p[i++]! * 2 ** 32 + (((p[i++]! << 24) | (p[i++]! << 16) | (p[i++]! << 8) | p[i++]!) >>> 0);
    this.lo = p[i++]! * 2 ** 32 + (((p[i++]! << 24) | (p[i++]! << 16) | (p[i++]! << 8) | p[i++]!) >>> 0);
    this.poolPos = i;
  }
}

const processIds = new BatchIdGenerator();

/** A fresh batch id from the process-wide generator. */
export function nextBatchId(): string {
  return processIds.next();
}

/** The smallest batch id whose time is `ms`: every id created before `ms` sorts below it. */
export function batchIdFloor(ms: number): string {
  return encode(Math.max(0, Math.min(MAX_TIME, Math.floor(ms))), 10) + '0'.repeat(16);
}

/** Milliseconds encoded in a batch id. */
export function batchIdTime(id: string): number {
  let t = 0;
  for (let i = 0; i < 10; i++) t = t * 32 + CROCKFORD.indexOf(id[i]!);
  return t;
}

// ---- Account UUIDs -------------------------------------------------------

/** Reads 16 raw UUID bytes (canonical byte order, as in a UDP packet) at `offset` into `out`; false if out of bounds. */
export function uuidByteWords(b: Uint8Array, offset: number, out: UuidWords): boolean {
  if (!(offset >= 0 && offset + 16 <= b.length)) return false;
  for (let j = 0; j < 4; j++) {
    const o = offset + 4 * j;
    out[j] = (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!;
  }
  return true;
}
