/**
 * Commits a freshly allocated SharedArrayBuffer's memory at start-up instead
 * of on the hot path. V8 takes large buffers from the kernel as untouched
 * zero pages, so the first write to each 4 KiB page is a minor fault: measured
 * here at ~1.5 µs per first-touched dedup bucket, which the 183 MiB dedup
 * table paid on most lookups for the relay's first ~10^5 transactions. One
 * write per page at creation costs ~50-100 ms once and makes RSS honest.
 */
const PAGE_WORDS = 1024;

export function prefault(sab: SharedArrayBuffer): void {
  const w = new Int32Array(sab, 0, sab.byteLength >>> 2);
  for (let i = 0; i < w.length; i += PAGE_WORDS) w[i] = w[i]!;
}
