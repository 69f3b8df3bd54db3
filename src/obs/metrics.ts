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
  }

  /** A counter whose values are read from `read()` at scrape time. */
  counter(name: string, help: string, labelNames: string[], read: () => Iterable<[Record<string, string>, number]>): void {
    new client.Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, v] of read()) if (v > 0) this.inc(labels, v);
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
   * A hot-path histogram: a scan of a dozen bounds and an increment, rendered
   * at scrape time; prom-client's label hashing cost ~2 µs per request.
   */
  histogram(name: string, help: string, labelName: string, buckets: number[]): FastHistogram {
    const h = new FastHistogram(name, help, labelName, buckets);
    this.registry.registerMetric(h as unknown as client.Metric);
    return h;
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** One labelled series of a FastHistogram: per-bucket counts (not cumulative), sum and count. */
class HistogramSeries {
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

/** A histogram with one label, children created up front; implements the part of prom-client's metric interface its registry reads. */
class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly bounds: readonly number[],
  ) {}

  labels(value: string): HistogramSeries {
    let s = this.series.get(value);
    if (!s) this.series.set(value, (s = new HistogramSeries(this.bounds)));
    return s;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: { metricName: string; labels: Record<string, string | number>; value: number }[] } {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [label, s] of this.series) {
      let acc = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        acc += s.counts[i]!;
        const le = i < this.bounds.length ? this.bounds[i]! : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { [this.labelName]: label, le }, value: acc });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: label }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: label }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** Maps a CounterSet to prom-client label tuples. */
export function labelled<K extends string>(set: CounterSet<K>, label: string): Iterable<[Record<string, string>, number]> {
  return [...set.values].map(([k, v]) => [{ [label]: k }, v] as [Record<string, string>, number]);
}
