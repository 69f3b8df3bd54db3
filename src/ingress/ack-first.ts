/**
 * Acknowledge first, then forward.
 *
 * uWS corks a socket while it runs that socket's callbacks and flushes what
 * they wrote once they return. Node runs the microtask queue as each JS
 * callback returns, which is before that flush. So a forward kicked as a
 * microtask by an admission made inside a body callback went out before the
 * client's acknowledgement. The acknowledgement then waited for the upstream
 * write.
 *
 * That write is not free where the upstream is a local process, as in every
 * benchmark here: waking it costs the writer an inter-processor interrupt,
 * a VM exit under a hypervisor. strace of the serial solana-rpc run showed
 * recvfrom(client), write(upstream), sendto(client) for every request; the
 * acknowledgement's p50 fell 144 → 132 µs and 152 → 130 µs once the forward
 * waited for the flush.
 *
 * Work handed to `afterAcks` inside such a callback (`ackScope` > 0) waits
 * until the acknowledgements have left: to the start of the next request's
 * handler (`drainAfterAcks`, called by `begin`), or to the end of the
 * event-loop turn (one `setImmediate`), whichever comes first. Anywhere else
 * (the verifier's end-of-turn batches, worker results, UDP) it stays a
 * microtask: no acknowledgement is corked there. `http.ack_first: false`
 * keeps the microtask everywhere.
 */

let enabled = true;
let depth = 0;
let scheduled = false;
const waiting: (() => void)[] = [];

/** `http.ack_first`. */
export function setAckFirst(on: boolean): void {
  enabled = on;
  if (!on) drainAfterAcks();
}

/** Marks the start of a callback whose answers uWS flushes only once it returns (a request body's). */
export function enterAckScope(): void {
  depth++;
}

/** The end of that callback: call it in a `finally`. */
export function leaveAckScope(): void {
  depth--;
}

/**
 * Runs `fn` once the acknowledgements written so far have left (a microtask outside an ack scope).
 * `fn` must not throw (the lanes' pump catches its own errors).
 */
export function afterAcks(fn: () => void): void {
  if (depth === 0 || !enabled) {
    queueMicrotask(fn);
    return;
  }
  waiting.push(fn);
  if (!scheduled) {
    scheduled = true;
    setImmediate(endOfTurn);
  }
}

function endOfTurn(): void {
  scheduled = false;
  drainAfterAcks();
}

/**
 * Runs what waits for acknowledgements. `begin` calls it when a request's
 * handler starts: the previous socket's callback has returned by then, so its
 * answers are flushed.
 */
export function drainAfterAcks(): void {
  if (waiting.length === 0) return;
  // A callback may hand over more: it runs outside any scope, so that is a microtask, not a push here.
  for (let i = 0; i < waiting.length; i++) {
    const fn = waiting[i]!;
    waiting[i] = undefined as unknown as () => void;
    fn();
  }
  waiting.length = 0;
}

/** Work waiting for acknowledgements (tests). */
export function waitingAfterAcks(): number {
  return waiting.length;
}
