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
import { clientIp } from '../../src/ingress/client-ip.js';
import type { HttpRequest, HttpResponse } from '../../src/ingress/uws.js';

const peer = (bytes: number[], text = ''): HttpResponse =>
  ({
    getRemoteAddress: () => Uint8Array.from(bytes).buffer,
    getRemoteAddressAsText: () => new TextEncoder().encode(text).buffer,
  }) as unknown as HttpResponse;
const req = (xff = ''): HttpRequest => ({ getHeader: (k: string) => (k === 'x-forwarded-for' ? xff : '') }) as unknown as HttpRequest;
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
  assert.equal(clientIp(p, req('[2001:db8::1]:443'), 1), '127.0.0.1');
});
