/**
 * One relay per data directory: a second `txrelay serve` on the same
 * `storage.data_dir` refuses in one line naming the holder's pid, and a holder
 * killed with SIGKILL leaves nothing that stops the next start.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

function env(dataDir: string): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) e[k] = v;
  return { ...e, TXRELAY_STORAGE_DATA_DIR: dataDir, TXRELAY_HTTP_PORT: '0', TXRELAY_ADMIN_PORT: '0', TXRELAY_UDP_PORT: '0', TXRELAY_WORKERS_THREADS: '1' };
}

/** Starts `txrelay serve` and resolves once it logged that it is listening (or rejects with its stderr when it exits). */
function startServing(t: TestContext, dataDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: env(dataDir), stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (/listening|started/i.test(out)) resolve(child);
    });
    child.stderr!.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}${out}`)));
  });
}

function runToExit(dataDir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve'], { env: env(dataDir), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('a second relay on the same data directory refuses, naming the holder; after kill -9 the next start works', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const first = await startServing(t, dir);

  const second = await runToExit(dir);
  assert.equal(second.code, 1, second.stderr);
  assert.equal(second.stdout, '');
  assert.equal(
    second.stderr,
    `txrelay: storage.data_dir ${dir} is in use by another txrelay (pid ${first.pid}) — stop that process, or set storage.data_dir (TXRELAY_STORAGE_DATA_DIR) to another directory\n`,
  );

  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const third = await startServing(t, dir);
  third.kill('SIGTERM');
  await new Promise((r) => third.once('exit', r));
});
