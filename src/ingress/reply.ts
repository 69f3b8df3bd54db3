/**
 * Writing answers on uWS responses, and the rules that keep it safe (uWS
 * aborts the process or corrupts memory otherwise):
 * - `onAborted` is registered before any asynchronous step (`watchAbort`; an
 *   answer written inside the handler needs none, which keeps a gate refusal
 *   as cheap as a bare request);
 * - an answer written after an await is corked (every write here is);
 * - nothing is written to a response that was aborted or already answered.
 *
 * Two ways an answer waits, in arrival order, without a closure per answer:
 * - coalescing (`http.coalesce_answers`): a turn's first answer is written at
 *   once, later ones at the turn's end, back to back, so a client asleep in
 *   epoll is woken once, not once per answer (`npm run bench:coalesce`:
 *   cheaper in 10 of 12 rounds at 16 connections). A lone request is never
 *   held, nor is forwarding.
 * - a held refusal (`sendHeld`): a door shed is written after about the
 *   queue's wait (docs/protocol.md#capacity), so a client resending at once
 *   comes back when there is room.
 */
import type { HttpResponse } from './uws.js';
import type { AckFirst } from './ack-first.js';
import { bytesOf, encodedOf, statusLine, type Headers } from './headers.js';
import type { Turn } from '../pipeline/submission.js';

/** A pre-bound prom-client histogram child, in seconds. */
export interface LatencyTimer {
  observe(seconds: number): void;
}

/** Per-request state hung on the uWS response object. */
export interface Res extends HttpResponse {
  aborted?: boolean;
  done?: boolean;
  /** The abort handler is registered. */
  watching?: boolean;
  /** When the handler started, for the accept-latency histogram. */
  t0?: number;
  timer?: LatencyTimer | undefined;
  /** Set by a door on an acknowledgement: sent as `x-svc-request-id` (docs/protocol.md#status). */
  requestId?: string | null;
  /** Gives back what a body being read holds, when the client goes away mid-body (body.ts). */
  onGone?: (() => void) | null;
}

const CONTENT_TYPE = bytesOf('content-type');
const NODE = bytesOf('x-svc-node');
const REQUEST_ID = bytesOf('x-svc-request-id');
export const JSON_TYPE = 'application/json';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Registers the abort handler (once): required before the request goes asynchronous. */
export function watchAbort(r: Res): void {
  if (r.watching) return;
  r.watching = true;
  r.onAborted(() => {
    r.aborted = true;
    r.onGone?.();
    r.onGone = null;
  });
}

interface ReplierOptions {
  coalesce: boolean;
  ack: AckFirst;
  /** `node.name`, sent as `x-svc-node` on every answer (docs/protocol.md#headers). */
  node: string;
}

/**
 * Answers waiting to be written, in arrival order, as parallel arrays:
 * holding one costs no closure. Each has a due time; in arrival order the due
 * times never go backwards, so the head is always the next one due.
 */
class AnswerQueue {
  private readonly res: Res[] = [];
  private readonly due: number[] = [];
  private readonly status: number[] = [];
  private readonly type: (string | null)[] = [];
  private readonly body: (string | Uint8Array | undefined)[] = [];
  private readonly headers: (Headers | undefined)[] = [];
  private readonly close: boolean[] = [];
  private head = 0;

  get size(): number {
    return this.res.length - this.head;
  }

  push(res: Res, due: number, status: number, type: string | null, body: string | Uint8Array, headers: Headers | undefined, close: boolean): void {
    const i = this.res.length;
    this.res.push(res);
    this.due[i] = i > this.head && due < this.due[i - 1]! ? this.due[i - 1]! : due;
    this.status[i] = status;
    this.type[i] = type;
    this.body[i] = body;
    this.headers[i] = headers;
    this.close[i] = close;
  }

  /**
   * Writes, back to back, every answer due by `now` (answers the writes add
   * join in, in order); a client that went away meanwhile gets nothing, as
   * uWS forbids writing to it. Returns the next due time, or Infinity.
   */
  writeDue(now: number, write: (res: Res, status: number, type: string | null, body: string | Uint8Array, headers: Headers | undefined, close: boolean) => void): number {
    let i = this.head;
    for (; i < this.res.length && this.due[i]! <= now; i++) {
      const res = this.res[i]!;
      if (!res.aborted) write(res, this.status[i]!, this.type[i]!, this.body[i]!, this.headers[i], this.close[i]!);
      this.res[i] = undefined as unknown as Res;
      this.body[i] = undefined;
      this.headers[i] = undefined;
    }
    this.head = i;
    const lists = [this.res, this.due, this.status, this.type, this.body, this.headers, this.close] as unknown[][];
    if (i === this.res.length) {
      for (const a of lists) a.length = 0;
      this.head = 0;
      return Infinity;
    }
    if (i >= 4096 && i * 2 >= this.res.length) {
      for (const a of lists) a.splice(0, i);
      this.head = 0;
    }
    return this.due[this.head]!;
  }
}

/** What the scheduler drives below it: the verifier's turn and wake-up, and the pipeline's resumption of a checked slot. */
interface Below {
  verifier: { readonly inflight: number; tick(): void; wake(): void };
  checked: (slot: number) => void;
}

/**
 * The one scheduler of when answers and forwards leave: ack-first (`ack`),
 * answers held to the turn's end, refusals paced, and checked transactions
 * queued only where their answers leave at once (`Turn`). It runs the
 * verifier's turn ends and wake-ups (`turn`, `wake`) and resumes the
 * pipeline's checked slots (`runCommits`): its calls go down, and the layers
 * below read its state instead of calling up.
 */
export class Replier implements Turn {
  private readonly coalescing: boolean;
  readonly ack: AckFirst;
  /** Answers are held to the turn's end (coalescing, a turn that wrote one already or the verifier's). */
  holding = false;
  /** Answers held for the end of the turn (coalescing). */
  private readonly held = new AnswerQueue();
  /** Checked slots waiting to be queued where their answers go out at once; the verifier adds its answers here. */
  readonly commits: number[] = [];
  committing = false;
  private below: Below | null = null;
  /** Refusals held by `sendHeld`, behind one timer. */
  private readonly paced = new AnswerQueue();
  private pacedTimer: NodeJS.Timeout | null = null;
  // The answer being written, for `writeCorked`: one callback per Replier instead of a closure per answer.
  private wRes: Res | null = null;
  private wStatus = 0;
  private wType: string | null = null;
  private wBody: string | Uint8Array = '';
  private wHeaders: Headers | undefined = undefined;
  private wClose = false;
  private readonly writeFn = this.write.bind(this);

  private readonly node: Uint8Array;

  constructor(opts: ReplierOptions) {
    this.coalescing = opts.coalesce;
    this.ack = opts.ack;
    this.node = bytesOf(opts.node);
  }

  /** The composition root hands over the verifier and the pipeline once both exist. */
  drive(below: Below): void {
    this.below = below;
  }

  /** Starts a request's state (timed from the handler's start). Anything asynchronous needs `watchAbort` first. */
  begin(res: HttpResponse, timer?: LatencyTimer): Res {
    // The previous socket's callback has returned, so its acknowledgements are out: what waited for them goes now.
    this.ack.drain();
    const r = res as Res;
    r.aborted = false;
    r.done = false;
    r.watching = false;
    r.timer = timer;
    r.requestId = null;
    r.onGone = null;
    if (timer) r.t0 = performance.now();
    return r;
  }

  guard(res: HttpResponse, timer?: LatencyTimer): Res {
    const r = this.begin(res, timer);
    watchAbort(r);
    return r;
  }

  /**
   * The verifier's turn end: its answers (collected or checked now) are held,
   * then the checked slots resume, their answers written at once, then the
   * rest held goes out. Only a turn with answers to give holds them (a serial
   * client's inline answers already went out).
   */
  readonly turn = (): void => {
    const b = this.below!;
    if (b.verifier.inflight > 0) this.holdAnswers();
    b.verifier.tick();
    this.flushHeld();
  };

  /** A worker published an answer: as a turn end, without checking here. */
  readonly wake = (): void => {
    this.holdAnswers();
    this.below!.verifier.wake();
    this.flushHeld();
  };

  /** Resumes the checked slots waiting (`commits`), in order, outside any socket callback; their answers leave at once. */
  readonly runCommits = (): void => {
    const c = this.commits;
    // Still inside a callback (a flush from one): the scheduled run comes after it.
    if (c.length === 0 || this.ack.depth > 0 || this.committing) return;
    const checked = this.below!.checked;
    this.committing = true;
    try {
      // A resumed slot may add more (a group's members): they join this run.
      for (let i = 0; i < c.length; i++) checked(c[i]!);
    } finally {
      c.length = 0;
      this.committing = false;
    }
  };

  /** Writes a whole answer, corked; a no-op once aborted or answered. `close`: end the connection (framing errors). */
  send(res: Res, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers, close = false): void {
    if (res.aborted || res.done) return;
    res.done = true;
    // A transaction was just queued for it (`runCommits`): holding the answer would let a close lose it.
    if (!this.coalescing || this.committing) return this.write(res, status, contentType, body, headers, close);
    if (!this.holding) {
      this.holding = true;
      setImmediate(this.endTurn);
      this.write(res, status, contentType, body, headers, close);
      return;
    }
    // Held past the handler's return: uWS wants an abort handler for that.
    watchAbort(res);
    this.held.push(res, 0, status, contentType, body, headers, close);
  }

  /**
   * Holds every answer until `flushHeld`, the first included: the verifier
   * answers batches outside socket callbacks, where writing the first at once
   * would wake the client twice.
   */
  holdAnswers(): void {
    if (!this.coalescing || this.holding) return;
    this.holding = true;
    setImmediate(this.endTurn);
  }

  /**
   * Writes every held answer now. Answers made inside a `setImmediate` (the
   * verifier's) would otherwise wait a whole further loop iteration.
   */
  flushHeld(): void {
    this.runCommits();
    this.held.writeDue(Infinity, this.writeFn);
  }

  private readonly endTurn = (): void => {
    this.holding = false;
    this.flushHeld();
  };

  /** `send`, held `ms` first (`RelayError.holdMs`); a client gone meanwhile gets nothing. */
  sendHeld(res: Res, ms: number, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers): void {
    if (ms <= 0) return this.send(res, status, contentType, body, headers);
    if (res.aborted || res.done) return;
    res.done = true;
    watchAbort(res);
    this.paced.push(res, performance.now() + ms, status, contentType, body, headers, false);
    if (this.pacedTimer === null) this.pacedTimer = setTimeout(this.releaseDue, ms);
  }

  readonly heldRefusals = (): number => this.paced.size;

  /** Shutdown: nothing is left unanswered when the listeners close. */
  releaseHeld(): void {
    if (this.pacedTimer !== null) clearTimeout(this.pacedTimer);
    this.pacedTimer = null;
    this.paced.writeDue(Infinity, this.writeFn);
  }

  private readonly releaseDue = (): void => {
    this.pacedTimer = null;
    const next = this.paced.writeDue(performance.now() + 0.5, this.writeFn);
    if (next !== Infinity) this.pacedTimer = setTimeout(this.releaseDue, Math.max(1, next - performance.now()));
  };

  private write(res: Res, status: number, contentType: string | null, body: string | Uint8Array, headers: Headers | undefined, close: boolean): void {
    this.wRes = res;
    this.wStatus = status;
    this.wType = contentType;
    this.wBody = body;
    this.wHeaders = headers;
    this.wClose = close;
    try {
      res.cork(this.writeCorked);
    } finally {
      this.wRes = null;
      this.wBody = '';
      this.wHeaders = undefined;
    }
    if (res.timer) res.timer.observe((performance.now() - res.t0!) / 1000);
  }

  private readonly writeCorked = (): void => {
    const res = this.wRes!;
    res.writeStatus(bytesOf(statusLine(this.wStatus)));
    if (this.wType) res.writeHeader(CONTENT_TYPE, bytesOf(this.wType));
    res.writeHeader(NODE, this.node);
    if (res.requestId) res.writeHeader(REQUEST_ID, res.requestId);
    const h = this.wHeaders;
    if (h) {
      const enc = encodedOf(h);
      if (enc !== undefined) for (let i = 0; i < enc.length; i += 2) res.writeHeader(enc[i]!, enc[i + 1]!);
      else for (let i = 0; i < h.length; i++) res.writeHeader(bytesOf(h[i]![0]), h[i]![1]);
    }
    res.end(this.wBody, this.wClose);
  };
}
