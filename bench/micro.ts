/**
 * `npm run bench:micro`: every hot structure's micro benchmark in one run, so
 * the figures are side by side on the same machine state. Each area exports
 * `benches` (bench/*.bench.ts); this runner prints µs per item (median of
 * tinybench's samples divided by the items one call processes).
 * Filter by name: `npm run bench:micro -- dedup`.
 */
import { Bench } from 'tinybench';
import { cpus } from 'node:os';

interface MicroBench {
  name: string;
  items: number;
  setup?: () => Promise<void> | void;
  fn: () => void;
}

const AREAS = ['solana', 'ed25519', 'evm', 'shared', 'native', 'accounts'];
const filter = process.argv.slice(2);

const all: { area: string; b: MicroBench }[] = [];
for (const area of AREAS) {
  try {
    const mod = (await import(`./${area}.bench.js`)) as { benches: MicroBench[] };
    for (const b of mod.benches) all.push({ area, b });
  } catch (e) {
    console.error(`bench/${area}: not loaded (${(e as Error).message})`);
  }
}

const chosen = all.filter(({ area, b }) => filter.length === 0 || filter.some((f) => `${area} ${b.name}`.includes(f)));
console.log(`node ${process.version}, ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}`);
const rows: Record<string, string | number>[] = [];
for (const { area, b } of chosen) {
  await b.setup?.();
  const bench = new Bench({ time: 400, warmupTime: 100 });
  bench.add(b.name, b.fn);
  const [task] = await bench.run();
  const r = task?.result as { latency?: { p50?: number; mean: number } } | undefined;
  const ms = r?.latency?.p50 ?? r?.latency?.mean;
  rows.push({ area, bench: b.name, 'µs/item': ms === undefined ? 'error' : Number(((ms * 1000) / b.items).toFixed(3)) });
}
console.table(rows);
