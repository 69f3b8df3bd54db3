/*
 * base58 with the Bitcoin/Solana alphabet (the encoding Solana uses for
 * signatures, public keys and `encoding: "base58"` transactions), as a
 * plain-C N-API addon for txrelay's hot path. See README.md beside it for why and for
 * the measured speed-up over the `bs58` package.
 *
 * Exports:
 *   encode(buf: Uint8Array): string
 *   encode64At(buf: Uint8Array, offset: number): string
 *   decode(str: string, maxLen?: number): Uint8Array | null
 *   maxBytes: number
 *
 * The addon keeps no mutable global state and registers with
 * NAPI_MODULE_INIT, so it can be loaded by several worker threads at once.
 */
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <stdint.h>
#include <string.h>

/*
 * Every temporary lives on the stack, sized for B58_MAX_BYTES. 4096 bytes is
 * 3x Solana's 1232-byte packet limit; anything larger is refused with a
 * TypeError and the JS wrapper routes it to the JS fallback.
 */
#define B58_MAX_BYTES 4096
/* Encoded length of n bytes is at most ceil(n * log(256)/log(58)) =
 * ceil(n * 1.36566); n * 138/100 + 1 bounds that from above. */
#define B58_MAX_CHARS_FOR(n) ((size_t)(n) * 138 / 100 + 1)
#define B58_MAX_CHARS B58_MAX_CHARS_FOR(B58_MAX_BYTES)

/*
 * The speed trick: instead of one base-58 digit (or one byte) per step, work
 * in the largest radixes whose products still fit 64-bit arithmetic.
 *   encode: the number is kept in limbs of base 58^5 (< 2^29.3) and absorbs
 *           32 input bits per step: limb * 2^32 + carry < 2^62.
 *   decode: the number is kept in limbs of base 2^32 and absorbs 5 digits
 *           (58^5 < 2^32) per step: limb * 58^5 + carry < 2^62.
 * That is ~20x fewer inner-loop steps than the textbook byte-by-byte loop,
 * and every division is by a constant, which the compiler turns into a
 * multiply.
 */
#define R58_5 656356768u /* 58^5 */

/* Limb counts: log2(58^5) = 29.29 > 29 and log2(58) = 5.86 < 6. */
#define ENC_LIMBS ((B58_MAX_BYTES * 8) / 29 + 2)
#define DEC_LIMBS ((B58_MAX_CHARS * 6) / 32 + 2)

static const char ALPHABET[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/* ASCII -> digit, -1 for everything outside the alphabet (0, O, I, l, ...). */
static const int8_t DIGIT[128] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, 0,  1,  2,  3,  4,  5,  6,  7,  8,  -1, -1, -1, -1, -1, -1,
    -1, 9,  10, 11, 12, 13, 14, 15, 16, -1, 17, 18, 19, 20, 21, -1,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1, -1, -1, -1, -1,
    -1, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, -1, 44, 45, 46,
    47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, -1, -1, -1, -1, -1,
};

/* Base-58^5 limbs (little-endian) of a big-endian number. */
static size_t b58_encode_limbs(const uint8_t *in, size_t n, uint32_t *limb) {
  size_t nl = 0;
  size_t i = 0;
  if (i < n) {
    /* The first chunk takes the odd n % 4 bytes so the rest are whole 32-bit
     * words; the number is zero before it, so it just seeds the limbs. */
    size_t first = n % 4 == 0 ? 4 : n % 4;
    uint64_t v = 0;
    for (size_t k = 0; k < first; k++) v = (v << 8) | in[i++];
    while (v != 0) {
      limb[nl++] = (uint32_t)(v % R58_5);
      v /= R58_5;
    }
  }
  for (; i < n; i += 4) {
    uint64_t carry = ((uint64_t)in[i] << 24) | ((uint64_t)in[i + 1] << 16) |
                     ((uint64_t)in[i + 2] << 8) | in[i + 3];
    for (size_t j = 0; j < nl; j++) {
      uint64_t acc = ((uint64_t)limb[j] << 32) + carry;
      limb[j] = (uint32_t)(acc % R58_5);
      carry = acc / R58_5;
    }
    while (carry != 0) {
      limb[nl++] = (uint32_t)(carry % R58_5);
      carry /= R58_5;
    }
  }
  return nl;
}

/* Encode bytes into the tail of buf (capacity cap); returns the first char. */
static char *b58_encode(const uint8_t *in, size_t n, char *buf, size_t cap) {
  uint32_t limb[ENC_LIMBS];
  size_t z = 0;
  while (z < n && in[z] == 0) z++;
  size_t nl = b58_encode_limbs(in + z, n - z, limb);

  /* Digits come least significant first, so fill buf from its end. Inner
   * limbs give exactly 5 digits; the top limb stops at its last non-zero
   * digit so the output has no spurious leading '1's. */
  char *p = buf + cap;
  for (size_t j = 0; j < nl; j++) {
    uint32_t v = limb[j];
    if (j + 1 < nl) {
      for (int k = 0; k < 5; k++) {
        *--p = ALPHABET[v % 58];
        v /= 58;
      }
    } else {
      while (v != 0) {
        *--p = ALPHABET[v % 58];
        v /= 58;
      }
    }
  }
  while (z-- > 0) *--p = '1';
  return p;
}

/* Limbs (little-endian, base 2^32) for the digits after the leading '1's.
 * Returns the limb count, or -1 on a character outside the alphabet. */
static long b58_decode_limbs(const uint16_t *s, size_t n, uint32_t *limb) {
  size_t nl = 0;
  size_t i = 0;
  while (i < n) {
    /* Same shape as encode: the first chunk takes the odd n % 5 digits. */
    size_t take = (i == 0 && n % 5 != 0) ? n % 5 : 5;
    uint64_t mul = 1;
    uint64_t carry = 0;
    for (size_t k = 0; k < take; k++, i++) {
      uint16_t c = s[i];
      if (c >= 128 || DIGIT[c] < 0) return -1;
      carry = carry * 58 + (uint64_t)DIGIT[c];
      mul *= 58;
    }
    for (size_t j = 0; j < nl; j++) {
      uint64_t acc = (uint64_t)limb[j] * mul + carry;
      limb[j] = (uint32_t)acc;
      carry = acc >> 32;
    }
    if (carry != 0) limb[nl++] = (uint32_t)carry;
  }
  return (long)nl;
}

/* ---- N-API glue ---------------------------------------------------------- */

#define CHECK(call)                                       \
  do {                                                    \
    if ((call) != napi_ok) return throw_last(env);        \
  } while (0)

/* Surface an engine-side failure (normally an exception already pending). */
static napi_value throw_last(napi_env env) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, "TXR_B58_INTERNAL", "base58: N-API call failed");
  return NULL;
}

/* Error codes follow src/errors.ts (TXR_*) so callers branch on codes. */
static napi_value type_error(napi_env env, const char *code, const char *msg) {
  napi_throw_type_error(env, code, msg);
  return NULL;
}

/* A Uint8Array's bytes (SharedArrayBuffer-backed ones included). */
static napi_value get_u8(napi_env env, napi_value v, const uint8_t **data, size_t *len) {
  bool is_ta = false;
  CHECK(napi_is_typedarray(env, v, &is_ta));
  if (!is_ta) return type_error(env, "TXR_B58_ARG", "base58: expected a Uint8Array");
  napi_typedarray_type type;
  void *p = NULL;
  CHECK(napi_get_typedarray_info(env, v, &type, len, &p, NULL, NULL));
  if (type != napi_uint8_array) return type_error(env, "TXR_B58_ARG", "base58: expected a Uint8Array");
  *data = (const uint8_t *)p;
  return v;
}

/* An integer argument in [lo, hi]. Returns false (nothing thrown) when the
 * value is not such an integer so each caller picks the error it means. */
static bool get_index(napi_env env, napi_value v, int64_t lo, int64_t hi, int64_t *out) {
  napi_valuetype t;
  double d;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return false;
  if (napi_get_value_double(env, v, &d) != napi_ok) return false;
  if (!(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d) return false;
  *out = (int64_t)d;
  return true;
}

static napi_value encode_to_string(napi_env env, const uint8_t *data, size_t len) {
  /* B58_MAX_BYTES for the leading '1's plus 5 chars per limb. */
  char buf[B58_MAX_BYTES + ENC_LIMBS * 5];
  char *p = b58_encode(data, len, buf, sizeof buf);
  napi_value out;
  CHECK(napi_create_string_latin1(env, p, (size_t)(buf + sizeof buf - p), &out));
  return out;
}

static napi_value js_encode(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) return type_error(env, "TXR_B58_ARG", "base58: expected a Uint8Array");
  const uint8_t *data = NULL;
  size_t len = 0;
  if (get_u8(env, argv[0], &data, &len) == NULL) return NULL;
  if (len > B58_MAX_BYTES) {
    return type_error(env, "TXR_B58_TOO_LARGE", "base58: input longer than the native limit (maxBytes)");
  }
  /* Snapshot first: a SharedArrayBuffer may change under us mid-encode. */
  uint8_t copy[B58_MAX_BYTES];
  if (len > 0) memcpy(copy, data, len);
  return encode_to_string(env, copy, len);
}

static napi_value js_encode64_at(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) return type_error(env, "TXR_B58_ARG", "base58: expected (Uint8Array, offset)");
  const uint8_t *data = NULL;
  size_t len = 0;
  if (get_u8(env, argv[0], &data, &len) == NULL) return NULL;
  int64_t off;
  if (len < 64 || !get_index(env, argv[1], 0, (int64_t)(len - 64), &off)) {
    napi_throw_range_error(env, "TXR_B58_RANGE", "base58: offset must be an integer with offset + 64 <= length");
    return NULL;
  }
  uint8_t copy[64];
  memcpy(copy, data + off, 64);
  return encode_to_string(env, copy, 64);
}

static napi_value js_decode(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_value undef;
  CHECK(napi_get_undefined(env, &undef));
  if (argc < 2) argv[1] = undef;
  if (argc < 1) argv[0] = undef;

  napi_valuetype t;
  CHECK(napi_typeof(env, argv[0], &t));
  if (t != napi_string) return type_error(env, "TXR_B58_ARG", "base58: expected a string");
  napi_valuetype mt;
  CHECK(napi_typeof(env, argv[1], &mt));
  int64_t max_len = B58_MAX_BYTES;
  if (mt != napi_undefined && !get_index(env, argv[1], 0, B58_MAX_BYTES, &max_len)) {
    return type_error(env, "TXR_B58_ARG", "base58: maxLen must be an integer in [0, maxBytes]");
  }

  napi_value null_v;
  CHECK(napi_get_null(env, &null_v));

  /* Reject on length alone before any quadratic work: a string longer than
   * the longest encoding of max_len bytes cannot decode to <= max_len bytes.
   * Copying at most cap + 1 UTF-16 units tells "too long" without measuring
   * the whole string. UTF-16 (not Latin-1) so that e.g. U+0131 is not
   * truncated to '1'. */
  size_t cap = B58_MAX_CHARS_FOR(max_len);
  uint16_t s[B58_MAX_CHARS + 2];
  size_t n = 0;
  CHECK(napi_get_value_string_utf16(env, argv[0], (char16_t *)s, cap + 2, &n));
  if (n > cap) return null_v;

  size_t z = 0;
  while (z < n && s[z] == '1') z++;
  if (z > (size_t)max_len) return null_v;

  uint32_t limb[DEC_LIMBS];
  long nl = b58_decode_limbs(s + z, n - z, limb);
  if (nl < 0) return null_v;

  /* Significant bytes: whole lower limbs plus the non-zero bytes of the top. */
  size_t sig = 0;
  if (nl > 0) {
    uint32_t top = limb[nl - 1];
    size_t top_bytes = top >= 0x1000000u ? 4 : top >= 0x10000u ? 3 : top >= 0x100u ? 2 : 1;
    sig = (size_t)(nl - 1) * 4 + top_bytes;
  }
  size_t total = z + sig;
  if (total > (size_t)max_len) return null_v;

  napi_value ab, out;
  void *abdata = NULL;
  CHECK(napi_create_arraybuffer(env, total, &abdata, &ab));
  uint8_t *o = (uint8_t *)abdata;
  if (z > 0) memset(o, 0, z);
  /* Big-endian bytes from the little-endian limbs, written from the end. */
  uint8_t *q = o + total;
  for (long j = 0; j + 1 < nl; j++) {
    uint32_t v = limb[j];
    *--q = (uint8_t)v;
    *--q = (uint8_t)(v >> 8);
    *--q = (uint8_t)(v >> 16);
    *--q = (uint8_t)(v >> 24);
  }
  if (nl > 0) {
    for (uint32_t v = limb[nl - 1]; v != 0; v >>= 8) *--q = (uint8_t)v;
  }
  CHECK(napi_create_typedarray(env, napi_uint8_array, total, ab, 0, &out));
  return out;
}

/* native/keccak.c, native/shared.c */
napi_value txr_keccak256_at(napi_env env, napi_callback_info info);
napi_value txr_shared_alias(napi_env env, napi_callback_info info);
/* native/ed25519_napi.c (64-bit hosts with 128-bit products only) */
#ifdef __SIZEOF_INT128__
napi_value txr_js_ed25519_verify(napi_env env, napi_callback_info info);
napi_value txr_js_ed25519_verify_at(napi_env env, napi_callback_info info);
napi_value txr_js_ed25519_decode_point(napi_env env, napi_callback_info info);
napi_value txr_js_ed25519_verify_batch_at(napi_env env, napi_callback_info info);
void txr_ed25519_env_init(napi_env env);
extern const char txr_ed25519_arith[];
#endif

NAPI_MODULE_INIT() {
#ifdef __SIZEOF_INT128__
  txr_ed25519_env_init(env);
#endif
  napi_value max_bytes;
  if (napi_create_uint32(env, B58_MAX_BYTES, &max_bytes) != napi_ok) return NULL;
#ifdef __SIZEOF_INT128__
  napi_value arith;
  if (napi_create_string_utf8(env, txr_ed25519_arith, NAPI_AUTO_LENGTH, &arith) != napi_ok) return NULL;
#endif
  napi_property_descriptor props[] = {
      {"encode", NULL, js_encode, NULL, NULL, NULL, napi_enumerable, NULL},
      {"encode64At", NULL, js_encode64_at, NULL, NULL, NULL, napi_enumerable, NULL},
      {"decode", NULL, js_decode, NULL, NULL, NULL, napi_enumerable, NULL},
      {"keccak256At", NULL, txr_keccak256_at, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sharedAlias", NULL, txr_shared_alias, NULL, NULL, NULL, napi_enumerable, NULL},
#ifdef __SIZEOF_INT128__
      {"ed25519Verify", NULL, txr_js_ed25519_verify, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ed25519VerifyAt", NULL, txr_js_ed25519_verify_at, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ed25519DecodePoint", NULL, txr_js_ed25519_decode_point, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ed25519VerifyBatchAt", NULL, txr_js_ed25519_verify_batch_at, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ed25519Arith", NULL, NULL, NULL, NULL, arith, napi_enumerable, NULL},
#endif
      {"maxBytes", NULL, NULL, NULL, NULL, max_bytes, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
