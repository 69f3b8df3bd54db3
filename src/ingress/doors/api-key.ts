/**
 * `?api-key=<uuid>` on the Solana HTTP doors (docs/protocol.md#authentication):
 * how hosted Solana providers hand out URLs, so `new Connection(url)` works
 * with the relay's URL as given. Other parameters are ignored, as those
 * providers do. The value is a credential: it never reaches a log or a message.
 */
import { E, RelayError } from '../../errors.js';

/** A query string longer than this is refused unread: a UUID and a few flags fit with room to spare. */
const MAX_QUERY = 512;
const NAME = 'api-key';

/** The `api-key` parameter's value, null when absent, or the refusal (a repeated or malformed one). */
export function apiKeyQuery(query: string): string | null | RelayError {
  if (query === '') return null;
  // The usual `api-key=<uuid>` alone: nothing to split or decode.
  if (query.length === 44 && query.startsWith('api-key=') && !/[%+&]/.test(query)) return query.slice(8);
  if (query.length > MAX_QUERY) return new RelayError(E.INVALID_REQUEST, `query string longer than ${MAX_QUERY} characters`);
  let key: string | null = null;
  for (const p of query.split('&')) {
    const eq = p.indexOf('=');
    if ((eq < 0 ? p : p.slice(0, eq)) !== NAME) continue;
    if (key !== null) return new RelayError(E.INVALID_REQUEST, 'duplicate api-key parameter');
    try {
      key = eq < 0 ? '' : decodeURIComponent(p.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      return new RelayError(E.INVALID_REQUEST, 'malformed percent-encoding in the query string');
    }
  }
  return key;
}
