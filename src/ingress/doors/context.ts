/** What every HTTP door gets from the composition root, and the transport the pipeline reads through. */
import type { Pipeline } from '../../pipeline/admit.js';
import { Next, type DoorIo, type Sink, type Submission } from '../../pipeline/submission.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';
import type { AckFirst } from '../ack-first.js';
import { readBodyTo, type BodyBudget } from '../body.js';
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
  if (next === Next.Body) readBodyTo(res, sub.req as HttpRequest, sub.maxBody, sub, ctx.ack, ctx.bodies);
}
