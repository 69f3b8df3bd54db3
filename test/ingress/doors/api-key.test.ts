/** `?api-key=` on the Solana HTTP doors (docs/protocol.md#authentication), without sockets. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayError } from '../../../src/errors.js';
import { apiKeyQuery } from '../../../src/ingress/doors/api-key.js';

const KEY = '6f1c2e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f';

test('the key alone, among other parameters, percent-encoded, or absent', () => {
  assert.equal(apiKeyQuery(`api-key=${KEY}`), KEY);
  assert.equal(apiKeyQuery(`cluster=mainnet&api-key=${KEY}&x`), KEY);
  assert.equal(apiKeyQuery(`api-key=${KEY.replace('-', '%2D')}`), KEY);
  assert.equal(apiKeyQuery(''), null);
  assert.equal(apiKeyQuery('cluster=mainnet'), null);
  // Present but empty: the gate's "missing".
  assert.equal(apiKeyQuery('api-key='), '');
});

test('twice, broken percent-encoding or a long query string is refused, and the refusal never holds the key', () => {
  for (const q of [`api-key=${KEY}&api-key=${KEY}`, `api-key=%ZZ${KEY}`, `api-key=${KEY}&pad=${'a'.repeat(600)}`]) {
    const r = apiKeyQuery(q);
    assert.ok(r instanceof RelayError, q.slice(0, 40));
    assert.equal(r.code, 'TXR_INVALID_REQUEST');
    assert.ok(!r.message.includes(KEY) && !r.text.includes(KEY));
  }
});
