/**
 * `SIGHUP` to `txrelay serve` (systemd's `ExecReload`): the configuration is
 * read again from the same file and environment and validated, and what can
 * change in a running relay changes (docs/operations.md#reload). Everything
 * else the relay sized or bound at start-up (listeners, tables, threads,
 * upstream connections) takes effect at the next restart; the reload says
 * which keys those are, by name only (values may be secrets). An invalid
 * file changes nothing: the relay keeps running on what it had.
 */
import type { Logger } from 'pino';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { ConfigError } from '../errors.js';

/** Keys a running relay applies at once. */
const LIVE = new Set(['log.level']);

/** Dotted leaf keys with their values as JSON text, for comparison. */
function leaves(o: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (o !== null && typeof o === 'object' && !Array.isArray(o)) {
    for (const [k, v] of Object.entries(o)) leaves(v, prefix === '' ? k : `${prefix}.${k}`, out);
  } else out.set(prefix, JSON.stringify(o));
  return out;
}

interface ReloadResult {
  /** The configuration now in force (the previous one when the new one was refused). */
  config: Config;
  applied: string[];
  restartNeeded: string[];
  error: string | null;
}

/** Reads `file` (and the environment) again and applies what can be applied to `log`; logs what it did. */
export function reload(file: string | undefined, current: Config, log: Logger): ReloadResult {
  let next: Config;
  try {
    next = loadConfig({ file });
  } catch (e) {
    const error = e instanceof ConfigError ? e.message : String(e);
    log.error({ error }, 'reload refused: the configuration is invalid; still running on the previous one');
    return { config: current, applied: [], restartNeeded: [], error };
  }
  const before = leaves(current);
  const after = leaves(next);
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k)).sort();
  const applied = changed.filter((k) => LIVE.has(k));
  const restartNeeded = changed.filter((k) => !LIVE.has(k));
  if (applied.includes('log.level')) log.level = next.log.level;
  // What is not applied stays as it was, so the next reload compares against what is in force.
  const inForce = structuredClone(current);
  inForce.log.level = next.log.level;
  if (restartNeeded.length > 0) log.warn({ applied, restart_needed: restartNeeded }, 'configuration reloaded; these keys take effect at the next restart');
  else log.info({ applied }, changed.length === 0 ? 'configuration reloaded: nothing changed' : 'configuration reloaded');
  return { config: inForce, applied, restartNeeded, error: null };
}
