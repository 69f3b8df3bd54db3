/**
 * Allocation and GC pauses of the relay from V8's `--trace-gc-nvp` lines
 * (one per collection, on stdout, each isolate prefixed with its address):
 *
 *   [4242:0x5581e0]   1234 ms: pause=0.5 mutator=17.0 gc=s ... allocated=4074320 promoted=0 ...
 *
 * `allocated` is the growth of the isolate's heap objects since its previous
 * collection, so the sum over a window is the JS heap bytes allocated in it
 * (not off-heap memory: Buffer and ArrayBuffer contents are external).
 * `gc=s` is a scavenge (young generation); `ms`/`mc`/`mmc` are mark-sweep,
 * mark-compact and minor mark-compact.
 */

export interface GcEvent {
  isolate: string;
  kind: string;
  pauseMs: number;
  allocated: number;
}

const LINE = /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: pause=([\d.]+) .*?\bgc=(\w+)\b.*?\ballocated=(-?\d+)/;

export function parseGcLine(line: string): GcEvent | null {
  const m = LINE.exec(line);
  if (!m) return null;
  return { isolate: m[1]!, pauseMs: Number(m[2]), kind: m[3]!, allocated: Math.max(0, Number(m[4])) };
}

export interface GcSummary {
  /** "main" for the first isolate the process reported (the main thread starts first), else "worker N". */
  isolate: string;
  collections: number;
  allocatedBytes: number;
  scavenges: number;
  scavengeP99Ms: number;
  scavengeMaxMs: number;
  /** Mark-sweep / mark-compact collections of the old generation. */
  fullGcs: number;
  fullMaxMs: number;
  pauseTotalMs: number;
}

/**
 * Per isolate over a window. `order` lists isolates in the order the process
 * first reported them (the first is the main thread's).
 */
export function summariseGc(events: readonly GcEvent[], order: readonly string[]): GcSummary[] {
  const by = new Map<string, GcEvent[]>();
  for (const e of events) {
    const list = by.get(e.isolate);
    if (list) list.push(e);
    else by.set(e.isolate, [e]);
  }
  const name = (iso: string) => {
    const i = order.indexOf(iso);
    return i === 0 ? 'main' : `worker ${i < 0 ? '?' : i}`;
  };
  const out: GcSummary[] = [];
  for (const [iso, list] of by) {
    const scav = list.filter((e) => e.kind === 's').map((e) => e.pauseMs).sort((a, b) => a - b);
    const full = list.filter((e) => e.kind !== 's').map((e) => e.pauseMs);
    out.push({
      isolate: name(iso),
      collections: list.length,
      allocatedBytes: list.reduce((a, e) => a + e.allocated, 0),
      scavenges: scav.length,
      scavengeP99Ms: scav.length ? scav[Math.min(scav.length - 1, Math.ceil(0.99 * scav.length) - 1)]! : 0,
      scavengeMaxMs: scav.length ? scav[scav.length - 1]! : 0,
      fullGcs: full.length,
      fullMaxMs: full.length ? Math.max(...full) : 0,
      pauseTotalMs: list.reduce((a, e) => a + e.pauseMs, 0),
    });
  }
  return out.sort((a, b) => (a.isolate === 'main' ? -1 : b.isolate === 'main' ? 1 : a.isolate.localeCompare(b.isolate)));
}
