/**
 * Jito's JSON-RPC API as a drop-in (docs/protocol.md#jito-compatible-api):
 * `POST /api/v1/bundles` (`sendBundle`, `getTipAccounts`) and
 * `POST /api/v1/transactions` (`sendTransaction`), so Jito's clients work by
 * changing only their base URL to `<relay>/api/v1`. What is Jito's here is
 * only where the credential is and which methods each path serves; the calls
 * are the JSON-RPC door's (jsonrpc.ts), through the same pipeline.
 */
import { E, RelayError } from '../../errors.js';
import type { HttpRequest } from '../uws.js';

export const JITO_BUNDLES = '/api/v1/bundles';
export const JITO_TRANSACTIONS = '/api/v1/transactions';

export const JITO_BUNDLE_METHODS: ReadonlySet<string> = new Set(['sendBundle', 'getTipAccounts']);
export const JITO_TRANSACTION_METHODS: ReadonlySet<string> = new Set(['sendTransaction']);

/** Jito's bundle status methods: the relay forwards and never learns whether a bundle landed. */
const STATUS_METHODS: ReadonlySet<string> = new Set(['getBundleStatuses', 'getInflightBundleStatuses']);

/** The refusal of a status method (-32601), naming what the relay does answer; null for any other method. */
export function jitoStatusRefusal(method: string): RelayError | null {
  if (!STATUS_METHODS.has(method)) return null;
  return new RelayError(
    E.METHOD_NOT_FOUND,
    `${method}: the relay cannot know whether a bundle landed; txrelay_getStatuses on POST / (with the api-key header) says what became of it on this node, by its first signature`,
  );
}

/** A query string longer than this is refused unread: Jito's clients send `uuid` and `bundleOnly`, nothing long. */
const MAX_QUERY = 256;
/** Parameters looked at, at most; a longer list is refused. */
const MAX_PARAMS = 4;

interface JitoHead {
  /** The account UUID, from whichever of Jito's places held it; null when none did. */
  credential: string | null;
  /** `?bundleOnly=true`: a `sendTransaction` sent as a bundle of one. */
  bundleOnly: boolean;
}

/**
 * The credential from exactly one of the `api-key` header, the `x-jito-auth`
 * header, `?uuid=` or `?api-key=`, and `?bundleOnly=`; other query parameters are ignored,
 * as Jito does.
 */
export function jitoHead(req: HttpRequest): JitoHead | RelayError {
  const bad = (m: string) => new RelayError(E.INVALID_REQUEST, m);
  let uuid: string | null = null;
  let bundleOnly = false;
  const query = req.getQuery() ?? '';
  if (query.length > MAX_QUERY) return bad(`query string longer than ${MAX_QUERY} characters`);
  if (query !== '') {
    const parts = query.split('&', MAX_PARAMS + 1);
    if (parts.length > MAX_PARAMS) return bad(`at most ${MAX_PARAMS} query parameters`);
    for (const p of parts) {
      const eq = p.indexOf('=');
      const key = eq < 0 ? p : p.slice(0, eq);
      if (key !== 'uuid' && key !== 'bundleOnly' && key !== 'api-key') continue;
      let value: string;
      try {
        value = eq < 0 ? '' : decodeURIComponent(p.slice(eq + 1).replace(/\+/g, ' '));
      } catch {
        return bad('malformed percent-encoding in the query string');
      }
      if (key === 'bundleOnly') bundleOnly = value === 'true';
      else if (uuid !== null) return bad(key === 'uuid' ? 'duplicate uuid parameter' : 'send the account UUID in one of ?uuid= or ?api-key=');
      else uuid = value;
    }
  }
  const apiKey = req.getHeader('api-key') || null;
  const jitoAuth = req.getHeader('x-jito-auth') || null;
  const given = (apiKey !== null ? 1 : 0) + (jitoAuth !== null ? 1 : 0) + (uuid !== null ? 1 : 0);
  if (given > 1) return bad('send the account UUID in one of the api-key header, the x-jito-auth header, ?uuid= or ?api-key=');
  return { credential: apiKey ?? jitoAuth ?? uuid, bundleOnly };
}

