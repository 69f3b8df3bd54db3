/**
 * /proc readers for the end-to-end benchmark: a process's CPU time (all its
 * threads: main, verify worker, libuv, GC) and resident memory, read from
 * outside so the figures do not depend on the load generator's view.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

export interface ProcCpu {
  /** User-mode clock ticks, all threads. */
  utime: number;
  /** Kernel-mode clock ticks, all threads. */
  stime: number;
}

/**
 * Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and
 * may itself hold spaces or ')', so fields are counted after the last ')'.
 * utime and stime are fields 14 and 15 (1-based), i.e. 12 and 13 after it.
 */
export function parseProcStat(text: string): ProcCpu {
  const close = text.lastIndexOf(')');
  if (close < 0) throw new Error('not a /proc/<pid>/stat line');
  const rest = text.slice(close + 2).trim().split(/\s+/);
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('utime/stime not found in /proc stat line');
  return { utime, stime };
}

/** Parses `VmRSS:    12345 kB` out of `/proc/<pid>/status`; kB, or -1 when absent. */
export function parseVmRssKb(status: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) : -1;
}

let tck = 0;
/** Clock ticks per second (`getconf CLK_TCK`, 100 on Linux x86-64). */
export function clockTicks(): number {
  if (tck === 0) {
    try {
      tck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      tck = 100;
    }
  }
  return tck;
}

/** CPU seconds (user + system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  const c = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return (c.utime + c.stime) / clockTicks();
}

/**
 * CPU seconds of each thread of a process, by thread id, from
 * `/proc/<pid>/task/<tid>/stat` (same layout as the process's stat). The main
 * thread's tid is the pid. Threads that exit between listing and reading are
 * skipped: their time is gone from the process total too.
 */
export function threadSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tids) {
    try {
      const c = parseProcStat(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8'));
      out.set(Number(t), (c.utime + c.stime) / clockTicks());
    } catch {
      // thread ended
    }
  }
  return out;
}

/** CPU seconds used so far, or NaN once the process is gone. */
export function cpuSecondsOrNaN(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return NaN;
  }
}

export function rssKb(pid: number): number {
  try {
    return parseVmRssKb(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return -1;
  }
}

export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m ? m[1]!.trim() : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Samples VmRSS every `everyMs` until stopped; reports the peak. */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  peakKb = 0;
  samples = 0;
  constructor(private readonly pid: number, everyMs = 100) {
    this.timer = setInterval(() => {
      const kb = rssKb(this.pid);
      this.samples++;
      if (kb > this.peakKb) this.peakKb = kb;
    }, everyMs);
    this.timer.unref();
  }
  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const kb = rssKb(this.pid);
    if (kb > this.peakKb) this.peakKb = kb;
    return this.peakKb;
  }
}

/**
 * Busy clock ticks of one CPU from /proc/stat (user, nice, system, irq,
 * softirq, steal): minus the measured process's own ticks, what everything
 * else on the machine took from that core during a window.
 */
export function parseCoreBusy(stat: string, core: number): number {
  const m = new RegExp(`^cpu${core} (.+)$`, 'm').exec(stat);
  if (!m) return NaN;
  const [user, nice, system, , , irq, softirq, steal] = m[1]!.trim().split(/\s+/).map(Number);
  return user! + nice! + system! + irq! + softirq! + (steal ?? 0);
}

/** Busy seconds of every CPU so far, index = CPU number. */
export function coresBusySeconds(cores: number): number[] {
  const stat = readFileSync('/proc/stat', 'utf8');
  return Array.from({ length: cores }, (_, i) => parseCoreBusy(stat, i) / clockTicks());
}

export function loadAvg(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '?';
  }
}
