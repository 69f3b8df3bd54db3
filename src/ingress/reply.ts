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
}

const CONTENT_TYPE = bytesOf('content-type');
export const JSON_TYPE = 'application/json';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Registers the abort handler (once): required before the request goes asynchronous. */
export function watchAbort(r: Res): void {
  if (r.watching) return;
  r.watching = true;
  r.onAborted(() => {
    r.aborted = true;
  });
}

interface ReplierOptions {
  coalesce: boolean;
  ack: AckFirst;
}

export class Replier {
  private readonly coalescing: boolean;
  private readonly ack: AckFirst;
  private answersThisTurn = 0;
  // Answers held for the end of the turn, in parallel arrays: holding one costs no closure.
  private readonly held: Res[] = [];
  private readonly heldStatus: number[] = [];
  private readonly heldType: (string | null)[] = [];
  private readonly heldBody: (string | Uint8Array | undefined)[] = [];
  private readonly heldHeaders: (Headers | undefined)[] = [];
  private readonly heldClose: boolean[] = [];
  // Refusals held by `sendHeld`, in arrival order, behind one timer.
  private readonly paced: Res[] = [];
  private readonly pacedDue: number[] = [];
  private readonly pacedStatus: number[] = [];
  private readonly pacedType: (string | null)[] = [];
  private readonly pacedBody: (string | Uint8Array | undefined)[] = [];
  private readonly pacedHeaders: (Headers | undefined)[] = [];
  private pacedHead = 0;
  private pacedTimer: NodeJS.Timeout | null = null;
  // The answer being written, for `writeCorked`: one callback per Replier instead of a closure per answer.
  private wRes: Res | null = null;
  private wStatus = 0;
  private wType: string | null = null;
  private wBody: string | Uint8Array = '';
  private wHeaders: Headers | undefined = undefined;
  private wClose = false;

  constructor(opts: ReplierOptions) {
    this.coalescing = opts.coalesce;
    this.ack = opts.ack;
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
    if (timer) r.t0 = performance.now();
    return r;
  }

  guard(res: HttpResponse, timer?: LatencyTimer): Res {
    const r = this.begin(res, timer);
    watchAbort(r);
    return r;
  }

  /** Writes a whole answer, corked; a no-op once aborted or answered. `close`: end the connection (framing errors). */
  send(res: Res, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers, close = false): void {
    if (res.aborted || res.done) return;
    res.done = true;
    if (!this.coalescing) return this.write(res, status, contentType, body, headers, close);
    if (this.answersThisTurn++ === 0) {
      setImmediate(this.endTurn);
      this.write(res, status, contentType, body, headers, close);
      return;
    }
    // Held past the handler's return: uWS wants an abort handler for that.
    watchAbort(res);
    const i = this.held.length;
    this.held.push(res);
    this.heldStatus[i] = status;
    this.heldType[i] = contentType;
    this.heldBody[i] = body;
    this.heldHeaders[i] = headers;
    this.heldClose[i] = close;
  }

  /**
   * Holds every answer until `flushHeld`, the first included: the verifier
   * answers batches outside socket callbacks, where writing the first at once
   * would wake the client twice.
   */
  readonly holdAnswers = (): void => {
    if (!this.coalescing || this.answersThisTurn > 0) return;
    this.answersThisTurn = 1;
    setImmediate(this.endTurn);
  };

  /**
   * Writes every held answer now. Answers made inside a `setImmediate` (the
   * verifier's) would otherwise wait a whole further loop iteration.
   */
  readonly flushHeld = (): void => {
    const held = this.held;
    // An answer written here may run callbacks that answer more: those join this flush, in order.
    for (let i = 0; i < held.length; i++) {
      const res = held[i]!;
      // A client that went away while its answer was held gets nothing (uWS forbids writing to it).
      if (!res.aborted) this.write(res, this.heldStatus[i]!, this.heldType[i]!, this.heldBody[i]!, this.heldHeaders[i], this.heldClose[i]!);
      held[i] = undefined as unknown as Res;
      this.heldBody[i] = undefined;
      this.heldHeaders[i] = undefined;
    }
    held.length = 0;
  };

  private readonly endTurn = (): void => {
    this.answersThisTurn = 0;
    this.flushHeld();
  };

  /** `send`, held `ms` first (`RelayError.holdMs`); a client gone meanwhile gets nothing. */
  sendHeld(res: Res, ms: number, status: number, contentType: string | null, body: string | Uint8Array, headers?: Headers): void {
    if (ms <= 0) return this.send(res, status, contentType, body, headers);
    if (res.aborted || res.done) return;
    res.done = true;
    watchAbort(res);
    const due = performance.now() + ms;
    const paced = this.paced;
    const i = paced.length;
    paced.push(res);
    // Due times in arrival order never go backwards, so the head is always the next one due.
    this.pacedDue[i] = i > this.pacedHead && due < this.pacedDue[i - 1]! ? this.pacedDue[i - 1]! : due;
    this.pacedStatus[i] = status;
    this.pacedType[i] = contentType;
    this.pacedBody[i] = body;
    this.pacedHeaders[i] = headers;
    if (this.pacedTimer === null) this.pacedTimer = setTimeout(this.releaseDue, ms);
  }

  readonly heldRefusals = (): number => this.paced.length - this.pacedHead;

  /** Shutdown: nothing is left unanswered when the listeners close. */
  releaseHeld(): void {
    if (this.pacedTimer !== null) clearTimeout(this.pacedTimer);
    this.pacedTimer = null;
    this.releasePaced(Infinity);
  }

  private readonly releaseDue = (): void => {
    this.pacedTimer = null;
    this.releasePaced(performance.now());
  };

  private releasePaced(now: number): void {
    // Back to back: one wake-up of each client, as coalescing does.
    const paced = this.paced;
    let i = this.pacedHead;
    for (; i < paced.length && this.pacedDue[i]! <= now + 0.5; i++) {
      const res = paced[i]!;
      if (!res.aborted) this.write(res, this.pacedStatus[i]!, this.pacedType[i]!, this.pacedBody[i]!, this.pacedHeaders[i], false);
      paced[i] = undefined as unknown as Res;
      this.pacedBody[i] = undefined;
      this.pacedHeaders[i] = undefined;
    }
    this.pacedHead = i;
    const lists = [paced, this.pacedDue, this.pacedStatus, this.pacedType, this.pacedBody, this.pacedHeaders] as unknown[][];
    if (i === paced.length) {
      for (const a of lists) a.length = 0;
      this.pacedHead = 0;
      return;
    }
    if (i >= 4096 && i * 2 >= paced.length) {
      for (const a of lists) a.splice(0, i);
      this.pacedHead = 0;
    }
    this.pacedTimer = setTimeout(this.releaseDue, Math.max(1, this.pacedDue[this.pacedHead]! - performance.now()));
  }

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
    const h = this.wHeaders;
    if (h) {
      const enc = encodedOf(h);
      if (enc !== undefined) for (let i = 0; i < enc.length; i += 2) res.writeHeader(enc[i]!, enc[i + 1]!);
      else for (let i = 0; i < h.length; i++) res.writeHeader(bytesOf(h[i]![0]), h[i]![1]);
    }
    res.end(this.wBody, this.wClose);
  };
}
