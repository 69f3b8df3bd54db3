/**
 * The hot-path latency histogram renders as Prometheus expects a histogram:
 * cumulative `_bucket` series ending in `le="+Inf"`, then `_sum` and `_count`,
 * through the same registry as every other metric.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LabelledHistogram, Metrics } from '../../src/obs/metrics.js';

test('observations land in the first bucket whose bound they do not exceed; buckets render cumulatively', async () => {
  const m = new Metrics();
  const h = new LabelledHistogram([0.001, 0.01, 0.1]);
  m.histogram('t_seconds', 'test', 'door', [0.001, 0.01, 0.1], () => h.snapshot());
  const a = h.labels('a');
  for (const v of [0.0005, 0.001, 0.002, 0.05, 3]) a.observe(v);
  h.labels('b').observe(0.02);
  const text = (await m.render()).body;
  const lines = text.split('\n').filter((l) => l.startsWith('t_seconds'));
  assert.deepEqual(lines, [
    't_seconds_bucket{door="a",le="0.001"} 2',
    't_seconds_bucket{door="a",le="0.01"} 3',
    't_seconds_bucket{door="a",le="0.1"} 4',
    't_seconds_bucket{door="a",le="+Inf"} 5',
    't_seconds_sum{door="a"} 3.0535',
    't_seconds_count{door="a"} 5',
    't_seconds_bucket{door="b",le="0.001"} 0',
    't_seconds_bucket{door="b",le="0.01"} 0',
    't_seconds_bucket{door="b",le="0.1"} 1',
    't_seconds_bucket{door="b",le="+Inf"} 1',
    't_seconds_sum{door="b"} 0.02',
    't_seconds_count{door="b"} 1',
  ]);
  assert.match(text, /# TYPE t_seconds histogram/);
});

test('series observed in several threads render as one: counts, sums and counts added per label', async () => {
  const m = new Metrics();
  const bounds = [0.001, 0.01];
  const [one, two] = [new LabelledHistogram(bounds), new LabelledHistogram(bounds)];
  one.labels('a').observe(0.0005);
  two.labels('a').observe(0.005);
  two.labels('b').observe(1);
  m.histogram('u_seconds', 'test', 'door', bounds, () => [...one.snapshot(), ...two.snapshot()]);
  const lines = (await m.render()).body.split('\n').filter((l) => l.startsWith('u_seconds'));
  assert.deepEqual(lines, [
    'u_seconds_bucket{door="a",le="0.001"} 1',
    'u_seconds_bucket{door="a",le="0.01"} 2',
    'u_seconds_bucket{door="a",le="+Inf"} 2',
    'u_seconds_sum{door="a"} 0.0055',
    'u_seconds_count{door="a"} 2',
    'u_seconds_bucket{door="b",le="0.001"} 0',
    'u_seconds_bucket{door="b",le="0.01"} 0',
    'u_seconds_bucket{door="b",le="+Inf"} 1',
    'u_seconds_sum{door="b"} 1',
    'u_seconds_count{door="b"} 1',
  ]);
});
