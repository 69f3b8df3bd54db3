/*
 * The multi-scalar multiplication of native/ed25519.c with AVX-512 IFMA
 * (included by ed25519.c when the compiler targets AVX512IFMA and AVX512VL;
 * the addon is built with -march=native on the host that runs it).
 *
 * A point (X, Y, Z, T) lives in one vector: lane i of limb vector k is limb k
 * of coordinate i, radix 2^51. Doubling and addition are the extended
 * twisted Edwards formulas for a = -1 (Hisil, Wong, Carter and Dawson,
 * "Twisted Edwards curves revisited", 2008: dbl-2008-hwcd and
 * add-2008-hwcd-3), which end in four independent products: each step is
 * a 4-way multiplication, lane shuffles and additions, and a second 4-way
 * multiplication. vpmadd52luq / vpmadd52huq take the low 52 bits of each
 * operand, so every multiplication input is carried first (limbs below
 * 2^51 + 2^15). The same 4-way squaring also serves point decoding: the
 * square roots for A and R as one exponentiation (fe4_pow22523).
 */
#include <immintrin.h>

typedef struct {
  __m256i v[5];
} fe4;

#define V_M51 _mm256_set1_epi64x((long long)M51)

/* k p limb by limb (k = 2, 4, 8): added before a subtraction so no limb goes negative. */
static inline __m256i kp_limb(int k, int i) {
  return _mm256_set1_epi64x((long long)((i == 0 ? (UINT64_C(1) << 51) - 19 : M51) * (uint64_t)k));
}

/* Limbs < 2^51 + 2^15 (inputs below 2^61), below IFMA's 52 bits: every
 * limb's carry is taken at once and added one limb up (19 times into limb 0),
 * so the carry costs one step of latency rather than a chain of six. */
static inline void fe4_carry(fe4 *h) {
  __m256i c[5];
  for (int i = 0; i < 5; i++) {
    c[i] = _mm256_srli_epi64(h->v[i], 51);
    h->v[i] = _mm256_and_si256(h->v[i], V_M51);
  }
  const __m256i c19 = _mm256_add_epi64(_mm256_add_epi64(_mm256_slli_epi64(c[4], 4), _mm256_slli_epi64(c[4], 1)), c[4]);
  h->v[0] = _mm256_add_epi64(h->v[0], c19);
  for (int i = 1; i < 5; i++) h->v[i] = _mm256_add_epi64(h->v[i], c[i - 1]);
}

/* h = the columns lo[k] + 2^52 hi[k] (k = 0..8) reduced mod p and carried. */
static inline void fe4_reduce(fe4 *h, const __m256i lo[9], const __m256i hi[9]) {
  /* A product's high half sits 52 bits up: twice one limb (2^51) up. */
  __m256i z[10];
  z[0] = lo[0];
  for (int k = 1; k < 9; k++) z[k] = _mm256_add_epi64(lo[k], _mm256_slli_epi64(hi[k - 1], 1));
  z[9] = _mm256_slli_epi64(hi[8], 1);
  /* 2^255 = 19 (mod p). */
  for (int k = 5; k < 10; k++) {
    __m256i t = z[k];
    t = _mm256_add_epi64(_mm256_add_epi64(_mm256_slli_epi64(t, 4), _mm256_slli_epi64(t, 1)), t);
    z[k - 5] = _mm256_add_epi64(z[k - 5], t);
  }
  for (int k = 0; k < 5; k++) h->v[k] = z[k];
  fe4_carry(h);
}

/* h = f g lane by lane; f and g limbs < 2^52; h carried. */
static inline void fe4_mul(fe4 *h, const fe4 *f, const fe4 *g) {
  __m256i lo[9], hi[9];
  for (int k = 0; k < 9; k++) lo[k] = hi[k] = _mm256_setzero_si256();
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 5; j++) {
      lo[i + j] = _mm256_madd52lo_epu64(lo[i + j], f->v[i], g->v[j]);
      hi[i + j] = _mm256_madd52hi_epu64(hi[i + j], f->v[i], g->v[j]);
    }
  }
  fe4_reduce(h, lo, hi);
}

/* h = f^2 lane by lane, f's limbs < 2^52: each cross product once, the
 * columns doubled, then the squares (30 multiply-adds instead of 50; a
 * column stays below 2^55, as in fe4_mul). */
static inline void fe4_sq(fe4 *h, const fe4 *f) {
  __m256i lo[9], hi[9];
  for (int k = 0; k < 9; k++) lo[k] = hi[k] = _mm256_setzero_si256();
  for (int i = 0; i < 5; i++) {
    for (int j = i + 1; j < 5; j++) {
      lo[i + j] = _mm256_madd52lo_epu64(lo[i + j], f->v[i], f->v[j]);
      hi[i + j] = _mm256_madd52hi_epu64(hi[i + j], f->v[i], f->v[j]);
    }
  }
  for (int k = 1; k < 8; k++) {
    lo[k] = _mm256_slli_epi64(lo[k], 1);
    hi[k] = _mm256_slli_epi64(hi[k], 1);
  }
  for (int i = 0; i < 5; i++) {
    lo[2 * i] = _mm256_madd52lo_epu64(lo[2 * i], f->v[i], f->v[i]);
    hi[2 * i] = _mm256_madd52hi_epu64(hi[2 * i], f->v[i], f->v[i]);
  }
  fe4_reduce(h, lo, hi);
}

#define FE4_MAP(h, expr)                        \
  do {                                          \
    for (int i_ = 0; i_ < 5; i_++) (h).v[i_] = (expr); \
  } while (0)

/* Each lane gets lane `l` of f (l = 0..3). */
#define BCAST(f, l) _mm256_permute4x64_epi64((f).v[i_], (l) * 0x55)

/* (E, G, F, E) and (F, H, G, H), carried, then their product: both formulas end here. */
static inline void fe4_finish(fe4 *P, const fe4 *E, const fe4 *F, const fe4 *G, const fe4 *H) {
  fe4 l, r;
  FE4_MAP(l, _mm256_blend_epi32(_mm256_blend_epi32(E->v[i_], G->v[i_], 0x0C), F->v[i_], 0x30));
  FE4_MAP(r, _mm256_blend_epi32(_mm256_blend_epi32(H->v[i_], F->v[i_], 0x03), G->v[i_], 0x30));
  fe4_carry(&l);
  fe4_carry(&r);
  fe4_mul(P, &l, &r);
}

/* P = 2P (dbl-2008-hwcd, a = -1). */
static inline void fe4_dbl(fe4 *P) {
  fe4 t, S, E, F, G, H;
  /* (X, Y, Z, X + Y) */
  FE4_MAP(t, _mm256_add_epi64(_mm256_permute4x64_epi64(P->v[i_], 0x24),
                              _mm256_blend_epi32(_mm256_setzero_si256(), _mm256_permute4x64_epi64(P->v[i_], 0x55), 0xC0)));
  fe4_carry(&t);
  fe4_sq(&S, &t); /* (XX, YY, ZZ, (X + Y)^2) */
  /* G = YY - XX, H = -XX - YY, E = (X + Y)^2 - XX - YY, F = G - 2 ZZ */
  FE4_MAP(G, _mm256_sub_epi64(_mm256_add_epi64(BCAST(S, 1), kp_limb(2, i_)), BCAST(S, 0)));
  FE4_MAP(H, _mm256_sub_epi64(_mm256_sub_epi64(kp_limb(4, i_), BCAST(S, 0)), BCAST(S, 1)));
  FE4_MAP(E, _mm256_sub_epi64(_mm256_sub_epi64(_mm256_add_epi64(BCAST(S, 3), kp_limb(4, i_)), BCAST(S, 0)), BCAST(S, 1)));
  FE4_MAP(F, _mm256_sub_epi64(_mm256_sub_epi64(_mm256_add_epi64(BCAST(S, 1), kp_limb(8, i_)), BCAST(S, 0)),
                              _mm256_slli_epi64(BCAST(S, 2), 1)));
  fe4_finish(P, &E, &F, &G, &H);
}

/* (Y - X, Y + X, Z, T) from (X, Y, Z, T), carried: the first step of an addition and of the table form. */
static inline void fe4_sum_diff(fe4 *t, const fe4 *P) {
  FE4_MAP(*t, _mm256_add_epi64(
                  _mm256_permute4x64_epi64(P->v[i_], 0xE5),
                  _mm256_blend_epi32(
                      _mm256_blend_epi32(_mm256_setzero_si256(), _mm256_sub_epi64(kp_limb(2, i_), BCAST(*P, 0)), 0x03),
                      BCAST(*P, 0), 0x0C)));
  fe4_carry(t);
}

/* P = P + Q, Q as (Y - X, Y + X, Z, 2d T) with limbs < 2^52 (add-2008-hwcd-3, a = -1). */
static inline void fe4_add(fe4 *P, const fe4 *Q) {
  fe4 t, m, E, F, G, H;
  fe4_sum_diff(&t, P);
  fe4_mul(&m, &t, Q); /* (A, B, Z1 Z2, C) */
  /* E = B - A, H = B + A, F = D - C, G = D + C with D = 2 Z1 Z2 */
  FE4_MAP(E, _mm256_sub_epi64(_mm256_add_epi64(BCAST(m, 1), kp_limb(2, i_)), BCAST(m, 0)));
  FE4_MAP(H, _mm256_add_epi64(BCAST(m, 1), BCAST(m, 0)));
  FE4_MAP(F, _mm256_sub_epi64(_mm256_add_epi64(_mm256_slli_epi64(BCAST(m, 2), 1), kp_limb(4, i_)), BCAST(m, 3)));
  FE4_MAP(G, _mm256_add_epi64(_mm256_slli_epi64(BCAST(m, 2), 1), BCAST(m, 3)));
  fe4_finish(P, &E, &F, &G, &H);
}

/* Lanes (a, b, c, d) from four field elements (limbs < 2^52). */
static inline void fe4_pack(fe4 *h, const fe a, const fe b, const fe c, const fe d) {
  for (int i = 0; i < 5; i++) h->v[i] = _mm256_set_epi64x((long long)d[i], (long long)c[i], (long long)b[i], (long long)a[i]);
}

/* -Q for Q = (Y - X, Y + X, Z, 2d T): the first two lanes swapped, the last negated. */
static inline void fe4_neg_cached(fe4 *h, const fe4 *q) {
  for (int i = 0; i < 5; i++) {
    const __m256i sw = _mm256_permute4x64_epi64(q->v[i], 0xE1); /* (1, 0, 2, 3) */
    h->v[i] = _mm256_blend_epi32(sw, _mm256_sub_epi64(kp_limb(2, i), q->v[i]), 0xC0);
  }
}

/* Lanes (1, 1, 1, 2d), set by ed25519_init. */
static fe4 FE4_K2D;

/* (X, Y, Z, T) to the table form (Y - X, Y + X, Z, 2d T), carried. */
static inline void fe4_to_cached(fe4 *h, const fe4 *P) {
  fe4 t;
  fe4_sum_diff(&t, P);
  fe4_mul(h, &t, &FE4_K2D);
}

/* out[i] = (2i + 1)P in table form, i = 0..7 (P's limbs carried). */
static void fe4_table(fe4 out[8], const ge_p3 *P) {
  fe4 P4, D, d2;
  fe4_pack(&P4, P->X, P->Y, P->Z, P->T);
  D = P4;
  fe4_dbl(&D);
  fe4_to_cached(&d2, &D);
  fe4_to_cached(&out[0], &P4);
  for (int i = 1; i < 8; i++) {
    fe4_add(&P4, &d2);
    fe4_to_cached(&out[i], &P4);
  }
}

static void fe4_from_niels(fe4 *h, const ge_niels *q) {
  fe one;
  fe_1(one);
  fe4_pack(h, q->yminusx, q->yplusx, one, q->xy2d);
}

/* The four lanes of f as field elements. */
static void fe4_unpack(fe out[4], const fe4 *f) {
  for (int k = 0; k < 5; k++) {
    uint64_t tmp[4];
    _mm256_storeu_si256((__m256i *)tmp, f->v[k]);
    for (int l = 0; l < 4; l++) out[l][k] = tmp[l];
  }
}

static inline void fe4_sqn(fe4 *h, const fe4 *f, int n) {
  fe4_sq(h, f);
  while (--n > 0) fe4_sq(h, h);
}

/* z^((p - 5) / 8) = z^(2^252 - 3) in each lane (fe_pow22523's chain): the
 * square roots of two point decodings in the time of about one, as a
 * dependent chain of 4-way squarings is about as fast as one of scalar ones. */
static void fe4_pow22523(fe4 *out, const fe4 *z) {
  fe4 z2, t, z9, z11, a, b, c;
  fe4_sq(&z2, z);
  fe4_sqn(&t, &z2, 2);
  fe4_mul(&z9, &t, z);
  fe4_mul(&z11, &z9, &z2);
  fe4_sq(&t, &z11);
  fe4_mul(&a, &t, &z9);          /* 2^5 - 1 */
  fe4_sqn(&t, &a, 5);
  fe4_mul(&a, &t, &a);           /* 2^10 - 1 */
  fe4_sqn(&t, &a, 10);
  fe4_mul(&b, &t, &a);           /* 2^20 - 1 */
  fe4_sqn(&t, &b, 20);
  fe4_mul(&t, &t, &b);           /* 2^40 - 1 */
  fe4_sqn(&t, &t, 10);
  fe4_mul(&b, &t, &a);           /* 2^50 - 1 */
  fe4_sqn(&t, &b, 50);
  fe4_mul(&c, &t, &b);           /* 2^100 - 1 */
  fe4_sqn(&t, &c, 100);
  fe4_mul(&t, &t, &c);           /* 2^200 - 1 */
  fe4_sqn(&t, &t, 50);
  fe4_mul(&t, &t, &b);           /* 2^250 - 1 */
  fe4_sqn(&t, &t, 2);
  fe4_mul(out, &t, z);           /* 2^252 - 3 */
}
