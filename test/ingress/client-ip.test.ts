/**
 * clientIp (src/ingress/http.ts): one key per IPv4 client whether the listener
 * is IPv4 or dual-stack, the same text for every request of a client (it is
 * cached by address), and X-Forwarded-For only when trust_proxy is on, the
 * entry the trusted proxies appended, never one the client wrote. The
 * address bytes come from a stand-in for uWS's response object: the function
 * only formats what `getRemoteAddress` returns.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientIp, entryAddress } from '../../src/ingress/client-ip.js';
import type { HttpRequest, HttpResponse } from '../../src/ingress/uws.js';

const peer = (bytes: number[], text = ''): HttpResponse =>
  ({
    getRemoteAddress: () => Uint8Array.from(bytes).buffer,
    getRemoteAddressAsText: () => new TextEncoder().encode(text).buffer,
  }) as unknown as HttpResponse;
/** A request with these X-Forwarded-For lines (a string: one line), among other headers; getHeader answers with the first, as both acceptors do. */
const req = (xff: string | string[] = ''): HttpRequest => {
  const lines = typeof xff === 'string' ? (xff === '' ? [] : [xff]) : xff;
  const raw: [string, string][] = [['host', 'x'], ...lines.map((l): [string, string] => ['x-forwarded-for', l]), ['content-type', 'application/json']];
  return {
    getHeader: (k: string) => raw.find(([n]) => n === k)?.[1] ?? '',
    forEach: (cb: (k: string, v: string) => void) => raw.forEach(([k, v]) => cb(k, v)),
  } as unknown as HttpRequest;
};
const mapped = (a: number, b: number, c: number, d: number) => [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d];

test('an IPv4 client is one key on an IPv4 and on a dual-stack listener', () => {
  assert.equal(clientIp(peer([127, 0, 0, 2]), req(), 0), '127.0.0.2');
  assert.equal(clientIp(peer(mapped(127, 0, 0, 2)), req(), 0), '127.0.0.2');
  assert.equal(clientIp(peer([10, 200, 3, 255]), req(), 0), '10.200.3.255');
});

test('repeated requests of one client get the same text; different clients different texts', () => {
  const a1 = clientIp(peer([192, 168, 1, 7]), req(), 0);
  const a2 = clientIp(peer(mapped(192, 168, 1, 7)), req(), 0);
  const b = clientIp(peer([192, 168, 1, 8]), req(), 0);
  assert.equal(a1, '192.168.1.7');
  assert.equal(a2, a1);
  assert.equal(b, '192.168.1.8');
  // Past the cache bound the cache starts over; answers stay right.
  for (let i = 0; i < 70_000; i++) clientIp(peer([11, (i >> 16) & 255, (i >> 8) & 255, i & 255]), req(), 0);
  assert.equal(clientIp(peer([192, 168, 1, 7]), req(), 0), '192.168.1.7');
});

test('IPv6 clients use the text form; X-Forwarded-For counts only with trust_proxy', () => {
  const v6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
  assert.equal(clientIp(peer(v6, '2001:db8::1'), req(), 0), '2001:db8::1');
  assert.equal(clientIp(peer([127, 0, 0, 1]), req('203.0.113.9, 10.0.0.1'), 0), '127.0.0.1');
  assert.equal(clientIp(peer([127, 0, 0, 1]), req('203.0.113.9'), 1), '203.0.113.9');
});

test('behind trusted proxies the address is the entry the outermost trusted proxy appended: a forged first hop changes nothing', () => {
  const p = peer([127, 0, 0, 1]);
  // One proxy: it appends the address it saw; whatever the client sent is to its left.
  for (let i = 0; i < 50; i++) assert.equal(clientIp(p, req(`198.51.100.${i}, 203.0.113.9`), 1), '203.0.113.9');
  // Two proxies: the outer one appended the client, the inner one the outer proxy.
  assert.equal(clientIp(p, req('6.6.6.6, 203.0.113.9, 10.0.0.5'), 2), '203.0.113.9');
  // Fewer entries than trusted proxies: the leftmost is as far as the chain goes.
  assert.equal(clientIp(p, req('203.0.113.9'), 2), '203.0.113.9');
  assert.equal(clientIp(p, req('2001:db8::7'), 1), '2001:db8::7');
});

test('an X-Forwarded-For entry that is not an IP address is never a client address: the peer is', () => {
  const p = peer([127, 0, 0, 1]);
  assert.equal(clientIp(p, req('x'.repeat(3028)), 1), '127.0.0.1');
  assert.equal(clientIp(p, req('203.0.113.9, not-an-ip'), 1), '127.0.0.1');
  assert.equal(clientIp(p, req('203.0.113.9, '), 1), '127.0.0.1');
  assert.equal(clientIp(p, req('[2001:db8::1'), 1), '127.0.0.1');
  assert.equal(clientIp(p, req('203.0.113.9:99999'), 1), '127.0.0.1');
});

test('several X-Forwarded-For lines are one list in their order: a proxy that adds its own line is read like one that appends', () => {
  const p = peer([127, 0, 0, 1]);
  // HAProxy's option forwardfor: the client's line first, the proxy's own line last.
  for (let i = 0; i < 50; i++) assert.equal(clientIp(p, req([`198.51.100.${i}`, '203.0.113.9']), 1), '203.0.113.9');
  assert.equal(clientIp(p, req(['6.6.6.6, 7.7.7.7', '203.0.113.9']), 1), '203.0.113.9');
  // Two proxies each adding a line: the outer one's line holds the client.
  assert.equal(clientIp(p, req(['6.6.6.6', '203.0.113.9', '10.0.0.5']), 2), '203.0.113.9');
  assert.equal(clientIp(p, req(['6.6.6.6, 203.0.113.9', '10.0.0.5']), 2), '203.0.113.9');
  // An empty line adds no entry.
  assert.equal(clientIp(p, req(['203.0.113.9', '']), 1), '203.0.113.9');
  // The relay's own proxy's line is what counts even when it holds a port.
  assert.equal(clientIp(p, req(['6.6.6.6', '203.0.113.9:51234']), 1), '203.0.113.9');
});

test('entries with a port are parsed, not dropped: ip:port, [v6]:port, [v6], bare IPv6', () => {
  const p = peer([127, 0, 0, 1]);
  assert.equal(clientIp(p, req('[2001:db8::1]:443'), 1), '2001:db8::1');
  assert.equal(clientIp(p, req('6.6.6.6, 203.0.113.9:8080'), 1), '203.0.113.9');
  assert.equal(entryAddress('203.0.113.9'), '203.0.113.9');
  assert.equal(entryAddress('203.0.113.9:0'), '203.0.113.9');
  assert.equal(entryAddress('203.0.113.9:65535'), '203.0.113.9');
  assert.equal(entryAddress('[2001:db8::1]'), '2001:db8::1');
  assert.equal(entryAddress('[::ffff:203.0.113.9]:80'), '::ffff:203.0.113.9');
  assert.equal(entryAddress('2001:db8::1'), '2001:db8::1');
  assert.equal(entryAddress('::1'), '::1');
  for (const bad of ['', 'unknown', '_hidden', '203.0.113.9:', '203.0.113.9:65536', '203.0.113.9:8a', '[203.0.113.9]:80', '[2001:db8::1]443', '[2001:db8::1]:', '2001:db8::1:80x', '[]:80', '1.2.3:80', 'x'.repeat(54)]) {
    assert.equal(entryAddress(bad), null, bad);
  }
});
