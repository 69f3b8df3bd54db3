/**
 * A private PostgreSQL cluster for outage tests: initdb into a temp dir, then
 * start and stop it at will (stop is `-m immediate`: the server vanishes as
 * in a crash). Uses the machine's server binaries; as root they run as the
 * `postgres` user, since initdb refuses root. `available()` says why not when
 * they are missing, for a one-line skip.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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

/** TLS for a cluster: the server's certificate and key (PEM files, copied in for the server's user), and pg_hba.conf's text. */
interface ClusterTls {
  cert: string;
  key: string;
  hba: string;
}

export class PgCluster {
  readonly dir: string;
  readonly port: number;
  private readonly ssl: string;

  private constructor(dir: string, port: number, ssl: string) {
    this.dir = dir;
    this.port = port;
    this.ssl = ssl;
  }

  /** A new cluster, initialised and started; its database `postgres` is the one to use (as `postgres`, trusted on 127.0.0.1). */
  static async create(tls?: ClusterTls): Promise<PgCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'txrelay-pg-'));
    const owner = AS_ROOT
      ? {
          uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
          gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
        }
      : null;
    if (owner) chownSync(dir, owner.uid, owner.gid);
    const [port] = (await freePorts(1)) as [number];
    const data = join(dir, 'data');
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    let ssl = '';
    if (tls) {
      // The server reads its key only when its own user owns it, mode 0600.
      const cert = join(dir, 'server.crt');
      const key = join(dir, 'server.key');
      copyFileSync(tls.cert, cert);
      copyFileSync(tls.key, key);
      writeFileSync(join(data, 'pg_hba.conf'), tls.hba);
      for (const f of [cert, key, join(data, 'pg_hba.conf')]) {
        chmodSync(f, 0o600);
        if (owner) chownSync(f, owner.uid, owner.gid);
      }
      ssl = ` -c ssl=on -c ssl_cert_file=${cert} -c ssl_key_file=${key}`;
    }
    const c = new PgCluster(dir, port, ssl);
    c.start();
    return c;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  start(): void {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off${this.ssl}`;
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
