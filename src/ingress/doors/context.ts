/** What every HTTP door gets from the composition root, and how a door hands a request to the pipeline. */
import type { Pipeline } from '../../pipeline/admit.js';
import type { Sink, Submission } from '../../pipeline/submission.js';
import type { Admission, Parsed } from '../../pipeline/admission.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';
import type { AckFirst } from '../ack-first.js';
import { readBodyTo, type BodyBudget, type BodyTarget } from '../body.js';
import type { LatencyTimer, Res } from '../reply.js';
import type { Replier } from '../reply.js';

export interface DoorContext {
  app: TemplatedApp;
  pipeline: Pipeline;
  reply: Replier;
  ack: AckFirst;
  ip(res: HttpResponse, req: HttpRequest): string;
  maxBody: number;
  /** `evm.max_batch`: items per EVM batch, and calls per JSON-RPC array. */
  maxBatch: number;
  enabled: { evm: boolean; solana: boolean };
  timer(door: string): LatencyTimer | undefined;
  /** `node.name`, for the `x-svc-node` header of answers written outside the Replier. */
  node: string;
  /** Body bytes being read on this thread (`http.max_buffered_body_bytes`). */
  bodies: BodyBudget;
  /** `solana.tip_accounts`, as Jito's `getTipAccounts` answers them. */
  tipAccounts: readonly string[];
}

/** A door's reading of a JSON body, made as the body arrives and pushed to the pipeline with it. */
export type Parse = (sub: Submission, body: Uint8Array) => Parsed;

/**
 * Admits `sub`, built from the request's head, while the handler runs (uWS
 * forbids reading the request later), and reads the body (at most
 * `sub.maxBody` bytes) when the pipeline says so, pushing it in, read by
 * `parse` first where the door gives one.
 */
export function admitHttp(ctx: DoorContext, sub: Submission, sink: Sink, res: Res, req: HttpRequest, parse?: Parse): void {
  const a = ctx.pipeline.admit(sub, sink);
  if (a !== null) readBodyTo(res, req, sub.maxBody, bodyTo(a, parse), ctx.ack, ctx.bodies);
}

/** Where a body goes: the admission itself, or through the door's reading of it first (a JSON body). */
export function bodyTo(a: Admission, parse?: Parse): BodyTarget {
  return parse === undefined ? a : new ParsedBody(a, parse);
}

class ParsedBody implements BodyTarget {
  readonly wantsInto = false;
  constructor(
    private readonly a: Admission,
    private readonly parse: Parse,
  ) {}

  into(): Uint8Array | null {
    return null;
  }

  /** Parsed while the bytes are valid (they may be uWS's chunk), then pushed on with the reading. */
  bodyBytes(bytes: Uint8Array): void {
    this.a.bodyParsed(bytes, this.parse(this.a.sub, bytes));
  }

  tooLarge(declared: number): void {
    this.a.tooLarge(declared);
  }

  overBudget(): void {
    this.a.overBudget();
  }
}
