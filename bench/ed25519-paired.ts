/**
 * `npm run build && node dist/bench/ed25519-paired.js [rounds]`: the ed25519
 * area of bench:micro (bench/ed25519.bench.ts) measured paired: every round
 * runs each variant for a short slice, in a fresh random order, and divides
 * by sodium-native's time for the same key mix in that round, so a machine
 * whose load changes from second to second still gives comparable ratios.
 * Prints the median µs per signature and the median ratio per variant.
 */
import { cpus } from 'node:os';
import { benches } from './ed25519.bench.js';

const rounds = Number(process.argv[2] ?? 40);
const CALLS = 6;

for (const b of benches) await b.setup?.();
const times = new Map<string, number[]>(benches.map((b) => [b.name, []]));
const ratios = new Map<string, number[]>(benches.map((b) => [b.name, []]));
for (const b of benches) for (let i = 0; i < 2; i++) b.fn(); // warm-up
for (let r = 0; r < rounds; r++) {
  const order = benches.slice().sort(() => Math.random() - 0.5);
  const us = new Map<string, number>();
  for (const b of order) {
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) b.fn();
    us.set(b.name, ((performance.now() - t0) * 1000) / (CALLS * b.items));
  }
  for (const b of benches) {
    const mix = b.name.slice(0, b.name.indexOf(':'));
    times.get(b.name)!.push(us.get(b.name)!);
    ratios.get(b.name)!.push(us.get(b.name)! / us.get(`${mix}: sodium-native single`)!);
  }
}
const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
console.log(`node ${process.version}, ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}, ${rounds} rounds of ${CALLS * 64} signatures per variant`);
console.table(benches.map((b) => ({ bench: b.name, 'µs/signature (median)': Number(median(times.get(b.name)!).toFixed(2)), '÷ sodium-native (median)': Number(median(ratios.get(b.name)!).toFixed(3)) })));
