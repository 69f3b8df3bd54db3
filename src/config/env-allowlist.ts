/**
 * `TXRELAY_*` environment variables that are not configuration keys but are
 * read on purpose. The loader refuses every other `TXRELAY_*` name that is not
 * a key's variable, as it refuses an unknown key in the file, so a misspelt
 * variable stops start-up instead of being silently ignored.
 */
interface OtherEnv {
  /** The whole name, or with `prefix` every name that starts with it. */
  readonly name: string;
  readonly prefix?: boolean;
  readonly why: string;
}

export const OTHER_ENV: readonly OtherEnv[] = [
  { name: 'TXRELAY_NO_NATIVE', why: '`1` turns the native addon off at build and at run time (src/native/addon.ts, scripts/build-native.mjs)' },
  { name: 'TXRELAY_ED25519_BACKEND', why: '`sodium-native` or `node:crypto` instead of the native addon\'s Ed25519 verifier (src/chains/solana/verify.ts; tests and benchmarks)' },
  { name: 'TXRELAY_SECP_BACKEND', why: '`noble` forces the secp256k1 fallback (src/chains/evm/recover.ts; tests and benchmarks)' },
  { name: 'TXRELAY_TEST_', prefix: true, why: 'the test suite\'s own settings (TXRELAY_TEST_PG, TXRELAY_TEST_ACCEPTOR, ...), inherited by the relays it starts' },
  { name: 'TXRELAY_KEY', why: 'an account key handed to a client program by environment, never on a command line (test/client/package.test.ts)' },
  { name: 'TXRELAY_BENCH_', prefix: true, why: '`txrelay bench` and the benchmark harnesses (TXRELAY_BENCH_KEY, TXRELAY_BENCH_PG)' },
];

export function isOtherEnv(name: string): boolean {
  return OTHER_ENV.some((o) => (o.prefix ? name.startsWith(o.name) : name === o.name));
}
