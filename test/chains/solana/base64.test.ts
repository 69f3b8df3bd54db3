/**
 * sendTransaction's base64 is strict (standard alphabet, padded, canonical),
 * decoded straight into the slab by Node's lenient decoder plus four checks
 * (src/chains/solana/base64.ts). The rule they must equal: the text decodes
 * and encodes back to itself. Checked on random text near and far from valid,
 * on whichever Node version runs the suite (CI runs 20 and 24).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { base64DecodedLength, decodeBase64Into } from '../../../src/chains/solana/base64.js';

/** The rule as the door applied it before: decode, encode again, compare. */
function reencodes(text: string): Uint8Array | null {
  const len = base64DecodedLength(text);
  if (len <= 0) return null;
  const b = Buffer.alloc(len);
  if (b.write(text, 'base64') !== len || b.toString('base64') !== text) return null;
  return new Uint8Array(b);
}

function check(text: string, offset: number): void {
  const want = reencodes(text);
  const len = base64DecodedLength(text);
  if (len <= 0) {
    assert.equal(want, null);
    return;
  }
  const buf = Buffer.alloc(offset + len + 4, 0xee);
  const ok = decodeBase64Into(text, buf, offset, len);
  assert.equal(ok, want !== null, JSON.stringify(text));
  if (ok) {
    assert.deepEqual(new Uint8Array(buf.subarray(offset, offset + len)), want);
    assert.equal(buf[offset + len], 0xee, 'nothing written past the block');
  }
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

test('decodeBase64Into equals the re-encode rule on valid base64 and one-character corruptions of it', () => {
  const corrupt = fc.constantFrom('-', '_', '=', ' ', '\n', '.', '\0', 'é', '\u0141', '\u0100', '\uff21', '\ud83d', '%', '*');
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.nat(), corrupt, fc.boolean(), fc.nat(8), (bytes, at, c, replace, offset) => {
      const text = Buffer.from(bytes).toString('base64');
      check(text, offset);
      const i = at % text.length;
      check(text.slice(0, i) + c + text.slice(replace ? i + 1 : i), offset);
    }),
    { numRuns: 3000 },
  );
});

test('decodeBase64Into equals the re-encode rule on arbitrary text over the alphabet and its neighbours', () => {
  const unit = fc.oneof(fc.constantFrom(...ALPHABET), fc.constantFrom('=', '-', '_', ' ', '\u0141', '\u0161', '\u012b'));
  fc.assert(
    fc.property(fc.array(unit, { minLength: 1, maxLength: 24 }), fc.nat(8), (u, offset) => check(u.join(''), offset)),
    { numRuns: 5000 },
  );
});

test('non-canonical trailing bits, URL-safe letters and non-ASCII look-alikes are refused', () => {
  const buf = Buffer.alloc(8);
  assert.equal(decodeBase64Into('AQ==', buf, 0, 1), true);
  assert.equal(decodeBase64Into('AR==', buf, 0, 1), false); // 4 trailing bits not zero
  assert.equal(decodeBase64Into('AQE=', buf, 0, 2), true);
  assert.equal(decodeBase64Into('AQF=', buf, 0, 2), false); // 2 trailing bits not zero
  assert.equal(decodeBase64Into('A-_A', buf, 0, 3), false);
  assert.equal(decodeBase64Into('A\u0141BC', buf, 0, 3), false); // Node reads U+0141 as `A`
  assert.equal(base64DecodedLength(''), 0);
  assert.equal(base64DecodedLength('AAA'), -1);
  assert.equal(base64DecodedLength('AAAA'), 3);
  assert.equal(base64DecodedLength('AA=='), 1);
});
