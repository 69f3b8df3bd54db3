/**
 * The client's IP address, the key of its per-IP bucket and connection cap:
 * the socket peer, or with `http.trust_proxy` the first X-Forwarded-For hop.
 */
import type { HttpRequest, HttpResponse } from './uws.js';

export function clientIp(res: HttpResponse, req: HttpRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.getHeader('x-forwarded-for');
    if (xff) {
      const first = xff.split(',')[0]!.trim();
      if (first) return first;
    }
  }
  // From the binary address: one IPv4 client is one key whether the listener is v4 or dual-stack v6,
  // where uWS's text form of a mapped address is the full ffff-hex spelling.
  const b = new Uint8Array(res.getRemoteAddress());
  if (b.length === 4) return dotted(b, 0);
  if (b.length === 16 && isV4Mapped(b)) return dotted(b, 12);
  return Buffer.from(res.getRemoteAddressAsText()).toString();
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
