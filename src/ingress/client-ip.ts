/**
 * The client's IP address, the key of its per-IP bucket and connection cap:
 * the socket peer, or behind `hops` trusted proxies (`http.trust_proxy`,
 * `http.proxy_hops`) the X-Forwarded-For entry the outermost of them
 * appended. Each proxy appends the address it saw, so what a client writes
 * into the header stays to the left of that entry and never counts. Several
 * X-Forwarded-For lines are one list in their order (RFC 9110 section 5.3):
 * a proxy that adds its own line instead of appending to the client's is
 * read the same way. Entries may carry a port (`ip:port`, `[v6]:port`); an
 * entry that is not an IP address falls back to the peer
 * (docs/protocol.md#rate-limits).
 */
import { isIP } from 'node:net';
import type { HttpRequest, HttpResponse } from './uws.js';

export function clientIp(res: HttpResponse, req: HttpRequest, hops: number): string {
  if (hops > 0) {
    const xff = forwardedFor(req);
    if (xff) {
      const hop = forwardedHop(xff, hops);
      if (hop !== null) return hop;
    }
  }
  // From the binary address: one IPv4 client is one key whether the listener is v4 or dual-stack v6,
  // where uWS's text form of a mapped address is the full ffff-hex spelling.
  const b = new Uint8Array(res.getRemoteAddress());
  if (b.length === 4) return dotted(b, 0);
  if (b.length === 16 && isV4Mapped(b)) return dotted(b, 12);
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/** Every X-Forwarded-For line, in order, as one comma-separated list ('' when there is none). */
let lines = '';
const onHeader = (key: string, value: string): void => {
  if (key !== 'x-forwarded-for' || value.trim() === '') return;
  lines = lines === '' ? value : lines + ',' + value;
};

function forwardedFor(req: HttpRequest): string {
  // Both acceptors' getHeader answer with the first line only: the proxy's own line would be lost.
  lines = '';
  req.forEach(onHeader);
  const all = lines;
  lines = '';
  return all;
}

/** The `hops`-th entry from the right (the leftmost when there are fewer), if it is an IP address. */
function forwardedHop(xff: string, hops: number): string | null {
  let end = xff.length;
  let start = xff.lastIndexOf(',', end - 1) + 1;
  for (let i = 1; i < hops && start > 0; i++) {
    end = start - 1;
    start = xff.lastIndexOf(',', end - 1) + 1;
  }
  return entryAddress(xff.slice(start, end).trim());
}

/**
 * The address of one entry: `a.b.c.d`, `a.b.c.d:port`, an IPv6 address, or
 * `[v6]` / `[v6]:port`; null for anything else.
 */
export function entryAddress(entry: string): string | null {
  // The longest entry, a bracketed IPv6 text with a port, is 53 characters: nothing longer is looked at.
  if (entry.length === 0 || entry.length > 53) return null;
  let ip = entry;
  if (entry.charCodeAt(0) === 0x5b /* [ */) {
    const close = entry.indexOf(']');
    if (close < 0) return null;
    const rest = entry.slice(close + 1);
    if (rest !== '' && !isPort(rest, 1)) return null;
    ip = entry.slice(1, close);
    return isIP(ip) === 6 ? ip : null;
  }
  const colon = entry.indexOf(':');
  // One colon: IPv4 with a port (IPv6 text has at least two).
  if (colon >= 0 && entry.indexOf(':', colon + 1) < 0) {
    if (!isPort(entry, colon + 1)) return null;
    ip = entry.slice(0, colon);
    return isIP(ip) === 4 ? ip : null;
  }
  return isIP(ip) !== 0 ? ip : null;
}

/** `:digits` from `from` (just past the colon) to the end, 0-65535. */
function isPort(s: string, from: number): boolean {
  if (from === 1 && s.charCodeAt(0) !== 0x3a /* : */) return false;
  const n = s.length - from;
  if (n < 1 || n > 5) return false;
  let v = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return false;
    v = v * 10 + c;
  }
  return v <= 65535;
}

/**
 * Dotted IPv4 text by address, so a client's requests reuse one string
 * (scripts/heap-sample.mjs: 164 B of a /v2 transaction's ~4.5 KB). Cleared
 * when full, so it stays bounded (~5 MiB) under a flood of new addresses.
 */
const V4_NAMES_MAX = 65_536;
const v4Names = new Map<number, string>();

function dotted(b: Uint8Array, at: number): string {
  const key = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  let name = v4Names.get(key);
  if (name === undefined) {
    if (v4Names.size >= V4_NAMES_MAX) v4Names.clear();
    name = b[at] + '.' + b[at + 1] + '.' + b[at + 2] + '.' + b[at + 3];
    v4Names.set(key, name);
  }
  return name;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}
