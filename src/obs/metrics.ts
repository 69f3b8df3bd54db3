/**
 * Prometheus metrics. Hot paths bump plain numbers in `Stats`; prom-client
 * reads them at scrape time through collect callbacks, so a request costs an
 * integer increment, not a label-hash lookup. Labels are closed sets (door,
 * reason, lane, upstream index): never an account, never a UUID.
 */
import client from 'prom-client';

/** A counter keyed by a small closed set of label values, read at scrape time. */
export class CounterSet<K extends string> {
  readonly values = new Map<K, number>();
  inc(key: K, n = 1): void {
    this.values.set(key, (this.values.get(key) ?? 0) + n);
  }
  get(key: K): number {
    return this.values.get(key) ?? 0;
  }
}

export class Metrics {
  readonly registry = new client.Registry();

  constructor() {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'txrelay_process_' });
    // Gauges named like counters (Prometheus conventions: `_total` is for counters only); each is
    // the sum over `type` of the gauge of the same name without the suffix, which stays.
    for (const g of ['active_handles_total', 'active_requests_total', 'active_resources_total']) {
      this.registry.removeSingleMetric(`txrelay_process_nodejs_${g}`);
    }
  }

  /**
   * A counter whose values are read from `read()` at scrape time. Zeros are
   * exported too: a series that first appears at a non-zero value hides its
   * first increase from rate() and increase(), and from the alerts built on them.
   */
  counter(name: string, help: string, labelNames: string[], read: () => Iterable<[Record<string, string>, number]>): void {
    new client.Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, v] of read()) this.inc(labels, v);
      },
    });
  }

  /** A gauge whose values are read from `read()` at scrape time. */
  gauge(name: string, help: string, labelNames: string[], read: () => Iterable<[Record<string, string>, number]>): void {
    new client.Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, v] of read()) this.set(labels, v);
      },
    });
  }

  /**
   * A histogram rendered at scrape time from `read()`: the series of every
   * thread that observes it (LabelledHistogram.snapshot), summed per label
   * value. With several labels, a series' key is its values joined by
   * LABEL_SEPARATOR, in `labelNames` order.
   */
  histogram(name: string, help: string, labelNames: string | readonly string[], bounds: readonly number[], read: () => Iterable<readonly [string, SeriesData]>): void {
    const names = typeof labelNames === 'string' ? [labelNames] : labelNames;
    this.registry.registerMetric(new MergedHistogram(name, help, names, bounds, read) as unknown as client.Metric);
  }

  /** Runs before each scrape renders (gathering what other threads counted). */
  beforeRender: (() => Promise<void>) | null = null;

  async render(): Promise<{ contentType: string; body: string }> {
    await this.beforeRender?.();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** One series of a histogram as plain data: per-bucket counts (not cumulative, the last is +Inf), sum and count. */
export interface SeriesData {
  counts: number[];
  sum: number;
  count: number;
}

/**
 * One labelled series observed on the hot path: a scan of a dozen bounds and
 * an increment (prom-client's label hashing cost ~2 µs per request).
 */
export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

/** A thread's series of one histogram, by label value, created on first use. */
export class LabelledHistogram {
  private readonly series = new Map<string, HistogramSeries>();

  constructor(private readonly bounds: readonly number[]) {}

  labels(value: string): HistogramSeries {
    let s = this.series.get(value);
    if (!s) this.series.set(value, (s = new HistogramSeries(this.bounds)));
    return s;
  }

  snapshot(): [string, SeriesData][] {
    return [...this.series].map(([k, s]) => [k, { counts: [...s.counts], sum: s.sum, count: s.count }]);
  }
}

/** Joins the label values of a series key for a histogram with several labels (never in an origin or a lane name). */
export const LABEL_SEPARATOR = '\u0000';

/** Sums series by label value. */
export function mergeSeries(all: Iterable<readonly [string, SeriesData]>): Map<string, SeriesData> {
  const out = new Map<string, SeriesData>();
  for (const [k, s] of all) {
    const m = out.get(k);
    if (m === undefined) out.set(k, { counts: [...s.counts], sum: s.sum, count: s.count });
    else {
      for (let i = 0; i < s.counts.length; i++) m.counts[i] = (m.counts[i] ?? 0) + s.counts[i]!;
      m.sum += s.sum;
      m.count += s.count;
    }
  }
  return out;
}

/** The part of prom-client's metric interface its registry reads, for a histogram merged at scrape time. */
class MergedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    private readonly read: () => Iterable<readonly [string, SeriesData]>,
  ) {}

  get(): { name: string; help: string; type: string; aggregator: string; values: { metricName: string; labels: Record<string, string | number>; value: number }[] } {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [key, s] of mergeSeries(this.read())) {
      const parts = key.split(LABEL_SEPARATOR);
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = parts[i] ?? ''));
      let acc = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        acc += s.counts[i] ?? 0;
        const le = i < this.bounds.length ? this.bounds[i]! : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: acc });
      }
      values.push({ metricName: `${this.name}_sum`, labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}

/** Maps a CounterSet to prom-client label tuples. */
export function labelled<K extends string>(set: CounterSet<K>, label: string): Iterable<[Record<string, string>, number]> {
  return [...set.values].map(([k, v]) => [{ [label]: k }, v] as [Record<string, string>, number]);
}
