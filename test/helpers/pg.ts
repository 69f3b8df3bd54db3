/**
 * The machine's PostgreSQL for tests (TXRELAY_TEST_PG): whether it answers,
 * the one skip line when it does not, one-off statements, and a fresh
 * database per test for tables with fixed names.
 */
import type { TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';

export const PG_URL = process.env['TXRELAY_TEST_PG'] || 'postgres://postgres@127.0.0.1:5432/test';

/** The URL without credentials, for messages. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return 'TXRELAY_TEST_PG';
  }
}

export async function pgReachable(url = PG_URL): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

/** `false` when PostgreSQL answers, else the skip line naming where it was looked for. */
export async function pgSkip(): Promise<false | string> {
  return (await pgReachable()) ? false : `PostgreSQL not reachable at ${shownUrl(PG_URL)}: skipping`;
}

/** One statement on its own connection. */
export async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

/** A new database on the server at `serverUrl`, dropped after the test; its URL. */
export async function freshDatabase(t: TestContext, prefix: string, serverUrl = PG_URL): Promise<string> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await sql(serverUrl, `CREATE DATABASE ${name}`);
  t.after(() => sql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {}));
  const u = new URL(serverUrl);
  u.pathname = '/' + name;
  return u.toString();
}

/**
 * A TCP proxy to the PostgreSQL server that can cut every connection and
 * refuse, or silently hold, new ones; or silence the open ones (their packets
 * vanish, no reset: a dropped route, or a middlebox that lost their state).
 */
export class PgProxy {
  private readonly server = net.createServer((client) => this.accept(client));
  private readonly sockets = new Set<net.Socket>();
  private mode: 'up' | 'down' | 'blackhole' = 'up';
  /** Forwarding connections; a silenced one stays open and forwards nothing. */
  private readonly flows = new Set<{ silent: boolean }>();
  private readonly target: { host: string; port: number };

  constructor(private readonly url: string) {
    const u = new URL(url);
    this.target = { host: u.hostname || '127.0.0.1', port: Number(u.port || 5432) };
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const u = new URL(this.url);
    u.hostname = '127.0.0.1';
    u.port = String((this.server.address() as net.AddressInfo).port);
    return u.toString();
  }

  down(mode: 'down' | 'blackhole' = 'down'): void {
    this.mode = mode;
    for (const s of this.sockets) s.destroy();
  }

  /** The open connections forward nothing from now on, without a reset; new ones are held silently, or pass. */
  silence(fresh: 'hold' | 'pass' = 'hold'): void {
    for (const f of this.flows) f.silent = true;
    this.mode = fresh === 'hold' ? 'blackhole' : 'up';
  }

  restore(): void {
    this.mode = 'up';
  }

  close(): Promise<void> {
    this.down();
    return new Promise((r) => this.server.close(() => r()));
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'down') return void client.destroy();
    if (this.mode === 'blackhole') {
      this.sockets.add(client);
      client.on('error', () => {});
      client.on('close', () => this.sockets.delete(client));
      return;
    }
    const upstream = net.connect(this.target);
    const flow = { silent: false };
    this.flows.add(flow);
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      this.sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        this.sockets.delete(a);
        this.flows.delete(flow);
        b.destroy();
      });
      a.on('data', (d) => {
        if (!flow.silent) b.write(d);
      });
    }
  }
}
