/**
 * The usual JSON-RPC call read straight from its bytes, without JSON.parse:
 *
 *   {"jsonrpc":"2.0","id":7,"method":"eth_sendRawTransaction","params":["0x02f8…"]}
 *
 * Only a narrow form: members `jsonrpc` ("2.0"), `method`, `params` and
 * optional `id`, each once, any order; `params` an array of scalars and flat
 * objects of scalars; strings of printable ASCII without escapes; integers of
 * at most 15 digits; literals. Anything else answers null and is parsed the
 * general way, so a call read here is exactly what JSON.parse would make of
 * it (test/ingress/doors/rpc-scan.test.ts compares them). Saves ~1 KB of heap
 * per EVM transaction (scripts/heap-sample.mjs).
 */
import type { RpcCall } from './jsonrpc.js';
import { E, RelayError } from '../../errors.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Elements of `params` read here; more declines. A send's params hold at most
 * an EVM batch's transactions, and each element read costs a native string
 * call where JSON.parse's costs far less: 65,000 numbers took 12 ms here and
 * 2.6 ms in JSON.parse (docs/reliability.md#deeply-nested-json-and-one-account-flooding-refusals).
 */
const MAX_PARAMS = 256;

/** 15 digits always make an exact double whose JSON text is the same digits. */
const MAX_DIGITS = 15;

/** Module state: the scan is synchronous and allocates no cursor. */
let buf: Uint8Array = new Uint8Array(0);
let pos = 0;
let text: Buffer = Buffer.alloc(0);

/** Thrown (as this one value) to abandon the fast path; never escapes `scanCall`. */
const DECLINE = Symbol('decline');

function ws(): void {
  const b = buf;
  let i = pos;
  while (i < b.length) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  pos = i;
}

function expect(c: number): void {
  ws();
  if (buf[pos] !== c) throw DECLINE;
  pos++;
}

/** A string of printable ASCII without escapes; `pos` at its opening quote. Returns [start, end) of its contents. */
function stringRange(): number {
  const b = buf;
  let i = pos + 1;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (c === QUOTE) break;
    if (c < 0x20 || c > 0x7e || c === BACKSLASH) throw DECLINE;
  }
  if (i >= b.length) throw DECLINE;
  const start = pos + 1;
  pos = i + 1;
  return start;
}

function stringValue(): string {
  const start = stringRange();
  return text.toString('latin1', start, pos - 1);
}

/** An integer of at most MAX_DIGITS digits, no leading zero, not -0; `pos` at its first character. Returns its end. */
function integerEnd(): number {
  const b = buf;
  let i = pos;
  const negative = b[i] === MINUS;
  if (negative) i++;
  const first = i;
  while (i < b.length && b[i]! >= ZERO && b[i]! <= NINE) i++;
  const digits = i - first;
  if (digits === 0 || digits > MAX_DIGITS) throw DECLINE;
  if (b[first] === ZERO && (digits > 1 || negative)) throw DECLINE;
  // A fraction or an exponent is a number this scan does not read.
  const next = b[i];
  if (next === 0x2e || next === 0x65 || next === 0x45) throw DECLINE;
  return i;
}

function literal(): boolean | null {
  const b = buf;
  const i = pos;
  if (b[i] === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
    pos = i + 4;
    return true;
  }
  if (b[i] === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
    pos = i + 5;
    return false;
  }
  if (b[i] === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) {
    pos = i + 4;
    return null;
  }
  throw DECLINE;
}

function scalar(): string | number | boolean | null {
  ws();
  const c = buf[pos];
  if (c === QUOTE) return stringValue();
  if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) {
    const start = pos;
    pos = integerEnd();
    return Number(text.toString('latin1', start, pos));
  }
  return literal();
}

/** At a list's first element: true (and past it) when `close` ends the list right away. */
function emptyList(close: number): boolean {
  ws();
  if (buf[pos] !== close) return false;
  pos++;
  return true;
}

/** After a list's element: true (and past it) at `close`, false past a comma; anything else declines. */
function listEnds(close: number): boolean {
  ws();
  const c = buf[pos++];
  if (c === close) return true;
  if (c !== COMMA) throw DECLINE;
  return false;
}

/** A flat object of scalars; `pos` after its `{`. Keys are plain strings, each once. */
function flatObject(): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (emptyList(RBRACE)) return o;
  do {
    ws();
    if (buf[pos] !== QUOTE) throw DECLINE;
    const key = stringValue();
    // A repeated key (JSON.parse keeps the last) or one that is not an own data property of a plain object.
    if (key === '__proto__' || Object.prototype.hasOwnProperty.call(o, key)) throw DECLINE;
    expect(COLON);
    o[key] = scalar();
  } while (!listEnds(RBRACE));
  return o;
}

/** `params`: an array of scalars and flat objects; `pos` at its `[`. */
function paramsArray(): unknown[] {
  expect(LBRACKET);
  const out: unknown[] = [];
  if (emptyList(RBRACKET)) return out;
  do {
    if (out.length === MAX_PARAMS) throw DECLINE;
    ws();
    if (buf[pos] === LBRACE) {
      pos++;
      out.push(flatObject());
    } else {
      out.push(scalar());
    }
  } while (!listEnds(RBRACKET));
  return out;
}

const MEMBERS = ['', 'jsonrpc', 'method', 'params', 'id'];

/** Which member a key names: 1 jsonrpc, 2 method, 3 params, 4 id; anything else declines. */
function member(start: number, end: number): number {
  for (let m = 1; m < MEMBERS.length; m++) {
    const name = MEMBERS[m]!;
    if (end - start !== name.length) continue;
    let i = 0;
    while (i < name.length && buf[start + i] === name.charCodeAt(i)) i++;
    if (i === name.length) return m;
  }
  throw DECLINE;
}

/** The call in `body` when it has the form above, else null. */
export function scanCall(body: Uint8Array): RpcCall | null {
  buf = body;
  pos = 0;
  text = Buffer.from(body.buffer, body.byteOffset, body.length);
  try {
    return scan();
  } catch (e) {
    if (e === DECLINE) return null;
    throw e;
  } finally {
    buf = EMPTY;
    text = EMPTY_TEXT;
  }
}
const EMPTY = new Uint8Array(0);
const EMPTY_TEXT = Buffer.alloc(0);

function scan(): RpcCall {
  expect(LBRACE);
  let seen = 0;
  let method = '';
  let params: unknown = undefined;
  let id = 'null';
  do {
    ws();
    if (buf[pos] !== QUOTE) throw DECLINE;
    const start = stringRange();
    const which = member(start, pos - 1);
    const bit = 1 << which;
    if (seen & bit) throw DECLINE;
    seen |= bit;
    expect(COLON);
    ws();
    switch (which) {
      case 1: {
        if (buf[pos] !== QUOTE) throw DECLINE;
        const s = stringRange();
        if (pos - 1 - s !== 3 || buf[s] !== 0x32 || buf[s + 1] !== 0x2e || buf[s + 2] !== 0x30) throw DECLINE;
        break;
      }
      case 2:
        if (buf[pos] !== QUOTE) throw DECLINE;
        method = stringValue();
        break;
      case 3:
        params = paramsArray();
        break;
      case 4: {
        // The id is echoed as JSON text: for the forms read here, its own bytes.
        const s = pos;
        const c = buf[pos];
        if (c === QUOTE) stringRange();
        else if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) pos = integerEnd();
        else if (literal() !== null) throw DECLINE;
        id = text.toString('latin1', s, pos);
        break;
      }
    }
  } while (!listEnds(RBRACE));
  // jsonrpc, method and params present (bits 1-3); id optional.
  if ((seen & 0b1110) !== 0b1110) throw DECLINE;
  ws();
  if (pos !== buf.length) throw DECLINE;
  return { method, params, id };
}

/** How deep a JSON body may nest its arrays and objects (docs/protocol.md#limits). */
export const MAX_JSON_DEPTH = 32;

/**
 * True when `body` nests arrays or objects more than `max` levels deep, found
 * by one pass over its bytes (strings skipped, escapes honoured) before any
 * JSON.parse: refusing a 65,000-deep body then costs what reading a flat one
 * of its size does (docs/reliability.md#deeply-nested-json-and-one-account-flooding-refusals).
 * Malformed text is not this scan's to judge: JSON.parse refuses it.
 */
export function tooDeep(body: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const c = body[i]!;
    if (c === QUOTE) {
      for (i++; i < n; i++) {
        const d = body[i]!;
        if (d === QUOTE) break;
        if (d === BACKSLASH) i++;
      }
    } else if (c === LBRACKET || c === LBRACE) {
      if (++depth > max) return true;
    } else if (c === RBRACKET || c === RBRACE) {
      depth--;
    }
  }
  return false;
}

/** The refusal of a body `tooDeep` found. */
export const TOO_DEEP_DETAIL = `JSON nested more than ${MAX_JSON_DEPTH} levels deep`;

/**
 * A request body's JSON value, or its refusal: too deep, found from its
 * bytes first (JSON.parse of a deep body costs far more per byte than of a
 * flat one), or not JSON.
 */
export function parseJsonBody(body: Uint8Array): unknown {
  if (tooDeep(body)) return new RelayError(E.JSON_TOO_DEEP, TOO_DEEP_DETAIL);
  try {
    return JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
  } catch {
    return new RelayError(E.PARSE, 'body is not valid JSON');
  }
}

/**
 * Elements of a top-level JSON array, counted from the bytes in one pass,
 * max + 1 once past `max`; 0 for anything else or malformed (JSON.parse
 * decides that).
 */
export function topLevelElements(b: Uint8Array, max: number): number {
  let i = 0;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  if (b[i] !== LBRACKET) return 0;
  let depth = 0;
  let n = 0;
  let seen = false;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (c === QUOTE) {
      for (i++; i < b.length && b[i] !== QUOTE; i++) if (b[i] === BACKSLASH) i++;
      if (depth === 1) seen = true;
    } else if (c === LBRACKET || c === LBRACE) {
      if (depth === 1) seen = true;
      depth++;
    } else if (c === RBRACKET || c === RBRACE) {
      if (--depth === 0) return seen ? n + 1 : 0;
    } else if (c === COMMA) {
      if (depth === 1 && ++n >= max) return max + 1;
    } else if (depth === 1 && c > 0x20) {
      seen = true;
    }
  }
  return 0;
}
