/*
 * N-API glue for native/ed25519.c. Arguments are Uint8Arrays (plain or
 * SharedArrayBuffer-backed); the signature and key are copied before use so a
 * concurrent writer cannot change them between the checks and the equation.
 */
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#ifdef __SIZEOF_INT128__

#include <stdbool.h>
#include <string.h>

#include "ed25519.h"

static napi_value fail(napi_env env, const char *msg) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_type_error(env, "TXR_ED25519_ARG", msg);
  return NULL;
}

static bool get_u8(napi_env env, napi_value v, const uint8_t **data, size_t *len) {
  bool is_ta = false;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta) return false;
  napi_typedarray_type type;
  void *p = NULL;
  if (napi_get_typedarray_info(env, v, &type, len, &p, NULL, NULL) != napi_ok || type != napi_uint8_array) return false;
  *data = (const uint8_t *)p;
  return true;
}

static bool get_index(napi_env env, napi_value v, size_t hi, size_t *out) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok) return false;
  if (!(d >= 0 && d <= (double)hi) || d != (double)(size_t)d) return false;
  *out = (size_t)d;
  return true;
}

/* This thread's key cache (one per N-API environment, so per worker thread). */
static txr_ed25519_cache *env_cache(napi_env env) {
  void *c = NULL;
  if (napi_get_instance_data(env, &c) != napi_ok) return NULL;
  return (txr_ed25519_cache *)c;
}

static void free_cache(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  txr_ed25519_cache_free((txr_ed25519_cache *)data);
}

/* Called from NAPI_MODULE_INIT: tables once per process, a key cache per environment. */
void txr_ed25519_env_init(napi_env env) {
  txr_ed25519_init();
  txr_ed25519_cache *c = txr_ed25519_cache_new();
  if (c != NULL && napi_set_instance_data(env, c, free_cache, NULL) != napi_ok) txr_ed25519_cache_free(c);
}

static napi_value boolean(napi_env env, int v) {
  napi_value out;
  if (napi_get_boolean(env, v != 0, &out) != napi_ok) return NULL;
  return out;
}

/* ed25519Verify(sig: 64 bytes, msg, key: 32 bytes): boolean */
napi_value txr_js_ed25519_verify(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return fail(env, "ed25519Verify: expected (sig, msg, key)");
  const uint8_t *sig, *msg, *key;
  size_t sl, ml, kl;
  if (!get_u8(env, argv[0], &sig, &sl) || !get_u8(env, argv[1], &msg, &ml) || !get_u8(env, argv[2], &key, &kl)) {
    return fail(env, "ed25519Verify: expected three Uint8Arrays");
  }
  if (sl != 64 || kl != 32) return boolean(env, 0);
  uint8_t s[64], k[32];
  memcpy(s, sig, 64);
  memcpy(k, key, 32);
  return boolean(env, txr_ed25519_verify_cached(env_cache(env), s, msg, ml, k));
}

/* ed25519VerifyAt(buf, sigAt, keyAt, msgAt, msgLen): boolean; all four ranges inside buf. */
napi_value txr_js_ed25519_verify_at(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) return fail(env, "ed25519VerifyAt: expected 5 arguments");
  const uint8_t *buf;
  size_t len, sa, ka, ma, ml;
  if (!get_u8(env, argv[0], &buf, &len)) return fail(env, "ed25519VerifyAt: expected a Uint8Array");
  if (!get_index(env, argv[1], len, &sa) || !get_index(env, argv[2], len, &ka) || !get_index(env, argv[3], len, &ma) ||
      !get_index(env, argv[4], len, &ml) || sa + 64 > len || ka + 32 > len || ma + ml > len) {
    napi_throw_range_error(env, "TXR_ED25519_ARG", "ed25519VerifyAt: a range outside the array");
    return NULL;
  }
  uint8_t s[64], k[32];
  memcpy(s, buf + sa, 64);
  memcpy(k, buf + ka, 32);
  return boolean(env, txr_ed25519_verify_cached(env_cache(env), s, buf + ma, ml, k));
}

/*
 * ed25519VerifyBatchAt(buf, spec: Uint32Array, n, out: Uint8Array): number.
 * Item i's signature, key, message and message length are spec[4i..4i+3],
 * offsets into buf; out[i] gets its answer (1 or 0), the same as
 * ed25519VerifyAt's; returns how many are 1. n <= 64.
 */
napi_value txr_js_ed25519_verify_batch_at(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) return fail(env, "ed25519VerifyBatchAt: expected 4 arguments");
  const uint8_t *buf;
  uint8_t *out;
  const uint32_t *spec;
  size_t len, speclen, outlen, n;
  bool is_ta = false;
  napi_typedarray_type type;
  void *p = NULL;
  if (!get_u8(env, argv[0], &buf, &len) || !get_u8(env, argv[3], (const uint8_t **)&out, &outlen)) return fail(env, "ed25519VerifyBatchAt: expected Uint8Arrays");
  if (napi_is_typedarray(env, argv[1], &is_ta) != napi_ok || !is_ta || napi_get_typedarray_info(env, argv[1], &type, &speclen, &p, NULL, NULL) != napi_ok ||
      type != napi_uint32_array) {
    return fail(env, "ed25519VerifyBatchAt: expected a Uint32Array spec");
  }
  spec = (const uint32_t *)p;
  if (!get_index(env, argv[2], TXR_ED25519_BATCH_MAX, &n) || 4 * n > speclen || n > outlen) {
    napi_throw_range_error(env, "TXR_ED25519_ARG", "ed25519VerifyBatchAt: n over 64 or over the spec or out array");
    return NULL;
  }
  /* Signatures and keys copied (as ed25519VerifyAt does); spec read once. */
  uint8_t sk[TXR_ED25519_BATCH_MAX][96];
  txr_ed25519_item items[TXR_ED25519_BATCH_MAX];
  for (size_t i = 0; i < n; i++) {
    size_t sa = spec[4 * i], ka = spec[4 * i + 1], ma = spec[4 * i + 2], ml = spec[4 * i + 3];
    if (sa > len || ka > len || ma > len || ml > len || sa + 64 > len || ka + 32 > len || ma + ml > len) {
      napi_throw_range_error(env, "TXR_ED25519_ARG", "ed25519VerifyBatchAt: a range outside the array");
      return NULL;
    }
    memcpy(sk[i], buf + sa, 64);
    memcpy(sk[i] + 64, buf + ka, 32);
    items[i].sig = sk[i];
    items[i].key = sk[i] + 64;
    items[i].msg = buf + ma;
    items[i].msg_len = ml;
  }
  uint8_t ok[TXR_ED25519_BATCH_MAX];
  size_t valid = txr_ed25519_verify_batch(env_cache(env), n, items, ok);
  memcpy(out, ok, n);
  napi_value r;
  if (napi_create_uint32(env, (uint32_t)valid, &r) != napi_ok) return NULL;
  return r;
}

/* ed25519DecodePoint(enc: 32 bytes): the canonical encoding of the decoded point, or null; throws when the decoders disagree (tests). */
napi_value txr_js_ed25519_decode_point(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  const uint8_t *in;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !get_u8(env, argv[0], &in, &len) || len != 32) {
    return fail(env, "ed25519DecodePoint: expected 32 bytes");
  }
  uint8_t s[32], o[32];
  memcpy(s, in, 32);
  napi_value out;
  const int r = txr_ed25519_decode_point(o, s);
  if (r < 0) return fail(env, "ed25519DecodePoint: the scalar and pair decoders disagree");
  if (r == 0) {
    if (napi_get_null(env, &out) != napi_ok) return NULL;
    return out;
  }
  void *data;
  napi_value ab;
  if (napi_create_arraybuffer(env, 32, &data, &ab) != napi_ok) return NULL;
  memcpy(data, o, 32);
  if (napi_create_typedarray(env, napi_uint8_array, 32, ab, 0, &out) != napi_ok) return NULL;
  return out;
}

#endif /* __SIZEOF_INT128__ */
