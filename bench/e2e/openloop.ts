/**
 * A fixed-rate (open-loop) HTTP/1.1 load generator for the end-to-end
 * benchmark, fed the same pre-built bodies as wrk. wrk is closed-loop
 * (Debian has no wrk2), so a fixed offered rate (2x capacity) needs this or
 * its C twin, openloop.c, which the benchmarks use where a C compiler runs
 * (this one costs three times the CPU per request: generators.ts).
 *
 * Request i is due at t0 + i/rate whether or not earlier ones were answered;
 * latency is measured from that due time (no coordinated omission), so a
 * generator that falls behind shows up in the figures instead of hiding.
 * Sockets are raw `net` connections with pre-built request bytes: parsing is
 * one header scan per answer, which keeps the generator well ahead of a
 * single-core relay. The scheduler spins on setImmediate (sub-millisecond
 * timing; setTimeout's 1 ms granularity would add up to 1 ms to every figure).
 *
 *   node dist/bench/e2e/openloop.js '<json OpenLoopOpts>'   → one JSON line (OpenLoopResult)
 */
import { connect, type Socket } from 'node:net';
import * as hdr from 'hdr-histogram-js';
import { pathToFileURL } from 'node:url';
import { readBodies } from './bodies.js';
import { requestHead } from './generators.js';

export interface OpenLoopOpts {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  bodiesFile: string;
  rate: number;
  seconds: number;
  connections: number;
  okStatus: number;
}

export interface Percentiles {
  count: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
}

export interface OpenLoopResult {
  tool: 'node open-loop (bench/e2e/openloop.ts)' | 'C open-loop (bench/e2e/openloop.c)';
  targetRate: number;
  /** Requests whose answers arrived, per second of the schedule. */
  achievedRate: number;
  sent: number;
  answered: number;
  byStatus: Record<string, number>;
  /** Latency from the due time: accepted (okStatus), shed (429/503), anything else. */
  accepted: Percentiles;
  shed: Percentiles;
  other: Percentiles;
  /** Accepted answers timed from the socket write instead (excludes generator lag). */
  acceptedService: Percentiles;
  /** Worst lateness of a send against its due time, ms (generator saturation). */
  maxSendLagMs: number;
  errors: number;
  exhausted: boolean;
}

interface Conn {
  sock: Socket;
  due: number;
  sentAt: number;
  acc: Buffer | null;
}

const newHist = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
const pct = (h: hdr.Histogram): Percentiles => ({
  count: h.totalCount,
  p50_us: h.totalCount ? h.getValueAtPercentile(50) : 0,
  p90_us: h.totalCount ? h.getValueAtPercentile(90) : 0,
  p99_us: h.totalCount ? h.getValueAtPercentile(99) : 0,
  max_us: h.totalCount ? h.maxValue : 0,
});

const CRLF2 = Buffer.from('\r\n\r\n');
const CL = /\r\ncontent-length:\s*(\d+)/i;

/** Called when the schedule starts and when its last request is due: the measured window (the drain after it is not). */
export interface OpenLoopMarks {
  start(): void;
  end(): void;
}

export async function openLoop(o: OpenLoopOpts, marks?: OpenLoopMarks): Promise<OpenLoopResult> {
  const bodies = readBodies(o.bodiesFile);
  const total = Math.min(bodies.length, Math.round(o.rate * o.seconds));
  const head = requestHead(o);
  const reqs = new Array<Buffer>(total);
  for (let i = 0; i < total; i++) reqs[i] = Buffer.concat([Buffer.from(`${head}content-length: ${bodies[i]!.length}\r\n\r\n`, 'latin1'), bodies[i]!]);

  const hAcc = newHist();
  const hShed = newHist();
  const hOther = newHist();
  const hSvc = newHist();
  const byStatus: Record<string, number> = {};
  let answered = 0;
  let errors = 0;
  let maxLag = 0;
  const idle: Conn[] = [];
  const backlog: number[] = []; // indexes of due requests waiting for a free connection
  let t0 = 0;
  const dueAt = (i: number) => t0 + (i * 1000) / o.rate;

  const send = (c: Conn, i: number): void => {
    c.due = dueAt(i);
    c.sentAt = performance.now();
    if (c.sentAt - c.due > maxLag) maxLag = c.sentAt - c.due;
    c.sock.write(reqs[i]!);
  };
  const release = (c: Conn): void => {
    const next = backlog.shift();
    if (next !== undefined) send(c, next);
    else idle.push(c);
  };
  const onAnswer = (c: Conn, status: number): void => {
    const now = performance.now();
    const us = Math.max(1, Math.round((now - c.due) * 1000));
    answered++;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (status === o.okStatus) {
      hAcc.recordValue(us);
      hSvc.recordValue(Math.max(1, Math.round((now - c.sentAt) * 1000)));
    } else if (status === 503 || status === 429) hShed.recordValue(us);
    else hOther.recordValue(us);
    release(c);
  };

  const conns: Conn[] = await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const sock = connect({ host: o.host, port: o.port, noDelay: true });
          const c: Conn = { sock, due: 0, sentAt: 0, acc: null };
          sock.once('connect', () => resolve(c));
          sock.once('error', reject);
          sock.on('data', (chunk: Buffer) => {
            let buf = c.acc ? Buffer.concat([c.acc, chunk]) : chunk;
            // One request in flight per connection, so one answer per complete message.
            const h = buf.indexOf(CRLF2);
            if (h < 0) {
              c.acc = buf;
              return;
            }
            const m = CL.exec(buf.toString('latin1', 0, h));
            const end = h + 4 + (m ? Number(m[1]) : 0);
            if (buf.length < end) {
              c.acc = buf;
              return;
            }
            c.acc = null;
            onAnswer(c, Number(buf.toString('latin1', 9, 12)));
          });
          sock.on('error', () => errors++);
        }),
    ),
  );
  idle.push(...conns);

  t0 = performance.now() + 5;
  marks?.start();
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) * o.rate) / 1000) + 1);
      while (next < due) {
        const c = idle.pop();
        if (c) send(c, next);
        else backlog.push(next);
        next++;
      }
      if (next < total) setImmediate(tick);
      else resolve();
    };
    tick();
  });
  marks?.end();
  // Drain: wait for the last answers (bounded, so a stuck relay still ends the run).
  const endBy = performance.now() + 5000;
  await new Promise<void>((resolve) => {
    const wait = (): void => {
      if (answered + errors >= total || performance.now() > endBy) resolve();
      else setTimeout(wait, 2);
    };
    wait();
  });
  const elapsed = (Math.max(performance.now(), dueAt(total)) - t0) / 1000;
  for (const c of conns) c.sock.destroy();
  return {
    tool: 'node open-loop (bench/e2e/openloop.ts)',
    targetRate: o.rate,
    achievedRate: answered / Math.max(elapsed, o.seconds),
    sent: total,
    answered,
    byStatus,
    accepted: pct(hAcc),
    shed: pct(hShed),
    other: pct(hOther),
    acceptedService: pct(hSvc),
    maxSendLagMs: maxLag,
    errors,
    exhausted: bodies.length < Math.round(o.rate * o.seconds),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await openLoop(JSON.parse(process.argv[2]!) as OpenLoopOpts, {
    start: () => process.stdout.write('E2E_START\n'),
    end: () => process.stdout.write('E2E_END\n'),
  });
  process.stdout.write('E2E_JSON ' + JSON.stringify(r) + '\n');
  process.exit(0);
}
