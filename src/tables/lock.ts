/**
 * The lock word every shared table takes around multi-field updates: a
 * futex-style mutex over one Int32 of a SharedArrayBuffer, for main thread and
 * workers alike. With no verify workers the relay calls `soleThread()` on each
 * table, whose lock sites then skip these calls (six locks per transaction); a
 * table attached in another thread is a new object and still locks.
 */

/** Spins this many CAS attempts before sleeping: a holder normally leaves within ~100 ns. */
const SPIN_LIMIT = 200;
/** Sleep slice while waiting, so a dead holder is noticed. */
const WAIT_SLICE_MS = 10;
/**
 * A worker terminated inside a critical section would wedge the slot for every
 * thread. A live holder needs well under 1 µs, so only a 1 s stop-the-world
 * pause makes a takeover wrong, leaving one bucket off once: better than a wedge.
 */
const STEAL_AFTER_MS = 1000;

/**
 * Takes the lock word a[i]: 0 free, 1 held, 2 held and someone may sleep on
 * it (the classic futex mutex). Uncontended: one compareExchange.
 * The critical section that follows must not throw.
 */
export function lockWord(a: Int32Array, i: number): void {
  if (Atomics.compareExchange(a, i, 0, 1) === 0) return;
  lockWordSlow(a, i);
}

function lockWordSlow(a: Int32Array, i: number): void {
  for (let s = 0; s < SPIN_LIMIT; s++) {
    if (Atomics.load(a, i) === 0 && Atomics.compareExchange(a, i, 0, 1) === 0) return;
  }
  // Sleep instead of burning a core the holder may need (CI has two cores).
  const start = performance.now();
  while (Atomics.exchange(a, i, 2) !== 0) {
    if (Atomics.wait(a, i, 2, WAIT_SLICE_MS) === 'timed-out' && performance.now() - start > STEAL_AFTER_MS) {
      return; // the word holds 2 and is now ours
    }
  }
}

/** Releases a[i]; wakes one sleeper if any thread went to sleep on it. */
export function unlockWord(a: Int32Array, i: number): void {
  if (Atomics.exchange(a, i, 0) === 2) Atomics.notify(a, i, 1);
}
