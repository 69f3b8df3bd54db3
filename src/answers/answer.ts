/**
 * What every answer module returns, and the facts a door hands it besides the
 * Outcome. A door renders and writes; it decides nothing about status, type,
 * headers or body (docs/architecture.md#answers).
 */
import { E, RelayError } from '../errors.js';
import type { Headers } from '../ingress/headers.js';
import type { Replier, Res } from '../ingress/reply.js';

export interface Answer {
  status: number;
  /** Content-Type. */
  type: string;
  body: string;
  headers: Headers | undefined;
  /** Ms to hold a shed's answer (docs/protocol.md#capacity); 0: at once. */
  holdMs: number;
}

/**
 * One Answer per module, filled by each render and written at once: a door
 * answering tens of thousands of requests a second allocates no object for it.
 */
export function answer(a: Answer, status: number, type: string, body: string, headers: Headers | undefined, holdMs = 0): Answer {
  a.status = status;
  a.type = type;
  a.body = body;
  a.headers = headers;
  a.holdMs = holdMs;
  return a;
}

export function blank(): Answer {
  return { status: 0, type: '', body: '', headers: undefined, holdMs: 0 };
}

/** What the door knows of a success besides the Outcome (docs/protocol.md#dry-run, #status). */
export interface Facts {
  /** Its lane has no upstream: accepted, not forwarded. */
  dry: boolean;
  /** The request's id, for status reads; null when nothing was queued. */
  requestId: string | null;
}

/** What a door says in the refusals that depend on it (docs/protocol.md#authentication, #solana-bundles). */
export interface DoorWords {
  /** How this door takes the credential, for a request that came without one: ` (...)`. */
  takes: string;
  /** The tip accounts, for a bundle without a tip: ` (...)`; '' where the door takes no bundle. */
  tips: string;
}

export const TAKES_SOLANA = ' (send the account UUID in the api-key header or as ?api-key=)';
export const TAKES_JITO = ' (send the account UUID in the api-key header, the x-jito-auth header, ?uuid= or ?api-key=)';
export const TAKES_EVM = ' (send the account UUID as `Authorization: Bearer <uuid>` or ?auth=)';
export const TAKES_RPC = ' (Solana methods take the api-key header or ?api-key=; EVM methods take `Authorization: Bearer <uuid>`)';
export const TAKES_STATUS = ' (send the account UUID in the api-key header, as `Authorization: Bearer <uuid>` or as ?api-key=)';
export const TAKES_WS = ' (send the account UUID in the api-key header, as `Authorization: Bearer <uuid>` or as ?api-key=)';

/** ` (tip one of: A, B, ...)`: the accounts a bundle's tip may go to. */
export function tipsWords(accounts: readonly string[]): string {
  return accounts.length === 0 ? '' : ` (tip one of: ${accounts.join(', ')})`;
}

const worded = new WeakMap<DoorWords, { missing: RelayError; tip: RelayError }>();

/**
 * The refusal as this door words it: a missing credential names what the door
 * takes, a bundle without a tip names the tip accounts. Other refusals, and
 * these when raised with a detail of their own, are as raised.
 */
export function inDoorWords(err: RelayError, words: DoorWords): RelayError {
  if (err.detail !== '' || (err.spec !== E.AUTH_MISSING && err.spec !== E.TIP_NOT_FOUND)) return err;
  let w = worded.get(words);
  if (w === undefined) {
    w = { missing: new RelayError(E.AUTH_MISSING, words.takes), tip: new RelayError(E.TIP_NOT_FOUND, words.tips) };
    worded.set(words, w);
  }
  return err.spec === E.AUTH_MISSING ? w.missing : w.tip;
}

/** Writes a rendered answer: held when it says so, else at once (ingress/reply.ts). */
export function write(reply: Replier, res: Res, a: Answer): void {
  reply.sendHeld(res, a.holdMs, a.status, a.type, a.body, a.headers);
}
