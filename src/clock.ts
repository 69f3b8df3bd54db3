/** Milliseconds on a monotonic-enough scale; injected so pure cores are testable without real time. */
export type Clock = () => number;

/** This thread's time origin: fixed for its life, and its getter costs a binding call per read. */
const ORIGIN = performance.timeOrigin;

/** performance.timeOrigin + performance.now(): wall-clock milliseconds that never jump backwards within a process. */
export const systemClock: Clock = () => ORIGIN + performance.now();
