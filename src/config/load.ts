/**
 * Loads the configuration: embedded defaults, then a TOML or JSON file, then
 * `TXRELAY_<SECTION>_<KEY>` environment overrides, validated against one
 * schema. Every failure names the offending key and stops start-up.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { extname } from 'node:path';
import { createRequire } from 'node:module';
import { parse as parseToml } from 'smol-toml';
import { configSchema, type Config } from './schema.js';
import { E, TxrelayError } from '../errors.js';

const require = createRequire(import.meta.url);
// ajv ships CommonJS with a default export that NodeNext typing resolves oddly; require keeps it simple.
const Ajv = require('ajv').default as typeof import('ajv').default;

/** A configuration that cannot start the relay (TXR_CONFIG); the message names the key. */
export class ConfigError extends TxrelayError {
  constructor(message: string) {
    super(E.CONFIG, message);
    this.name = 'ConfigError';
  }
}

const ajv = new Ajv({ useDefaults: true, allErrors: true, strict: true });
const validate = ajv.compile(configSchema);

/** Leaf keys of the schema as dotted paths with their JSON types, for env overrides. */
function leaves(schema: any, prefix: string[] = [], out: { path: string[]; schema: any }[] = []) {
  for (const [k, v] of Object.entries<any>(schema.properties ?? {})) {
    if (v.type === 'object') leaves(v, [...prefix, k], out);
    else out.push({ path: [...prefix, k], schema: v });
  }
  return out;
}
const LEAVES = leaves(configSchema);

function envName(path: string[]): string {
  return 'TXRELAY_' + path.join('_').toUpperCase();
}

function coerce(raw: string, schema: any, name: string): unknown {
  const type = schema.type ?? (schema.enum ? 'string' : undefined);
  if (type === 'integer' || type === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) throw new ConfigError(`${name}: expected a number, got ${JSON.stringify(raw)}`);
    return n;
  }
  if (type === 'boolean') {
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    throw new ConfigError(`${name}: expected true or false, got ${JSON.stringify(raw)}`);
  }
  if (type === 'array') {
    const t = raw.trim();
    if (t.startsWith('[')) {
      try {
        return JSON.parse(t);
      } catch {
        throw new ConfigError(`${name}: not a JSON array`);
      }
    }
    return t === '' ? [] : t.split(',').map((s) => s.trim());
  }
  return raw;
}

function setPath(obj: any, path: string[], value: unknown): void {
  let o = obj;
  for (const k of path.slice(0, -1)) {
    if (typeof o[k] !== 'object' || o[k] === null) o[k] = {};
    o = o[k];
  }
  o[path[path.length - 1]!] = value;
}

function readFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config file ${file}: ${(e as Error).message}`);
  }
  try {
    return extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseToml(text);
  } catch (e) {
    throw new ConfigError(`config file ${file} is not valid ${extname(file) === '.json' ? 'JSON' : 'TOML'}: ${(e as Error).message}`);
  }
}

export interface LoadOptions {
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Programmatic overrides applied last (tests, embedding). */
  overrides?: Record<string, unknown>;
}

function merge(into: any, from: any): any {
  for (const [k, v] of Object.entries(from ?? {})) {
    if (v && typeof v === 'object' && !Array.isArray(v) && into[k] && typeof into[k] === 'object' && !Array.isArray(into[k])) merge(into[k], v);
    else into[k] = v;
  }
  return into;
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const cfg: any = opts.file ? readFile(opts.file) : {};
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw new ConfigError('config file must hold a table/object at top level');
  const env = opts.env ?? process.env;
  for (const leaf of LEAVES) {
    const name = envName(leaf.path);
    const raw = env[name];
    if (raw !== undefined) setPath(cfg, leaf.path, coerce(raw, leaf.schema, name));
  }
  if (opts.overrides) merge(cfg, opts.overrides);
  if (!validate(cfg)) {
    const msgs = (validate.errors ?? []).map((e) => {
      const key = e.instancePath.slice(1).replaceAll('/', '.');
      if (e.keyword === 'additionalProperties') {
        const extra = (e.params as { additionalProperty: string }).additionalProperty;
        return `unknown key ${key ? key + '.' : ''}${extra}`;
      }
      return `${key || '(top level)'}: ${e.message}`;
    });
    throw new ConfigError(`invalid configuration: ${msgs.join('; ')}`);
  }
  const c = cfg as Config;
  if (c.registry.mode === 'postgres' && c.database.url === '') {
    throw new ConfigError('invalid configuration: registry.mode = "postgres" needs database.url (TXRELAY_DATABASE_URL)');
  }
  if (c.node.name === '') c.node.name = hostname();
  return c;
}

/** Leaf keys with defaults, for `--help` and the table in docs/configuration.md. */
export function describeKeys(): { key: string; env: string; default: unknown }[] {
  return LEAVES.map((l) => ({ key: l.path.join('.'), env: envName(l.path), default: l.schema.default }));
}
