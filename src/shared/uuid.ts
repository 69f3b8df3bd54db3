/**
 * Account UUID text parsing, shared by the client (UDP packets carry the raw
 * 16 bytes) and the server's account lookups (src/store/ids.ts re-exports
 * it). Four 32-bit words, so hot lookups build no string.
 */

/** Nibble value per char code; 16 marks "not a hex digit" so a parse can OR the values and test one bit. */
const HEX = new Uint8Array(128).fill(16);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[65 + i] = HEX[97 + i] = 10 + i;

/** Four big-endian 32-bit words of a UUID (an Int32Array of length 4, reused by callers as scratch). */
export type UuidWords = Int32Array;

/**
 * Parses canonical UUID text (8-4-4-4-12 hex digits, either case) into `out`.
 * Returns false on anything else. No allocation.
 */
export function uuidTextWords(s: string, out: UuidWords): boolean {
  if (s.length !== 36) return false;
  if (s.charCodeAt(8) !== 45 || s.charCodeAt(13) !== 45 || s.charCodeAt(18) !== 45 || s.charCodeAt(23) !== 45) {
    return false;
  }
  let bad = 0;
  let w = 0;
  let k = 0;
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) continue;
    const c = s.charCodeAt(i);
    const v = c < 128 ? HEX[c]! : 16;
    bad |= v;
    w = (w << 4) | (v & 15);
    if ((++k & 7) === 0) out[(k >> 3) - 1] = w;
  }
  return (bad & 16) === 0;
}

/** 16 raw bytes of a canonical UUID text, or undefined if malformed (for clients and tests; not the hot path). */
export function uuidToBytes(s: string): Uint8Array | undefined {
  const w: UuidWords = new Int32Array(4);
  if (!uuidTextWords(s, w)) return undefined;
  const out = new Uint8Array(16);
  const view = new DataView(out.buffer);
  for (let j = 0; j < 4; j++) view.setInt32(4 * j, w[j]!);
  return out;
}
