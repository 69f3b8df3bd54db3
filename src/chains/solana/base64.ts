/**
 * Strict base64 for `sendTransaction` as agave's RPC decodes it (standard
 * alphabet, padded, zero trailing bits), written into the slab by Node's
 * native decoder. Its four leniencies are closed without re-encoding
 * (`npm run bench:micro -- base64 Base64`: 0.40 µs vs 0.57 µs):
 * - it skips characters outside the alphabet: the written count falls short;
 * - it reads a UTF-16 unit by its low byte (`Ł` decodes as `A`): ASCII only;
 * - it takes URL-safe `-` and `_`: refused by name;
 * - it ignores the bits below the last byte: they must be zero.
 * test/chains/solana/base64.test.ts checks this against the re-encode rule on
 * every Node version CI runs.
 */

/** Bytes that `text` decodes to if it is strict base64, else -1 (0 for the empty text). */
export function base64DecodedLength(text: string): number {
  const n = text.length;
  if (n === 0) return 0;
  if ((n & 3) !== 0) return -1;
  const pad = text.charCodeAt(n - 1) !== 0x3d ? 0 : text.charCodeAt(n - 2) !== 0x3d ? 1 : 2;
  return (n >>> 2) * 3 - pad;
}

/**
 * Decodes `text` into buf[offset, offset + len), where `len` is
 * `base64DecodedLength(text)` (> 0): true when `text` is strict base64.
 * On false the bytes written there mean nothing.
 */
export function decodeBase64Into(text: string, buf: Buffer, offset: number, len: number): boolean {
  // ASCII: utf8 length equals the number of code units only then (a native scan).
  if (Buffer.byteLength(text, 'utf8') !== text.length) return false;
  if (buf.write(text, offset, len, 'base64') !== len) return false;
  if (text.indexOf('-') >= 0 || text.indexOf('_') >= 0) return false;
  const n = text.length;
  const pad = (n >>> 2) * 3 - len;
  if (pad === 0) return true;
  // One `=`: the last character carries 2 unused bits; two: 4.
  const v = SEXTET[text.charCodeAt(n - 1 - pad)]!;
  return (v & (pad === 1 ? 0x03 : 0x0f)) === 0;
}

/** Value of each base64 character (ASCII); the decoder has already refused anything else. */
const SEXTET = new Uint8Array(128);
for (let i = 0; i < 26; i++) {
  SEXTET[0x41 + i] = i;
  SEXTET[0x61 + i] = 26 + i;
}
for (let i = 0; i < 10; i++) SEXTET[0x30 + i] = 52 + i;
SEXTET[0x2b] = 62;
SEXTET[0x2f] = 63;
