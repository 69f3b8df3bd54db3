/**
 * The answer head (src/forward/http1-head.ts), pure: the status and framing
 * headers are read exactly, and every lenient form that has been a
 * smuggling vector is refused with its stable code.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError, newHead, parseHead } from '../../src/forward/http1-head.js';

function parse(head: string) {
  const b = Buffer.from(head, 'latin1');
  const h = newHead();
  const err = parseHead(b, 0, b.length, h);
  return err === '' ? h : err;
}

test('status, Content-Length, Connection tokens and the Keep-Alive hint are read', () => {
  const h = parse('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 42\r\nConnection: keep-alive, Upgrade\r\nKeep-Alive: timeout=5, max=100\r\n\r\n');
  assert.deepEqual(h, { status: 200, http10: false, contentLength: 42, chunked: false, connClose: false, connKeepAlive: true, keepAliveHintMs: 5000 });
  const c = parse('HTTP/1.0 503 Service Unavailable\r\nconnection: CLOSE\r\ntransfer-encoding: chunked\r\n\r\n');
  assert.deepEqual(c, { status: 503, http10: true, contentLength: -1, chunked: true, connClose: true, connKeepAlive: false, keepAliveHintMs: -1 });
});

test('a reused head object is fully rewritten by the next parse', () => {
  const b1 = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nKeep-Alive: timeout=3\r\n\r\n', 'latin1');
  const b2 = Buffer.from('HTTP/1.1 204 No Content\r\n\r\n', 'latin1');
  const h = newHead();
  assert.equal(parseHead(b1, 0, b1.length, h), '');
  assert.equal(parseHead(b2, 0, b2.length, h), '');
  assert.deepEqual(h, { status: 204, http10: false, contentLength: -1, chunked: false, connClose: false, connKeepAlive: false, keepAliveHintMs: -1 });
});

test('Content-Length: digits only, a list only of equal values', () => {
  assert.equal((parse('HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n') as { contentLength: number }).contentLength, 7);
  for (const v of ['7, 8', '+7', '0x10', '', '7,', '1234567890123456']) {
    assert.equal(parse(`HTTP/1.1 200 OK\r\nContent-Length: ${v}\r\n\r\n`), HttpError.CONTENT_LENGTH, v);
  }
  assert.equal(parse('HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n'), HttpError.CONTENT_LENGTH);
});

test('Transfer-Encoding exactly chunked, once', () => {
  assert.equal(parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'), HttpError.TRANSFER_ENCODING);
  assert.equal(parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n'), HttpError.TRANSFER_ENCODING);
});

test('bad status lines and header lines are refused', () => {
  for (const s of ['HTTP/2.0 200 OK', 'HTTP/1.1 20 OK', 'HTTP/1.1 099 Low', 'HTTP/1.1 200 O\x01K', 'HTTX/1.1 200 OK']) {
    assert.equal(parse(s + '\r\n\r\n'), HttpError.STATUS_LINE, JSON.stringify(s));
  }
  assert.equal(parse('HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n'), HttpError.HEADER);
  assert.equal(parse('HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n'), HttpError.HEADER, 'no obs-fold');
  assert.equal(parse('HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n'), HttpError.HEADER);
  assert.equal(parse('HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n'), HttpError.HEADER, 'a bare CR');
});
