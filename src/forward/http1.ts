/**
 * HTTP/1.1 response framing (RFC 9112) for the forwarding client: a pure
 * state machine fed bytes split anywhere. It keeps the body only for 2xx
 * answers (the only ones read) and refuses an oversized head or body as soon
 * as its size is known, before buffering it.
 *
 *   HEAD ──Content-Length──> BODY_LEN ─────────────────────────────> DONE
 *     │ ──chunked──> CHUNK_SIZE [BWS] [; ext] CRLF ─> CHUNK_DATA CRLF ─┐
 *     │                 ^  └── size 0 ──> TRAILERS (lines) CRLF ─> DONE │
 *     │                 └────────────────────────────────────────────────┘
 *     │ ──neither──> BODY_EOF ──(connection closed: finish())──────> DONE
 *     └ 1xx interim answer: back to HEAD; 204/304: no body
 *
 * Strict where leniency has been a smuggling vector (the head's rules are in
 * http1-head.ts): chunk lines are bounded and exact, and both framings
 * present means the connection is not reused. A body in one read is a view of that
 * read's buffer; only a body split across reads is copied.
 */

import { HttpError, newHead, parseHead } from './http1-head.js';

export { HttpError } from './http1-head.js';

export const Parse = { MORE: 0, DONE: 1, ERROR: 2 } as const;
export type Parse = (typeof Parse)[keyof typeof Parse];

/** undici's default `maxHeaderSize`: far above a JSON-RPC server's ~200-byte head. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Chunk-size line, extensions included: they are ignored, so a long one is only a way to make us spin. */
const MAX_CHUNK_LINE = 1024;

const CR = 13;
const LF = 10;
const SP = 32;
const HT = 9;
const END_OF_HEAD = Buffer.from('\r\n\r\n', 'latin1');

const NEED_MORE = -1;
const FAILED = -2;

const S_HEAD = 0;
const S_BODY_LEN = 1;
const S_BODY_EOF = 2;
const S_CHUNK_SIZE = 3;
const S_CHUNK_BWS = 4;
const S_CHUNK_EXT = 5;
const S_CHUNK_SIZE_LF = 6;
const S_CHUNK_DATA = 7;
const S_CHUNK_DATA_CR = 8;
const S_CHUNK_DATA_LF = 9;
const S_TRAILER_START = 10;
const S_TRAILER_LINE = 11;
const S_TRAILER_LF = 12;
const S_TRAILER_END_LF = 13;
const S_DONE = 14;
const S_ERROR = 15;

const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;

interface ParserLimits {
  maxHeadBytes?: number;
  maxBodyBytes: number;
}

export class ResponseParser {
  /** After DONE: the status code. */
  status = 0;
  /** After DONE: whether the connection may carry another request. */
  keepAlive = true;
  /** After DONE: the server's `Keep-Alive: timeout=N` in ms, or -1. */
  keepAliveHintMs = -1;
  /** After ERROR: why. */
  error: HttpError | '' = '';
  /** After DONE: bytes of the last `execute` input the answer used. */
  consumed = 0;

  private st = S_HEAD;
  private readonly h = newHead();
  private readonly maxHead: number;
  private readonly maxBody: number;
  /** Head bytes carried over from earlier reads (rare). */
  private headBuf: Buffer | null = null;
  private headLen = 0;
  private remaining = 0;
  private chunkDigits = 0;
  private lineBytes = 0;
  private bodyLen = 0;
  private keep = false;
  private closeAfter = false;
  // The body: a view of the caller's buffer while it fits in one read, else `acc`.
  private view: Buffer | null = null;
  private viewStart = 0;
  private viewEnd = 0;
  private acc: Buffer | null = null;
  private accLen = 0;

  constructor(limits: ParserLimits) {
    this.maxHead = limits.maxHeadBytes ?? MAX_HEAD_BYTES;
    this.maxBody = limits.maxBodyBytes;
  }

  reset(): void {
    this.st = S_HEAD;
    this.status = 0;
    this.keepAlive = true;
    this.keepAliveHintMs = -1;
    this.error = '';
    this.consumed = 0;
    this.headLen = 0;
    this.bodyLen = 0;
    this.view = null;
    this.accLen = 0;
  }

  /** True once any byte of an answer has been seen (an EOF before that is a closed connection, not a cut answer). */
  get started(): boolean {
    return this.st !== S_HEAD || this.headLen > 0;
  }

  /** The body after DONE: valid until the next `execute`/`reset`, and when it is a view, only until the caller's buffer is reused. */
  bodyBuffer(): Buffer {
    return this.view ?? this.acc ?? EMPTY;
  }
  bodyStart(): number {
    return this.view !== null ? this.viewStart : 0;
  }
  bodyEnd(): number {
    return this.view !== null ? this.viewEnd : this.accLen;
  }

  execute(buf: Buffer, start: number, end: number): Parse {
    let i = start;
    while (i < end) {
      switch (this.st) {
        case S_HEAD: {
          i = this.head(buf, i, end);
          if (i === NEED_MORE) return this.more();
          if (i === FAILED) return Parse.ERROR;
          break;
        }
        case S_BODY_LEN: {
          const n = Math.min(this.remaining, end - i);
          this.body(buf, i, i + n);
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.st = S_DONE;
          break;
        }
        case S_BODY_EOF: {
          if (!this.body(buf, i, end)) return Parse.ERROR;
          i = end;
          break;
        }
        case S_CHUNK_SIZE: {
          const c = buf[i]!;
          const h = HEX[c]!;
          if (h >= 0) {
            // 7 hex digits is 256 MiB, already past any body we accept; more is refused, never overflowed.
            if (++this.chunkDigits > 7) return this.fail(HttpError.CHUNK);
            this.remaining = this.remaining * 16 + h;
          } else if (this.chunkDigits === 0) {
            return this.fail(HttpError.CHUNK);
          } else if (c === SP || c === HT) {
            this.st = S_CHUNK_BWS;
          } else if (c === 0x3b /* ; */) {
            this.st = S_CHUNK_EXT;
          } else if (c === CR) {
            this.st = S_CHUNK_SIZE_LF;
          } else return this.fail(HttpError.CHUNK);
          if (++this.lineBytes > MAX_CHUNK_LINE) return this.fail(HttpError.CHUNK);
          i++;
          break;
        }
        case S_CHUNK_BWS: {
          const c = buf[i]!;
          if (c === 0x3b) this.st = S_CHUNK_EXT;
          else if (c === CR) this.st = S_CHUNK_SIZE_LF;
          else if (c !== SP && c !== HT) return this.fail(HttpError.CHUNK);
          if (++this.lineBytes > MAX_CHUNK_LINE) return this.fail(HttpError.CHUNK);
          i++;
          break;
        }
        case S_CHUNK_EXT: {
          // Extensions are ignored; only the line's end matters. Control bytes other than HTAB are refused.
          const c = buf[i]!;
          if (c === CR) this.st = S_CHUNK_SIZE_LF;
          else if ((c < 0x20 && c !== HT) || c === 0x7f) return this.fail(HttpError.CHUNK);
          if (++this.lineBytes > MAX_CHUNK_LINE) return this.fail(HttpError.CHUNK);
          i++;
          break;
        }
        case S_CHUNK_SIZE_LF: {
          if (buf[i] !== LF) return this.fail(HttpError.CHUNK);
          i++;
          if (this.remaining === 0) {
            this.st = S_TRAILER_START;
            this.lineBytes = 0;
          } else {
            if (this.bodyLen + this.remaining > this.maxBody) return this.fail(HttpError.BODY_TOO_LARGE);
            this.st = S_CHUNK_DATA;
          }
          break;
        }
        case S_CHUNK_DATA: {
          const n = Math.min(this.remaining, end - i);
          this.body(buf, i, i + n);
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.st = S_CHUNK_DATA_CR;
          break;
        }
        case S_CHUNK_DATA_CR: {
          if (buf[i] !== CR) return this.fail(HttpError.CHUNK);
          this.st = S_CHUNK_DATA_LF;
          i++;
          break;
        }
        case S_CHUNK_DATA_LF: {
          if (buf[i] !== LF) return this.fail(HttpError.CHUNK);
          this.st = S_CHUNK_SIZE;
          this.chunkDigits = 0;
          this.lineBytes = 0;
          this.remaining = 0;
          i++;
          break;
        }
        case S_TRAILER_START: {
          const c = buf[i]!;
          if (c === CR) this.st = S_TRAILER_END_LF;
          else if (c === LF) return this.fail(HttpError.CHUNK);
          else this.st = S_TRAILER_LINE;
          if (++this.lineBytes > this.maxHead) return this.fail(HttpError.HEAD_TOO_LARGE);
          i++;
          break;
        }
        case S_TRAILER_LINE: {
          // Trailer fields are read past, not used.
          const c = buf[i]!;
          if (c === CR) this.st = S_TRAILER_LF;
          else if (c === LF) return this.fail(HttpError.CHUNK);
          if (++this.lineBytes > this.maxHead) return this.fail(HttpError.HEAD_TOO_LARGE);
          i++;
          break;
        }
        case S_TRAILER_LF: {
          if (buf[i] !== LF) return this.fail(HttpError.CHUNK);
          this.st = S_TRAILER_START;
          i++;
          break;
        }
        case S_TRAILER_END_LF: {
          if (buf[i] !== LF) return this.fail(HttpError.CHUNK);
          this.st = S_DONE;
          i++;
          break;
        }
        case S_DONE:
          this.consumed = i;
          return Parse.DONE;
        default:
          return Parse.ERROR;
      }
      if (this.st === S_ERROR) return Parse.ERROR;
    }
    if (this.st === S_DONE) {
      this.consumed = i;
      return Parse.DONE;
    }
    return this.more();
  }

  /** The connection was closed by the other side: completes a body that runs to the close, else the answer is cut. */
  finish(): Parse {
    if (this.st === S_DONE) return Parse.DONE;
    if (this.st === S_BODY_EOF) {
      this.st = S_DONE;
      this.keepAlive = false;
      return Parse.DONE;
    }
    if (this.st === S_ERROR) return Parse.ERROR;
    return this.fail(HttpError.CLOSED);
  }

  // ---- head ----------------------------------------------------------------------

  /** Consumes head bytes; returns the index after the head, NEED_MORE, or FAILED. */
  private head(buf: Buffer, i: number, end: number): number {
    if (this.headLen === 0) {
      const at = buf.indexOf(END_OF_HEAD, i);
      if (at >= 0 && at + 4 <= end) {
        if (at + 4 - i > this.maxHead) return this.failHead(HttpError.HEAD_TOO_LARGE);
        return this.parseHead(buf, i, at + 4) ? at + 4 : FAILED;
      }
      if (end - i > this.maxHead) return this.failHead(HttpError.HEAD_TOO_LARGE);
      this.carry(buf, i, end);
      return NEED_MORE;
    }
    // Continuing a head split across reads: append, then look for its end across the seam.
    const from = Math.max(0, this.headLen - 3);
    const before = this.headLen;
    const take = Math.min(end - i, this.maxHead + 1 - before);
    this.carry(buf, i, i + take);
    const hb = this.headBuf!;
    const at = hb.indexOf(END_OF_HEAD, from);
    if (at >= 0 && at + 4 <= this.headLen) {
      const used = at + 4 - before;
      this.headLen = 0;
      return this.parseHead(hb, 0, at + 4) ? i + used : FAILED;
    }
    if (this.headLen > this.maxHead) return this.failHead(HttpError.HEAD_TOO_LARGE);
    return NEED_MORE;
  }

  private carry(buf: Buffer, s: number, e: number): void {
    const need = this.headLen + (e - s);
    if (this.headBuf === null || this.headBuf.length < need) {
      const nb = Buffer.allocUnsafe(Math.max(need, 1024));
      if (this.headBuf !== null) this.headBuf.copy(nb, 0, 0, this.headLen);
      this.headBuf = nb;
    }
    buf.copy(this.headBuf, this.headLen, s, e);
    this.headLen = need;
  }

  private failHead(e: HttpError): number {
    this.fail(e);
    return FAILED;
  }

  /** Parses a complete head [s, e), ending in CRLF CRLF. Sets the framing state; false on ERROR. */
  private parseHead(b: Buffer, s: number, e: number): boolean {
    const h = this.h;
    const err = parseHead(b, s, e, h);
    if (err !== '') return this.bad(err);
    const status = h.status;
    const contentLength = h.contentLength;
    const chunked = h.chunked;
    this.status = status;
    this.keepAlive = h.http10 ? h.connKeepAlive && !h.connClose : !h.connClose;
    this.keepAliveHintMs = h.keepAliveHintMs;
    if (status < 200) {
      // 101 would hand the connection to another protocol; other 1xx are interim, the real answer follows.
      if (status === 101) return this.bad(HttpError.UPGRADE);
      this.st = S_HEAD;
      this.keepAlive = true;
      this.keepAliveHintMs = -1;
      return true;
    }
    this.keep = status >= 200 && status < 300;
    this.bodyLen = 0;
    if (status === 204 || status === 304) {
      this.st = S_DONE;
    } else if (chunked) {
      // Both framings is how requests get smuggled; read it as chunked (RFC 9112 6.3) and do not reuse the connection.
      if (contentLength >= 0) this.keepAlive = false;
      this.st = S_CHUNK_SIZE;
      this.chunkDigits = 0;
      this.lineBytes = 0;
      this.remaining = 0;
    } else if (contentLength >= 0) {
      if (contentLength > this.maxBody) return this.bad(HttpError.BODY_TOO_LARGE);
      if (this.keep && contentLength > 0) this.reserve(contentLength);
      this.remaining = contentLength;
      this.st = contentLength === 0 ? S_DONE : S_BODY_LEN;
    } else {
      this.keepAlive = false;
      this.st = S_BODY_EOF;
    }
    return true;
  }

  // ---- body ----------------------------------------------------------------------

  /** Takes body bytes buf[s..e); false (ERROR) past the size limit. */
  private body(buf: Buffer, s: number, e: number): boolean {
    if (s === e) return true;
    this.bodyLen += e - s;
    if (this.bodyLen > this.maxBody) {
      this.fail(HttpError.BODY_TOO_LARGE);
      return false;
    }
    if (!this.keep) return true;
    if (this.view === null && this.accLen === 0) {
      this.view = buf;
      this.viewStart = s;
      this.viewEnd = e;
      return true;
    }
    if (this.view !== null) this.spill();
    this.reserve(this.accLen + (e - s));
    buf.copy(this.acc!, this.accLen, s, e);
    this.accLen += e - s;
    return true;
  }

  /** The read is over and the answer is not: a view of the caller's buffer would not survive its reuse. */
  private more(): Parse {
    if (this.view !== null) this.spill();
    return Parse.MORE;
  }

  private spill(): void {
    const v = this.view!;
    const n = this.viewEnd - this.viewStart;
    this.view = null;
    this.reserve(this.accLen + n);
    v.copy(this.acc!, this.accLen, this.viewStart, this.viewEnd);
    this.accLen += n;
  }

  private reserve(n: number): void {
    if (this.acc !== null && this.acc.length >= n) return;
    let size = this.acc === null ? 4096 : this.acc.length * 2;
    while (size < n) size *= 2;
    const nb = Buffer.allocUnsafe(Math.min(size, Math.max(n, this.maxBody)));
    if (this.acc !== null && this.accLen > 0) this.acc.copy(nb, 0, 0, this.accLen);
    this.acc = nb;
  }

  private bad(e: HttpError): false {
    this.fail(e);
    return false;
  }

  private fail(e: HttpError): Parse {
    this.st = S_ERROR;
    this.error = e;
    this.view = null;
    return Parse.ERROR;
  }
}

const EMPTY = Buffer.alloc(0);
