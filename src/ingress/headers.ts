/**
 * Protocol text every answer repeats, encoded once: uWS.js copies a string
 * argument through V8's Utf8Value (a length pass, an allocation, a copy) on
 * every call, but reads bytes in place.
 */
import type { RelayError } from '../errors.js';

const REASONS: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
  507: '507 Insufficient Storage',
  // Solana bundle errors use these non-standard statuses as their codes (docs/protocol.md#solana-bundles).
  605: '605 Batch Decode Error',
  606: '606 Tip Instruction Not Found',
  607: '607 Tip Too Low',
};

export function statusLine(code: number): string {
  return REASONS[code] ?? `${code} Status`;
}

/** Should a caller ever pass varying text. */
const MAX_ENCODED = 256;
const encoded = new Map<string, Uint8Array>();

/** Latin1, cached: only constants and the doors' fixed lists come through here. */
export function bytesOf(text: string): Uint8Array {
  let b = encoded.get(text);
  if (b === undefined) {
    b = Buffer.from(text, 'latin1');
    if (encoded.size < MAX_ENCODED) encoded.set(text, b);
  }
  return b;
}

export type Headers = readonly (readonly [string, string])[];

const ENCODED = Symbol('encoded');
type EncodedHeaders = Headers & { [ENCODED]?: readonly Uint8Array[] };

/** A fixed list's names and values as bytes, alternating; undefined for a list made per answer. */
export function encodedOf(h: Headers): readonly Uint8Array[] | undefined {
  return (h as EncodedHeaders)[ENCODED];
}

/** A list answers reuse as is, values encoded once too, so writing it hands uWS bytes only. */
export function fixedHeaders(list: readonly (readonly [string, string])[]): Headers {
  const h = list as EncodedHeaders;
  const enc: Uint8Array[] = [];
  for (const [k, v] of list) enc.push(bytesOf(k), Buffer.from(v, 'latin1'));
  h[ENCODED] = enc;
  return Object.freeze(h);
}

/**
 * `a` then `b`. Answers of a run ask for the same pair: the last is kept and
 * encoded when asked for again (a list used once is not worth encoding).
 */
export function joinHeaders(a: Headers, b: Headers): Headers {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  if (a === joined.a && b === joined.b) {
    if (!joined.fixed) {
      joined.both = fixedHeaders(joined.both);
      joined.fixed = true;
    }
    return joined.both;
  }
  joined.a = a;
  joined.b = b;
  joined.fixed = false;
  return (joined.both = [...a, ...b]);
}
const joined: { a: Headers | null; b: Headers | null; both: Headers; fixed: boolean } = { a: null, b: null, both: [], fixed: false };

const NONE: Headers = fixedHeaders([]);

/** Retry headers for a 429 (docs/protocol.md#rate-limits): whole seconds rounded up, and milliseconds. */
export function retryHeaders(err: RelayError): Headers {
  return err.spec.http === 429 ? retryAfterHeaders(err.retryAfterMs) : NONE;
}

export function retryAfterHeaders(ms: number): Headers {
  // A request that can never fit (n > burst, or a 0 TPS account) gets a minute: retrying sooner cannot succeed.
  const wait = Number.isFinite(ms) ? Math.max(1, Math.ceil(ms)) : 60_000;
  // As joinHeaders: a flood over one limit repeats the same wait.
  if (wait === lastWait) {
    if (!lastRetryFixed) {
      lastRetry = fixedHeaders(lastRetry);
      lastRetryFixed = true;
    }
    return lastRetry;
  }
  lastWait = wait;
  lastRetryFixed = false;
  lastRetry = [
    ['retry-after', String(Math.ceil(wait / 1000))],
    ['x-ratelimit-retry-after-ms', String(wait)],
  ];
  return lastRetry;
}
let lastWait = 60_000;
let lastRetryFixed = true;
let lastRetry: Headers = fixedHeaders([
  ['retry-after', '60'],
  ['x-ratelimit-retry-after-ms', '60000'],
]);
