/**
 * Nothing acknowledged is lost (docs/protocol.md#batch-records): the relay runs as a real child
 * process (`txrelay serve`), a stream of family A batches is sent, the
 * process is killed with SIGKILL mid-stream, and after a restart every batch
 * that was acknowledged has its receive record — and, with `database.url`
 * set, reaches PostgreSQL. Also: the CLI registers an account, and SIGTERM
 * stops the relay gracefully.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { signed1559 } from '../helpers/evm.js';
import { eventually } from '../helpers/relay.js';
import { TEST_DEDUP_ENV } from '../helpers/dedup-size.js';
import { PG_URL, pgSkip } from '../helpers/pg.js';
import { freePorts } from '../../bench/e2e/relay.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
interface Node {
  child: ChildProcess;
  base: string;
  env: NodeJS.ProcessEnv;
}

async function startNode(dataDir: string, extraEnv: Record<string, string> = {}): Promise<Node> {
  const [http, admin] = (await freePorts(2)) as [number, number];
  const env = {
    ...process.env,
    TXRELAY_STORAGE_DATA_DIR: dataDir,
    ...TEST_DEDUP_ENV,
    TXRELAY_HTTP_PORT: String(http),
    TXRELAY_ADMIN_PORT: String(admin),
    TXRELAY_UDP_ENABLED: 'false',
    TXRELAY_LIMITS_IP_RPS: '100000',
    TXRELAY_LIMITS_IP_BURST: '100000',
    TXRELAY_WORKERS_THREADS: '1',
    ...extraEnv,
  };
  const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  try {
    await eventually(() => out.includes('txrelay listening') || child.exitCode !== null, 15000, 'relay start');
  } catch (e) {
    // A start that never reports: killed, so that no relay outlives the test and keeps its file running.
    child.kill('SIGKILL');
    throw e;
  }
  if (child.exitCode !== null) throw new Error(`relay exited: ${out}`);
  return { child, base: `http://127.0.0.1:${http}`, env };
}

function cli(env: NodeJS.ProcessEnv, ...args: string[]): string {
  return execFileSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' }).trim();
}

test('every acknowledged batch survives SIGKILL and reaches PostgreSQL after restart', async (t) => {
  const pgSkipped = await pgSkip();
  const withPg = pgSkipped === false;
  const table = 'txrelay_batch_records'; // the relay's fixed table; rows are told apart by batch_id
  const dataDir = mkdtempSync(join(tmpdir(), 'txrelay-kill-'));
  try {
    const extra: Record<string, string> = withPg ? { TXRELAY_DATABASE_URL: PG_URL } : {};
    const n1 = await startNode(dataDir, extra);
    const uuid = cli(n1.env, 'accounts', 'create', '--plan', 'paid', '--evm-tps', '100000');
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const acked: string[] = [];
    let nonce = 0;
    let stop = false;
    const sender = (async () => {
      while (!stop) {
        const txs = await Promise.all([0, 1, 2].map(() => signed1559({ nonce: nonce++ })));
        try {
          const r = await fetch(n1.base + '/', {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: txs.map((x) => x.hex) }),
          });
          if (r.status === 202) acked.push(r.headers.get('x-svc-batch-id')!);
          await r.arrayBuffer();
        } catch {
          return; // the relay died under us: that request was never acknowledged
        }
      }
    })();
    await eventually(() => acked.length >= 30, 20000, '30 acknowledged batches');
    n1.child.kill('SIGKILL');
    await new Promise((r) => n1.child.once('exit', r));
    stop = true;
    await sender;

    const n2 = await startNode(dataDir, extra);
    try {
      const token = cli(n2.env, 'accounts', 'show', uuid); // the account survived too
      assert.match(token, /"plan": "paid"/);
      const adminBase = `http://127.0.0.1:${n2.env.TXRELAY_ADMIN_PORT}`;
      const adminToken = (await import('node:fs')).readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
      for (const id of acked) {
        const r = await fetch(`${adminBase}/admin/batches/${id}`, { headers: { authorization: `Bearer ${adminToken}` } });
        assert.equal(r.status, 200, `acknowledged batch ${id} lost`);
        // The outcome is durable before the 202 (a kill -9 right after an ack must not leave items: []).
        const rec = (await r.json()) as { items: { status: string }[] };
        assert.equal(rec.items.length, 3, `acknowledged batch ${id} has its per-item outcomes`);
      }
      // The upload half is its own subtest: where no PostgreSQL answers it skips with one line.
      await t.test('and every one of them reaches PostgreSQL', { skip: pgSkipped }, async () => {
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        try {
          await eventually(
            async () => {
              const q = await c.query(`SELECT count(*)::int AS n FROM ${table} WHERE batch_id = ANY($1)`, [acked]).catch(() => ({ rows: [{ n: 0 }] }));
              return q.rows[0].n === acked.length;
            },
            20000,
            'every acknowledged batch in PostgreSQL',
          );
        } finally {
          await c.query(`DELETE FROM ${table} WHERE batch_id = ANY($1)`, [acked]).catch(() => {});
          await c.end();
        }
      });
    } finally {
      n2.child.kill('SIGTERM');
      await new Promise((r) => n2.child.once('exit', r));
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('SIGTERM drains and exits 0; txrelay accounts create prints the UUID alone', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'txrelay-term-'));
  try {
    const n = await startNode(dataDir);
    const uuid = cli(n.env, 'accounts', 'create');
    assert.match(uuid, /^[0-9a-f-]{36}$/);
    const json = JSON.parse(cli(n.env, 'accounts', 'create', '--plan', 'paid', '--solana-tps', '7', '--json'));
    assert.equal(json.plan, 'paid');
    assert.equal(json.solana.tps, 7);
    assert.equal(json.evm.tps, 50);
    n.child.kill('SIGTERM');
    const code = await new Promise((r) => n.child.once('exit', (c) => r(c)));
    assert.equal(code, 0);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a bad configuration stops start-up with a message naming the key', () => {
  const env = { ...process.env, TXRELAY_HTTP_PORT: 'eighty' };
  assert.throws(
    () => execFileSync(process.execPath, [CLI, 'serve'], { env, encoding: 'utf8', stdio: 'pipe' }),
    (e: any) => e.status === 2 && /TXRELAY_HTTP_PORT/.test(e.stderr),
  );
  const env2 = { ...process.env, TXRELAY_LIMITS_QUEUE_CAPACITY: '0' };
  assert.throws(
    () => execFileSync(process.execPath, [CLI, 'serve'], { env: env2, encoding: 'utf8', stdio: 'pipe' }),
    (e: any) => e.status === 2 && /limits\.queue_capacity/.test(e.stderr),
  );
});
