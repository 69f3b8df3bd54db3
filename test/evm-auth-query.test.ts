/**
 * SPEC 5's query rules for the plain-text door, checked on the parser
 * directly: the common `auth=<uuid>` takes a fast path that must agree with
 * the full decoding for every input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { parseAuthQuery } from '../src/server/doors/evm.js';
import { RelayError } from '../src/errors.js';

test('auth=<value> reads back the value, whether sent plain or percent-encoded', () => {
  const uuid = randomUUID();
  assert.equal(parseAuthQuery(`auth=${uuid}`), uuid);
  assert.equal(parseAuthQuery(`auth=${uuid.toUpperCase()}`), uuid.toUpperCase());
  assert.equal(parseAuthQuery(''), null);
  assert.equal(parseAuthQuery('auth='), '');
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (v) => {
      assert.equal(parseAuthQuery('auth=' + encodeURIComponent(v)), v);
      // '+' is a space in a query, the fast path must not keep it literally.
      assert.equal(parseAuthQuery('auth=' + encodeURIComponent(v).replace(/%20/g, '+')), v);
    }),
    { numRuns: 2000 },
  );
});

test('anything but exactly one auth parameter, or broken percent-encoding, is refused', () => {
  for (const q of ['auth=a&auth=a', 'auth=a&x=1', 'x=1', 'auth=%E0%A4%A', 'auth=%', 'Auth=a', 'auth=a&']) {
    const r = parseAuthQuery(q);
    assert.ok(r instanceof RelayError, q);
    assert.equal(r.code, 'TXR_INVALID_REQUEST', q);
  }
  // A bare `auth` key is the parameter with an empty value (then 401: no credential).
  assert.equal(parseAuthQuery('auth'), '');
});
