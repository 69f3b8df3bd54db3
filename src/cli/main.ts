#!/usr/bin/env node
/**
 * The `txrelay` command: `serve` runs the relay; `accounts` manages accounts
 * through the running node's admin API (so changes are live at once).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig, describeKeys } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Relay } from '../relay.js';
import type { AccountRecord } from '../store/accounts.js';
import { registerSendCommand } from './send.js';
import { registerStatusCommand } from './status.js';
import { registerBenchCommands } from '../bench/cli.js';
import { ConfigError } from '../errors.js';

// Each subcommand imports what only it needs when it runs (the relay, the stores, pg, undici):
// a `send` or `status` process then starts without loading the whole server.

const program = new Command();
program.name('txrelay').description('Transaction submission relay for EVM and Solana').version('0.1.0');

function intArg(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

function fail(msg: string): never {
  process.stderr.write(`txrelay: ${msg}\n`);
  process.exit(1);
}

async function config(file?: string, debug = false, adminClient = false): Promise<Config> {
  try {
    return loadConfig({ file, adminClient });
  } catch (e) {
    if (e instanceof ConfigError) (await import('./startup.js')).exitOnStartupError(e, debug);
    throw e;
  }
}

program
  .command('serve')
  .description('run the relay (HTTP, UDP and admin listeners) on the given configuration or embedded defaults')
  .option('-c, --config <file>', 'TOML or JSON configuration file')
  .option('--debug', 'on a failed start, print the stack trace too, and log start-up as it happens')
  .addHelpText('after', '\nConfiguration keys (env override in brackets):\n' + describeKeys().map((k) => `  ${k.key} = ${JSON.stringify(k.default)}  [${k.env}]`).join('\n'))
  .action(async (opts: { config?: string; debug?: boolean }) => {
    const cfg = await config(opts.config, opts.debug);
    const [{ createProcessLogger }, { Relay }, { exitOnStartupError }, { reload }] = await Promise.all([
      import('../obs/log.js'),
      import('../relay.js'),
      import('./startup.js'),
      import('./reload.js'),
    ]);
    const debug = opts.debug === true || cfg.log.level === 'debug' || cfg.log.level === 'trace';
    // Start-up's lines wait for its outcome: a failed start is one line on stderr, not a page of logs (docs/operations.md#logs).
    const out = createProcessLogger({ level: cfg.log.level, node: cfg.node.name, format: cfg.log.format, hold: !debug });
    const log = out.log;
    let relay: Relay;
    try {
      relay = await Relay.start({ config: cfg, logger: log });
    } catch (e) {
      out.discard();
      exitOnStartupError(e, debug);
    }
    out.release();
    if (!cfg.admin.token) log.info({ file: join(resolve(cfg.storage.data_dir), 'admin.token') }, 'admin token file');
    let stopping = false;
    const stop = (sig: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal: sig }, 'draining and stopping');
      relay.stop().then(
        () => process.exit(0),
        (e) => {
          log.error({ err: (e as Error).message }, 'stop failed');
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    // Reload, not Node's default of exiting (docs/operations.md#reload).
    let inForce = cfg;
    process.on('SIGHUP', () => {
      if (stopping) return;
      inForce = reload(opts.config, inForce, log).config;
      // Certificates are read again from the paths in force (docs/operations.md#tls).
      relay.reloadTls().catch((e: unknown) => log.error({ error: e instanceof Error ? e.message : String(e) }, 'TLS reload failed; the certificates in force stay'));
    });
  });

// ---- accounts: a thin client of the admin API ---------------------------------

interface AdminTarget {
  base: string;
  token: string;
  /** Where the token came from, for the message when the relay refuses it. */
  tokenFrom: string;
}

async function adminTarget(file?: string): Promise<AdminTarget> {
  // The database URL is the serving node's (often in its EnvironmentFile): the CLI needs only the admin listener.
  const cfg = await config(file, false, true);
  let token = cfg.admin.token;
  let tokenFrom = 'admin.token in the configuration';
  if (!token) {
    const f = join(resolve(cfg.storage.data_dir), 'admin.token');
    tokenFrom = f;
    if (!existsSync(f)) {
      process.stderr.write(`txrelay: no admin.token in ${cfg.storage.data_dir}; start the relay once (txrelay serve) or set admin.token\n`);
      process.exit(2);
    }
    token = readFileSync(f, 'utf8').trim();
  }
  const host = cfg.admin.host.includes(':') ? `[${cfg.admin.host}]` : cfg.admin.host;
  return { base: `http://${host}:${cfg.admin.port}`, token, tokenFrom };
}

/** The admin API's refusal, with the account named when it was given by id (a key is a credential: never echoed). */
function refusal(status: number, path: string, json: any): string {
  const text: string = json?.error?.message ?? `admin API answered ${status}`;
  const given = /^\/admin\/accounts\/([^/?]+)$/.exec(path)?.[1];
  if (status !== 404 || given === undefined) return text;
  const id = decodeURIComponent(given);
  return /^\d+$/.test(id)
    ? `account ${id} not found — txrelay accounts list shows every account`
    : `account not found: no account has the key given — txrelay accounts list shows every account`;
}

async function admin(t: AdminTarget, method: string, path: string, body?: unknown): Promise<any> {
  return (await adminCall(t, method, path, body)).json;
}

async function adminCall(t: AdminTarget, method: string, path: string, body?: unknown): Promise<{ json: any; next: string | null }> {
  const { request } = await import('undici');
  let res;
  try {
    res = await request(t.base + path, {
      method: method as any,
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    process.stderr.write(`txrelay: admin API at ${t.base} not reachable (${(e as Error).message}); is the relay running?\n`);
    process.exit(1);
  }
  const text = await res.body.text();
  const json = text ? JSON.parse(text) : null;
  if (res.statusCode === 401) {
    // The usual cause: a token from another relay's data directory (a second relay, or one started with another storage.data_dir).
    process.stderr.write(`txrelay: the relay at ${t.base} refused the admin token read from ${t.tokenFrom}; use the same configuration and TXRELAY_* variables as that relay (storage.data_dir, admin.token)\n`);
    process.exit(1);
  }
  if (res.statusCode >= 300) {
    process.stderr.write(`txrelay: ${refusal(res.statusCode, path, json)}\n`);
    process.exit(1);
  }
  const next = res.headers['x-svc-next-after'];
  return { json, next: typeof next === 'string' ? next : null };
}

interface AccountFlags {
  config?: string;
  plan?: string;
  evmTps?: number;
  evmBurst?: number;
  evmEnabled?: boolean;
  solanaTps?: number;
  solanaBurst?: number;
  solanaEnabled?: boolean;
  minTip?: number;
  json?: boolean;
}

function accountBody(o: AccountFlags): Record<string, unknown> {
  const body: Record<string, any> = {};
  if (o.plan) body.plan = o.plan;
  const evm: Record<string, unknown> = {};
  if (o.evmTps !== undefined) evm.tps = o.evmTps;
  if (o.evmBurst !== undefined) evm.burst = o.evmBurst;
  if (o.evmEnabled !== undefined) evm.enabled = o.evmEnabled;
  if (Object.keys(evm).length) body.evm = evm;
  const sol: Record<string, unknown> = {};
  if (o.solanaTps !== undefined) sol.tps = o.solanaTps;
  if (o.solanaBurst !== undefined) sol.burst = o.solanaBurst;
  if (o.solanaEnabled !== undefined) sol.enabled = o.solanaEnabled;
  if (o.minTip !== undefined) sol.min_tip_lamports = o.minTip;
  if (Object.keys(sol).length) body.solana = sol;
  return body;
}

function withAccountFlags(c: Command): Command {
  return c
    .option('-c, --config <file>', 'configuration file (to find the admin API and token)')
    .addOption(new Option('--plan <plan>', 'the account\'s plan').choices(['free', 'paid']))
    .option('--evm-tps <n>', 'family A transactions per second', intArg)
    .option('--evm-burst <n>', 'family A burst (default: the TPS)', intArg)
    .option('--solana-tps <n>', 'family B transactions per second', intArg)
    .option('--solana-burst <n>', 'family B burst (default: the TPS)', intArg)
    .option('--min-tip <lamports>', 'minimum bundle tip in lamports', intArg)
    .option('--json', 'print the whole record as JSON');
}

const accounts = program.command('accounts').description('manage accounts through the running relay\'s admin API');

withAccountFlags(accounts.command('create').description('register an account; prints its UUID (the record with --json)')).action(async (o: AccountFlags) => {
  const rec = await admin(await adminTarget(o.config), 'POST', '/admin/accounts', accountBody(o));
  process.stdout.write(o.json ? JSON.stringify(rec, null, 2) + '\n' : rec.uuid + '\n');
});

accounts
  .command('list')
  .description('list every account as JSON')
  .option('-c, --config <file>', 'configuration file')
  .action(async (o: { config?: string }) => {
    // Page by page (docs/protocol.md#admin-api), printed as one array.
    const t = await adminTarget(o.config);
    const all: unknown[] = [];
    for (let after: string | null = '0'; after !== null; ) {
      const page: { json: unknown[]; next: string | null } = await adminCall(t, 'GET', `/admin/accounts?after=${after}&limit=10000`);
      all.push(...page.json);
      after = page.next;
    }
    process.stdout.write(JSON.stringify(all, null, 2) + '\n');
  });

accounts
  .command('show <account>')
  .description('print one account as JSON; <account> is its key or its id')
  .option('-c, --config <file>', 'configuration file')
  .action(async (uuid: string, o: { config?: string }) => {
    process.stdout.write(JSON.stringify(await admin(await adminTarget(o.config), 'GET', `/admin/accounts/${encodeURIComponent(uuid)}`), null, 2) + '\n');
  });

withAccountFlags(accounts.command('update <account>').description('change plan, limits or minimum tip; live at once'))
  .option('--evm-enabled <bool>', 'enable family A (true/false)', (v) => v === 'true')
  .option('--solana-enabled <bool>', 'enable family B (true/false)', (v) => v === 'true')
  .action(async (uuid: string, o: AccountFlags) => {
    const rec = await admin(await adminTarget(o.config), 'PATCH', `/admin/accounts/${encodeURIComponent(uuid)}`, accountBody(o));
    process.stdout.write(JSON.stringify(rec, null, 2) + '\n');
  });

accounts
  .command('revoke <account>')
  .description('revoke an account; its requests are refused at once')
  .option('-c, --config <file>', 'configuration file')
  .action(async (uuid: string, o: { config?: string }) => {
    const rec = await admin(await adminTarget(o.config), 'DELETE', `/admin/accounts/${encodeURIComponent(uuid)}`);
    process.stdout.write(JSON.stringify(rec, null, 2) + '\n');
  });

accounts
  .command('export')
  .description('print every account of this node\'s embedded registry, keys included, one JSON record per line (for `accounts import`)')
  .option('-c, --config <file>', 'configuration file (to find storage.data_dir)')
  .option('-o, --out <file>', 'write to this file (mode 0600) instead of standard output')
  .action(async (o: { config?: string; out?: string }) => {
    const cfg = await config(o.config);
    const dir = resolve(cfg.storage.data_dir);
    if (!existsSync(dir)) fail(`no data directory at ${dir}`);
    const [{ Store }, { AccountStore }] = await Promise.all([import('../store/db.js'), import('../store/accounts.js')]);
    const db = Store.open(dir);
    try {
      const lines = AccountStore.open(db)
        .list()
        .map((r) => JSON.stringify(r) + '\n')
        .join('');
      // The keys are credentials: the file is the owner's only.
      if (o.out) writeFileSync(o.out, lines, { mode: 0o600 });
      else process.stdout.write(lines);
      process.stderr.write(`txrelay: exported ${lines ? lines.split('\n').length - 1 : 0} accounts\n`);
    } finally {
      await db.close();
    }
  });

accounts
  .command('import <file>')
  .description('copy exported accounts into the PostgreSQL registry at database.url (as key digests); their keys keep working on every node')
  .option('-c, --config <file>', 'configuration file (to find database.url)')
  .action(async (file: string, o: { config?: string }) => {
    const cfg = await config(o.config);
    if (!cfg.database.url) fail('accounts import needs database.url (TXRELAY_DATABASE_URL)');
    const [{ importAccounts }, { describeUrl }] = await Promise.all([import('../store/pg-registry.js'), import('../store/pg-schema.js')]);
    let records: AccountRecord[];
    try {
      records = readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as AccountRecord);
    } catch (e) {
      fail(`${file} is not an export (one JSON record per line): ${(e as Error).message}`);
    }
    try {
      const r = await importAccounts(cfg.database.url, records);
      process.stdout.write(`imported ${r.added} accounts into ${describeUrl(cfg.database.url)} (${r.present} were already there)\n`);
    } catch (e) {
      fail(`import into ${describeUrl(cfg.database.url)} failed, nothing of the failed chunk was written: ${(e as Error).message}`);
    }
  });

program
  .command('db')
  .description('the PostgreSQL registry\'s schema')
  .command('migrate')
  .description('bring the registry schema at database.url to this version (nodes also do it at start-up)')
  .option('-c, --config <file>', 'configuration file (to find database.url)')
  .action(async (o: { config?: string }) => {
    const cfg = await config(o.config);
    if (!cfg.database.url) fail('db migrate needs database.url (TXRELAY_DATABASE_URL)');
    const [{ default: pg }, { describeUrl, migrate }] = await Promise.all([import('pg'), import('../store/pg-schema.js')]);
    const client = new pg.Client({ connectionString: cfg.database.url, connectionTimeoutMillis: 5000, application_name: 'txrelay migrate' });
    try {
      await client.connect();
      const { from, to } = await migrate(client);
      process.stdout.write(from === to ? `registry schema at ${describeUrl(cfg.database.url)} is current (version ${to})\n` : `registry schema at ${describeUrl(cfg.database.url)}: version ${from} -> ${to}\n`);
    } catch (e) {
      fail(`db migrate at ${describeUrl(cfg.database.url)}: ${(e as Error).message}`);
    } finally {
      await client.end().catch(() => {});
    }
  });

registerSendCommand(program);
registerStatusCommand(program);
registerBenchCommands(program);

program.parseAsync(process.argv).catch((e) => {
  process.stderr.write(`txrelay: ${(e as Error).message}\n`);
  process.exit(1);
});
