/**
 * The start-up self-test a native Ed25519 verifier must pass before it checks
 * a single transaction (src/chains/solana/verify.ts): RFC 8032 section 7.1
 * vectors 1-3 accepted, and one input of each class the signature rule
 * rejects (docs/protocol.md) refused. A wrong answer is worse than a slow one.
 */

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));

/** [public key, message, signature], all valid. */
export const RFC8032_VECTORS: [string, string, string][] = [
  [
    'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    '',
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  ],
  [
    '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    '72',
    '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  ],
  [
    'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    'af82',
    '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  ],
];

/** L, the group order, little-endian. */
const L = hex('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010');

/** S + L: the same signature with a non-canonical S. */
function plusL(sig: Uint8Array): Uint8Array {
  const out = Uint8Array.from(sig);
  let carry = 0;
  for (let i = 0; i < 32; i++) {
    const v = out[32 + i]! + L[i]! + carry;
    out[32 + i] = v & 0xff;
    carry = v >> 8;
  }
  return out;
}

/** null when every case answers as libsodium does, else the first failing case's name. */
export function ed25519SelfTest(verify: (sig: Uint8Array, msg: Uint8Array, key: Uint8Array) => boolean): string | null {
  try {
    for (const [i, [k, m, s]] of RFC8032_VECTORS.entries()) {
      const key = hex(k);
      const msg = hex(m);
      const sig = hex(s);
      if (verify(sig, msg, key) !== true) return `RFC 8032 vector ${i + 1} refused`;
      const bad = Uint8Array.from(sig);
      bad[i * 20] ^= 0x04;
      if (verify(bad, msg, key) !== false) return `corrupted vector ${i + 1} accepted`;
      if (verify(plusL(sig), msg, key) !== false) return `S + L of vector ${i + 1} accepted`;
    }
    // The identity as key (small order), and a key whose y is p (non-canonical): refused whatever the signature.
    const [, , s0] = RFC8032_VECTORS[0]!;
    const identity = hex('0100000000000000000000000000000000000000000000000000000000000000');
    if (verify(hex(s0), new Uint8Array(0), identity) !== false) return 'small-order key accepted';
    const yIsP = hex('edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f');
    if (verify(hex(s0), new Uint8Array(0), yIsP) !== false) return 'non-canonical key accepted';
    return null;
  } catch (err) {
    return `threw ${(err as Error).message}`;
  }
}
