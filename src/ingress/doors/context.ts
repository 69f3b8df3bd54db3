/** What every HTTP door gets from the composition root, and the transport the pipeline reads through. */
import type { Pipeline } from '../../pipeline/admit.js';
import { Next, type DoorIo, type Sink, type Submission } from '../../pipeline/submission.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';
import type { AckFirst } from '../ack-first.js';
import { readBodyTo, type BodyBudget, type BodyTarget } from '../body.js';
import type { RelayError } from '../../errors.js';
import type { LatencyTimer, Replier, Res } from '../reply.js';

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

/** The request is valid only while the handler runs, which is when the pipeline asks. */
export function httpIo(ctx: DoorContext, res: (sub: Submission) => Res = (sub) => sub.ctx as Res): DoorIo {
  return {
    peer: (sub) => ctx.ip(res(sub), sub.req as HttpRequest),
    corked: true,
  };
}

/**
 * Admits `sub`, reading what the pipeline asks for while the handler runs:
 * the head and the peer once it is not shed, then the body (at most
 * `sub.maxBody` bytes) once it passed the gate.
 */
export function admitHttp(ctx: DoorContext, sub: Submission, sink: Sink, res: Res): void {
  let next = ctx.pipeline.admit(sub, sink);
  if (next === Next.Head) {
    const io = sub.io;
    sub.refused = io.head?.(sub) ?? null;
    if (sub.refused === null) sub.ip = io.peer(sub);
    next = ctx.pipeline.resume(sub);
  }
  if (next === Next.Body) readBodyTo(res, sub.req as HttpRequest, sub.maxBody, bodyTo(sub), ctx.ack, ctx.bodies);
}

/**
 * Where `sub`'s body goes: the submission itself, or where the door reads it
 * first (`DoorIo.parse`, a JSON body) and then hands it on.
 */
export function bodyTo(sub: Submission): BodyTarget {
  return sub.io.parse === undefined ? sub : new ParsedBody(sub, sub.io.parse);
}

class ParsedBody implements BodyTarget {
  readonly wantsInto = false;
  constructor(
    private readonly sub: Submission,
    private readonly parse: (sub: Submission, body: Uint8Array) => RelayError | null,
  ) {}

  into(): Uint8Array | null {
    return null;
  }

  /** Parsed while the bytes are valid (they may be uWS's chunk), then the pipeline goes on. */
  bodyBytes(bytes: Uint8Array): void {
    const err = this.parse(this.sub, bytes);
    if (err !== null) this.sub.invalid = err;
    this.sub.bodyBytes(bytes);
  }

  tooLarge(declared: number): void {
    this.sub.tooLarge(declared);
  }

  overBudget(): void {
    this.sub.overBudget();
  }
}
