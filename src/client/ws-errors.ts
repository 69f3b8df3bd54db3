/**
 * What a `RelaySocket` call ends in when it does not get its result
 * (docs/protocol.md#websocket): the error class callers branch on by `kind`,
 * and the rule that classifies a lost answer: a read changed nothing
 * (`retry-safe`), a written submission may have been admitted (`uncertain`).
 */
import type { RetryInstruction } from './outcome.js';

/**
 * - `rpc`: the relay answered with a JSON-RPC error: `code`, `data`, and
 *   `retry` when it gave advice (`retry_safe`: nothing was sent).
 * - `uncertain`: a submission was written but its answer never came (the
 *   socket dropped, or `timeoutMs` ran out): the relay may have admitted it.
 * - `retry-safe`: nothing changed: the call was never written (no socket in
 *   time, a full queue, too many pending calls), or it was a read whose answer
 *   was lost. Send it again.
 * - `unauthorized`: the upgrade was refused with `401` (an unknown key, or one
 *   revoked while disconnected); the client stops.
 * - `revoked`: the relay closed the socket with `4001`; the client stops.
 * - `closed`: `close()` was called, or no WebSocket implementation could be
 *   loaded; the client stops.
 */
export type RelaySocketErrorKind = 'rpc' | 'uncertain' | 'retry-safe' | 'unauthorized' | 'revoked' | 'closed';

/** Every rejection of a `RelaySocket` call, and what its `error` event carries. */
export class RelaySocketError extends Error {
  constructor(
    message: string,
    readonly kind: RelaySocketErrorKind,
    /** The JSON-RPC method of the call, when the error is about one. */
    readonly method?: string,
    /** The relay's JSON-RPC error code (kind `rpc`). */
    readonly code?: number,
    /** The relay's JSON-RPC error `data` (kind `rpc`). */
    readonly data?: unknown,
    /**
     * `retry_safe` when sending again cannot do harm and nothing was done;
     * `do_not_retry_automatically` when the request (or the key) must change.
     * Absent for `uncertain` and for relay errors without advice.
     */
    readonly retry?: RetryInstruction,
  ) {
    super(message);
    this.name = 'RelaySocketError';
  }
}

/** One JSON-RPC call of a `RelaySocket`, from the call to its answer. */
export interface Call {
  id: number;
  method: string;
  params: unknown;
  resolve: (v: any) => void;
  reject: (e: RelaySocketError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Written to a socket: from then on its loss is classified by method. */
  sent: boolean;
}

/** Calls that change nothing: losing their answer is always retry-safe. */
const READS = new Set(['txrelay_getStatuses', 'txrelay_subscribe', 'txrelay_unsubscribe']);

/**
 * A written call whose answer will not come: a read changed nothing; a
 * submission may have been admitted.
 */
export function lost(call: Call, why: string): RelaySocketError {
  if (READS.has(call.method)) {
    return new RelaySocketError(`${call.method}: ${why}; a read changes nothing, so it is safe to send again`, 'retry-safe', call.method, undefined, undefined, 'retry_safe');
  }
  return new RelaySocketError(
    `${call.method} was sent but ${why}: the outcome is UNCERTAIN, the relay may have admitted it. Sending the same signed transaction again is safe ` +
      '(the relay answers a duplicate, and no chain executes one signed transaction twice); or read its status once reconnected',
    'uncertain',
    call.method,
  );
}

/** The client's stop reason, for one more call. */
export function again(err: RelaySocketError, method: string): RelaySocketError {
  return new RelaySocketError(`${method} not sent: ${err.message}`, err.kind, method, err.code, err.data, err.retry);
}

export function rpcError(method: string, e: any, prefix = ''): RelaySocketError {
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : JSON.stringify(e);
  const retry = e?.data?.retry === 'retry_safe' || e?.data?.retry === 'do_not_retry_automatically' ? (e.data.retry as RetryInstruction) : undefined;
  return new RelaySocketError(`${prefix}${method}: ${message}`, 'rpc', method, code, e?.data, retry);
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
