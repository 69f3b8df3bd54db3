/**
 * A submission: what a door hands `Pipeline.admit`, and the pipeline's state
 * for it until its Outcome reaches the door's sink. The one object per
 * request: the body is read into it and job slots point back to it, so no
 * closure is made per request. A door fills in only what it read off the
 * wire. Every field is initialised here, so V8 keeps one shape for all.
 */
import type { RelayError } from '../errors.js';
import type { AccountRecord } from '../store/accounts.js';
import type { LaneName } from '../forward/lane.js';
import type { Family } from './accounts.js';
import type { Outcome } from './outcome.js';

export const enum Kind {
  /** One Solana transaction (`POST /v2`, JSON-RPC `sendTransaction`, UDP). */
  SolanaTx = 0,
  /** 1-4 Solana transactions, all or nothing (`POST /v2/batch`, JSON-RPC `sendBundle`). */
  Bundle = 1,
  /** One EVM transaction (JSON-RPC, plain text, an EVM batch's item). */
  EvmTx = 2,
  /** An EVM batch: a durable receive record, then its items in order. */
  EvmBatch = 3,
  /** The calls of one JSON-RPC request body, each admitted in turn. */
  Calls = 4,
  /** A status read (docs/protocol.md#status): authenticated and limited, never queued. */
  Query = 5,
}

export const enum Encoding {
  Base64 = 0,
  Base58 = 1,
  Hex = 2,
}

/** What the door does next, as `Pipeline.admit` and `resume` return it: the door reads; the pipeline never calls it to. */
export const enum Next {
  /** Nothing: the sink has the outcome, or will. */
  Done = 0,
  /** Read the head (`io.head`) and the peer's address into it, then `resume`: it was not shed. */
  Head = 1,
  /** Read the body (at most `maxBody` bytes) into it; its arrival goes on. */
  Body = 2,
}

/** The door turns the outcome into its wire answer; one function per door, not per request. */
export type Sink = (sub: Submission, outcome: Outcome) => void;

/** A door's transport, one object per door. */
export interface DoorIo {
  /**
   * Reads the request's head into `sub` (its credential), or the refusal of
   * a request that is not this door's wire format. The door calls it when
   * `admit` says `Next.Head`: after the shed decision, so a shed costs no
   * header read.
   */
  head?(sub: Submission): RelayError | null;
  /** Read by the door only after the shed decision (`Next.Head`): on uWS it is a system call. */
  peer(sub: Submission): string;
  /**
   * Answers on uWS HTTP responses: a checked transaction is queued only
   * where its answer cannot be dropped unseen (`Turn`).
   */
  corked?: true;
  /**
   * A JSON body's reading, by the door as the body arrives and before the
   * pipeline gets it (src/ingress/doors/context.ts `bodyTo`): a JSON-RPC
   * body's calls into `calls`, a status read's ids into `queryIds`, or why
   * the body is refused. The pipeline never calls it.
   */
  parse?(sub: Submission, body: Uint8Array): RelayError | null;
}

export interface BodySink {
  bodyInto(sub: Submission, length: number): Uint8Array | null;
  bodyArrived(sub: Submission, bytes: Uint8Array): void;
  bodyTooLarge(sub: Submission, declared: number): void;
  bodyOverBudget(sub: Submission): void;
}

export class Submission {
  // ---- set by the door ----------------------------------------------------
  door = '';
  /** The account's credential as text (`api-key`, Bearer, `?auth=`); null when absent. */
  credential: string | null = null;
  /** The credential as 16 raw UUID bytes at `keyOffset` (UDP). */
  keyBytes: Uint8Array | null = null;
  keyOffset = 0;
  /** Null until the door reads it (`Next.Head`); a door that knows it at once sets it first. */
  ip: string | null = null;
  ipCredits = 1;
  /** Shed and per-IP checks already passed (a call inside a JSON-RPC body). */
  arrived = false;
  /** The UDP per-IP buckets and size limit apply. */
  overUdp = false;
  /** Refused before the gate: not a request this door takes (Content-Type, query, method). */
  refused: RelayError | null = null;
  /** Malformed params: refused after the gate, so it costs its credit like any invalid transaction. */
  invalid: RelayError | null = null;

  /** The payload: bytes[start, end) (UDP), `text`, `texts` (EVM batch items), or the body (`maxBody` > 0). */
  bytes: Uint8Array | null = null;
  start = 0;
  end = 0;
  text: string | null = null;
  encoding: Encoding = Encoding.Base64;
  /** The text, once it decodes, is forwarded as sent (canonical base64, `0x` hex). */
  textForwarded = false;
  texts: readonly string[] | null = null;
  /** The body limit; 0 when the payload is already here. */
  maxBody = 0;

  /**
   * Where its answer goes (a uWS response, a WebSocket): once `aborted`, the
   * client went away and nothing of it is queued (read on the outermost
   * submission). Null: nothing to watch.
   */
  conn: { readonly aborted?: boolean } | null = null;
  /** The door's context for its answer; never read by the pipeline. */
  ctx: unknown = null;
  /** The door's request handle, valid only until `admit` returns (uWS forbids reading it later). */
  req: unknown = null;
  /** The JSON-RPC id as JSON text (`null` outside JSON-RPC). */
  rpcId = 'null';
  /** A status read's ids. */
  queryIds: readonly string[] | null = null;
  /** A JSON-RPC body's calls, in order, as the door read them. */
  calls: Submission[] | null = null;

  /** The request's id (`x-svc-request-id`), on the outermost submission, made by the pipeline once something of the request is queued. */
  requestId: string | null = null;

  // ---- set by the pipeline ------------------------------------------------
  sink: Sink | null = null;
  body: BodySink | null = null;
  /** The next of its kind's stages to run (stages.ts). */
  step = 0;
  /** The body as read, once it arrived; null when the payload came with the head. */
  received: Uint8Array | null = null;
  account: AccountRecord | null = null;
  lane: LaneName = 'solana-single';
  /** The transaction's bytes in the shared slab (-1: none yet). */
  offset = -1;
  length = 0;
  /** A bundle's transactions in the slab. */
  offsets: number[] | null = null;
  lengths: number[] | null = null;
  /** Job table slot (-1: none), and for a bundle its members' slots. */
  slot = -1;
  slots: number[] | null = null;
  /** Checks (bundle members) or members (groups) not yet settled. */
  pending = 0;
  /** A bundle's dedup key (its ordered signatures) and its signatures as text. */
  key: Uint8Array | null = null;
  ids: string[] | null = null;
  /** An EVM batch item's hash. */
  hash: string | null = null;
  children: Submission[] | null = null;
  parent: Submission | null = null;
  outcome: Outcome | null = null;
  /** An EVM batch's receive record id. */
  batchId: string | null = null;
  /** A group's checked members waiting to be queued together, right before its answer (slots). */
  checked: number[] | null = null;
  /** Every unsettled member of the group is checked: they are being queued. */
  flushing = false;

  constructor(
    readonly kind: Kind,
    readonly family: Family,
    readonly io: DoorIo,
  ) {}

  // ---- the request body (src/ingress/body.ts calls these) -----------------

  /** Only a raw transaction body goes straight into the slab; the others are read, then placed. */
  get wantsInto(): boolean {
    return this.kind === Kind.SolanaTx;
  }

  into(length: number): Uint8Array | null {
    return this.body!.bodyInto(this, length);
  }

  bodyBytes(bytes: Uint8Array): void {
    this.body!.bodyArrived(this, bytes);
  }

  tooLarge(declared: number): void {
    this.body!.bodyTooLarge(this, declared);
  }

  overBudget(): void {
    this.body!.bodyOverBudget(this);
  }
}

/**
 * When a checked transaction may be queued, kept by the ingress scheduler
 * (the Replier) and read here as plain state, never called.
 *
 * uWS closes a connection whose next request arrives while an answer is
 * pending, and drops what the socket's callback had written so far
 * (docs/protocol.md#deviations). So a transaction is queued only where its
 * answer leaves at once: not inside a socket's callback (`ack.depth`), and
 * not while answers are held to the turn's end (`holding`), unless the
 * scheduler is running the commits (`committing`). What must wait joins
 * `commits`; `runCommits` resumes each slot once its answer can leave.
 */
export interface Turn {
  readonly ack: { readonly depth: number };
  readonly holding: boolean;
  readonly committing: boolean;
  readonly commits: number[];
  readonly runCommits: () => void;
}
