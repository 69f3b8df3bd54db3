/**
 * HTTP/1.1 answer framing (src/forward/http1.ts), pure: generated answers
 * split at arbitrary points must frame exactly as sent, and every malformed
 * or oversized answer is refused with its stable code, an oversized one as
 * soon as its size is known.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HttpError, MAX_HEAD_BYTES, Parse, ResponseParser } from '../../src/forward/http1.js';

const MAX_BODY = 1 << 20;
const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');

interface Framed {
  status: number;
  body: Buffer | null;
  keepAlive: boolean;
  hint: number;
  consumed: number;
}

/** Feeds `pieces` in order (each a separate read, like a socket's), calling finish() at EOF when asked. */
function feed(pieces: Buffer[], opts: { eof?: boolean; maxHead?: number; maxBody?: number } = {}): Framed | { error: string; at: number } {
  const p = new ResponseParser({ maxBodyBytes: opts.maxBody ?? MAX_BODY, maxHeadBytes: opts.maxHead });
  p.reset();
  for (let k = 0; k < pieces.length; k++) {
    // A fresh copy per read, then scribbled over afterwards: a view kept past its read would show it.
    const read = Buffer.from(pieces[k]!);
    const r = p.execute(read, 0, read.length);
    if (r === Parse.ERROR) return { error: p.error, at: k };
    if (r === Parse.DONE) {
      const body = Buffer.from(p.bodyBuffer().subarray(p.bodyStart(), p.bodyEnd()));
      return { status: p.status, body, keepAlive: p.keepAlive, hint: p.keepAliveHintMs, consumed: p.consumed };
    }
    read.fill(0x21);
  }
  if (opts.eof) {
    const r = p.finish();
    if (r === Parse.DONE) return { status: p.status, body: Buffer.from(p.bodyBuffer().subarray(p.bodyStart(), p.bodyEnd())), keepAlive: p.keepAlive, hint: -1, consumed: 0 };
    return { error: p.error, at: pieces.length };
  }
  return { error: 'MORE', at: pieces.length };
}

function splitAt(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of points) {
    out.push(buf.subarray(prev, c));
    prev = c;
  }
  out.push(buf.subarray(prev));
  return out.filter((b) => b.length > 0);
}

function framed(r: ReturnType<typeof feed>): Framed {
  if ('error' in r) assert.fail(`expected a framed answer, got ${r.error} at read ${r.at}`);
  return r;
}

// ---- generated answers ------------------------------------------------------------

const token = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/);
const fieldValue = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,30}[\x21-\x7e])?$/);
const framingNames = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
const extraHeaders = fc.array(fc.tuple(token, fieldValue), { maxLength: 6 }).map((hs) => hs.filter(([n]) => !framingNames.has(n.toLowerCase())));

const answerArb = fc.record({
  status: fc.oneof(fc.constant(200), fc.integer({ min: 200, max: 299 }).filter((s) => s !== 204), fc.integer({ min: 300, max: 599 }).filter((s) => s !== 304)),
  reason: fc.constantFrom('', ' OK', ' Whatever It Says'),
  body: fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
  framing: fc.constantFrom('length', 'chunked', 'eof'),
  chunkCuts: fc.array(fc.nat(), { maxLength: 6 }),
  ext: fc.constantFrom('', ';a=b', ' ; name="quoted ; value"', ';x'),
  trailers: fc.array(fc.tuple(token, fieldValue), { maxLength: 3 }),
  interim: fc.boolean(),
  headers: extraHeaders,
  mixedCase: fc.boolean(),
  close: fc.boolean(),
});

type Answer = typeof answerArb extends fc.Arbitrary<infer T> ? T : never;

function render(a: Answer): Buffer {
  const name = (n: string): string => (a.mixedCase ? n.toUpperCase() : n);
  let head = '';
  if (a.interim) head += 'HTTP/1.1 100 Continue\r\n\r\n';
  head += `HTTP/1.1 ${a.status}${a.reason}\r\n`;
  for (const [n, v] of a.headers) head += `${n}: ${v}\r\n`;
  if (a.close) head += `${name('Connection')}: close\r\n`;
  const parts: Buffer[] = [];
  if (a.framing === 'length') {
    head += `${name('Content-Length')}: ${a.body.length}\r\n\r\n`;
    parts.push(latin1(head), a.body);
  } else if (a.framing === 'chunked') {
    head += `${name('Transfer-Encoding')}: chunked\r\n\r\n`;
    parts.push(latin1(head));
    for (const piece of splitAt(a.body, a.chunkCuts)) parts.push(latin1(piece.length.toString(16) + a.ext + '\r\n'), piece, latin1('\r\n'));
    let tail = '0' + a.ext + '\r\n';
    for (const [n, v] of a.trailers) tail += `${n}: ${v}\r\n`;
    parts.push(latin1(tail + '\r\n'));
  } else {
    head += '\r\n';
    parts.push(latin1(head), a.body);
  }
  return Buffer.concat(parts);
}

test('a generated answer split into arbitrary reads frames to exactly the status and body sent', () => {
  fc.assert(
    fc.property(answerArb, fc.array(fc.nat(), { maxLength: 12 }), (a, cuts) => {
      const bytes = render(a);
      const r = framed(feed(splitAt(bytes, cuts), { eof: a.framing === 'eof' }));
      assert.equal(r.status, a.status);
      const ok = a.status >= 200 && a.status < 300;
      assert.deepEqual(r.body, ok ? a.body : Buffer.alloc(0), ok ? 'a 2xx body is kept' : 'a non-2xx body is read past, not kept');
      assert.equal(r.keepAlive, !a.close && a.framing !== 'eof');
    }),
    { numRuns: 400 },
  );
});

test('split at every single byte: one read per byte frames the same answer', () => {
  const bodies = [
    'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 28\r\n\r\n{"jsonrpc":"2.0","id":1,"r"}',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\nA ; q="x"\r\n0123456789\r\n0\r\nX-Trailer: yes\r\nY: z\r\n\r\n',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}',
  ].map(latin1);
  const want = ['{"jsonrpc":"2.0","id":1,"r"}', 'hello 0123456789', '{}'];
  bodies.forEach((bytes, k) => {
    const perByte = Array.from(bytes, (b) => Buffer.from([b]));
    assert.equal(framed(feed(perByte)).body!.toString('latin1'), want[k]);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.equal(framed(feed([bytes.subarray(0, cut), bytes.subarray(cut)])).body!.toString('latin1'), want[k], `cut at ${cut}`);
    }
  });
});

test('bytes after the answer are not part of it: consumed says where it ended', () => {
  const bytes = latin1('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n');
  const r = framed(feed([bytes]));
  assert.equal(r.consumed, bytes.indexOf('HTTP', 5));
});

test('keep-alive: HTTP/1.1 keeps the connection unless close; HTTP/1.0 only with keep-alive; the Keep-Alive timeout hint is read', () => {
  const ans = (s: string): Framed => framed(feed([latin1(s)]));
  assert.equal(ans('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').keepAlive, true);
  assert.equal(ans('HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n').keepAlive, false);
  assert.equal(ans('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n').keepAlive, false);
  assert.equal(ans('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n').keepAlive, true);
  assert.equal(ans('HTTP/1.1 200 OK\r\nKeep-Alive: max=100, timeout=5\r\nContent-Length: 0\r\n\r\n').hint, 5_000);
  assert.equal(ans('HTTP/1.1 204 No Content\r\n\r\n').status, 204);
  assert.equal(ans('HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok').body!.toString(), 'ok');
  // Both framings: read as chunked, and never reuse the connection.
  const both = ans('HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n');
  assert.equal(both.body!.toString(), 'ok');
  assert.equal(both.keepAlive, false);
});

test('malformed answers are refused with a stable code', () => {
  const cases: [string, string][] = [
    ['HTTP/2 200 OK\r\n\r\n', HttpError.STATUS_LINE],
    ['HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n', HttpError.STATUS_LINE],
    ['HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n', HttpError.STATUS_LINE],
    ['http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', HttpError.STATUS_LINE],
    ['HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n', HttpError.STATUS_LINE],
    ['HTTP/1.1 200 OK\r\nContent-Length: 0\nX: y\r\n\r\n', HttpError.HEADER],
    ['HTTP/1.1 200 OK\r\nX: y\r\n folded\r\nContent-Length: 0\r\n\r\n', HttpError.HEADER],
    ['HTTP/1.1 200 OK\r\nBad Name: y\r\nContent-Length: 0\r\n\r\n', HttpError.HEADER],
    ['HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n', HttpError.HEADER],
    ['HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n', HttpError.HEADER],
    ['HTTP/1.1 200 OK\r\nContent-Length: 1a\r\n\r\n', HttpError.CONTENT_LENGTH],
    ['HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', HttpError.CONTENT_LENGTH],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n', HttpError.CONTENT_LENGTH],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n', HttpError.CONTENT_LENGTH],
    ['HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n', HttpError.CONTENT_LENGTH],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', HttpError.TRANSFER_ENCODING],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n', HttpError.TRANSFER_ENCODING],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', HttpError.CHUNK],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n', HttpError.CHUNK],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n', HttpError.CHUNK],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a\x01\r\nok\r\n', HttpError.CHUNK],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n', HttpError.CHUNK],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000001\r\nx\r\n0\r\n\r\n', HttpError.CHUNK],
    ['HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n', HttpError.UPGRADE],
  ];
  for (const [text, code] of cases) {
    const r = feed([latin1(text)]);
    assert.ok('error' in r && r.error === code, `${JSON.stringify(text)}: expected ${code}, got ${JSON.stringify(r)}`);
  }
});

test('an oversized body is refused as soon as its length is read, before a byte of it; a growing one as soon as it passes the limit', () => {
  const head = latin1(`HTTP/1.1 200 OK\r\nContent-Length: ${MAX_BODY + 1}\r\n\r\n`);
  assert.deepEqual(feed([head]), { error: HttpError.BODY_TOO_LARGE, at: 0 });
  const chunkHead = latin1(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${(MAX_BODY + 1).toString(16)}\r\n`);
  assert.deepEqual(feed([chunkHead]), { error: HttpError.BODY_TOO_LARGE, at: 0 });
  // Chunks each under the limit, together over it.
  const piece = Buffer.concat([latin1(`${(64 * 1024).toString(16)}\r\n`), Buffer.alloc(64 * 1024, 0x61), latin1('\r\n')]);
  const reads = [latin1('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'), ...Array.from({ length: 17 }, () => piece)];
  assert.deepEqual(feed(reads), { error: HttpError.BODY_TOO_LARGE, at: 17 });
  // Read to close: refused once past the limit.
  const eof = [latin1('HTTP/1.1 200 OK\r\n\r\n'), ...Array.from({ length: 17 }, () => Buffer.alloc(64 * 1024, 0x61))];
  assert.deepEqual(feed(eof), { error: HttpError.BODY_TOO_LARGE, at: 17 });
});

test('an oversized head is refused once past the limit, without waiting for its end', () => {
  const start = latin1('HTTP/1.1 200 OK\r\n');
  const filler = latin1('X-Filler: ' + 'a'.repeat(1000) + '\r\n');
  const reads = [start, ...Array.from({ length: Math.ceil(MAX_HEAD_BYTES / filler.length) + 1 }, () => filler)];
  const r = feed(reads);
  assert.ok('error' in r && r.error === HttpError.HEAD_TOO_LARGE);
  assert.ok(r.at < reads.length, 'refused before the head ended (it never does here)');
  // A single read holding a too-large head is refused at once too.
  assert.equal((feed([Buffer.concat(reads)]) as { error: string }).error, HttpError.HEAD_TOO_LARGE);
  // Trailers count against the same limit.
  const tr = [latin1('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n'), ...Array.from({ length: 20 }, () => filler)];
  assert.equal((feed(tr) as { error: string }).error, HttpError.HEAD_TOO_LARGE);
});

test('a connection closed mid-answer is a cut answer; closed before any byte is not started; a body to the close ends there', () => {
  assert.deepEqual(feed([latin1('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345')], { eof: true }), { error: HttpError.CLOSED, at: 1 });
  assert.deepEqual(feed([latin1('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel')], { eof: true }), { error: HttpError.CLOSED, at: 1 });
  assert.deepEqual(feed([latin1('HTTP/1.1 200 OK\r\nContent-')], { eof: true }), { error: HttpError.CLOSED, at: 1 });
  const p = new ResponseParser({ maxBodyBytes: MAX_BODY });
  assert.equal(p.started, false);
  p.execute(latin1('H'), 0, 1);
  assert.equal(p.started, true);
  const r = framed(feed([latin1('HTTP/1.1 200 OK\r\n\r\n{"a":'), latin1('1}')], { eof: true }));
  assert.equal(r.body!.toString(), '{"a":1}');
  assert.equal(r.keepAlive, false);
});
