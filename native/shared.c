/*
 * sharedAlias(view: Uint8Array): ArrayBuffer
 *
 * A plain (non-shared) ArrayBuffer over the same memory as `view`, which
 * spans a whole SharedArrayBuffer. libsodium, through sodium-native, reads a
 * typed array's `.buffer` and refuses a SharedArrayBuffer; the shared slab's
 * bytes reach it through this alias instead of a copy per signature check.
 *
 * The alias owns nothing (no finalizer frees the memory): the caller keeps
 * the SharedArrayBuffer alive for as long as it uses the alias. Registered by
 * base58.c's module init.
 */
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stddef.h>

static napi_value fail(napi_env env, const char *msg) {
  napi_throw_type_error(env, "TXR_SHARED_ALIAS", msg);
  return NULL;
}

napi_value txr_shared_alias(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return fail(env, "sharedAlias: expected a Uint8Array");
  bool is_typed = false;
  if (napi_is_typedarray(env, argv[0], &is_typed) != napi_ok || !is_typed) return fail(env, "sharedAlias: expected a Uint8Array");
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  void *data = NULL;
  if (napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, &offset) != napi_ok || type != napi_uint8_array) {
    return fail(env, "sharedAlias: expected a Uint8Array");
  }
  napi_value out;
  if (napi_create_external_arraybuffer(env, data, length, NULL, NULL, &out) != napi_ok) return fail(env, "sharedAlias: external buffers are not allowed here");
  return out;
}
