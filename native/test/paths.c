/*
 * Test harness (test/native/ed25519-paths.test.ts compiles and runs it): the
 * three ways native/ed25519.c finds [S]B - [h]A (plain double-scalar
 * multiplication, the lattice check, the split tables of a cached key), each
 * forced on every input, so each path is compared with libsodium and not only
 * the one the cache would pick. Input on stdin, records of: message length
 * (4 bytes, little-endian), signature (64), key (32), message. Output: one
 * line per record, three characters (plain, lattice, split): 1 accept,
 * 0 refuse, x the lattice path declined. The arithmetic it was built with
 * (txr_ed25519_arith) goes to stderr.
 */
#define TXR_ED25519_TEST_PATHS
#include "../ed25519.c"
#include <stdio.h>

int main(void) {
  static uint8_t msg[1 << 16];
  uint8_t head[4], sig[64], pk[32];
  txr_ed25519_init();
  fprintf(stderr, "%s\n", txr_ed25519_arith);
  while (fread(head, 1, 4, stdin) == 4) {
    const size_t len = (size_t)head[0] | (size_t)head[1] << 8 | (size_t)head[2] << 16 | (size_t)head[3] << 24;
    if (len > sizeof msg || fread(sig, 1, 64, stdin) != 64 || fread(pk, 1, 32, stdin) != 32 || fread(msg, 1, len, stdin) != len) return 2;
    for (int path = PATH_PLAIN; path <= PATH_SPLIT; path++) {
      const int r = txr_ed25519_verify_path(path, sig, msg, len, pk);
      putchar(r < 0 ? 'x' : (char)('0' + r));
    }
    putchar('\n');
  }
  return 0;
}
