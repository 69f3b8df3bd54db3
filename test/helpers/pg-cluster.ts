/**
 * A private PostgreSQL cluster for outage tests: initdb into a temp dir, then
 * start and stop it at will (stop is `-m immediate`: the server vanishes as
 * in a crash). Uses the machine's server binaries; as root they run as the
 * `postgres` user, since initdb refuses root. `available()` says why not when
 * they are missing, for a one-line skip.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../../bench/e2e/relay.js';

function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  return null;
}

const BIN = binDir();
const AS_ROOT = process.getuid?.() === 0;

/** Null when a private cluster can run here, else why not (the skip line). */
export function clusterUnavailable(): string | null {
  if (BIN === null) return 'no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql: skipping';
  if (AS_ROOT) {
    try {
      execFileSync('id', ['postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root without a postgres user to run initdb as: skipping';
    }
  }
  return null;
}

function run(cmd: string, args: string[]): void {
  const full = join(BIN!, cmd);
  if (AS_ROOT) execFileSync('runuser', ['-u', 'postgres', '--', full, ...args], { stdio: 'pipe' });
  else execFileSync(full, args, { stdio: 'pipe' });
}

export class PgCluster {
  readonly dir: string;
  readonly port: number;

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
  }

  /** A new cluster, initialised and started; its database `postgres` is the one to use. */
  static async create(): Promise<PgCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'txrelay-pg-'));
    if (AS_ROOT) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const [port] = (await freePorts(1)) as [number];
    run('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    const c = new PgCluster(dir, port);
    c.start();
    return c;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  start(): void {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    run('pg_ctl', ['-D', join(this.dir, 'data'), '-o', opts, '-w', '-l', join(this.dir, 'log'), 'start']);
  }

  /** Gone at once, connections cut, as in a crash. */
  stop(): void {
    run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
