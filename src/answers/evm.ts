/**
 * Answers of the EVM plain-text door (docs/protocol.md#evm-single-transactions):
 * JSON-RPC bodies with id null, 202 when queued, readable by browsers (CORS).
 */
import { joinHeaders, retryHeaders } from '../ingress/headers.js';
import { JSON_TYPE } from '../ingress/reply.js';
import type { Outcome } from '../pipeline/outcome.js';
import { answer, blank, inDoorWords, CORS, QUEUED_CORS, QUEUED_DUPLICATE_CORS, evmAccepted, rpcError, withDryRun, type Answer, type DoorWords } from './answer.js';

const out = blank();

export function renderEvmText(o: Outcome, words: DoorWords): Answer {
  if (o.error !== null) {
    const err = inDoorWords(o.error, words);
    return answer(out, err.spec.http, JSON_TYPE, rpcError(err, 'null'), joinHeaders(retryHeaders(err), CORS), o.error.holdMs);
  }
  return answer(out, 202, JSON_TYPE, evmAccepted(o.id!, 'null', o.dry), withDryRun(o.dry, o.status === 'duplicate' ? QUEUED_DUPLICATE_CORS : QUEUED_CORS));
}
