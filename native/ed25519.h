/* Ed25519 verification (native/ed25519.c); rule in docs/protocol.md. */
#ifndef TXR_ED25519_H
#define TXR_ED25519_H
#include <stddef.h>
#include <stdint.h>

/* Must run once (idempotent, thread-safe) before any other call. */
void txr_ed25519_init(void);
/* 1 when libsodium's crypto_sign_verify_detached would accept, else 0. */
int txr_ed25519_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32]);
/* A per-thread cache of recent keys' tables (never shared between threads). */
typedef struct txr_ed25519_cache txr_ed25519_cache;
txr_ed25519_cache *txr_ed25519_cache_new(void);
void txr_ed25519_cache_free(txr_ed25519_cache *c);
/* As txr_ed25519_verify; `cache` may be NULL. */
int txr_ed25519_verify_cached(txr_ed25519_cache *cache, const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32]);
/* Up to this many signatures per batch call. */
#define TXR_ED25519_BATCH_MAX 64
typedef struct {
  const uint8_t *sig; /* 64 bytes */
  const uint8_t *key; /* 32 bytes */
  const uint8_t *msg;
  size_t msg_len;
} txr_ed25519_item;
/* ok[i] = txr_ed25519_verify_cached's answer for items[i], i < n (n <= TXR_ED25519_BATCH_MAX); returns how many are 1. */
size_t txr_ed25519_verify_batch(txr_ed25519_cache *cache, size_t n, const txr_ed25519_item *items, uint8_t *ok);
void txr_sha512(uint8_t out[64], const uint8_t *m, size_t mlen);
/* 1 and the canonical encoding of the decoded point, 0 when it does not decode, -1 when the decoders disagree (tests). */
int txr_ed25519_decode_point(uint8_t out[32], const uint8_t s[32]);
/* The arithmetic the multi-scalar multiplication was built with: "avx512ifma" or "scalar". */
extern const char txr_ed25519_arith[];
#endif
