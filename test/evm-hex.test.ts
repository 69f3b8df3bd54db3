/** SPEC 4.1: one complete `0x`-prefixed signed transaction; only one `0x` prefix is allowed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DecodeError } from '../src/errors.js';
import { parseHexTransaction, toHex } from '../src/chains/evm/hex.js';

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
