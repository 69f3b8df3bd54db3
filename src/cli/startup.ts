/**
 * What `txrelay` says when it cannot start: one line on stderr,
 * `txrelay: <what> — <what to do>`, naming the configuration key, its
 * environment variable or the path, chosen by the error's code in the one
 * table (src/errors.ts), then a non-zero exit: 2 for the configuration, 1 for
 * the rest (docs/operations.md#start-up-failures).
 */
import { dirname } from 'node:path';
import { E, TxrelayError, DataDirError, DataDirLockedError, ListenError, MetricsListenError } from '../errors.js';
import { envNameOf } from '../config/load.js';
import { scrub } from '../obs/log.js';

/** A key with its variable: `http.port (TXRELAY_HTTP_PORT)`. */
function named(key: string): string {
  return `${key} (${envNameOf(key)})`;
}

function listenLine(e: ListenError): string {
  const port = `${e.listener}.port`;
  const host = `${e.listener}.host`;
  const where = `${e.host}:${e.port}`;
  switch (e.errno) {
    case 'EADDRINUSE':
      return `${port} ${e.port} is already in use on ${e.host} — stop the process that holds it, or set ${named(port)} to a free port`;
    case 'EACCES':
    case 'EPERM':
      return e.port < 1024
        ? `${port} ${e.port} on ${e.host} needs privileges: ports below 1024 are reserved — set ${named(port)} to 1024 or above, or grant node CAP_NET_BIND_SERVICE`
        : `${port} ${e.port} on ${e.host} is not permitted by this system — set ${named(port)} to another port, or check the firewall or security policy`;
    case 'EADDRNOTAVAIL':
      return `${host} ${e.host} is not an address of this machine — set ${named(host)} to one of its addresses, 127.0.0.1 or 0.0.0.0`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${host} ${e.host} does not resolve to an address — set ${named(host)} to an IP address of this machine`;
    default:
      return `cannot listen on ${where} for ${e.listener} (${e.errno || 'reason unknown'}) — check ${named(host)} and ${named(port)}`;
  }
}

function dataDirLine(e: DataDirError): string {
  const key = named('storage.data_dir');
  const fix = `set ${key} to a directory this user can write`;
  switch (e.errno) {
    case 'EACCES':
    case 'EPERM':
      return e.exists
        ? `storage.data_dir ${e.path} is not writable by this user (permission denied) — ${fix}, or make this user its owner`
        : `storage.data_dir ${e.path} cannot be created by this user (permission denied in ${dirname(e.path)}) — ${fix}, or create it for this user`;
    case 'ENOTDIR':
    case 'EEXIST':
      return `storage.data_dir ${e.path} cannot be created: a file is in the way — ${fix}`;
    case 'EROFS':
      return `storage.data_dir ${e.path} is on a read-only file system — ${fix}`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `storage.data_dir ${e.path}: no space left on the device — free some space, or ${fix}`;
    default:
      return `storage.data_dir ${e.path} cannot be used (${e.errno}) — ${fix}`;
  }
}

/** The one line (without `txrelay: `) for an error that stopped start-up. */
export function startupLine(e: unknown): string {
  if (e instanceof ListenError) return listenLine(e);
  if (e instanceof DataDirError) return dataDirLine(e);
  if (e instanceof MetricsListenError) {
    return `metrics.listen ${e.value} cannot be bound (${e.errno || 'reason unknown'}) — set ${named('metrics.listen')} to a free host:port of this machine, or to "" for none`;
  }
  if (e instanceof DataDirLockedError) {
    return `storage.data_dir ${e.path} is in use by another txrelay (pid ${e.pid}) — stop that process, or set ${named('storage.data_dir')} to another directory`;
  }
  const oneLine = (t: string) => scrub(t.replace(/\s*\n\s*/g, '; '));
  if (e instanceof TxrelayError) {
    switch (e.spec) {
      case E.TLS:
        // The key named first gets its variable too: the pair may come from the environment.
        return oneLine(e.message).replace(/\b(?:http|admin)\.tls_(?:cert|key)_file\b/, (k) => named(k));
      case E.CONFIG:
      case E.REGISTRY_START:
        // Their messages already say what to do.
        return oneLine(e.message);
      case E.ACCEPTOR:
        return `${oneLine(e.message)} — set ${named('http.acceptor')} to "auto" to fall back to node:http`;
      case E.FORWARD_CONFIG:
        return `${oneLine(e.message)} — check evm.upstreams.paid, evm.upstreams.free, solana.rpc_upstreams and solana.bundle_upstreams`;
    }
  }
  const msg = e instanceof Error ? e.message : String(e);
  return `start-up failed: ${oneLine(msg)} — run again with --debug for the stack trace`;
}

/** Exit status of a failed start: 2 for the configuration, 1 for everything else. */
function startupExitCode(e: unknown): number {
  return e instanceof TxrelayError && e.spec === E.CONFIG ? 2 : 1;
}

/** Prints the line (and with `debug` the stack) and exits. */
export function exitOnStartupError(e: unknown, debug: boolean): never {
  process.stderr.write(`txrelay: ${startupLine(e)}\n`);
  if (debug && e instanceof Error && e.stack) process.stderr.write(scrub(e.stack) + '\n');
  process.exit(startupExitCode(e));
}
