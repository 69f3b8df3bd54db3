/*
 * Ed25519 signature verification (RFC 8032) with libsodium's accept/reject
 * rule (docs/protocol.md, "Signature rule"), written for speed on 64-bit
 * hosts: field elements in five 51-bit limbs with 128-bit products,
 * variable-time arithmetic (every input is public), a width-5 sliding window
 * for the key and a width-8 window over a table of odd multiples of the base
 * point built once per process.
 *
 * Everything here handles public data only (keys, signatures, messages), so
 * nothing needs to run in constant time.
 */
/* Needs 128-bit products; elsewhere the addon is built without ed25519 and the relay uses sodium-native. */
#ifdef __SIZEOF_INT128__
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>

#include "ed25519.h"

typedef unsigned __int128 u128;
typedef uint64_t fe[5];

#define M51 ((UINT64_C(1) << 51) - 1)

/* ---- SHA-512 (FIPS 180-4) ---------------------------------------------- */

static const uint64_t SHA512_K[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
    0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
    0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
    0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
    0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
    0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
    0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
    0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
    0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
    0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
    0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
    0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
    0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
    0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL,
};
static const uint64_t SHA512_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

#define ROR64(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

static inline uint64_t load64_be(const uint8_t *p) {
  return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32) |
         ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) | ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}

static void sha512_blocks(uint64_t st[8], const uint8_t *in, size_t nblocks) {
  uint64_t w[80];
  while (nblocks--) {
    for (int i = 0; i < 16; i++) w[i] = load64_be(in + 8 * i);
    for (int i = 16; i < 80; i++) {
      uint64_t s0 = ROR64(w[i - 15], 1) ^ ROR64(w[i - 15], 8) ^ (w[i - 15] >> 7);
      uint64_t s1 = ROR64(w[i - 2], 19) ^ ROR64(w[i - 2], 61) ^ (w[i - 2] >> 6);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint64_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (int i = 0; i < 80; i++) {
      uint64_t t1 = h + (ROR64(e, 14) ^ ROR64(e, 18) ^ ROR64(e, 41)) + ((e & f) ^ (~e & g)) + SHA512_K[i] + w[i];
      uint64_t t2 = (ROR64(a, 28) ^ ROR64(a, 34) ^ ROR64(a, 39)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    st[0] += a; st[1] += b; st[2] += c; st[3] += d;
    st[4] += e; st[5] += f; st[6] += g; st[7] += h;
    in += 128;
  }
}

/* SHA-512 of a (32 bytes) || b (32 bytes) || m (mlen bytes), the Ed25519 challenge input. */
static void sha512_rkm(uint8_t out[64], const uint8_t *a, const uint8_t *b, const uint8_t *m, size_t mlen) {
  uint64_t st[8];
  uint8_t block[256];
  memcpy(st, SHA512_IV, sizeof st);
  size_t total = 64 + mlen;
  memcpy(block, a, 32);
  memcpy(block + 32, b, 32);
  size_t head = mlen < 64 ? mlen : 64;
  memcpy(block + 64, m, head);
  size_t used = 64 + head;
  if (used == 128) {
    sha512_blocks(st, block, 1);
    size_t rest = mlen - head;
    size_t whole = rest / 128;
    sha512_blocks(st, m + head, whole);
    used = rest - whole * 128;
    memcpy(block, m + head + whole * 128, used);
  }
  /* Padding: 0x80, zeros, 128-bit big-endian bit length. */
  block[used++] = 0x80;
  size_t end = used <= 112 ? 128 : 256;
  memset(block + used, 0, end - used);
  uint64_t bits = (uint64_t)total << 3;
  uint64_t bits_hi = (uint64_t)total >> 61;
  for (int i = 0; i < 8; i++) {
    block[end - 1 - i] = (uint8_t)(bits >> (8 * i));
    block[end - 9 - i] = (uint8_t)(bits_hi >> (8 * i));
  }
  sha512_blocks(st, block, end / 128);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) out[8 * i + j] = (uint8_t)(st[i] >> (56 - 8 * j));
}

void txr_sha512(uint8_t out[64], const uint8_t *m, size_t mlen) {
  /* Inputs of 64 bytes or more go through the challenge-hash path (tested against known digests). */
  if (mlen >= 64) {
    sha512_rkm(out, m, m + 32, m + 64, mlen - 64);
  } else {
    /* Short inputs do not occur in verification; hash them with a padded copy. */
    uint64_t st[8];
    uint8_t block[256];
    memcpy(st, SHA512_IV, sizeof st);
    memcpy(block, m, mlen);
    size_t used = mlen;
    block[used++] = 0x80;
    size_t end = used <= 112 ? 128 : 256;
    memset(block + used, 0, end - used);
    uint64_t bits = (uint64_t)mlen << 3;
    for (int i = 0; i < 8; i++) block[end - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha512_blocks(st, block, end / 128);
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++) out[8 * i + j] = (uint8_t)(st[i] >> (56 - 8 * j));
  }
}

/* ---- GF(2^255 - 19) in radix 2^51 ---------------------------------------
 * Limb bounds. fe_mul/fe_sq/fe_sub/fe_carry outputs are "carried": limbs
 * < 2^51 + 2^13. fe_add does not carry: the sum of two carried values
 * (< 2^52.1), or of such a sum and a carried value (< 2^52.6), goes only into
 * a multiplication or is the first operand of a subtraction. fe_sub_nc
 * (below) leaves f + 4p - g uncarried (< 2^54) for a multiplication only.
 * fe_mul/fe_sq take limbs up to 2^54 without overflow: 5 * 19 * 2^108 < 2^115.
 */

static inline void fe_copy(fe h, const fe f) { memcpy(h, f, sizeof(fe)); }
static inline void fe_0(fe h) { h[0] = h[1] = h[2] = h[3] = h[4] = 0; }
static inline void fe_1(fe h) { h[0] = 1; h[1] = h[2] = h[3] = h[4] = 0; }

static inline void fe_add(fe h, const fe f, const fe g) {
  h[0] = f[0] + g[0]; h[1] = f[1] + g[1]; h[2] = f[2] + g[2]; h[3] = f[3] + g[3]; h[4] = f[4] + g[4];
}

static inline void fe_carry(fe h) {
  uint64_t c;
  c = h[0] >> 51; h[0] &= M51; h[1] += c;
  c = h[1] >> 51; h[1] &= M51; h[2] += c;
  c = h[2] >> 51; h[2] &= M51; h[3] += c;
  c = h[3] >> 51; h[3] &= M51; h[4] += c;
  c = h[4] >> 51; h[4] &= M51; h[0] += 19 * c;
}

/* f - g + 4p, then carried. g must be carried or an fe_add output. */
static inline void fe_sub(fe h, const fe f, const fe g) {
  h[0] = f[0] + UINT64_C(0x1fffffffffffb4) - g[0];
  h[1] = f[1] + UINT64_C(0x1ffffffffffffc) - g[1];
  h[2] = f[2] + UINT64_C(0x1ffffffffffffc) - g[2];
  h[3] = f[3] + UINT64_C(0x1ffffffffffffc) - g[3];
  h[4] = f[4] + UINT64_C(0x1ffffffffffffc) - g[4];
  fe_carry(h);
}

/* f - g + 4p without the carry pass: only where the result goes straight into
 * fe_mul/fe_sq (f < 2^52.7 and g carried or an fe_add output, so the result is < 2^54). */
static inline void fe_sub_nc(fe h, const fe f, const fe g) {
  h[0] = f[0] + UINT64_C(0x1fffffffffffb4) - g[0];
  h[1] = f[1] + UINT64_C(0x1ffffffffffffc) - g[1];
  h[2] = f[2] + UINT64_C(0x1ffffffffffffc) - g[2];
  h[3] = f[3] + UINT64_C(0x1ffffffffffffc) - g[3];
  h[4] = f[4] + UINT64_C(0x1ffffffffffffc) - g[4];
}

static inline void fe_neg(fe h, const fe f) {
  fe z;
  fe_0(z);
  fe_sub(h, z, f);
}

static inline void fe_reduce128(fe h, u128 r0, u128 r1, u128 r2, u128 r3, u128 r4) {
  uint64_t c;
  r1 += (uint64_t)(r0 >> 51); h[0] = (uint64_t)r0 & M51;
  r2 += (uint64_t)(r1 >> 51); h[1] = (uint64_t)r1 & M51;
  r3 += (uint64_t)(r2 >> 51); h[2] = (uint64_t)r2 & M51;
  r4 += (uint64_t)(r3 >> 51); h[3] = (uint64_t)r3 & M51;
  c = (uint64_t)(r4 >> 51); h[4] = (uint64_t)r4 & M51;
  h[0] += c * 19;
  h[1] += h[0] >> 51;
  h[0] &= M51;
}

static inline void fe_mul(fe h, const fe f, const fe g) {
  uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
  uint64_t g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4];
  uint64_t g1_19 = 19 * g1, g2_19 = 19 * g2, g3_19 = 19 * g3, g4_19 = 19 * g4;
  u128 r0 = (u128)f0 * g0 + (u128)f1 * g4_19 + (u128)f2 * g3_19 + (u128)f3 * g2_19 + (u128)f4 * g1_19;
  u128 r1 = (u128)f0 * g1 + (u128)f1 * g0 + (u128)f2 * g4_19 + (u128)f3 * g3_19 + (u128)f4 * g2_19;
  u128 r2 = (u128)f0 * g2 + (u128)f1 * g1 + (u128)f2 * g0 + (u128)f3 * g4_19 + (u128)f4 * g3_19;
  u128 r3 = (u128)f0 * g3 + (u128)f1 * g2 + (u128)f2 * g1 + (u128)f3 * g0 + (u128)f4 * g4_19;
  u128 r4 = (u128)f0 * g4 + (u128)f1 * g3 + (u128)f2 * g2 + (u128)f3 * g1 + (u128)f4 * g0;
  fe_reduce128(h, r0, r1, r2, r3, r4);
}

static inline void fe_sq(fe h, const fe f) {
  uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
  uint64_t f0_2 = 2 * f0, f1_2 = 2 * f1;
  uint64_t f3_19 = 19 * f3, f4_19 = 19 * f4;
  u128 r0 = (u128)f0 * f0 + (u128)f1_2 * f4_19 + (u128)(2 * f2) * f3_19;
  u128 r1 = (u128)f0_2 * f1 + (u128)(2 * f2) * f4_19 + (u128)f3 * f3_19;
  u128 r2 = (u128)f0_2 * f2 + (u128)f1 * f1 + (u128)(2 * f3) * f4_19;
  u128 r3 = (u128)f0_2 * f3 + (u128)f1_2 * f2 + (u128)f4 * f4_19;
  u128 r4 = (u128)f0_2 * f4 + (u128)f1_2 * f3 + (u128)f2 * f2;
  fe_reduce128(h, r0, r1, r2, r3, r4);
}

static inline void fe_sqn(fe h, const fe f, int n) {
  fe_sq(h, f);
  while (--n > 0) fe_sq(h, h);
}

/* Fully reduced little-endian bytes. */
static void fe_tobytes(uint8_t s[32], const fe f) {
  fe h;
  fe_copy(h, f);
  fe_carry(h);
  fe_carry(h);
  /* Now h < 2^255 + small; subtract p if h >= p: q = 1 iff h + 19 >= 2^255. */
  uint64_t q = (h[0] + 19) >> 51;
  q = (h[1] + q) >> 51;
  q = (h[2] + q) >> 51;
  q = (h[3] + q) >> 51;
  q = (h[4] + q) >> 51;
  h[0] += 19 * q;
  h[1] += h[0] >> 51; h[0] &= M51;
  h[2] += h[1] >> 51; h[1] &= M51;
  h[3] += h[2] >> 51; h[2] &= M51;
  h[4] += h[3] >> 51; h[3] &= M51;
  h[4] &= M51;
  uint64_t w0 = h[0] | (h[1] << 51);
  uint64_t w1 = (h[1] >> 13) | (h[2] << 38);
  uint64_t w2 = (h[2] >> 26) | (h[3] << 25);
  uint64_t w3 = (h[3] >> 39) | (h[4] << 12);
  for (int i = 0; i < 8; i++) {
    s[i] = (uint8_t)(w0 >> (8 * i));
    s[8 + i] = (uint8_t)(w1 >> (8 * i));
    s[16 + i] = (uint8_t)(w2 >> (8 * i));
    s[24 + i] = (uint8_t)(w3 >> (8 * i));
  }
}

static inline uint64_t load64_le(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

/* The low 255 bits (the top bit is the caller's), not reduced mod p. */
static void fe_frombytes(fe h, const uint8_t s[32]) {
  uint64_t w0 = load64_le(s), w1 = load64_le(s + 8), w2 = load64_le(s + 16), w3 = load64_le(s + 24);
  h[0] = w0 & M51;
  h[1] = ((w0 >> 51) | (w1 << 13)) & M51;
  h[2] = ((w1 >> 38) | (w2 << 26)) & M51;
  h[3] = ((w2 >> 25) | (w3 << 39)) & M51;
  h[4] = (w3 >> 12) & M51;
}

static int fe_iszero(const fe f) {
  uint8_t s[32];
  fe_tobytes(s, f);
  uint8_t c = 0;
  for (int i = 0; i < 32; i++) c |= s[i];
  return c == 0;
}

static int fe_isnegative(const fe f) {
  uint8_t s[32];
  fe_tobytes(s, f);
  return s[0] & 1;
}

/* z^(2^250 - 1) and z^11, shared by inversion and the square root. */
static void fe_pow_2_250_1(fe out, fe z11, const fe z) {
  fe z2, t, z9, a, b, c;
  fe_sq(z2, z);
  fe_sqn(t, z2, 2);
  fe_mul(z9, t, z);
  fe_mul(z11, z9, z2);
  fe_sq(t, z11);
  fe_mul(a, t, z9);           /* 2^5 - 1 */
  fe_sqn(t, a, 5);
  fe_mul(a, t, a);            /* 2^10 - 1 */
  fe_sqn(t, a, 10);
  fe_mul(b, t, a);            /* 2^20 - 1 */
  fe_sqn(t, b, 20);
  fe_mul(t, t, b);            /* 2^40 - 1 */
  fe_sqn(t, t, 10);
  fe_mul(b, t, a);            /* 2^50 - 1 */
  fe_sqn(t, b, 50);
  fe_mul(c, t, b);            /* 2^100 - 1 */
  fe_sqn(t, c, 100);
  fe_mul(t, t, c);            /* 2^200 - 1 */
  fe_sqn(t, t, 50);
  fe_mul(out, t, b);          /* 2^250 - 1 */
}

static void fe_invert(fe out, const fe z) {
  fe t, z11;
  fe_pow_2_250_1(t, z11, z);
  fe_sqn(t, t, 5);
  fe_mul(out, t, z11);        /* 2^255 - 21 = p - 2 */
}

static void fe_pow22523(fe out, const fe z) {
  fe t, z11;
  fe_pow_2_250_1(t, z11, z);
  fe_sqn(t, t, 2);
  fe_mul(out, t, z);          /* 2^252 - 3 = (p - 5) / 8 */
}

/* ---- The curve -x^2 + y^2 = 1 + d x^2 y^2 ------------------------------- */

typedef struct { fe X, Y, Z; } ge_p2;
typedef struct { fe X, Y, Z, T; } ge_p3;           /* T = XY/Z */
typedef struct { fe X, Y, Z, T; } ge_p1p1;         /* x = X/Z, y = Y/T */
typedef struct { fe YplusX, YminusX, Z, T2d; } ge_cached;
typedef struct { fe yplusx, yminusx, xy2d; } ge_niels; /* affine */

/* Constants, set once per process (ed25519_init). */
static fe FE_D, FE_D2, FE_SQRTM1;
/* BASE_SPLIT[j][i] = (2i + 1) 2^(64j) B: the base point's tables for scalars split in 64-bit quarters. */
static ge_niels BASE_SPLIT[4][64];
#define BASE_TABLE (BASE_SPLIT[0])

static void p1p1_to_p2(ge_p2 *r, const ge_p1p1 *p) {
  fe_mul(r->X, p->X, p->T);
  fe_mul(r->Y, p->Y, p->Z);
  fe_mul(r->Z, p->Z, p->T);
}

static void p1p1_to_p3(ge_p3 *r, const ge_p1p1 *p) {
  fe_mul(r->X, p->X, p->T);
  fe_mul(r->Y, p->Y, p->Z);
  fe_mul(r->Z, p->Z, p->T);
  fe_mul(r->T, p->X, p->Y);
}

static void p2_dbl(ge_p1p1 *r, const ge_p2 *p) {
  fe xx, yy, b, a, t;
  fe_sq(xx, p->X);
  fe_sq(yy, p->Y);
  fe_sq(b, p->Z);
  fe_add(b, b, b);
  fe_add(t, p->X, p->Y);
  fe_sq(a, t);
  fe_add(r->Y, yy, xx);
  fe_sub_nc(r->Z, yy, xx);
  fe_sub_nc(r->X, a, r->Y);
  fe_add(t, b, xx);           /* 2Z^2 - (YY - XX), without a sub of a sub */
  fe_sub_nc(r->T, t, yy);
}

static void p3_to_cached(ge_cached *r, const ge_p3 *p) {
  fe_add(r->YplusX, p->Y, p->X);
  fe_sub(r->YminusX, p->Y, p->X);
  fe_copy(r->Z, p->Z);
  fe_mul(r->T2d, p->T, FE_D2);
}

static void ge_add(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q) {
  fe a, b, c, d, t;
  fe_add(t, p->Y, p->X);
  fe_mul(a, t, q->YplusX);
  fe_sub_nc(t, p->Y, p->X);
  fe_mul(b, t, q->YminusX);
  fe_mul(c, q->T2d, p->T);
  fe_mul(d, p->Z, q->Z);
  fe_add(d, d, d);
  fe_sub_nc(r->X, a, b);
  fe_add(r->Y, a, b);
  fe_add(r->Z, d, c);
  fe_sub_nc(r->T, d, c);
}

static void ge_sub(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q) {
  fe a, b, c, d, t;
  fe_add(t, p->Y, p->X);
  fe_mul(a, t, q->YminusX);
  fe_sub_nc(t, p->Y, p->X);
  fe_mul(b, t, q->YplusX);
  fe_mul(c, q->T2d, p->T);
  fe_mul(d, p->Z, q->Z);
  fe_add(d, d, d);
  fe_sub_nc(r->X, a, b);
  fe_add(r->Y, a, b);
  fe_sub_nc(r->Z, d, c);
  fe_add(r->T, d, c);
}

static void ge_madd(ge_p1p1 *r, const ge_p3 *p, const ge_niels *q) {
  fe a, b, c, d, t;
  fe_add(t, p->Y, p->X);
  fe_mul(a, t, q->yplusx);
  fe_sub_nc(t, p->Y, p->X);
  fe_mul(b, t, q->yminusx);
  fe_mul(c, q->xy2d, p->T);
  fe_add(d, p->Z, p->Z);
  fe_sub_nc(r->X, a, b);
  fe_add(r->Y, a, b);
  fe_add(r->Z, d, c);
  fe_sub_nc(r->T, d, c);
}

static void ge_msub(ge_p1p1 *r, const ge_p3 *p, const ge_niels *q) {
  fe a, b, c, d, t;
  fe_add(t, p->Y, p->X);
  fe_mul(a, t, q->yminusx);
  fe_sub_nc(t, p->Y, p->X);
  fe_mul(b, t, q->yplusx);
  fe_mul(c, q->xy2d, p->T);
  fe_add(d, p->Z, p->Z);
  fe_sub_nc(r->X, a, b);
  fe_add(r->Y, a, b);
  fe_sub_nc(r->Z, d, c);
  fe_add(r->T, d, c);
}

static void p3_dbl(ge_p1p1 *r, const ge_p3 *p) {
  ge_p2 q;
  fe_copy(q.X, p->X);
  fe_copy(q.Y, p->Y);
  fe_copy(q.Z, p->Z);
  p2_dbl(r, &q);
}

/*
 * Decodes a point the way libsodium does (docs/protocol.md): y from the low
 * 255 bits, taken mod p (no canonical check here), x the square root of
 * (y^2 - 1) / (d y^2 + 1) whose parity is the top bit, -x when x = 0 and the
 * top bit is set (the same point). Returns 0 when there is no square root.
 * In two halves around the exponentiation, so two points can share one
 * (ge_frombytes_pair).
 */
typedef struct { fe u, v, v3, t; } ge_decoding; /* t = u v^7, to be raised to (p - 5) / 8 */

static void ge_decode_begin(ge_p3 *h, ge_decoding *d, const uint8_t s[32]) {
  fe_frombytes(h->Y, s);
  fe_1(h->Z);
  fe_sq(d->u, h->Y);
  fe_mul(d->v, d->u, FE_D);
  fe_sub(d->u, d->u, h->Z);   /* y^2 - 1 */
  fe_add(d->v, d->v, h->Z);   /* d y^2 + 1 */
  fe_carry(d->v);
  fe_sq(d->v3, d->v);
  fe_mul(d->v3, d->v3, d->v); /* v^3 */
  fe_sq(d->t, d->v3);
  fe_mul(d->t, d->t, d->v);
  fe_mul(d->t, d->t, d->u);   /* u v^7 */
}

/* pw = (u v^7)^((p - 5) / 8). */
static int ge_decode_end(ge_p3 *h, const ge_decoding *d, const fe pw, const uint8_t s[32]) {
  fe vxx, t;
  fe_mul(t, pw, d->v3);
  fe_mul(h->X, t, d->u);      /* u v^3 (u v^7)^((p-5)/8) */
  fe_sq(vxx, h->X);
  fe_mul(vxx, vxx, d->v);
  fe_sub(t, vxx, d->u);
  if (!fe_iszero(t)) {
    fe_add(t, vxx, d->u);
    fe_carry(t);
    if (!fe_iszero(t)) return 0;
    fe_mul(h->X, h->X, FE_SQRTM1);
  }
  if (fe_isnegative(h->X) != (s[31] >> 7)) fe_neg(h->X, h->X);
  fe_mul(h->T, h->X, h->Y);
  return 1;
}

static int ge_frombytes(ge_p3 *h, const uint8_t s[32]) {
  ge_decoding d;
  fe pw;
  ge_decode_begin(h, &d, s);
  fe_pow22523(pw, d.t);
  return ge_decode_end(h, &d, pw, s);
}

/* The top 255 bits of the encoding are >= p (libsodium's ge25519_is_canonical, negated). */
static int ge_is_canonical(const uint8_t s[32]) {
  if ((s[31] & 0x7f) != 0x7f) return 1;
  for (int i = 30; i > 0; i--)
    if (s[i] != 0xff) return 1;
  return s[0] < 0xed;
}

/* ---- Scalars mod L = 2^252 + 27742317777372353535851937790883648493 ---- */

static const uint64_t SC_L[4] = {UINT64_C(0x5812631a5cf5d3ed), UINT64_C(0x14def9dea2f79cd6), 0, UINT64_C(0x1000000000000000)};
/* floor(2^512 / L), for Barrett reduction. */
static const uint64_t SC_MU[5] = {UINT64_C(0xed9ce5a30a2c131b), UINT64_C(0x2106215d086329a7), UINT64_C(0xffffffffffffffeb),
                                  UINT64_C(0xffffffffffffffff), UINT64_C(0xf)};

/* S < L, little-endian. */
static int sc_is_canonical(const uint8_t s[32]) {
  static const uint8_t Lb[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
                                 0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};
  for (int i = 31; i >= 0; i--) {
    if (s[i] < Lb[i]) return 1;
    if (s[i] > Lb[i]) return 0;
  }
  return 0;
}

/* r (4 limbs) = x (64 little-endian bytes) mod L. Barrett with b = 2^64, k = 4. */
static void sc_reduce512(uint64_t r[4], const uint8_t x[64]) {
  uint64_t xl[8];
  for (int i = 0; i < 8; i++) xl[i] = load64_le(x + 8 * i);
  /* q1 = x >> 192 (5 limbs); q3 = (q1 * mu) >> 320. */
  uint64_t q2[10] = {0};
  for (int i = 0; i < 5; i++) {
    u128 carry = 0;
    for (int j = 0; j < 5; j++) {
      u128 t = (u128)xl[3 + i] * SC_MU[j] + q2[i + j] + carry;
      q2[i + j] = (uint64_t)t;
      carry = t >> 64;
    }
    q2[i + 5] = (uint64_t)carry;
  }
  const uint64_t *q3 = q2 + 5;
  /* r = (x mod 2^320) - (q3 * L mod 2^320), computed mod 2^320. */
  uint64_t ql[5] = {0};
  for (int i = 0; i < 5; i++) {
    u128 carry = 0;
    for (int j = 0; j < 4 && i + j < 5; j++) {
      u128 t = (u128)q3[i] * SC_L[j] + ql[i + j] + carry;
      ql[i + j] = (uint64_t)t;
      carry = t >> 64;
    }
    if (i + 4 < 5) ql[i + 4] += (uint64_t)carry;
  }
  uint64_t rr[5];
  uint64_t borrow = 0;
  for (int i = 0; i < 5; i++) {
    u128 t = (u128)xl[i] - ql[i] - borrow;
    rr[i] = (uint64_t)t;
    borrow = (uint64_t)(t >> 127);
  }
  /* At most two subtractions of L. */
  for (int k = 0; k < 2; k++) {
    uint64_t s[5];
    borrow = 0;
    for (int i = 0; i < 5; i++) {
      u128 t = (u128)rr[i] - (i < 4 ? SC_L[i] : 0) - borrow;
      s[i] = (uint64_t)t;
      borrow = (uint64_t)(t >> 127);
    }
    if (borrow) break;
    memcpy(rr, s, sizeof rr);
  }
  memcpy(r, rr, 4 * sizeof(uint64_t));
}

/* Width-w non-adjacent form of a scalar < 2^255: odd digits |d| < 2^(w-1).
 * A run of positions with no digit is skipped with one count of trailing
 * zeros (ones while a carry is pending): a branch per bit mispredicts about
 * half the time on random scalars. */
static void sc_wnaf(int8_t naf[256], const uint64_t k[4], int w, int nbits) {
  uint64_t x[5] = {k[0], k[1], k[2], k[3], 0};
  const uint64_t width = UINT64_C(1) << w, mask = width - 1;
  memset(naf, 0, (size_t)nbits);
  uint64_t carry = 0;
  int pos = 0;
  while (pos < nbits) {
    const int idx = pos / 64, bit = pos % 64;
    const uint64_t buf = bit == 0 ? x[idx] : (x[idx] >> bit) | (x[idx + 1] << (64 - bit));
    if ((buf & 1) == carry) {
      /* The window is even: no digit until the run of bits equal to the carry ends. */
      const uint64_t run = carry ? ~buf : buf;
      pos += run == 0 ? 64 : __builtin_ctzll(run);
      continue;
    }
    const uint64_t window = carry + (buf & mask);
    if (window < width / 2) {
      carry = 0;
      naf[pos] = (int8_t)window;
    } else {
      carry = 1;
      naf[pos] = (int8_t)((int64_t)window - (int64_t)width);
    }
    pos += w;
  }
}

static void sc_from32(uint64_t k[4], const uint8_t s[32]) {
  for (int i = 0; i < 4; i++) k[i] = load64_le(s + 8 * i);
}

/* ---- Set-up ------------------------------------------------------------- */

static void fe_from_u64(fe h, uint64_t v) {
  fe_0(h);
  h[0] = v & M51;
  h[1] = v >> 51;
}

/* P = [2^n]P. */
static void p3_dbl_n(ge_p3 *P, int n) {
  ge_p1p1 t;
  ge_p2 q;
  fe_copy(q.X, P->X);
  fe_copy(q.Y, P->Y);
  fe_copy(q.Z, P->Z);
  for (int i = 0; i < n - 1; i++) {
    p2_dbl(&t, &q);
    p1p1_to_p2(&q, &t);
  }
  p2_dbl(&t, &q);
  p1p1_to_p3(P, &t);
}

/* out[i] = (2i + 1)P, affine, i = 0..63 (set-up only: one inversion each). */
static void niels_table(ge_niels out[64], const ge_p3 *P0) {
  ge_p3 P = *P0, P2;
  ge_p1p1 r;
  ge_cached c2;
  fe t;
  p3_dbl(&r, &P);
  p1p1_to_p3(&P2, &r);
  p3_to_cached(&c2, &P2);
  for (int i = 0; i < 64; i++) {
    fe zi, x, y;
    fe_invert(zi, P.Z);
    fe_mul(x, P.X, zi);
    fe_mul(y, P.Y, zi);
    fe_add(out[i].yplusx, y, x);
    fe_carry(out[i].yplusx);
    fe_sub(out[i].yminusx, y, x);
    fe_mul(t, x, y);
    fe_mul(out[i].xy2d, t, FE_D2);
    ge_add(&r, &P, &c2);
    p1p1_to_p3(&P, &r);
  }
}

/* out[i] = (2i + 1)A, i = 0..7. */
static void cached_table(ge_cached out[8], const ge_p3 *A) {
  ge_p3 A2, u;
  ge_p1p1 t;
  p3_to_cached(&out[0], A);
  p3_dbl(&t, A);
  p1p1_to_p3(&A2, &t);
  for (int i = 0; i < 7; i++) {
    ge_add(&t, &A2, &out[i]);
    p1p1_to_p3(&u, &t);
    p3_to_cached(&out[i + 1], &u);
  }
}

/* The per-process tables the multi-scalar multiplication reads in its own form (after BASE_SPLIT). */
static void msm_tables_init(void);

static void ed25519_init(void) {
  fe a, b, t;
  /* d = -121665 / 121666 */
  fe_from_u64(a, 121665);
  fe_neg(a, a);
  fe_from_u64(b, 121666);
  fe_invert(b, b);
  fe_mul(FE_D, a, b);
  fe_add(FE_D2, FE_D, FE_D);
  fe_carry(FE_D2);
  /* sqrt(-1) = 2^((p - 1) / 4); (p - 1) / 4 = 2^253 - 5 = 2^3 * (2^250 - 1) + 3 */
  fe two, z11;
  fe_from_u64(two, 2);
  fe_pow_2_250_1(t, z11, two);
  fe_sqn(t, t, 3);
  fe_from_u64(a, 8);
  fe_mul(FE_SQRTM1, t, a);
  /* B: y = 4/5, x even. */
  uint8_t enc[32];
  memset(enc, 0x66, 32);
  enc[0] = 0x58;
  ge_p3 B;
  ge_frombytes(&B, enc);
  for (int j = 0; j < 4; j++) {
    niels_table(BASE_SPLIT[j], &B);
    p3_dbl_n(&B, 64);
  }
  msm_tables_init();
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

void txr_ed25519_init(void) { pthread_once(&init_once, ed25519_init); }

/* ---- Verification ------------------------------------------------------- */

/* r = [a]A + [b]B (A given as its table of odd multiples), variable time. */
static void double_scalarmult(ge_p2 *out, const uint64_t a[4], const ge_p3 *A, const uint64_t b[4]) {
  int8_t an[256], bn[256];
  ge_cached Ai[8];
  ge_p3 u;
  ge_p1p1 t;
  sc_wnaf(an, a, 5, 256);
  sc_wnaf(bn, b, 8, 256);
  cached_table(Ai, A);
  int i = 255;
  while (i >= 0 && an[i] == 0 && bn[i] == 0) i--;
  ge_p2 r;
  fe_0(r.X);
  fe_1(r.Y);
  fe_1(r.Z);
  for (; i >= 0; i--) {
    p2_dbl(&t, &r);
    if (an[i] > 0) {
      p1p1_to_p3(&u, &t);
      ge_add(&t, &u, &Ai[an[i] / 2]);
    } else if (an[i] < 0) {
      p1p1_to_p3(&u, &t);
      ge_sub(&t, &u, &Ai[(-an[i]) / 2]);
    }
    if (bn[i] > 0) {
      p1p1_to_p3(&u, &t);
      ge_madd(&t, &u, &BASE_TABLE[bn[i] / 2]);
    } else if (bn[i] < 0) {
      p1p1_to_p3(&u, &t);
      ge_msub(&t, &u, &BASE_TABLE[(-bn[i]) / 2]);
    }
    p1p1_to_p2(&r, &t);
  }
  *out = r;
}

/* Digits per half-length scalar: up to 140 bits plus a window's carry. */
#define LATTICE_BITS 148

/* 256-bit unsigned helpers for the reduction (little-endian 64-bit limbs). */
static int u256_bits(const uint64_t a[4]) {
  for (int i = 3; i >= 0; i--)
    if (a[i] != 0) return 64 * i + 64 - __builtin_clzll(a[i]);
  return 0;
}

static int u256_geq(const uint64_t a[4], const uint64_t b[4]) {
  for (int i = 3; i >= 0; i--)
    if (a[i] != b[i]) return a[i] > b[i];
  return 1;
}

/* a -= b, b <= a. */
static void u256_sub(uint64_t a[4], const uint64_t b[4]) {
  uint64_t borrow = 0;
  for (int i = 0; i < 4; i++) {
    u128 t = (u128)a[i] - b[i] - borrow;
    a[i] = (uint64_t)t;
    borrow = (uint64_t)(t >> 127);
  }
}

/* a -= q b, q b <= a. */
static void u256_submul(uint64_t a[4], const uint64_t b[4], uint64_t q) {
  uint64_t pb[4], carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 t = (u128)b[i] * q + carry;
    pb[i] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
  }
  u256_sub(a, pb);
}

/* (a >> shift) truncated to 128 bits, 0 <= shift < 256. */
static u128 u256_window(const uint64_t a[4], int shift) {
  uint64_t w[2];
  for (int j = 0; j < 2; j++) {
    int bit = shift + 64 * j, i = bit >> 6, o = bit & 63;
    uint64_t lo = i < 4 ? a[i] >> o : 0;
    uint64_t hi = (o != 0 && i + 1 < 4) ? a[i + 1] << (64 - o) : 0;
    w[j] = lo | hi;
  }
  return ((u128)w[1] << 64) | w[0];
}

/* a += q b; 0 on overflow past 256 bits. */
static int u256_addmul(uint64_t a[4], const uint64_t b[4], uint64_t q) {
  uint64_t carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 t = (u128)b[i] * q + a[i] + carry;
    a[i] = (uint64_t)t;
    carry = (uint64_t)(t >> 64);
  }
  return carry == 0;
}

/* 8L, little-endian. */
static const uint64_t SC_8L[4] = {UINT64_C(0xc09318d2e7ae9f68), UINT64_C(0xa6f7cef517bce6b2), 0, UINT64_C(0x8000000000000000)};

/*
 * One step of the extended Euclidean algorithm: (r0, r1) = (r1, r0 mod r1),
 * (t0, t1) = (t1, t0 + q t1), the t kept as magnitudes (their signs
 * alternate). 0 when the quotient or a coefficient would not fit.
 */
static int euclid_step(uint64_t r0[4], uint64_t r1[4], uint64_t t0[4], uint64_t t1[4]) {
  int b1 = u256_bits(r1), shift = b1 - 64;
  if (shift < 0 || u256_bits(r0) - shift > 128) return 0;
  u128 qe = u256_window(r0, shift) / ((u128)u256_window(r1, shift) + 1);
  if (qe >> 62) return 0;
  uint64_t q = (uint64_t)qe;
  u256_submul(r0, r1, q);
  while (u256_geq(r0, r1)) {
    u256_sub(r0, r1);
    q++;
  }
  if (!u256_addmul(t0, t1, q)) return 0;
  uint64_t tmp[4];
  memcpy(tmp, r0, sizeof tmp), memcpy(r0, r1, sizeof tmp), memcpy(r1, tmp, sizeof tmp);
  memcpy(tmp, t0, sizeof tmp), memcpy(t0, t1, sizeof tmp), memcpy(t1, tmp, sizeof tmp);
  return 1;
}

/*
 * Short (c, d) with c = d k (mod 8L) and d odd: the extended Euclidean
 * algorithm on (8L, k), stopped at the first remainder under 2^128 (its
 * coefficient is then under 8L / 2^128 < 2^128), one step further when that
 * coefficient is even (consecutive coefficients are coprime, so the next is
 * odd). c >= 0 and |d| are written; d's sign goes to *dneg. 0 when a value
 * would not fit (never seen for a hash); the caller then takes the plain
 * path, which answers the same.
 */
static int lattice_split(uint64_t c[4], uint64_t d[4], int *dneg, const uint64_t k[4]) {
  uint64_t r0[4], r1[4], t0[4] = {0}, t1[4] = {1, 0, 0, 0};
  memcpy(r0, SC_8L, sizeof r0);
  memcpy(r1, k, sizeof r1);
  int steps = 0; /* t1's sign is (-1)^steps */
  while (u256_bits(r1) > 128) {
    if (!euclid_step(r0, r1, t0, t1)) return 0;
    steps++;
  }
  if ((t1[0] & 1) == 0) {
    if (!euclid_step(r0, r1, t0, t1)) return 0;
    steps++;
  }
  if (u256_bits(r1) > LATTICE_BITS - 8 || u256_bits(t1) > LATTICE_BITS - 8 || (t1[0] & 1) == 0) return 0;
  memcpy(c, r1, 32);
  memcpy(d, t1, 32);
  *dneg = steps & 1;
  return 1;
}

#if defined(__AVX512IFMA__) && defined(__AVX512VL__)
#define TXR_ED25519_AVX512 1
#include "ed25519_avx512.h"
const char txr_ed25519_arith[] = "avx512ifma";
/* A table entry: (Y - X, Y + X, Z, 2d T) in the four lanes (ed25519_avx512.h), for every point. */
typedef fe4 var_entry;
#define var_table fe4_table
#else
const char txr_ed25519_arith[] = "scalar";
typedef ge_cached var_entry;
#define var_table cached_table
#endif

#ifdef TXR_ED25519_AVX512
static void msm_tables_init(void) {
  fe one;
  fe_1(one);
  fe4_pack(&FE4_K2D, one, one, one, FE_D2);
}
#else
static void msm_tables_init(void) {}
#endif

/* r = [a]P + ... over up to eight terms, each a scalar of at most `nbits` bits
 * with its table of odd multiples: a variable point's, or the base point's. */
typedef struct {
  int8_t naf[LATTICE_BITS];
  const var_entry *c; /* or */
  const ge_niels *n; /* the base point's tables stay affine on both arithmetics: 120 bytes an entry, all four fit in L1 beside a key's */
} msm_term;

#ifdef TXR_ED25519_AVX512
/* On the vector unit: a 4-way doubling per bit, a 4-way addition per digit. */
static void msm_run(ge_p2 *out, const msm_term *terms, int nterms, int nbits) {
  int i = nbits - 1;
  for (; i >= 0; i--) {
    int any = 0;
    for (int j = 0; j < nterms; j++) any |= terms[j].naf[i];
    if (any) break;
  }
  fe4 P, Q;
  {
    fe zero, one;
    fe_0(zero);
    fe_1(one);
    fe4_pack(&P, zero, one, one, zero);
  }
  for (; i >= 0; i--) {
    fe4_dbl(&P);
    for (int j = 0; j < nterms; j++) {
      const int8_t d = terms[j].naf[i];
      if (d == 0) continue;
      const int k = (d > 0 ? d : -d) / 2;
      const fe4 *e = &Q;
      if (terms[j].c != NULL) e = &terms[j].c[k];
      else fe4_from_niels(&Q, &terms[j].n[k]);
      if (d < 0) {
        fe4_neg_cached(&Q, e);
        e = &Q;
      }
      fe4_add(&P, e);
    }
  }
  fe lanes[4];
  fe4_unpack(lanes, &P);
  fe_copy(out->X, lanes[0]);
  fe_copy(out->Y, lanes[1]);
  fe_copy(out->Z, lanes[2]);
}
#else
static void msm_run(ge_p2 *out, const msm_term *terms, int nterms, int nbits) {
  ge_p2 r;
  ge_p3 u;
  ge_p1p1 t;
  int i = nbits - 1;
  for (; i >= 0; i--) {
    int any = 0;
    for (int j = 0; j < nterms; j++) any |= terms[j].naf[i];
    if (any) break;
  }
  fe_0(r.X);
  fe_1(r.Y);
  fe_1(r.Z);
  for (; i >= 0; i--) {
    p2_dbl(&t, &r);
    for (int j = 0; j < nterms; j++) {
      int8_t d = terms[j].naf[i];
      if (d == 0) continue;
      p1p1_to_p3(&u, &t);
      if (terms[j].c != NULL) {
        if (d > 0) ge_add(&t, &u, &terms[j].c[d / 2]);
        else ge_sub(&t, &u, &terms[j].c[(-d) / 2]);
      } else {
        if (d > 0) ge_madd(&t, &u, &terms[j].n[d / 2]);
        else ge_msub(&t, &u, &terms[j].n[(-d) / 2]);
      }
    }
    p1p1_to_p2(&r, &t);
  }
  *out = r;
}

#endif

/*
 * The same sum for a key seen before, with its tables for 2^(64j)A ready:
 * both scalars split in 64-bit quarters share 72 doublings instead of 253.
 */
static void split_scalarmult(ge_p2 *out, const uint64_t a[4], const var_entry At[4][8], const uint64_t b[4]) {
  enum { NB = 72 }; /* 64 bits plus the last window's carry */
  msm_term terms[8];
  int8_t naf[256];
  for (int j = 0; j < 4; j++) {
    const uint64_t ka[4] = {a[j], 0, 0, 0}, kb[4] = {b[j], 0, 0, 0};
    sc_wnaf(naf, ka, 5, NB);
    memcpy(terms[2 * j].naf, naf, NB);
    terms[2 * j].c = At[j], terms[2 * j].n = NULL;
    sc_wnaf(naf, kb, 8, NB);
    memcpy(terms[2 * j + 1].naf, naf, NB);
    terms[2 * j + 1].c = NULL, terms[2 * j + 1].n = BASE_SPLIT[j];
  }
  msm_run(out, terms, 8, NB);
}

/* Two points decoded as ge_frombytes would each: 1 when both decode. */
static int ge_frombytes_pair(ge_p3 *h0, const uint8_t s0[32], ge_p3 *h1, const uint8_t s1[32]) {
  ge_decoding d0, d1;
  fe pw0, pw1;
  ge_decode_begin(h0, &d0, s0);
  ge_decode_begin(h1, &d1, s1);
#ifdef TXR_ED25519_AVX512
  fe4 z, p;
  fe lanes[4];
  fe4_pack(&z, d0.t, d1.t, d0.t, d1.t);
  fe4_pow22523(&p, &z);
  fe4_unpack(lanes, &p);
  fe_copy(pw0, lanes[0]);
  fe_copy(pw1, lanes[1]);
#else
  fe_pow22523(pw0, d0.t);
  fe_pow22523(pw1, d1.t);
#endif
  const int ok0 = ge_decode_end(h0, &d0, pw0, s0);
  return ge_decode_end(h1, &d1, pw1, s1) && ok0;
}

/*
 * The check for a key without tables, given -A and -R decoded: 1 accept, 0 refuse,
 * -1 when the reduction declined (the caller takes the plain path).
 */
static int verify_lattice(const ge_p3 *negA, const ge_p3 *negR, const uint64_t h[4], const uint64_t s[4]) {
  uint64_t c[4], d[4];
  int dneg;
  if (!lattice_split(c, d, &dneg, h)) return -1;
  /* With d < 0, negate both: (-c) = (-d) h, so d > 0 and c carries the sign. */
  const int cneg = dneg;
  /* e = d S mod L (d < 2^132, S < 2^253: the product fits in 512 bits). */
  uint8_t prod[64];
  {
    uint64_t acc[8] = {0};
    for (int i = 0; i < 3; i++) {
      u128 carry = 0;
      for (int j = 0; j < 4; j++) {
        u128 t = (u128)d[i] * s[j] + acc[i + j] + carry;
        acc[i + j] = (uint64_t)t;
        carry = t >> 64;
      }
      acc[i + 4] = (uint64_t)carry;
    }
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++) prod[8 * i + j] = (uint8_t)(acc[i] >> (8 * j));
  }
  uint64_t e[4];
  sc_reduce512(e, prod);
  /* -[c]A from the table of -A (c >= 0) or of A (c < 0); -[d]R from -R. */
  var_entry tA[8], tR[8];
  ge_p3 A = *negA;
  if (cneg) {
    fe_neg(A.X, A.X);
    fe_neg(A.T, A.T);
  }
  var_table(tA, &A);
  var_table(tR, negR);
  const uint64_t elo[4] = {e[0], e[1], 0, 0}, ehi[4] = {e[2], e[3], 0, 0};
  msm_term terms[4] = {{.c = tA}, {.c = tR}, {.n = BASE_SPLIT[0]}, {.n = BASE_SPLIT[2]}};
  int8_t naf[256];
  const uint64_t *k[4] = {c, d, elo, ehi};
  for (int j = 0; j < 4; j++) {
    sc_wnaf(naf, k[j], j < 2 ? 5 : 8, LATTICE_BITS);
    memcpy(terms[j].naf, naf, LATTICE_BITS);
  }
  ge_p2 Q;
  msm_run(&Q, terms, 4, LATTICE_BITS);
  /* Q = O: X = 0 and Y = Z. */
  fe t;
  fe_sub(t, Q.Y, Q.Z);
  return fe_iszero(Q.X) && fe_iszero(t);
}

/*
 * Per-thread memory of recent keys (docs: native/README.md): a key is
 * remembered when first seen, and its split tables are built when it is seen
 * again, so one-off keys cost nothing extra. 16 sets of 8 ways, chosen by the
 * key's first byte: keys are uniform, and a direct-mapped table of the same
 * size let two hot keys that share a slot evict each other on every check.
 * The victim is an empty way, else the least recently used key seen only
 * once, else the least recently used: a stream of one-off keys does not push
 * out keys whose tables are built. Only keys that passed every check and
 * decoded are stored.
 */
#define KEY_SETS 16
#define KEY_WAYS 8
typedef struct {
  uint8_t key[32];
  uint8_t state; /* 0 empty, 1 seen once, 2 tables ready */
  uint32_t used; /* the cache's clock at the last check with this key */
  var_entry t[4][8];
} key_slot;
struct txr_ed25519_cache {
  uint32_t clock;
  uint64_t prefix[KEY_SETS][KEY_WAYS]; /* each way's first 8 key bytes, searched before the key itself */
  key_slot slot[KEY_SETS][KEY_WAYS];
};

/* The way holding pk, or NULL. */
static key_slot *cache_lookup(txr_ed25519_cache *c, const uint8_t pk[32]) {
  const unsigned set = pk[0] % KEY_SETS;
  const uint64_t pre = load64_le(pk);
  key_slot *ways = c->slot[set];
  for (int w = 0; w < KEY_WAYS; w++) {
    if (c->prefix[set][w] == pre && ways[w].state != 0 && memcmp(ways[w].key, pk, 32) == 0) {
      ways[w].used = ++c->clock;
      return &ways[w];
    }
  }
  return NULL;
}

/* Remembers pk as seen once, in its set's victim way. */
static void cache_insert(txr_ed25519_cache *c, const uint8_t pk[32]) {
  const unsigned set = pk[0] % KEY_SETS;
  key_slot *ways = c->slot[set];
  const uint32_t now = ++c->clock;
  key_slot *victim = NULL;
  for (int w = 0; w < KEY_WAYS && victim == NULL; w++)
    if (ways[w].state == 0) victim = &ways[w];
  for (int pass = 1; pass <= 2 && victim == NULL; pass++) {
    uint32_t oldest = 0;
    for (int w = 0; w < KEY_WAYS; w++) {
      if (pass == 1 && ways[w].state != 1) continue;
      const uint32_t age = now - ways[w].used;
      if (victim == NULL || age > oldest) {
        victim = &ways[w];
        oldest = age;
      }
    }
  }
  c->prefix[set][victim - ways] = load64_le(pk);
  memcpy(victim->key, pk, 32);
  victim->state = 1;
  victim->used = now;
}

/* Aligned for the vector tables (32-byte loads); zeroed, so every way starts empty. */
txr_ed25519_cache *txr_ed25519_cache_new(void) {
  /* C11: the size is a multiple of the struct's alignment, as aligned_alloc requires. */
  void *p = aligned_alloc(_Alignof(txr_ed25519_cache), sizeof(txr_ed25519_cache));
  if (p == NULL) return NULL;
  memset(p, 0, sizeof(txr_ed25519_cache));
  return (txr_ed25519_cache *)p;
}
void txr_ed25519_cache_free(txr_ed25519_cache *c) { free(c); }

/* libsodium's blocklist: encodings (sign bit ignored) whose y is that of a
 * point of order 1, 2, 4 or 8, canonical or not (y = 0, 1, the two order-8
 * values, p - 1, p, p + 1). */
static int enc_has_small_order(const uint8_t s[32]) {
  static const uint8_t block[7][32] = {
      {0},
      {1},
      {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
       0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
      {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
       0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
      {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
      {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
  };
  for (int i = 0; i < 7; i++) {
    if (memcmp(s, block[i], 31) == 0 && (s[31] & 0x7f) == block[i][31]) return 1;
  }
  return 0;
}

/*
 * The rule (docs/protocol.md): S < L; R and A not on the small-order
 * blocklist; A canonical and a point; then the encoding of [S]B - [h]A must
 * equal R byte for byte (cofactorless, and R canonical by construction).
 * A key with tables takes the split path and returns before its last step,
 * the sign of x (which needs 1/Z, shared in a batch): 0 when the signature
 * is already refused, 1 when it stands if P's x has R's sign bit. Any other
 * key takes the lattice path (verify_lattice), which needs no inversion:
 * 2 accepted, 0 refused.
 */
/* Which way [S]B - [h]A is found; AUTO picks by the cache, the others exist for native/test/paths.c. */
enum { PATH_AUTO, PATH_PLAIN, PATH_LATTICE, PATH_SPLIT };

static int verify_path(txr_ed25519_cache *cache, int path, const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32], ge_p2 *P) {
  ge_p3 A, R;
  uint8_t h[64];
  uint64_t hs[4], s[4];
  if (!sc_is_canonical(sig + 32) || enc_has_small_order(sig)) return 0;
  if (!ge_is_canonical(pk) || enc_has_small_order(pk)) return 0;
  key_slot *slot = NULL, own;
  int ready = 0;
  if (cache != NULL && path == PATH_AUTO) {
    slot = cache_lookup(cache, pk);
    ready = slot != NULL && slot->state == 2;
  } else if (path == PATH_SPLIT) {
    slot = &own;
    slot->state = 1;
  }
  /* A key with no tables and none to build takes the lattice path, which needs R as a point too. */
  const int lattice = !ready && slot == NULL && path != PATH_PLAIN;
  if (lattice) {
    /* R canonical and a point, else no encoding of a point equals it (every
     * path refuses it); decoded with A, the two share one exponentiation. */
    if (!ge_is_canonical(sig) || !ge_frombytes_pair(&A, pk, &R, sig)) return 0;
    /* x = 0 with the sign bit set encodes no point (and is on the blocklist anyway). */
    if ((sig[31] >> 7) && fe_iszero(R.X)) return 0;
    fe_neg(R.X, R.X);
    fe_neg(R.T, R.T);
  } else if (!ready && !ge_frombytes(&A, pk)) {
    return 0;
  }
  if (!ready) {
    /* -A, so the sum is [s]B - [h]A. */
    fe_neg(A.X, A.X);
    fe_neg(A.T, A.T);
  }
  sha512_rkm(h, sig, pk, m, mlen);
  sc_reduce512(hs, h);
  sc_from32(s, sig + 32);
  if (slot != NULL && slot->state == 1) {
    /* Seen before: build 2^(64j)(-A) tables once. */
    ge_p3 Aj = A;
    for (int j = 0; j < 4; j++) {
      var_table(slot->t[j], &Aj);
      if (j < 3) p3_dbl_n(&Aj, 64);
    }
    slot->state = 2;
    ready = 1;
  } else if (slot == NULL && cache != NULL && path == PATH_AUTO) {
    cache_insert(cache, pk);
  }
  if (ready) {
    split_scalarmult(P, hs, (const var_entry(*)[8])slot->t, s);
  } else {
    if (lattice) {
      const int r = verify_lattice(&A, &R, hs, s);
      if (r >= 0) return r ? 2 : 0;
      if (path == PATH_LATTICE) return -1;
    }
    double_scalarmult(P, hs, &A, s);
  }
  /* The encoding of P must be R. A non-canonical R never is one; and y = Y/Z
   * is checked as y_R Z = Y first, so a wrong signature costs no inversion. */
  fe y;
  if (!ge_is_canonical(sig)) return 0;
  fe_frombytes(y, sig);
  fe_mul(y, y, P->Z);
  fe_sub(y, y, P->Y);
  return fe_iszero(y);
}

static int verify_upto_sign(txr_ed25519_cache *cache, const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32], ge_p2 *P) {
  return verify_path(cache, PATH_AUTO, sig, m, mlen, pk, P);
}

/* The last step, given zi = 1/Z: y is already R's, so the encodings are equal iff the sign bits are. */
static int sign_matches(const uint8_t sig[64], const ge_p2 *P, const fe zi) {
  fe x;
  fe_mul(x, P->X, zi);
  return fe_isnegative(x) == (sig[31] >> 7);
}

int txr_ed25519_verify_cached(txr_ed25519_cache *cache, const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32]) {
  ge_p2 P;
  fe zi;
  const int r = verify_upto_sign(cache, sig, m, mlen, pk, &P);
  if (r != 1) return r == 2;
  fe_invert(zi, P.Z);
  return sign_matches(sig, &P, zi);
}

/*
 * n single checks (n <= TXR_ED25519_BATCH_MAX) sharing one field inversion
 * (Montgomery's trick: 3 multiplications each instead of an inversion each).
 * Each answer is exactly txr_ed25519_verify_cached's: nothing is combined
 * across signatures, so no input can change another's answer
 * (docs/protocol.md, "Signature rule"). Returns how many are valid.
 */
size_t txr_ed25519_verify_batch(txr_ed25519_cache *cache, size_t n, const txr_ed25519_item *items, uint8_t *ok) {
  ge_p2 P[TXR_ED25519_BATCH_MAX];
  fe acc[TXR_ED25519_BATCH_MAX];
  size_t idx[TXR_ED25519_BATCH_MAX];
  size_t k = 0, valid = 0;
  if (n > TXR_ED25519_BATCH_MAX) n = TXR_ED25519_BATCH_MAX;
  for (size_t i = 0; i < n; i++) {
    const int r = verify_upto_sign(cache, items[i].sig, items[i].msg, items[i].msg_len, items[i].key, &P[k]);
    ok[i] = r == 2;
    valid += r == 2;
    if (r != 1) continue;
    /* Z is never 0 on this curve (complete formulas), so the product is invertible. */
    if (k == 0) fe_copy(acc[0], P[0].Z);
    else fe_mul(acc[k], acc[k - 1], P[k].Z);
    idx[k++] = i;
  }
  if (k == 0) return valid;
  fe inv, zi;
  fe_invert(inv, acc[k - 1]);
  for (size_t j = k; j-- > 0;) {
    if (j > 0) {
      fe_mul(zi, inv, acc[j - 1]);
      fe_mul(inv, inv, P[j].Z);
    } else {
      fe_copy(zi, inv);
    }
    if (sign_matches(items[idx[j]].sig, &P[j], zi)) {
      ok[idx[j]] = 1;
      valid++;
    }
  }
  return valid;
}

int txr_ed25519_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32]) {
  return txr_ed25519_verify_cached(NULL, sig, m, mlen, pk);
}

#ifdef TXR_ED25519_TEST_PATHS
/* One path forced (PATH_PLAIN 1, PATH_LATTICE 2, PATH_SPLIT 3): 1 accept, 0 refuse, -1 the lattice path declined. */
int txr_ed25519_verify_path(int path, const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32]) {
  ge_p2 P;
  fe zi;
  const int r = verify_path(NULL, path, sig, m, mlen, pk, &P);
  if (r != 1) return r == 2 ? 1 : r;
  fe_invert(zi, P.Z);
  return sign_matches(sig, &P, zi);
}
#endif

static void ge_p3_tobytes(uint8_t out[32], const ge_p3 *P) {
  fe_tobytes(out, P->Y);
  out[31] |= (uint8_t)(fe_isnegative(P->X) << 7);
}

/* The canonical encoding of the point `s` decodes to; 0 when it does not
 * decode (point-decoder fuzz target). Decoded by both decoders, the one
 * every path uses for A and the pair decoder of the lattice path (its
 * exponentiation on the vector unit where built), both lanes: -1 when any
 * of them disagrees. */
int txr_ed25519_decode_point(uint8_t out[32], const uint8_t s[32]) {
  ge_p3 P, Q0, Q1;
  const int ok = ge_frombytes(&P, s);
  if (ge_frombytes_pair(&Q0, s, &Q1, s) != ok) return -1;
  if (!ok) return 0;
  uint8_t e0[32], e1[32];
  ge_p3_tobytes(out, &P);
  ge_p3_tobytes(e0, &Q0);
  ge_p3_tobytes(e1, &Q1);
  return memcmp(out, e0, 32) == 0 && memcmp(out, e1, 32) == 0 ? 1 : -1;
}

#endif /* __SIZEOF_INT128__ */
