#!/usr/bin/env node
// Writes docs/configuration.md from the compiled configuration schema
// (dist/src/config/schema.js), so the reference can never drift from the keys
// the loader accepts. `npm run docs:config` builds, then runs this;
// `--check` writes nothing and exits 1 when the file is out of date
// (test/config/docs.test.ts calls `render()` for the same comparison).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../', import.meta.url);
export const DOCS_FILE = fileURLToPath(new URL('docs/configuration.md', ROOT));

const { configSchema } = await import(new URL('dist/src/config/schema.js', ROOT).href);
const { OTHER_ENV } = await import(new URL('dist/src/config/env-allowlist.js', ROOT).href);

const HEADER = `# Configuration

<!-- Generated from src/config/schema.ts by \`npm run docs:config\`; edit the schema, not this file. -->

txrelay runs on embedded defaults: \`txrelay serve\` needs no configuration file.
Every key below has a default, a type and, where it matters, a range. A value
of the wrong type or out of range, a key the schema does not know, or a
\`TXRELAY_\` variable that is not a key's stops start-up with one line that
names the key, says what was wrong in words and what to do, and for a
misspelt name suggests the nearest real one (exit code 2):

\`\`\`
txrelay: unknown key http.prot in txrelay.toml — did you mean http.port?
txrelay: solana.rpc_upstreams[0] must be an http:// or https:// URL, got "foo" — fix it in txrelay.toml (or set TXRELAY_SOLANA_RPC_UPSTREAMS)
\`\`\`

## Where settings come from

Settings are read in this order; a later source overrides an earlier one, key
by key:

1. the defaults in the tables below;
2. the file given with \`txrelay serve --config FILE\` (\`-c FILE\`);
3. environment variables \`TXRELAY_<SECTION>_<KEY>\`.

**The file.** A file whose name ends in \`.json\` is read as JSON; any other name
is read as TOML. Both take the same keys: one table (TOML) or object (JSON)
per section.

\`\`\`toml
[http]
port = 8080

[solana]
rpc_upstreams = ["http://127.0.0.1:8899"]
bundle_upstreams = ["http://127.0.0.1:8899"]
tip_accounts = ["96gYZGLnJYVFmbjzopPSU6QiEV5fGqZNyN9nmNhvrZU5"]

[evm.upstreams]
paid = ["http://127.0.0.1:8545"]
\`\`\`

**Environment variables.** The name is \`TXRELAY_\` followed by the key's path in
upper case, with \`_\` between the parts: \`http.port\` is \`TXRELAY_HTTP_PORT\`,
\`evm.upstreams.paid\` is \`TXRELAY_EVM_UPSTREAMS_PAID\`, \`plans.free.evm_tps\` is
\`TXRELAY_PLANS_FREE_EVM_TPS\`. The value is read as the key's type:

- numbers as written (\`TXRELAY_HTTP_PORT=9000\`);
- booleans as \`true\`, \`1\` or \`yes\`, and \`false\`, \`0\` or \`no\`, in any case;
- lists as a JSON array (\`["http://a:8899","http://b:8899"]\`) or as a comma-separated
  list (\`http://a:8899,http://b:8899\`); an empty value is an empty list;
- text as it is.

Only the names of keys in the tables below are read. Any other \`TXRELAY_\`
variable stops start-up as an unknown key does, except the few the project
reads for other purposes (src/config/env-allowlist.ts):

${OTHER_ENV.map((o) => '- `' + o.name + (o.prefix ? '*' : '') + '`: ' + o.why + '.').join('\n')}

The other commands (\`txrelay accounts\`) read the same sources, to find the
admin API and its token.

\`txrelay serve --help\` lists every key with its default and its variable name.
`;

/** Thousands separators for long numbers, so 10000000 reads as 10,000,000. */
function num(n) {
  if (n === Number.MAX_SAFE_INTEGER) return '2^53 − 1';
  const t = String(n);
  return Math.abs(n) >= 10000 && Number.isInteger(n) ? t.replace(/\B(?=(\d{3})+$)/g, ',') : t;
}

function code(v) {
  return '`' + JSON.stringify(v) + '`';
}

function typeOf(s) {
  if (s.enum) return 'choice';
  if (s.type === 'array') return s.items?.pattern === '^https?://' ? 'list of URLs' : 'list of text';
  if (s.type === 'string') return 'text';
  return s.type;
}

function rangeOf(s) {
  if (s.enum) return s.enum.map((v) => '`' + v + '`').join(', ');
  if (s.type === 'integer' || s.type === 'number') {
    if (s.minimum !== undefined && s.maximum !== undefined) return `${num(s.minimum)} to ${num(s.maximum)}`;
    if (s.minimum !== undefined) return `at least ${num(s.minimum)}`;
    return '';
  }
  if (s.type === 'string') {
    if (s.pattern === '^https?://') return '`http://` or `https://` URL';
    if (s.minLength) return 'not empty';
    return '';
  }
  if (s.type === 'array') {
    const p = s.items?.pattern;
    if (p === '^https?://') return 'each `http://` or `https://`';
    if (p === '^[1-9A-HJ-NP-Za-km-z]{32,44}$') return 'each base58, 32 to 44 characters';
    return '';
  }
  return '';
}

/** Leaf keys of one section, nested sections flattened into dotted keys. */
function rows(schema, prefix) {
  const out = [];
  for (const [k, v] of Object.entries(schema.properties)) {
    const key = [...prefix, k];
    if (v.type === 'object') out.push(...rows(v, key));
    else out.push({ key: key.join('.'), schema: v });
  }
  return out;
}

function cell(text) {
  return String(text).replaceAll('|', '\\|');
}

/** The whole of docs/configuration.md, as text. */
export function render() {
  const parts = [HEADER];
  for (const [name, section] of Object.entries(configSchema.properties)) {
    parts.push(`\n## ${name}\n`);
    if (section.description) parts.push(`\n${section.description}\n`);
    parts.push('\n| Key | Type | Default | Range | Description |\n|---|---|---|---|---|\n');
    for (const r of rows(section, [name])) {
      const s = r.schema;
      parts.push(`| \`${r.key}\` | ${typeOf(s)} | ${code(s.default)} | ${cell(rangeOf(s))} | ${cell(s.description ?? '')} |\n`);
    }
  }
  return parts.join('');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = render();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(DOCS_FILE, 'utf8');
    } catch {
      // A missing file is out of date too.
    }
    if (current !== text) {
      console.error('docs/configuration.md is out of date with src/config/schema.ts: run `npm run docs:config`');
      process.exit(1);
    }
  } else {
    writeFileSync(DOCS_FILE, text);
    console.log(`wrote ${DOCS_FILE}`);
  }
}
