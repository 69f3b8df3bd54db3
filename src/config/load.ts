/**
 * Loads the configuration: embedded defaults, then a TOML or JSON file, then
 * `TXRELAY_<SECTION>_<KEY>` environment overrides, validated against one
 * schema. Every failure stops start-up with one message in words that names
 * the key, where its value came from, and what to do (docs/configuration.md).
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { extname } from 'node:path';
import { createRequire } from 'node:module';
import { parse as parseToml } from 'smol-toml';
import { closest, distance } from 'fastest-levenshtein';
import { configSchema } from './schema.js';
import { PATTERN_WORDS } from './schema-fields.js';
import type { Config } from './types.js';
import { OTHER_ENV, isOtherEnv } from './env-allowlist.js';
import { ConfigError } from '../errors.js';

const require = createRequire(import.meta.url);
// ajv ships CommonJS with a default export that NodeNext typing resolves oddly; require keeps it simple.
const Ajv = require('ajv').default as typeof import('ajv').default;

// verbose: each error carries the offending value and its schema, for messages in words.
// Compiled on first use: CLI commands that never read a configuration (send, status) skip it.
let compiled: ReturnType<InstanceType<typeof Ajv>['compile']> | undefined;
function validator(): NonNullable<typeof compiled> {
  return (compiled ??= new Ajv({ useDefaults: true, allErrors: true, strict: true, verbose: true }).compile(configSchema));
}

interface Leaf {
  path: string[];
  schema: any;
}

/** Leaf keys of the schema as dotted paths with their JSON types, for env overrides. */
function leaves(schema: any, prefix: string[] = [], out: Leaf[] = []): Leaf[] {
  for (const [k, v] of Object.entries<any>(schema.properties ?? {})) {
    if (v.type === 'object') leaves(v, [...prefix, k], out);
    else out.push({ path: [...prefix, k], schema: v });
  }
  return out;
}
const LEAVES = leaves(configSchema);

function envName(path: readonly string[]): string {
  return 'TXRELAY_' + path.join('_').toUpperCase();
}

/** The variable of a dotted key (`http.port` → `TXRELAY_HTTP_PORT`). */
export function envNameOf(key: string): string {
  return envName(key.split('.'));
}

const ENV_NAMES = new Set(LEAVES.map((l) => envName(l.path)));
/** What a misspelt variable may have meant: every key's variable and the exact names of OTHER_ENV. */
const ENV_SUGGESTIONS = [...ENV_NAMES, ...OTHER_ENV.filter((o) => !o.prefix).map((o) => o.name)];

/** The nearest candidate, if near enough to be a typo of it. */
function didYouMean(word: string, candidates: readonly string[]): string | null {
  if (candidates.length === 0) return null;
  const best = closest(word, candidates);
  return distance(word, best) <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

/** A value as the user wrote it, short. */
function shown(v: unknown): string {
  const t = JSON.stringify(v) ?? String(v);
  return t.length > 60 ? t.slice(0, 57) + '...' : t;
}

/**
 * Env values as the key's type when they read as one; otherwise the raw text,
 * which validation then refuses in the same words as a wrong value in a file.
 */
function coerce(raw: string, schema: any, name: string): unknown {
  const type = schema.type ?? (schema.enum ? 'string' : undefined);
  if (type === 'integer' || type === 'number') {
    const n = Number(raw);
    return raw.trim() === '' || !Number.isFinite(n) ? raw : n;
  }
  if (type === 'boolean') {
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    return raw;
  }
  if (type === 'array') {
    const t = raw.trim();
    if (t.startsWith('[')) {
      try {
        return JSON.parse(t);
      } catch {
        throw new ConfigError(`${name} starts with [ but is not a JSON array — write a JSON array like ["a","b"] or a comma-separated list`);
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

/** 1-based line and column of a character offset. */
function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

function readFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ConfigError(`config file ${file} does not exist — check the path given to --config`);
    if (code === 'EACCES' || code === 'EPERM') throw new ConfigError(`config file ${file} cannot be read (permission denied) — make it readable by the user running txrelay`);
    if (code === 'EISDIR') throw new ConfigError(`config file ${file} is a directory — give --config the path of a .toml or .json file`);
    throw new ConfigError(`config file ${file} cannot be read (${code ?? (e as Error).message}) — check the path given to --config`);
  }
  if (extname(file).toLowerCase() === '.json') {
    try {
      return JSON.parse(text);
    } catch (e) {
      const msg = (e as Error).message;
      const at = /at position (\d+)/.exec(msg);
      const what = msg.replace(/\s*\(line \d+ column \d+\)/, '').replace(/\s*in JSON at position \d+/, '');
      throw new ConfigError(`config file ${file}${at ? ' ' + lineCol(text, Number(at[1])) : ''}: invalid JSON (${what}) — fix the JSON there`);
    }
  }
  try {
    return parseToml(text);
  } catch (e) {
    const err = e as Error & { line?: number; column?: number };
    const what = err.message.split('\n')[0]!.replace(/^Invalid TOML document:\s*/, '');
    const where = err.line !== undefined ? ` line ${err.line}, column ${err.column}` : '';
    throw new ConfigError(`config file ${file}${where}: invalid TOML (${what}) — fix the TOML there (files not ending in .json are read as TOML)`);
  }
}

export interface LoadOptions {
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Programmatic overrides applied last (tests, embedding). */
  overrides?: Record<string, unknown>;
  /** A command that only calls the admin API (`txrelay accounts`): keys only a serving node needs (database.url) may be absent. */
  adminClient?: boolean;
}

function merge(into: any, from: any): any {
  for (const [k, v] of Object.entries(from ?? {})) {
    if (v && typeof v === 'object' && !Array.isArray(v) && into[k] && typeof into[k] === 'object' && !Array.isArray(into[k])) merge(into[k], v);
    else into[k] = v;
  }
  return into;
}

/** Where each key's value came from, to say what to fix. */
class Sources {
  readonly fromEnv = new Set<string>();
  constructor(readonly file: string | undefined) {}

  /** `— <what to do>` for a bad value of `key` (dotted, without list indexes). */
  fix(key: string): string {
    if (this.fromEnv.has(key)) return `(from ${envNameOf(key)}) — fix or unset ${envNameOf(key)}`;
    // A table has no variable of its own: name its keys and theirs.
    const inner = ENV_NAMES.has(envNameOf(key)) ? null : LEAVES.filter((l) => l.path.join('.').startsWith(key + '.'));
    if (inner?.length) {
      const keys = inner.map((l) => l.path.join('.')).join(', ');
      const vars = inner.map((l) => envName(l.path)).join(', ');
      return `— ${key} is a table: set ${keys}${this.file ? ` in ${this.file}` : ''} (or ${vars})`;
    }
    if (this.file) return `— fix it in ${this.file} (or set ${envNameOf(key)})`;
    return `— set ${key} (${envNameOf(key)}) to a valid value`;
  }

  in(): string {
    return this.file ? ` in ${this.file}` : '';
  }
}

/** Names of the properties of the schema object at `path` (`[]`: the sections). */
function siblings(path: string[]): string[] {
  let s: any = configSchema;
  for (const k of path) s = s?.properties?.[k];
  return Object.keys(s?.properties ?? {});
}

function unknownKey(parent: string[], name: string, src: Sources): string {
  const key = [...parent, name].join('.');
  const near = didYouMean(name, siblings(parent));
  // Else a key put in the wrong section: the same name elsewhere.
  const hint = near !== null ? [...parent, near].join('.') : (LEAVES.find((l) => l.path[l.path.length - 1] === name)?.path.join('.') ?? null);
  const what = `unknown key ${key}${src.in()}`;
  return hint ? `${what} — did you mean ${hint}?` : `${what} — remove it (txrelay serve --help lists every key)`;
}

function unknownEnv(name: string): string {
  // A bare key name (port, host) means the HTTP door's, the relay's main listener.
  const http = 'TXRELAY_HTTP_' + name.slice('TXRELAY_'.length);
  const hint = ENV_NAMES.has(http) ? http : didYouMean(name, ENV_SUGGESTIONS);
  const what = `unknown environment variable ${name}`;
  return hint ? `${what} — did you mean ${hint}?` : `${what} — unset it (txrelay serve --help lists every variable)`;
}

const TYPE_WORDS: Record<string, string> = {
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  string: 'text (in quotes in a file)',
  array: 'a list',
  object: 'a table of keys',
};

function range(s: any): string {
  if (s.minimum !== undefined && s.maximum !== undefined) return `from ${s.minimum} to ${s.maximum}`;
  return s.minimum !== undefined ? `at least ${s.minimum}` : `at most ${s.maximum}`;
}

/** One ajv error in words. */
function inWords(e: any, src: Sources): string {
  const segs: string[] = e.instancePath.split('/').slice(1);
  if (e.keyword === 'additionalProperties') return unknownKey(segs, e.params.additionalProperty, src);
  const shownKey = segs.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : (i ? '.' : '') + s)).join('');
  const key = segs.filter((s) => !/^\d+$/.test(s)).join('.');
  const got = `got ${shown(e.data)}`;
  const ps = e.parentSchema;
  let need: string;
  switch (e.keyword) {
    case 'type':
      need = `must be ${TYPE_WORDS[e.params.type] ?? e.params.type}`;
      break;
    case 'minimum':
    case 'maximum':
      need = `must be ${range(ps)}`;
      break;
    case 'enum':
      need = `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      break;
    case 'pattern':
      need = `must be ${PATTERN_WORDS[e.params.pattern] ?? `text matching ${e.params.pattern}`}`;
      break;
    case 'minLength':
      need = 'must not be empty';
      break;
    case 'maxLength':
      need = `must be at most ${e.params.limit} characters`;
      break;
    default:
      need = String(e.message);
  }
  return `${shownKey || 'the configuration'} ${need}, ${got} ${src.fix(key)}`;
}

/** Checks past the schema: URLs that match the pattern yet do not parse, and keys that need each other. */
function semantic(c: Config, src: Sources, adminClient: boolean): string[] {
  const out: string[] = [];
  for (const l of LEAVES) {
    if (l.schema.type !== 'array' || l.schema.items?.pattern !== URL_PATTERN) continue;
    const list = l.path.reduce<any>((o, k) => o?.[k], c) as string[];
    list.forEach((u, i) => {
      if (!URL.canParse(u)) out.push(`${l.path.join('.')}[${i}] is not a valid URL, got ${shown(u)} ${src.fix(l.path.join('.'))}`);
    });
  }
  if (c.registry.mode === 'postgres' && c.database.url === '' && !adminClient) {
    out.push('registry.mode = "postgres" needs database.url — set database.url (TXRELAY_DATABASE_URL) to the PostgreSQL URL, or registry.mode to "embedded"');
  }
  return out;
}
const URL_PATTERN = '^https?://';

export function loadConfig(opts: LoadOptions = {}): Config {
  const src = new Sources(opts.file);
  const cfg: any = opts.file ? readFile(opts.file) : {};
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw new ConfigError(`config file ${opts.file} must hold a table of sections at the top — see docs/configuration.md`);
  const env = opts.env ?? process.env;
  const problems: string[] = [];
  for (const name of Object.keys(env)) {
    if (name.startsWith('TXRELAY_') && !ENV_NAMES.has(name) && !isOtherEnv(name)) problems.push(unknownEnv(name));
  }
  for (const leaf of LEAVES) {
    const name = envName(leaf.path);
    const raw = env[name];
    if (raw === undefined) continue;
    setPath(cfg, leaf.path, coerce(raw, leaf.schema, name));
    src.fromEnv.add(leaf.path.join('.'));
  }
  if (opts.overrides) merge(cfg, opts.overrides);
  const validate = validator();
  if (!validate(cfg)) {
    // One message per value: a wrong type hides the range checks of the same value.
    const seen = new Set<string>();
    for (const e of validate.errors ?? []) {
      const id = e.keyword === 'additionalProperties' ? `${e.instancePath}/${(e.params as any).additionalProperty}` : e.instancePath;
      if (seen.has(id)) continue;
      seen.add(id);
      problems.push(inWords(e, src));
    }
  } else {
    problems.push(...semantic(cfg as Config, src, opts.adminClient === true));
  }
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
  const c = cfg as Config;
  if (c.node.name === '') c.node.name = hostname();
  return c;
}

/** Leaf keys with defaults, for `--help` and the table in docs/configuration.md. */
export function describeKeys(): { key: string; env: string; default: unknown }[] {
  return LEAVES.map((l) => ({ key: l.path.join('.'), env: envName(l.path), default: l.schema.default }));
}
