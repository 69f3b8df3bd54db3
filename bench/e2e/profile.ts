/**
 * Summarises V8 .cpuprofile files (node --cpu-prof; one per thread) into the
 * functions with the most self time, so the report can say where the time
 * goes without committing the profiles.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  fn: string;
  selfMs: number;
  /** Share of the thread's busy (non-idle) samples. */
  pct: number;
}

export interface ProfileSummary {
  file: string;
  /** Wall time covered, ms; busy = not (idle). */
  totalMs: number;
  busyMs: number;
  top: ProfileEntry[];
}

/** Self time per function (name + file:line), from samples and their time deltas. */
export function summariseProfile(p: CpuProfile, topN = 12, file = ''): ProfileSummary {
  const byId = new Map<number, CpuProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const self = new Map<string, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  let total = 0;
  // timeDeltas[i] is the gap before sample i; attribute the gap after it (the time it was current).
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    const node = byId.get(samples[i]!);
    if (!node) continue;
    const key = label(node);
    self.set(key, (self.get(key) ?? 0) + us);
    total += us;
  }
  const idle = self.get('(idle)') ?? 0;
  const busy = total - idle;
  const top = [...self.entries()]
    .filter(([k]) => k !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([fn, us]) => ({ fn, selfMs: us / 1000, pct: busy > 0 ? (100 * us) / busy : 0 }));
  return { file, totalMs: total / 1000, busyMs: busy / 1000, top };
}

function label(n: CpuProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  if (!url) return functionName || '(anonymous)';
  // Keep paths short but recognisable: dist/src/pipeline/admission.js:123, node:internal/…, node_modules/<pkg>/….
  const nm = url.lastIndexOf('node_modules/');
  const at = url.indexOf('/dist/');
  const short = nm >= 0 ? url.slice(nm + 13) : at >= 0 ? url.slice(at + 6) : url.replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`;
}

export function summariseProfiles(files: string[], topN = 12): ProfileSummary[] {
  return files
    .map((f) => summariseProfile(JSON.parse(readFileSync(f, 'utf8')) as CpuProfile, topN, basename(f)))
    .sort((a, b) => b.busyMs - a.busyMs);
}
