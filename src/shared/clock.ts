/** Milliseconds on a monotonic-enough scale; injected so pure cores are testable without real time. */
export type Clock = () => number;

/** performance.timeOrigin + performance.now(): wall-clock milliseconds that never jump backwards within a process. */
export const systemClock: Clock = () => performance.timeOrigin + performance.now();
