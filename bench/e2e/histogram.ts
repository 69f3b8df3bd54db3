/** Quantiles of a Prometheus histogram between two scrapes (bench:e2e's relay-side latency). */

/**
 * The relay's own accept latency over a window, from the difference of two
 * scrapes of its histogram: the smallest bucket bound that holds the quantile.
 */
export function histogramQuantiles(a: Map<number, number>, b: Map<number, number>): { count: number; p50UpperMs: number; p99UpperMs: number } {
  const bounds = [...b.keys()].sort((x, y) => x - y);
  const delta = bounds.map((le) => [le, (b.get(le) ?? 0) - (a.get(le) ?? 0)] as const);
  const count = delta.length ? delta[delta.length - 1]![1] : 0;
  const q = (p: number) => {
    const bound = delta.find(([, c]) => c >= p * count);
    return bound ? bound[0] * 1000 : NaN;
  };
  return { count, p50UpperMs: q(0.5), p99UpperMs: q(0.99) };
}
