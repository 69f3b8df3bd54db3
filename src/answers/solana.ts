/**
 * Answers of the Solana HTTP doors (docs/protocol.md#solana-raw-transactions,
 * #solana-bundles): `POST /v2` and `POST /v2/batch` answer a JSON result, or
 * the error's plain text, the bodies Solana's relay clients know.
 */
import type { RelayError } from '../errors.js';
import { retryHeaders } from '../ingress/headers.js';
import { JSON_TYPE, TEXT_TYPE } from '../ingress/reply.js';
import type { Outcome } from '../pipeline/outcome.js';
import { answer, blank, inDoorWords, DUPLICATE, signaturesJson, solanaResult, withDryRun, type Answer, type DoorWords } from './answer.js';

const out = blank();

export function renderSolana(o: Outcome, words: DoorWords): Answer {
  if (o.error !== null) return plainRefusal(o.error, words);
  return answer(out, 200, JSON_TYPE, solanaResult(signaturesJson(o), 'null'), withDryRun(o.dry, o.status === 'duplicate' ? DUPLICATE : undefined));
}

/** A refusal in plain text: the table's Solana text, its own status, retry headers on a 429. */
export function plainRefusal(err: RelayError, words: DoorWords, a: Answer = out): Answer {
  const e = inDoorWords(err, words);
  return answer(a, e.spec.http, TEXT_TYPE, e.text, retryHeaders(e), err.holdMs);
}
