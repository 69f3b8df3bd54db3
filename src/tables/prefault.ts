/**
 * Writes each 4 KiB page of a new SharedArrayBuffer at start-up: V8 gets large
 * buffers as untouched zero pages, so otherwise the hot path pays the first
 * fault (~1.5 µs per first-touched dedup bucket over the first ~10^5
 * transactions). Costs ~50-100 ms once and makes RSS honest.
 */
const PAGE_WORDS = 1024;

export function prefault(sab: SharedArrayBuffer): void {
  const w = new Int32Array(sab, 0, sab.byteLength >>> 2);
  for (let i = 0; i < w.length; i += PAGE_WORDS) w[i] = w[i]!;
}
