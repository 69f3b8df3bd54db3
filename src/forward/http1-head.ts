/**
 * The head of an HTTP/1.1 response (RFC 9112 section 4-5): a pure function
 * over a complete head, status line to the empty line, that reads the status
 * and the framing headers and refuses what has been a smuggling vector: CRLF
 * line ends only, no obs-fold, token header names, Content-Length digits only
 * (a list only of equal values), Transfer-Encoding exactly `chunked`.
 */

/** Why an answer was refused. Stable codes: they are logged and counted, never parsed. */
export const HttpError = {
  STATUS_LINE: 'HTTP_BAD_STATUS_LINE',
  HEADER: 'HTTP_BAD_HEADER',
  HEAD_TOO_LARGE: 'HTTP_HEAD_TOO_LARGE',
  CONTENT_LENGTH: 'HTTP_BAD_CONTENT_LENGTH',
  TRANSFER_ENCODING: 'HTTP_BAD_TRANSFER_ENCODING',
  CHUNK: 'HTTP_BAD_CHUNK',
  BODY_TOO_LARGE: 'HTTP_BODY_TOO_LARGE',
  UPGRADE: 'HTTP_UNEXPECTED_UPGRADE',
  CLOSED: 'HTTP_CLOSED_MID_ANSWER',
} as const;
export type HttpError = (typeof HttpError)[keyof typeof HttpError];

const CR = 13;
const LF = 10;
const SP = 32;
const HT = 9;

// RFC 9110 tchar, as a lookup table.
const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TCHAR[c] = 1;
for (let c = 65; c <= 90; c++) TCHAR[c] = 1;
for (let c = 97; c <= 122; c++) TCHAR[c] = 1;

/** What a head says about its answer; reused by the caller, every field written by each parse. */
interface Head {
  status: number;
  http10: boolean;
  /** -1 when absent. */
  contentLength: number;
  chunked: boolean;
  connClose: boolean;
  connKeepAlive: boolean;
  /** `Keep-Alive: timeout=N` in ms, or -1. */
  keepAliveHintMs: number;
}

export function newHead(): Head {
  return { status: 0, http10: false, contentLength: -1, chunked: false, connClose: false, connKeepAlive: false, keepAliveHintMs: -1 };
}

/** Parses the head b[s..e), which ends in CRLF CRLF, into `out`; returns '' or why it is refused. */
export function parseHead(b: Buffer, s: number, e: number, out: Head): HttpError | '' {
  // Status line: HTTP/1.x SP 3DIGIT [SP reason] CRLF
  if (
    e - s < 14 ||
    b[s] !== 0x48 || b[s + 1] !== 0x54 || b[s + 2] !== 0x54 || b[s + 3] !== 0x50 || b[s + 4] !== 0x2f ||
    b[s + 5] !== 0x31 || b[s + 6] !== 0x2e || (b[s + 7] !== 0x31 && b[s + 7] !== 0x30) || b[s + 8] !== SP
  ) {
    return HttpError.STATUS_LINE;
  }
  out.http10 = b[s + 7] === 0x30;
  let status = 0;
  for (let k = s + 9; k < s + 12; k++) {
    const d = b[k]! - 48;
    if (d < 0 || d > 9) return HttpError.STATUS_LINE;
    status = status * 10 + d;
  }
  if (status < 100) return HttpError.STATUS_LINE;
  out.status = status;
  let p = s + 12;
  if (b[p] === SP) {
    p++;
    while (b[p] !== CR) {
      const c = b[p]!;
      if ((c < 0x20 && c !== HT) || c === 0x7f) return HttpError.STATUS_LINE;
      p++;
    }
  }
  if (b[p] !== CR || b[p + 1] !== LF) return HttpError.STATUS_LINE;
  p += 2;

  out.contentLength = -1;
  out.chunked = false;
  out.connClose = false;
  out.connKeepAlive = false;
  out.keepAliveHintMs = -1;
  let sawTE = false;
  // The head ends in CRLF CRLF, so the loop ends on the empty line.
  while (!(b[p] === CR && b[p + 1] === LF)) {
    const nameStart = p;
    while (TCHAR[b[p]!] === 1) p++;
    if (p === nameStart || b[p] !== 0x3a /* : */) return HttpError.HEADER;
    const nameEnd = p;
    p++;
    while (b[p] === SP || b[p] === HT) p++;
    const valueStart = p;
    let valueEnd = p;
    for (;;) {
      const c = b[p]!;
      if (c === CR) break;
      if ((c < 0x20 && c !== HT) || c === 0x7f) return HttpError.HEADER;
      p++;
      if (c !== SP && c !== HT) valueEnd = p;
    }
    if (b[p + 1] !== LF) return HttpError.HEADER;
    p += 2;
    // Only the framing headers matter.
    const len = nameEnd - nameStart;
    if (len === 14 && nameIs(b, nameStart, 'content-length')) {
      const v = parseContentLength(b, valueStart, valueEnd);
      if (v < 0 || (out.contentLength >= 0 && v !== out.contentLength)) return HttpError.CONTENT_LENGTH;
      out.contentLength = v;
    } else if (len === 17 && nameIs(b, nameStart, 'transfer-encoding')) {
      // Exactly one coding, `chunked`: anything else would need decoding we do not do.
      if (sawTE || !valueIs(b, valueStart, valueEnd, 'chunked')) return HttpError.TRANSFER_ENCODING;
      sawTE = true;
      out.chunked = true;
    } else if (len === 10 && nameIs(b, nameStart, 'connection')) {
      forEachToken(b, valueStart, valueEnd, (ts, te) => {
        if (valueIs(b, ts, te, 'close')) out.connClose = true;
        else if (valueIs(b, ts, te, 'keep-alive')) out.connKeepAlive = true;
      });
    } else if (len === 10 && nameIs(b, nameStart, 'keep-alive')) {
      out.keepAliveHintMs = keepAliveTimeout(b, valueStart, valueEnd);
    }
  }
  return '';
}

/** Case-insensitive compare of b[s..s+name.length) with a lower-case ASCII name. */
function nameIs(b: Buffer, s: number, name: string): boolean {
  for (let k = 0; k < name.length; k++) if ((b[s + k]! | 0x20) !== name.charCodeAt(k)) return false;
  return true;
}

function valueIs(b: Buffer, s: number, e: number, v: string): boolean {
  return e - s === v.length && nameIs(b, s, v);
}

/** 1*DIGIT, or a comma list of equal ones (RFC 9110 8.6); -1 when malformed. */
function parseContentLength(b: Buffer, s: number, e: number): number {
  let value = -1;
  let p = s;
  while (p < e) {
    let v = 0;
    let digits = 0;
    while (p < e && b[p]! >= 48 && b[p]! <= 57) {
      // 15 digits stay exact in a double; nobody sends a body that large to us.
      if (++digits > 15) return -1;
      v = v * 10 + (b[p]! - 48);
      p++;
    }
    if (digits === 0 || (value >= 0 && v !== value)) return -1;
    value = v;
    while (p < e && (b[p] === SP || b[p] === HT)) p++;
    if (p < e) {
      if (b[p] !== 0x2c) return -1;
      p++;
      while (p < e && (b[p] === SP || b[p] === HT)) p++;
      if (p === e) return -1;
    }
  }
  return value;
}

/** Calls `fn` for each comma-separated token of b[s..e), trimmed. */
function forEachToken(b: Buffer, s: number, e: number, fn: (ts: number, te: number) => void): void {
  let p = s;
  while (p < e) {
    while (p < e && (b[p] === SP || b[p] === HT || b[p] === 0x2c)) p++;
    const ts = p;
    while (p < e && b[p] !== 0x2c) p++;
    let te = p;
    while (te > ts && (b[te - 1] === SP || b[te - 1] === HT)) te--;
    if (te > ts) fn(ts, te);
  }
}

/** `timeout=N` from a Keep-Alive header value, in ms; -1 when absent or malformed. */
function keepAliveTimeout(b: Buffer, s: number, e: number): number {
  let ms = -1;
  forEachToken(b, s, e, (ts, te) => {
    if (te - ts <= 8 || !nameIs(b, ts, 'timeout=')) return;
    let v = 0;
    for (let p = ts + 8; p < te; p++) {
      const d = b[p]! - 48;
      if (d < 0 || d > 9 || v > 1e6) return;
      v = v * 10 + d;
    }
    ms = v * 1000;
  });
  return ms;
}
