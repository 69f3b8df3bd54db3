/**
 * The plain-text door's query rules (docs/protocol.md#authentication), checked on the parser
 * directly: the common `auth=<uuid>` takes a fast path that must agree with
 * the full decoding for every input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { bearer, parseAuthQuery } from '../../../src/ingress/doors/evm.js';
import { RelayError } from '../../../src/errors.js';

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

test('the Bearer credential: the fast path reads what the expression reads, on any header value', () => {
  const byExpression = (h: string | null) => {
    if (h === null) return null;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    return m ? m[1]! : '';
  };
  const uuid = randomUUID();
  for (const h of [`Bearer ${uuid}`, `bearer ${uuid}`, `BEARER ${uuid}`, `Bearer  ${uuid}`, `Bearer ${uuid} `, `Bearer\t${uuid}`, `Bearer ${uuid}\u00a0`, `Bearerx ${uuid}`, 'Bearer ', 'Bearer', `Basic ${uuid}`, `Bearer a b`, `Bearer ${uuid}é`, `Bearer ${uuid}\u2028`, null]) {
    assert.equal(bearer(h), byExpression(h), String(h));
  }
  assert.equal(bearer(`Bearer ${uuid}`), uuid);
  const prefix = fc.constantFrom('Bearer ', 'bearer ', 'BeArEr ', 'Bearer  ', 'Bearer\t', 'Bearer', 'Bearer\u00a0', 'Bearex ', 'ſearer ', '');
  fc.assert(
    fc.property(prefix, fc.string({ unit: 'binary', maxLength: 40 }), (p, rest) => {
      assert.equal(bearer(p + rest), byExpression(p + rest));
    }),
    { numRuns: 20_000 },
  );
  fc.assert(fc.property(fc.string({ maxLength: 60 }), (h) => assert.equal(bearer(h), byExpression(h))), { numRuns: 5_000 });
});
