/**
 * What the pipeline keeps per submission until its Outcome reaches the door's
 * sink: where its stages are, the account, its bytes in the slab, its job
 * slot. The pipeline owns it; a door only pushes the body into it (it is the
 * body reader's target, src/ingress/body.ts). Group and bundle state hangs
 * off it only for those kinds, so a single transaction's record stays small.
 */
import type { RelayError } from '../errors.js';
import type { AccountRecord } from '../store/accounts.js';
import type { LaneName } from '../forward/lane.js';
import type { BodyTarget } from '../ingress/body.js';
import type { Outcome } from './outcome.js';
import { Kind, type Sink, type Submission } from './submission.js';

/** Where a body's bytes go in the pipeline (Pipeline implements it). */
export interface BodySink {
  bodyInto(a: Admission, length: number): Uint8Array | null;
  bodyArrived(a: Admission, bytes: Uint8Array): void;
  bodyTooLarge(a: Admission, declared: number): void;
  bodyOverBudget(a: Admission): void;
}

/** A JSON body as its door read it: a JSON-RPC body's calls, a status read's ids, or why it is refused. */
export type Parsed = RelayError | readonly Submission[] | readonly string[];

/** A JSON-RPC body's calls or an EVM batch's items: admitted in order, answered together. */
export class Group {
  /** Members not yet settled. */
  pending: number;
  /** Checked members waiting to be queued together, right before the group's answer (slots). */
  checked: number[] | null = null;
  /** Every unsettled member is checked: they are being queued. */
  flushing = false;
  /** An EVM batch's receive record id. */
  batchId: string | null = null;

  constructor(readonly members: readonly Admission[]) {
    this.pending = members.length;
  }
}

/** A bundle's members in the slab and in the job table, and its dedup key. */
export class BundleParts {
  /** Member checks not yet settled. */
  pending = 0;
  slots: number[] | null = null;
  /** Its dedup key (its ordered signatures) and its signatures as text. */
  key: Uint8Array | null = null;
  ids: string[] | null = null;
  /** Its id, as Jito computes it from the key (bundle.ts `bundleId`). */
  id: string | null = null;

  constructor(
    public offsets: number[] | null,
    readonly lengths: number[],
  ) {}
}

export class Admission implements BodyTarget {
  /** The next of its kind's stages to run (stages.ts). */
  step = 0;
  account: AccountRecord | null = null;
  lane: LaneName = 'solana-single';
  /** The body as read; null when the payload came with the submission. */
  received: Uint8Array | null = null;
  /** A JSON body's reading, pushed by its door with the body. */
  parsed: Parsed | null = null;
  /** A plain-text body's transaction, trimmed: what is placed and forwarded. */
  text: string | null = null;
  /** Refused after the gate for what the pipeline found (an EVM batch item that does not decode). */
  invalid: RelayError | null = null;
  /** The transaction's bytes in the shared slab (-1: none yet). */
  offset = -1;
  length = 0;
  /** Job table slot (-1: none). */
  slot = -1;
  /** An EVM transaction's hash, once computed before the check (a batch item). */
  hash: string | null = null;
  /** The group it belongs to, and its outcome there once settled. */
  parent: Admission | null = null;
  outcome: Outcome | null = null;
  group: Group | null = null;
  bundle: BundleParts | null = null;
  /** The request's id (`x-svc-request-id`), on the outermost admission, made once something of the request is queued. */
  requestId: string | null = null;

  constructor(
    readonly sub: Submission,
    readonly sink: Sink,
    private readonly body: BodySink,
  ) {}

  // ---- the request body, as the door's reader pushes it (src/ingress/body.ts) ----

  /** Only a raw transaction body goes straight into the slab; the others are read, then placed. */
  get wantsInto(): boolean {
    return this.sub.kind === Kind.SolanaTx;
  }

  into(length: number): Uint8Array | null {
    return this.body.bodyInto(this, length);
  }

  bodyBytes(bytes: Uint8Array): void {
    this.body.bodyArrived(this, bytes);
  }

  /** A JSON body with its door's reading of it. */
  bodyParsed(bytes: Uint8Array, parsed: Parsed): void {
    this.parsed = parsed;
    this.body.bodyArrived(this, bytes);
  }

  tooLarge(declared: number): void {
    this.body.bodyTooLarge(this, declared);
  }

  overBudget(): void {
    this.body.bodyOverBudget(this);
  }
}
