/**
 * `npm run bench:status`: what the status API's traces cost (docs/protocol.md#status).
 * Memory: the JS heap a full tracker holds per transaction (each with one
 * upstream attempt answered, and its end), at the default cap. Time: opening
 * and completing a trace (the admission path's share), and reading a status
 * (a hit, and an id nobody sent). A flood: one account admits 1.2 times the
 * cap while 1,000 others hold 50 statuses each; how many of theirs still
 * read their state. Writes bench/results/status.md.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';
import { Tracker } from '../src/status/tracker.js';
import { nextRequestId } from '../src/status/request-id.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CAP = 200_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:status does)');

const sig = (i: number) => `5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQU${i.toString(36)}`;
const UPSTREAM = 'https://rpc.example.com:443';

/** One admitted transaction's whole trace: opened, sent once, accepted, ended. */
function traceOne(t: Tracker, i: number, now: number): void {
  const tr = t.open(sig(i), nextRequestId(), 1 + (i % 1000), 'solana', 'solana-v2');
  tr.sent(UPSTREAM, now);
  tr.answered(UPSTREAM, now + 2, 'ok', 200, null);
  tr.final('forwarded', null, now + 2);
}

function heapAfterGc(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

// Memory at the cap.
const ids = Array.from({ length: CAP }, (_, i) => sig(i));
const before = heapAfterGc();
const full = new Tracker({ retentionMs: 3600_000, maxEntries: CAP, node: 'bench' });
const t0 = Date.now();
for (let i = 0; i < CAP; i++) traceOne(full, i, t0);
const perTrace = (heapAfterGc() - before) / CAP;

// Time.
const bench = new Bench({ time: 500, warmupTime: 100 });
let n = CAP;
const churn = new Tracker({ retentionMs: 3600_000, maxEntries: CAP, node: 'bench' });
for (let i = 0; i < CAP; i++) traceOne(churn, i, t0);
let k = 0;
bench
  .add('open, send, answer and end one trace (tracker at its cap: one eviction each)', () => traceOne(churn, n++, Date.now()))
  .add('read one status (a hit)', () => void full.status(ids[k++ % CAP]!, 1 + ((k - 1) % CAP) % 1000))
  .add('read one status (an id nobody sent)', () => void full.status('0xnothing', 1));
await bench.run();

// A flood: 1,000 quiet accounts hold 50 statuses each, then one account admits 1.2 times the cap.
const flood = new Tracker({ retentionMs: 3600_000, maxEntries: CAP, node: 'bench' });
const QUIET = 1000;
const EACH = 50;
for (let a = 1; a <= QUIET; a++) for (let i = 0; i < EACH; i++) flood.open(`q${a}-${i}`, nextRequestId(), a, 'solana', 'solana-v2');
const floodStart = process.hrtime.bigint();
const FLOOD = Math.round(CAP * 1.2);
for (let i = 0; i < FLOOD; i++) flood.open(sig(i), nextRequestId(), 5000, 'solana', 'solana-v2');
const floodUs = Number(process.hrtime.bigint() - floodStart) / 1000 / FLOOD;
let kept = 0;
for (let a = 1; a <= QUIET; a++) for (let i = 0; i < EACH; i++) if (flood.status(`q${a}-${i}`, a).state === 'queued') kept++;

const lines = [
  `<!-- npm run bench:status -->`,
  `# Status traces, ${new Date().toISOString()}, Node ${process.version}, ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}`,
  '',
  `| What | Figure |`,
  `|---|---|`,
  `| JS heap per traced transaction (one attempt, ended), ${CAP.toLocaleString('en')} held | ${Math.round(perTrace)} bytes (${((perTrace * CAP) / 2 ** 20).toFixed(0)} MiB at the cap) |`,
  `| One account admits ${FLOOD.toLocaleString('en')} at a cap of ${CAP.toLocaleString('en')}: the ${(QUIET * EACH).toLocaleString('en')} statuses of ${QUIET.toLocaleString('en')} other accounts still held | ${kept.toLocaleString('en')} (the busy account holds ${flood.heldBy(5000).toLocaleString('en')}; ${floodUs.toFixed(2)} µs per admission) |`,
  ...bench.tasks.map((task) => {
    const r = task.result as { latency?: { p50?: number; mean: number } } | undefined;
    const ms = r?.latency?.p50 ?? r?.latency?.mean ?? NaN;
    return `| ${task.name} | ${(ms * 1000).toFixed(2)} µs |`;
  }),
];
console.log(lines.join('\n'));
writeFileSync(join(ROOT, 'bench', 'results', 'status.md'), lines.join('\n') + '\n');
