/**
 * The pieces of the relay's error table (docs/protocol.md#errors) that the
 * client branches on. src/errors.ts builds its table from these and
 * src/client imports them, so both sides share one definition and the client
 * package needs nothing from the server (docs/client.md).
 */

/** Retry advice carried by a refusal. */
export type Retry = 'retry_safe' | 'do_not_retry_automatically';

/** JSON-RPC code of "the relay could not act" (unavailable, draining, check failed, ...): nothing was sent, so retry-safe. */
export const RPC_UNAVAILABLE = -32001;
/** JSON-RPC code of a rate-limit refusal (account or IP). */
export const RPC_RATE_LIMITED = -32005;
