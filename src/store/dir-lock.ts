/**
 * One relay per data directory: `txrelay.pid` in `storage.data_dir`, created
 * with O_EXCL, holds the owner's pid and its start time.
 *
 * Why this survives kill -9: nothing has to be cleaned up for the next start
 * to work. A file left by a dead process is stale when its pid is no longer
 * alive (kill(pid, 0) says ESRCH), or is alive but started at another time
 * (the pid was reused; Linux /proc/<pid>/stat field 22). A stale file is
 * removed and the O_EXCL create is tried again, so two starts racing for a
 * stale file still end with one owner. lmdb's own lock.mdb cannot serve: it
 * lets any number of processes share the environment, by design.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirLockedError } from '../errors.js';

const LOCK_FILE = 'txrelay.pid';

/** The process's start time in clock ticks since boot, or '' where /proc is not there. */
function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

function alive(pid: number, started: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: alive, another user's.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  const now = startTime(pid);
  return started === '' || now === '' || now === started;
}

export interface DirLock {
  release(): void;
}

/** Takes the data directory for this process, or throws DataDirLockedError naming the live holder. */
export function lockDataDir(dir: string): DirLock {
  const file = join(dir, LOCK_FILE);
  const mine = `${process.pid} ${startTime(process.pid)}\n`;
  for (let attempt = 0; attempt < 5; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let text = '';
      try {
        text = readFileSync(file, 'utf8');
      } catch (r) {
        if ((r as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw r;
      }
      const [pidText = '', started = ''] = text.trim().split(' ');
      const pid = Number(pidText);
      // A file being written this instant reads empty: look again.
      if (!Number.isInteger(pid) || pid <= 0) {
        if (attempt < 4) {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
          continue;
        }
      } else if (pid !== process.pid && alive(pid, started)) {
        throw new DataDirLockedError(dir, pid);
      }
      try {
        unlinkSync(file);
      } catch (u) {
        if ((u as NodeJS.ErrnoException).code !== 'ENOENT') throw u;
      }
      continue;
    }
    try {
      writeSync(fd, mine);
    } finally {
      closeSync(fd);
    }
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        try {
          if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
        } catch {
          // Already gone: nothing to release.
        }
      },
    };
  }
  throw new Error(`cannot take ${file}: it keeps changing`);
}
