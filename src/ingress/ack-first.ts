/**
 * Acknowledge first, then forward (`http.ack_first`).
 *
 * uWS corks a socket while it runs that socket's callbacks and flushes what
 * they wrote once they return. Node runs the microtask queue as each JS
 * callback returns, which is before that flush. So a forward kicked as a
 * microtask by an admission made inside a body callback went out before the
 * client's acknowledgement, which then waited for the upstream write.
 *
 * That write is not free where the upstream is a local process, as in every
 * benchmark here: waking it costs the writer an inter-processor interrupt, a
 * VM exit under a hypervisor. strace of a serial run showed recvfrom(client),
 * write(upstream), sendto(client) for every request; the acknowledgement's
 * p50 fell 144 -> 132 µs once the forward waited for the flush.
 *
 * Work handed to `after` inside such a callback (between `enter` and
 * `leave`) waits until the acknowledgements have left: to the start of the
 * next request's handler (`drain`, called as a request begins), or to the
 * end of the event-loop turn (one `setImmediate`), whichever comes first.
 * Anywhere else (the verifier's end-of-turn batches, worker results, UDP) it
 * stays a microtask: no acknowledgement is corked there. One per relay.
 */
export class AckFirst {
  private depth = 0;
  private scheduled = false;
  private readonly waiting: (() => void)[] = [];
  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    this.drain();
  };

  /** `enabled` false: `after` is always a microtask (`http.ack_first = false`). */
  constructor(readonly enabled = true) {}

  /** Marks the start of a callback whose answers uWS flushes only once it returns (a request body's). */
  enter(): void {
    this.depth++;
  }

  /** The end of that callback: call it in a `finally`. */
  leave(): void {
    this.depth--;
  }

  /**
   * Runs `fn` once the acknowledgements written so far have left (a
   * microtask outside a scope). `fn` must not throw (the lanes' pump catches
   * its own errors).
   */
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

  /** Runs what waits for acknowledgements; a request's handler calls it as it starts (the previous socket's answers are out). */
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

  /** Work waiting for acknowledgements (tests). */
  get pending(): number {
    return this.waiting.length;
  }
}
