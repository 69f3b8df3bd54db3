/**
 * An account key never reaches the log (docs/reliability.md, leaked
 * credentials), however it was sent: in the api-key header, as `?api-key=`
 * on the Solana HTTP doors and the status API, as Jito's `?uuid=`, as the EVM
 * door's `?auth=`, malformed, unknown or refused. A real `txrelay serve` at
 * log level trace, every line it writes read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { legacyTransfer } from '../helpers/solana.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

test('keys sent every way a door takes them, valid or not, appear in no log line at trace level', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  Object.assign(env, { TXRELAY_STORAGE_DATA_DIR: dir, TXRELAY_HTTP_PORT: '0', TXRELAY_ADMIN_PORT: '0', TXRELAY_UDP_PORT: '0', TXRELAY_LOG_LEVEL: 'trace', TXRELAY_LOG_FORMAT: 'json', TXRELAY_WORKERS_THREADS: '1' });
  const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  t.after(() => void (child.exitCode === null && child.kill('SIGKILL')));
  const listening = await new Promise<{ http: string; admin: string }>((ok, fail) => {
    const check = (): void => {
      const line = out.split('\n').find((l) => l.includes('"txrelay listening"'));
      if (line) ok(JSON.parse(line));
    };
    child.stdout.on('data', check);
    child.on('exit', (code) => fail(new Error(`exited ${code}: ${out}`)));
  });
  const base = `http://${listening.http}`;
  const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
  const made = await fetch(`http://${listening.admin}/admin/accounts`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(made.status, 201);
  const key = ((await made.json()) as { uuid: string }).uuid;
  const unknown = randomUUID();
  const tx = legacyTransfer({ lamports: 1000 });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }] });
  const json = { 'content-type': 'application/json' };
  const answers: number[] = [];
  for (const k of [key, unknown, key.replace(/-/g, ''), key.toUpperCase(), `${key}x`]) {
    const q = encodeURIComponent(k);
    for (const r of [
      fetch(`${base}/v2?api-key=${q}`, { method: 'POST', body: tx.bytes }),
      fetch(`${base}/v2/batch?api-key=${q}`, { method: 'POST', body: '[]' }),
      fetch(`${base}/?api-key=${q}`, { method: 'POST', headers: json, body }),
      fetch(`${base}/`, { method: 'POST', headers: { ...json, 'api-key': k }, body }),
      fetch(`${base}/api/v1/transactions?uuid=${q}`, { method: 'POST', headers: json, body }),
      fetch(`${base}/v1/status/${tx.signature}?api-key=${q}`),
      fetch(`${base}/v2/svc_send_raw_transaction?auth=${q}`, { method: 'POST', body: '0x02' }),
      fetch(`${base}/`, { method: 'POST', headers: { ...json, authorization: `Bearer ${k}` }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x02"]}' }),
    ]) {
      const res = await r;
      answers.push(res.status);
      await res.arrayBuffer();
    }
  }
  // Both admitted and refused requests went through: the log had something to leak.
  assert.ok(answers.includes(200) && answers.some((s) => s === 401 || s === 403), answers.join(','));
  child.kill('SIGTERM');
  await new Promise((ok) => child.once('exit', ok));
  assert.match(out, /"txrelay listening"/);
  const lower = out.toLowerCase();
  for (const k of [key, unknown]) {
    for (const form of [k, k.replace(/-/g, '')]) assert.ok(!lower.includes(form.toLowerCase()), `a key form appears in the log:\n${out.split('\n').find((l) => l.toLowerCase().includes(form.toLowerCase()))}`);
  }
});
