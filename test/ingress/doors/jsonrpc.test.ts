/**
 * A JSON-RPC array is counted from its bytes before JSON.parse: the count must agree with JSON.parse on every array within the
 * limit, and stop at limit + 1 for longer ones, whatever strings and nesting
 * the elements hold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { topLevelElements } from '../../../src/ingress/doors/rpc-scan.js';

const bytes = (s: string) => new TextEncoder().encode(s);

test('the byte count of a top-level array agrees with JSON.parse up to the limit', () => {
  fc.assert(
    fc.property(fc.array(fc.jsonValue(), { maxLength: 20 }), fc.integer({ min: 1, max: 25 }), (arr, max) => {
      const n = topLevelElements(bytes(JSON.stringify(arr, null, arr.length % 2 ? 1 : undefined)), max);
      assert.equal(n, arr.length > max ? max + 1 : arr.length);
    }),
    { numRuns: 2000 },
  );
});

test('not an array, or cut short: 0, and JSON.parse decides', () => {
  for (const s of ['{"a":[1,2,3]}', '"[1,2]"', '', '   ', '[1,2', '["a\\"],[",1']) assert.equal(topLevelElements(bytes(s), 64), 0, s);
  assert.equal(topLevelElements(bytes(' \n[ ] '), 64), 0);
  assert.equal(topLevelElements(bytes('[{"x":"],["}, [1,[2,3]], "a,b"]'), 64), 3);
  assert.equal(topLevelElements(bytes('[' + '{},'.repeat(43_000) + '{}]'), 64), 65);
});
