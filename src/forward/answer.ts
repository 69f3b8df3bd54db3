/**
 * Reads an upstream's JSON-RPC answer (JSON-RPC 2.0 sections 5, 6) straight
 * from the bytes: for each call id, result or error. The text is validated as
 * JSON (RFC 8259) but nothing is built, so the happy path allocates nothing;
 * only an error member is JSON.parse'd, for the log. Decisions match JSON.parse
 * plus property checks (test/forward/answer.test.ts compares the two):
 * duplicate keys, last wins; an escaped key ("\u0069d") is the key it spells;
 * a leading BOM is skipped; bytes >= 0x80 are string content.
 */

/** A recursive reader needs a limit; a send answer nests 3 deep. */
const MAX_DEPTH = 128;

export interface AnswerScan {
  /** '' when the text is a JSON-RPC answer; else why not (for logs). */
  bad: string;
  /** Per call (index = id - firstId), 1 when answered with a result. Caller-owned, at least `count` long; cleared here. */
  accepted: Uint8Array;
  okCount: number;
  /** The first JSON-RPC error, for logs, long hex/base64 runs cut. */
  reason: string;
  /** A batch array answered by one error object: this upstream does not take batches. */
  batchRefused: boolean;
}

const MAX_REASON_CHARS = 160;

const T_OBJ = 1;
const T_ARR = 2;
const T_STR = 3;
const T_NUM = 4;
const T_LIT = 5;
const T_NULL = 6;
const FAIL = -1;

const K_OTHER = 0;
const K_ID = 1;
const K_RESULT = 2;
const K_ERROR = 3;

// The reader's state: module-level so a scan allocates nothing (it never re-enters itself).
let B: Buffer = Buffer.alloc(0);
let I = 0;
let E = 0;
// Last string read: did it hold an escape?
let strEscaped = false;
// Last number read: its value when it is a plain integer of at most 15 digits, else -1 (then read it with Number()).
let numPlain = -1;
// Members of the object `callObject` last read.
let idValue = NaN;
let hasResult = false;
let hasError = false;
let errorNull = false;
let errStart = 0;
let errEnd = 0;

/** Reads b[s..e) as the answer to calls with ids firstId..firstId+count-1 (an array when `batch`). */
export function readAnswer(b: Buffer, s: number, e: number, firstId: number, count: number, batch: boolean, out: AnswerScan): void {
  const acc = out.accepted;
  acc.fill(0, 0, count);
  out.bad = '';
  out.okCount = 0;
  out.reason = '';
  out.batchRefused = false;
  B = b;
  I = s;
  E = e;
  if (E - I >= 3 && B[I] === 0xef && B[I + 1] === 0xbb && B[I + 2] === 0xbf) I += 3;
  ws();
  const c = I < E ? B[I] : -1;
  if (c === 0x5b /* [ */) {
    I++;
    ws();
    if (I < E && B[I] === 0x5d) {
      I++;
    } else {
      for (;;) {
        if (I < E && B[I] === 0x7b) {
          if (!callObject(1)) return notJson(out);
          if (batch) judgeItem(b, firstId, count, out);
        } else if (value(1) === FAIL) return notJson(out);
        ws();
        if (I < E && B[I] === 0x2c) {
          I++;
          ws();
          continue;
        }
        if (I < E && B[I] === 0x5d) {
          I++;
          break;
        }
        return notJson(out);
      }
    }
    if (!atEnd()) return notJson(out);
    if (!batch) return fail(out, 'answer is not a JSON-RPC response');
    if (out.okCount < count && out.reason === '') out.reason = 'batch answer lacks some ids';
    return;
  }
  if (c === 0x7b /* { */) {
    if (!callObject(0) || !atEnd()) return notJson(out);
    if (batch) {
      // One object for an array: the upstream refused the batch as a whole.
      if (!hasError) return fail(out, 'batch answered by a single non-error object');
      out.batchRefused = true;
      out.reason = reasonOf(b);
      return;
    }
    if (hasResult && (!hasError || errorNull)) {
      acc[0] = 1;
      out.okCount = 1;
    } else if (hasError) {
      out.reason = reasonOf(b);
    } else {
      return fail(out, 'answer has neither result nor error');
    }
    return;
  }
  if (value(0) === FAIL || !atEnd()) return notJson(out);
  return fail(out, 'answer is not a JSON-RPC response');
}

function judgeItem(b: Buffer, firstId: number, count: number, out: AnswerScan): void {
  const k = idValue - firstId;
  // NaN (no id, or not a number) and fractions fall out here too: they cannot be one of ours.
  if (!(k >= 0 && k < count) || !Number.isInteger(k) || out.accepted[k] === 1) return;
  if (hasResult && (!hasError || errorNull)) {
    out.accepted[k] = 1;
    out.okCount++;
  } else if (out.reason === '') {
    out.reason = reasonOf(b);
  }
}

function notJson(out: AnswerScan): void {
  fail(out, 'answer is not JSON');
}

function fail(out: AnswerScan, why: string): void {
  out.bad = why;
  out.okCount = 0;
  out.accepted.fill(0);
  out.reason = '';
  out.batchRefused = false;
}

function atEnd(): boolean {
  ws();
  return I === E;
}

function ws(): void {
  while (I < E) {
    const c = B[I];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
    I++;
  }
}

/** An object whose `id`, `result` and `error` members are noted; I is at '{'. */
function callObject(depth: number): boolean {
  idValue = NaN;
  hasResult = false;
  hasError = false;
  errorNull = false;
  I++;
  ws();
  if (I < E && B[I] === 0x7d) {
    I++;
    return true;
  }
  for (;;) {
    if (I >= E || B[I] !== 0x22) return false;
    const ks = I;
    if (!string()) return false;
    const key = keyOf(ks, I);
    ws();
    if (I >= E || B[I] !== 0x3a) return false;
    I++;
    ws();
    const vs = I;
    const t = value(depth + 1);
    if (t === FAIL) return false;
    if (key === K_ID) {
      idValue = t === T_NUM ? (numPlain >= 0 ? numPlain : Number(B.toString('latin1', vs, I))) : NaN;
    } else if (key === K_RESULT) {
      hasResult = true;
    } else if (key === K_ERROR) {
      hasError = true;
      errorNull = t === T_NULL;
      errStart = vs;
      errEnd = I;
    }
    ws();
    if (I < E && B[I] === 0x2c) {
      I++;
      ws();
      continue;
    }
    if (I < E && B[I] === 0x7d) {
      I++;
      return true;
    }
    return false;
  }
}

/** Which member a key (the string token b[s..e), quotes included) names. */
function keyOf(s: number, e: number): number {
  if (strEscaped) {
    const k = JSON.parse(B.toString('utf8', s, e)) as string;
    return k === 'id' ? K_ID : k === 'result' ? K_RESULT : k === 'error' ? K_ERROR : K_OTHER;
  }
  const n = e - s - 2;
  if (n === 2 && B[s + 1] === 0x69 && B[s + 2] === 0x64) return K_ID;
  if (n === 6 && bytesAre(s + 1, 'result')) return K_RESULT;
  if (n === 5 && bytesAre(s + 1, 'error')) return K_ERROR;
  return K_OTHER;
}

function bytesAre(s: number, ascii: string): boolean {
  for (let k = 0; k < ascii.length; k++) if (B[s + k] !== ascii.charCodeAt(k)) return false;
  return true;
}

/** Any JSON value; returns its type, or FAIL. */
function value(depth: number): number {
  if (I >= E) return FAIL;
  const c = B[I];
  if (c === 0x22) return string() ? T_STR : FAIL;
  if (c === 0x7b || c === 0x5b) return container(depth);
  if (c === 0x2d || (c! >= 0x30 && c! <= 0x39)) return number() ? T_NUM : FAIL;
  if (c === 0x74) return literal(0x74, 0x72, 0x75, 0x65) ? T_LIT : FAIL; // true
  if (c === 0x6e) return literal(0x6e, 0x75, 0x6c, 0x6c) ? T_NULL : FAIL; // null
  if (c === 0x66) {
    // false
    if (E - I >= 5 && B[I + 1] === 0x61 && B[I + 2] === 0x6c && B[I + 3] === 0x73 && B[I + 4] === 0x65) {
      I += 5;
      return T_LIT;
    }
    return FAIL;
  }
  return FAIL;
}

function literal(a: number, b: number, c: number, d: number): boolean {
  if (E - I >= 4 && B[I] === a && B[I + 1] === b && B[I + 2] === c && B[I + 3] === d) {
    I += 4;
    return true;
  }
  return false;
}

function container(depth: number): number {
  if (depth >= MAX_DEPTH) return FAIL;
  const open = B[I];
  const isObj = open === 0x7b;
  const close = isObj ? 0x7d : 0x5d;
  I++;
  ws();
  if (I < E && B[I] === close) {
    I++;
    return isObj ? T_OBJ : T_ARR;
  }
  for (;;) {
    if (isObj) {
      if (I >= E || B[I] !== 0x22 || !string()) return FAIL;
      ws();
      if (I >= E || B[I] !== 0x3a) return FAIL;
      I++;
      ws();
    }
    if (value(depth + 1) === FAIL) return FAIL;
    ws();
    if (I >= E) return FAIL;
    const c = B[I];
    if (c === 0x2c) {
      I++;
      ws();
      continue;
    }
    if (c === close) {
      I++;
      return isObj ? T_OBJ : T_ARR;
    }
    return FAIL;
  }
}

/** A string token; I is at its opening quote and ends after the closing one. */
function string(): boolean {
  I++;
  strEscaped = false;
  while (I < E) {
    const c = B[I]!;
    if (c === 0x22) {
      I++;
      return true;
    }
    if (c === 0x5c) {
      strEscaped = true;
      if (I + 1 >= E) return false;
      const d = B[I + 1];
      if (d === 0x75 /* u */) {
        if (I + 6 > E || !hex(B[I + 2]!) || !hex(B[I + 3]!) || !hex(B[I + 4]!) || !hex(B[I + 5]!)) return false;
        I += 6;
      } else if (d === 0x22 || d === 0x5c || d === 0x2f || d === 0x62 || d === 0x66 || d === 0x6e || d === 0x72 || d === 0x74) {
        I += 2;
      } else return false;
      continue;
    }
    if (c < 0x20) return false;
    I++;
  }
  return false;
}

function hex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

/** A number token (RFC 8259 section 6); sets numPlain. */
function number(): boolean {
  const s = I;
  let plain = true;
  if (B[I] === 0x2d) {
    plain = false;
    I++;
  }
  if (I >= E) return false;
  if (B[I] === 0x30) {
    I++;
  } else if (B[I]! >= 0x31 && B[I]! <= 0x39) {
    while (I < E && B[I]! >= 0x30 && B[I]! <= 0x39) I++;
  } else return false;
  if (I < E && B[I] === 0x2e) {
    plain = false;
    I++;
    if (I >= E || B[I]! < 0x30 || B[I]! > 0x39) return false;
    while (I < E && B[I]! >= 0x30 && B[I]! <= 0x39) I++;
  }
  if (I < E && (B[I] === 0x65 || B[I] === 0x45)) {
    plain = false;
    I++;
    if (I < E && (B[I] === 0x2b || B[I] === 0x2d)) I++;
    if (I >= E || B[I]! < 0x30 || B[I]! > 0x39) return false;
    while (I < E && B[I]! >= 0x30 && B[I]! <= 0x39) I++;
  }
  if (plain && I - s <= 15) {
    let v = 0;
    for (let k = s; k < I; k++) v = v * 10 + (B[k]! - 0x30);
    numPlain = v;
  } else numPlain = -1;
  return true;
}

// Upstream messages sometimes echo a hash, a signature or worse the
// transaction; long hex/base64/base58 runs are cut to a 10-character prefix.
const LONG_RUN = /[0-9A-Za-z+/=_-]{24,}/g;

/** The reason of the error member last read, for logs. Off the happy path: this one parses. */
function reasonOf(b: Buffer): string {
  if (!hasError || errorNull) return 'rpc error';
  let e: unknown;
  try {
    e = JSON.parse(b.toString('utf8', errStart, errEnd));
  } catch {
    return 'rpc error';
  }
  if (e === null || typeof e !== 'object') return 'rpc error';
  const code = (e as { code?: unknown }).code;
  const message = (e as { message?: unknown }).message;
  const text = typeof message === 'string' ? message.slice(0, 4 * MAX_REASON_CHARS).replace(LONG_RUN, (m) => m.slice(0, 10) + '…') : '';
  return ('rpc ' + (typeof code === 'number' ? code : '?') + (text ? ': ' + text : '')).slice(0, MAX_REASON_CHARS);
}
