/** One complete `0x`-prefixed signed transaction; only one `0x` prefix is allowed (docs/protocol.md#evm-single-transactions). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DecodeError } from '../../../src/errors.js';
import fc from 'fast-check';
import { decodeHexInto, hexTransactionLength, parseHexTransaction, toHex } from '../../../src/chains/evm/hex.js';

function rejects(text: string, message: RegExp): void {
  assert.throws(() => parseHexTransaction(text), (e: unknown) => e instanceof DecodeError && message.test(e.message));
}

test('hex transaction parses with either letter case and either 0x or 0X', () => {
  assert.deepEqual(parseHexTransaction('0xdeadBEEF00'), Uint8Array.of(0xde, 0xad, 0xbe, 0xef, 0x00));
  assert.deepEqual(parseHexTransaction('0X0a'), Uint8Array.of(0x0a));
});

test('hex transaction must start with 0x', () => {
  rejects('deadbeef', /must start with 0x/);
  rejects('', /must start with 0x/);
  rejects('0', /must start with 0x/);
  rejects(' 0x00', /must start with 0x/);
  rejects('x0', /must start with 0x/);
});

test('only one 0x prefix is allowed', () => {
  rejects('0x0x02f8', /only one 0x prefix/);
  rejects('0x0X02f8', /only one 0x prefix/);
});

test('hex transaction must not be empty', () => {
  rejects('0x', /empty transaction/);
});

test('hex transaction must have an even number of digits', () => {
  rejects('0xabc', /odd number of hex digits/);
  rejects('0x0', /odd number of hex digits/);
});

test('hex transaction must contain hex digits only', () => {
  rejects('0xgg', /invalid hex character at position 2/);
  rejects('0x0g', /invalid hex character at position 3/);
  rejects('0x00 ', /odd number|invalid hex/);
  rejects('0x00\n0', /invalid hex character/);
  rejects('0x\u0100\u0100', /invalid hex character/);
  rejects('0x\u0130a', /invalid hex character/); // U+0130 folds to 0x30 in a byte table
  rejects('0x0x', /only one 0x prefix/);
});

test('parseHexTransaction round-trips with Buffer hex for random inputs', () => {
  for (let n = 1; n < 300; n += 7) {
    const b = randomBytes(n);
    const hex = b.toString('hex');
    assert.deepEqual(parseHexTransaction('0x' + hex), new Uint8Array(b));
    assert.deepEqual(parseHexTransaction('0x' + hex.toUpperCase()), new Uint8Array(b));
  }
});

test('toHex is lowercase and 0x-prefixed, SharedArrayBuffer views included', () => {
  for (const n of [0, 1, 32, 64, 65, 1000]) {
    const b = randomBytes(n);
    assert.equal(toHex(new Uint8Array(b)), '0x' + b.toString('hex'));
    const sab = new Uint8Array(new SharedArrayBuffer(n + 3), 3, n);
    sab.set(b);
    assert.equal(toHex(sab), '0x' + b.toString('hex'));
  }
});

// The doors decode straight into the slab with Node's hex decoder (decodeHexInto) and fall back to the
// table above only when it refuses: the two must accept exactly the same texts, with the same bytes.
test('decodeHexInto accepts exactly what parseHexTransaction accepts, with the same bytes', () => {
  const unit = fc.oneof(
    fc.constantFrom(...'0123456789abcdefABCDEF'),
    fc.constantFrom('g', 'G', 'x', ' ', '\n', '\0', '-', 'é', '\u0100', '\u0130', '\u0161', '\u0441', '\uff10', '\ud83d'),
  );
  const text = fc.tuple(fc.constantFrom('0x', '0X'), fc.array(unit, { maxLength: 80 })).map(([p, u]) => p + u.join(''));
  fc.assert(
    fc.property(text, fc.nat(16), (t, offset) => {
      let want: Uint8Array | null;
      try {
        want = parseHexTransaction(t);
      } catch {
        want = null;
      }
      let len: number;
      try {
        len = hexTransactionLength(t);
      } catch {
        assert.equal(want, null, 'the shape checks are shared');
        return;
      }
      const buf = Buffer.alloc(offset + len + 4, 0xee);
      const ok = decodeHexInto(t, buf, offset, len);
      assert.equal(ok, want !== null, t);
      if (ok) {
        assert.deepEqual(new Uint8Array(buf.subarray(offset, offset + len)), want);
        assert.equal(buf[offset + len], 0xee, 'nothing written past the block');
      }
    }),
    { numRuns: 3000 },
  );
});

test('decodeHexInto refuses a UTF-16 unit whose low byte is a hex digit (Node would read it as one)', () => {
  const buf = Buffer.alloc(2);
  assert.equal(decodeHexInto('0x\u0161b\u0130c', buf, 0, 2), false);
  assert.equal(decodeHexInto('0xabcd', buf, 0, 2), true);
  assert.deepEqual([...buf], [0xab, 0xcd]);
});
