/** The strict RLP reader: every non-canonical encoding is rejected in one place. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { toRlp, type Hex } from 'viem';
import { DecodeError } from '../../../src/errors.js';
import { bytesToBigInt, headerSize, RlpReader, writeHeader, writeUint } from '../../../src/chains/evm/rlp.js';

const r = new RlpReader();
const b = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));

function fails(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof DecodeError && message.test(e.message));
}

test('a single byte below 0x80 must not be wrapped in a string header', () => {
  fails(() => r.reset(b('8105')).string(2, 'x'), /non-canonical single byte/);
  fails(() => r.reset(b('8100')).string(2, 'x'), /non-canonical single byte/);
  r.reset(b('8180')).string(2, 'x');
  assert.equal(r.len, 1);
  r.reset(b('05')).string(1, 'x');
  assert.deepEqual([r.start, r.len, r.pos], [0, 1, 1]);
});

test('a length below 56 must use the short form', () => {
  fails(() => r.reset(b('b801' + '80')).string(3, 'x'), /short form required/);
  fails(() => r.reset(b('b837' + '00'.repeat(55))).string(57, 'x'), /short form required/);
  fails(() => r.reset(b('f80100')).list(3, 'x'), /short form required/);
  r.reset(b('b838' + '00'.repeat(56))).string(58, 'x');
  assert.equal(r.len, 56);
});

test('a long-form length must not have a leading zero byte', () => {
  fails(() => r.reset(b('b90038' + '00'.repeat(56))).string(59, 'x'), /leading zero byte/);
  fails(() => r.reset(b('f90038' + '00'.repeat(56))).list(59, 'x'), /leading zero byte/);
});

test('an item must not run past its container or the input', () => {
  fails(() => r.reset(b('83aabb')).string(3, 'x'), /runs past/);
  fails(() => r.reset(b('c5' + '83aabb')).list(4, 'x'), /runs past/);
  // The list says 2 bytes; its string says 3.
  const buf = b('c2' + '83aabbcc');
  const end = r.reset(buf).list(buf.length, 'outer');
  assert.equal(end, 3);
  fails(() => r.string(end, 'inner'), /runs past/);
  fails(() => r.reset(b('b9ff')).string(2, 'x'), /truncated length/);
  fails(() => r.reset(b('bfffffffffffffffff')).string(9, 'x'), /runs past/);
  fails(() => r.reset(b('')).string(0, 'x'), /unexpected end/);
});

test('an integer must not have a leading zero byte, and zero is the empty string', () => {
  fails(() => r.reset(b('820001')).uint(3, 32, 'n'), /leading zero byte/);
  fails(() => r.reset(b('00')).uint(1, 32, 'n'), /leading zero byte/);
  assert.equal(r.reset(b('80')).uint(1, 32, 'n'), 0n);
  assert.equal(r.reset(b('7f')).uint(1, 32, 'n'), 127n);
  assert.equal(r.reset(b('820100')).uint(3, 32, 'n'), 256n);
  fails(() => r.reset(b('89' + '01'.repeat(9))).uint(10, 8, 'nonce'), /wider than 64 bits/);
  fails(() => r.reset(b('c0')).uint(1, 8, 'nonce'), /expected a string/);
});

test('a list must be consumed exactly', () => {
  const buf = b('c3010203');
  const end = r.reset(buf).list(buf.length, 'l');
  r.uint(end, 1, 'a');
  r.uint(end, 1, 'b');
  fails(() => r.finish(end, 'l'), /unexpected extra items/);
  r.uint(end, 1, 'c');
  r.finish(end, 'l');
});

test('bytesToBigInt agrees with BigInt for every width up to 32 bytes', () => {
  for (let len = 1; len <= 32; len++) {
    const x = randomBytes(len + 2);
    assert.equal(bytesToBigInt(x, 1, len), BigInt('0x' + x.subarray(1, 1 + len).toString('hex')), `len ${len}`);
  }
});

test('writeHeader and writeUint produce the canonical encoding viem produces', () => {
  const out = new Uint8Array(64);
  for (const len of [2, 55, 56, 255, 256, 65535, 65536]) {
    const end = writeHeader(out, 0, 0x80, len);
    assert.equal(end, headerSize(len));
    const ref = toRlp(`0x${'01'.repeat(len)}`).slice(0, 2 + 2 * end);
    assert.equal('0x' + Buffer.from(out.subarray(0, end)).toString('hex'), ref, `len ${len}`);
  }
  assert.deepEqual(out.subarray(0, writeHeader(out, 0, 0xc0, 1 << 24)), Uint8Array.of(0xfb, 0x01, 0x00, 0x00, 0x00));
  for (const x of [0n, 1n, 0x7fn, 0x80n, 0xffn, 0x100n, 2n ** 64n - 1n, 2n ** 256n - 1n]) {
    const end = writeUint(out, 0, x);
    const hex = x === 0n ? '0x' : `0x${x.toString(16).padStart(Math.ceil(x.toString(16).length / 2) * 2, '0')}`;
    assert.equal('0x' + Buffer.from(out.subarray(0, end)).toString('hex'), toRlp(hex as Hex), `x ${x}`);
  }
});
