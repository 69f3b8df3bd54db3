/**
 * The client's IP address, the key of its per-IP bucket and connection cap:
 * the socket peer, or behind `hops` trusted proxies (`http.trust_proxy`,
 * `http.proxy_hops`) the X-Forwarded-For entry the outermost of them
 * appended. Each proxy appends the address it saw, so what a client writes
 * into the header stays to the left of that entry and never counts; an entry
 * that is not an IP address falls back to the peer.
 */
import { isIP } from 'node:net';
import type { HttpRequest, HttpResponse } from './uws.js';

export function clientIp(res: HttpResponse, req: HttpRequest, hops: number): string {
  if (hops > 0) {
    const xff = req.getHeader('x-forwarded-for');
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

/** The `hops`-th entry from the right (the leftmost when there are fewer), if it is an IP address. */
function forwardedHop(xff: string, hops: number): string | null {
  let end = xff.length;
  let start = xff.lastIndexOf(',', end - 1) + 1;
  for (let i = 1; i < hops && start > 0; i++) {
    end = start - 1;
    start = xff.lastIndexOf(',', end - 1) + 1;
  }
  const hop = xff.slice(start, end).trim();
  // The longest IPv6 text is 45 characters: nothing longer is looked at.
  return hop.length <= 45 && isIP(hop) !== 0 ? hop : null;
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
