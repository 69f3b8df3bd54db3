/** The header lists answers reuse (src/ingress/headers.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joinHeaders, retryAfterHeaders, type Headers } from '../../src/ingress/headers.js';

test('Retry-After pairs and joined header lists: reused while the same one is asked for, right values every time', () => {
  const pair = (ms: number) => retryAfterHeaders(ms).map(([k, v]) => `${k}: ${v}`);
  assert.deepEqual(pair(1500), ['retry-after: 2', 'x-ratelimit-retry-after-ms: 1500']);
  const first = retryAfterHeaders(1500);
  assert.equal(retryAfterHeaders(1500), first, 'a run of the same wait reuses one list');
  assert.deepEqual(pair(1500), ['retry-after: 2', 'x-ratelimit-retry-after-ms: 1500'], 'and it still says the same');
  assert.deepEqual(pair(250.2), ['retry-after: 1', 'x-ratelimit-retry-after-ms: 251']);
  assert.deepEqual(pair(Infinity), ['retry-after: 60', 'x-ratelimit-retry-after-ms: 60000']);
  const a: Headers = [['x-a', '1']];
  const b: Headers = [['x-b', '2']];
  // Compared as plain pairs: a reused list also carries its encoded bytes.
  const plain = (h: Headers) => h.map(([k, v]) => [k, v]);
  assert.deepEqual(plain(joinHeaders(a, b)), [['x-a', '1'], ['x-b', '2']]);
  assert.equal(joinHeaders(a, b), joinHeaders(a, b), 'the same pair is one list');
  assert.deepEqual(plain(joinHeaders(a, b)), [['x-a', '1'], ['x-b', '2']]);
  assert.equal(joinHeaders([], b), b);
  assert.deepEqual(plain(joinHeaders(b, a)), [['x-b', '2'], ['x-a', '1']]);
});

