/**
 * A submission: what a door hands `Pipeline.admit`, built once by the door
 * from what it read off the wire (head, peer, params) and never changed
 * after. One type per kind, told apart by `kind`; the pipeline's own state
 * for it is its Admission (admission.ts).
 *
 * Every kind is built by `build` below into one object layout, so the
 * stages that read any kind (the gate) see one shape.
 */
import type { RelayError } from '../errors.js';
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

/** What every kind carries. */
interface Common {
  readonly door: string;
  readonly family: Family;
  /**
   * Refused before the gate: draining, shed, the family off (Pipeline.arrive,
   * asked by the door before it reads the head), or not a request this door
   * takes (Content-Type, query, method). Nothing else of it was read.
   */
  readonly refused: RelayError | null;
  /** Malformed params: refused after the gate, so it costs its credit like any invalid transaction. */
  readonly invalid: RelayError | null;
  /** The account's credential as text (`api-key`, Bearer, `?auth=`); null when absent. */
  readonly credential: string | null;
  /** The credential as 16 raw UUID bytes at `keyOffset` (UDP). */
  readonly keyBytes: Uint8Array | null;
  readonly keyOffset: number;
  /** The peer's address ('' when refused before it was read). */
  readonly ip: string;
  /** A datagram: the UDP per-IP buckets and size limit apply, and nothing answers it. */
  readonly overUdp: boolean;
  /**
   * Where its answer goes (a uWS response, a WebSocket): once `aborted`, the
   * client went away and nothing of it is queued. Null: nothing to watch.
   */
  readonly conn: { readonly aborted?: boolean } | null;
  /** Answered on a uWS HTTP response: a checked transaction is queued only where its answer cannot be dropped unseen (`Turn`). */
  readonly corked: boolean;
  /** The door's context for its answer; never read by the pipeline. */
  readonly ctx: unknown;
  /** The JSON-RPC id as JSON text (`null` outside JSON-RPC). */
  readonly rpcId: string;
  /** A body to read, of at most this many bytes (the door reads it when `admit` says); 0: the payload came with the head. */
  readonly maxBody: number;
}

export interface SolanaTxSubmission extends Common {
  readonly kind: Kind.SolanaTx;
  /** A datagram's transaction: bytes[start, end). */
  readonly bytes: Uint8Array | null;
  readonly start: number;
  readonly end: number;
  /** A JSON-RPC call's transaction, in `encoding`. */
  readonly text: string | null;
  readonly encoding: Encoding;
  /** The text, once it decodes, is forwarded as sent (canonical base64). */
  readonly textForwarded: boolean;
}

export interface BundleSubmission extends Common {
  readonly kind: Kind.Bundle;
  /** A JSON-RPC `sendBundle`'s transactions, in `encoding`; null: the binary body. */
  readonly texts: readonly string[] | null;
  readonly encoding: Encoding;
}

export interface EvmTxSubmission extends Common {
  readonly kind: Kind.EvmTx;
  /** The `0x` transaction, forwarded as sent; null: the plain-text body. */
  readonly text: string | null;
}

export interface EvmBatchSubmission extends Common {
  readonly kind: Kind.EvmBatch;
  readonly texts: readonly string[] | null;
}

/** A JSON-RPC body: the door reads and parses it into its calls, each a submission of its own. */
export interface CallsSubmission extends Common {
  readonly kind: Kind.Calls;
}

export interface QuerySubmission extends Common {
  readonly kind: Kind.Query;
  /** The ids asked for; null: they come in the body. */
  readonly queryIds: readonly string[] | null;
}

export type Submission = SolanaTxSubmission | BundleSubmission | EvmTxSubmission | EvmBatchSubmission | CallsSubmission | QuerySubmission;

type Init<S extends Submission> = Partial<Omit<S, 'kind' | 'family' | 'door'>>;
/** Every kind's fields at once: what the one layout holds. */
type AnyInit = Init<SolanaTxSubmission> & Init<BundleSubmission> & Init<EvmBatchSubmission> & Init<QuerySubmission>;

/** The one layout: every field in one order, whatever the kind. */
class Fields {
  constructor(
    readonly kind: Kind,
    readonly family: Family,
    readonly door: string,
    i: AnyInit,
  ) {
    this.refused = i.refused ?? null;
    this.invalid = i.invalid ?? null;
    this.credential = i.credential ?? null;
    this.keyBytes = i.keyBytes ?? null;
    this.keyOffset = i.keyOffset ?? 0;
    this.ip = i.ip ?? '';
    this.overUdp = i.overUdp ?? false;
    this.conn = i.conn ?? null;
    this.corked = i.corked ?? false;
    this.ctx = i.ctx ?? null;
    this.rpcId = i.rpcId ?? 'null';
    this.maxBody = i.maxBody ?? 0;
    this.bytes = i.bytes ?? null;
    this.start = i.start ?? 0;
    this.end = i.end ?? 0;
    this.text = i.text ?? null;
    this.texts = i.texts ?? null;
    this.encoding = i.encoding ?? Encoding.Base64;
    this.textForwarded = i.textForwarded ?? false;
    this.queryIds = i.queryIds ?? null;
  }
  readonly refused: RelayError | null;
  readonly invalid: RelayError | null;
  readonly credential: string | null;
  readonly keyBytes: Uint8Array | null;
  readonly keyOffset: number;
  readonly ip: string;
  readonly overUdp: boolean;
  readonly conn: { readonly aborted?: boolean } | null;
  readonly corked: boolean;
  readonly ctx: unknown;
  readonly rpcId: string;
  readonly maxBody: number;
  readonly bytes: Uint8Array | null;
  readonly start: number;
  readonly end: number;
  readonly text: string | null;
  readonly texts: readonly string[] | null;
  readonly encoding: Encoding;
  readonly textForwarded: boolean;
  readonly queryIds: readonly string[] | null;
}

export function solanaTx(door: string, i: Init<SolanaTxSubmission>): SolanaTxSubmission {
  return new Fields(Kind.SolanaTx, 'solana', door, i) as SolanaTxSubmission;
}

export function bundle(door: string, i: Init<BundleSubmission>): BundleSubmission {
  return new Fields(Kind.Bundle, 'solana', door, i) as BundleSubmission;
}

export function evmTx(door: string, i: Init<EvmTxSubmission>): EvmTxSubmission {
  return new Fields(Kind.EvmTx, 'evm', door, i) as EvmTxSubmission;
}

export function evmBatch(door: string, i: Init<EvmBatchSubmission>): EvmBatchSubmission {
  return new Fields(Kind.EvmBatch, 'evm', door, i) as EvmBatchSubmission;
}

/** A JSON-RPC body; `family` says how a refusal of the whole is worded before its calls are read. */
export function calls(door: string, family: Family, i: Init<CallsSubmission>): CallsSubmission {
  return new Fields(Kind.Calls, family, door, i) as CallsSubmission;
}

/** A status read; `family` only picks whose refusal words are used: reads are the account's, across families. */
export function query(door: string, family: Family, i: Init<QuerySubmission>): QuerySubmission {
  return new Fields(Kind.Query, family, door, i) as QuerySubmission;
}

/** A submission of `kind` refused before anything of it was read (Pipeline.arrive): what the door answers it with. */
export function refusedAt(kind: Kind, family: Family, door: string, refused: RelayError, i: AnyInit = {}): Submission {
  return new Fields(kind, family, door, { ...i, refused }) as Submission;
}

/**
 * The door turns the outcome into its wire answer; one function per door, not
 * per request. It gets back its own submission: the Outcome holds all the
 * pipeline found.
 */
export type Sink = (sub: Submission, outcome: Outcome) => void;

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
