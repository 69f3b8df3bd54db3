/**
 * Acknowledge first, then forward (`http.ack_first`).
 *
 * uWS flushes a socket's writes after its callback returns, but Node runs
 * microtasks before that: a forward kicked as a microtask from a body callback
 * went out before the client's acknowledgement, which then waited for the
 * upstream write (serial run: ack p50 132 vs 144 µs).
 *
 * Work handed to `after` between `enter` and `leave` waits until the next
 * request's handler starts (`drain`) or the turn ends, whichever is first.
 * Elsewhere (the verifier's batches, worker results, UDP) nothing is corked,
 * so it stays a microtask.
 */
export class AckFirst {
  /** Callbacks entered and not left: above 0, inside one (the pipeline reads it as its turn's state). */
  depth = 0;
  private scheduled = false;
  private readonly waiting: (() => void)[] = [];
  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    this.drain();
  };

  /** `enabled` false: `after` is always a microtask. */
  constructor(readonly enabled = true) {}

  /** A callback whose answers uWS flushes only once it returns (a request body's). */
  enter(): void {
    this.depth++;
  }

  /** Call it in a `finally`. */
  leave(): void {
    this.depth--;
  }

  /** Runs `fn` once the acknowledgements written so far have left. `fn` must not throw. */
  readonly after = (fn: () => void): void => {
    if (this.depth === 0 || !this.enabled) {
      queueMicrotask(fn);
      return;
    }
    this.waiting.push(fn);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.endOfTurn);
    }
  };

  /** A request's handler calls it as it starts: the previous socket's answers are out. */
  drain(): void {
    const w = this.waiting;
    if (w.length === 0) return;
    // A callback may hand over more: it runs outside any scope, so that is a microtask, not a push here.
    for (let i = 0; i < w.length; i++) {
      const fn = w[i]!;
      w[i] = undefined as unknown as () => void;
      fn();
    }
    w.length = 0;
  }

  get pending(): number {
    return this.waiting.length;
  }
}
