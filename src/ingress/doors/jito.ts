/**
 * Jito's JSON-RPC API as a drop-in (docs/protocol.md#jito-compatible-api):
 * `POST /api/v1/bundles` (`sendBundle`, `getTipAccounts`, `getBundleStatuses`,
 * `getInflightBundleStatuses`) and
 * `POST /api/v1/transactions` (`sendTransaction`), so Jito's clients work by
 * changing only their base URL to `<relay>/api/v1`. What is Jito's here is
 * only where the credential is and which methods each path serves; the calls
 * are the JSON-RPC door's (jsonrpc.ts), through the same pipeline.
 */
import { E, RelayError } from '../../errors.js';
import type { HttpRequest } from '../uws.js';
import type { StatusObject } from '../../shared/status.js';

export const JITO_BUNDLES = '/api/v1/bundles';
export const JITO_TRANSACTIONS = '/api/v1/transactions';

export const JITO_BUNDLE_METHODS: ReadonlySet<string> = new Set(['sendBundle', 'getTipAccounts', 'getBundleStatuses', 'getInflightBundleStatuses']);
export const JITO_TRANSACTION_METHODS: ReadonlySet<string> = new Set(['sendTransaction']);

/** Jito's bundle status methods, answered from the node's statuses (docs/protocol.md#jito-compatible-api). */
export const JITO_STATUS_METHODS: ReadonlySet<string> = new Set(['getBundleStatuses', 'getInflightBundleStatuses']);
/** Ids per call, as Jito takes them. */
const MAX_JITO_IDS = 5;

/** A Jito status read: its ids are status ids (the bundle ids `sendBundle` answered). */
export interface JitoStatusOp {
  op: 'jito-statuses';
  inflight: boolean;
}

/** A Jito status read's ids, `[[id, ...]]`, 1 to 5 (or why not), and how it is answered (in Jito's shapes, `jitoStatuses`). */
export function jitoStatusRead(method: string, params: unknown): { ids: string[] | RelayError; op: JitoStatusOp } {
  const ids = Array.isArray(params) && params.length === 1 ? params[0] : undefined;
  const op: JitoStatusOp = { op: 'jito-statuses', inflight: method === 'getInflightBundleStatuses' };
  if (!Array.isArray(ids) || ids.length < 1 || ids.length > MAX_JITO_IDS || !ids.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 128)) {
    return { ids: new RelayError(E.INVALID_PARAMS, `params must be [[bundle id, ...]], 1 to ${MAX_JITO_IDS} ids`), op };
  }
  return { ids: ids as string[], op };
}

/**
 * Jito's answer shapes from the node's statuses. `getBundleStatuses`: null
 * until the bundle landed, then its slot, confirmation, `err` as `{"Ok":null}`
 * or `{"Err":…}`, and its signatures. `getInflightBundleStatuses`: `Invalid`
 * (an id this account never sent here, or past retention), `Pending`,
 * `Failed` (it will not land), `Landed` with `landed_slot`. `context.slot` is
 * the highest slot among the answer's statuses (0 when none landed): the
 * relay reads no slot of its own.
 */
export function jitoStatuses(views: readonly StatusObject[], ids: readonly string[], inflight: boolean): string {
  let slot = 0;
  const value = views.map((v, i) => {
    const on = v.onchain;
    const landed = (v.state === 'landed' || v.state === 'landed_failed') && on?.slot !== undefined;
    if (landed) slot = Math.max(slot, on!.slot!);
    if (inflight) {
      const status = landed ? 'Landed' : v.state === 'unknown' || v.state === 'expired' ? 'Invalid' : v.state === 'queued' || v.state === 'forwarded' || v.state === 'duplicate' ? 'Pending' : 'Failed';
      return { bundle_id: ids[i], status, landed_slot: landed ? on!.slot! : null };
    }
    if (!landed) return null;
    return {
      bundle_id: ids[i],
      transactions: on!.transactions?.map((t) => t.id) ?? [v.id],
      slot: on!.slot,
      confirmation_status: on!.confirmation ?? null,
      err: v.state === 'landed' ? { Ok: null } : { Err: on!.err ?? null },
    };
  });
  return JSON.stringify({ context: { slot }, value });
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

