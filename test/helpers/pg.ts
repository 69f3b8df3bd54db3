/**
 * The machine's PostgreSQL for tests (TXRELAY_TEST_PG): whether it answers,
 * the one skip line when it does not, one-off statements, and a fresh
 * database per test for tables with fixed names.
 */
import type { TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
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
