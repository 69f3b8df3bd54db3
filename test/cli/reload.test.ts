/**
 * SIGHUP to `txrelay serve` (docs/operations.md#reload): the real CLI as a
 * child process with a configuration file. A changed `log.level` applies at
 * once; a changed key the relay sized at start-up is named as needing a
 * restart; an invalid file is refused and the relay keeps serving; SIGTERM
 * still drains and exits 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

test('SIGHUP reloads: log.level at once, other keys named for a restart, an invalid file refused, still serving', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-reload-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.toml');
  const write = (extra: string) =>
    writeFileSync(file, `[http]\nport = 0\n[udp]\nport = 0\n[admin]\nport = 0\n[storage]\ndata_dir = "${join(dir, 'data')}"\n[workers]\nthreads = 1\n${extra}`);
  write('[log]\nlevel = "info"\n[limits]\nip_rps = 1000\n');
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;

  const child = spawn(process.execPath, [CLI, 'serve', '--config', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const lines: any[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const waitFor = async (pred: (l: any) => boolean, what: string) => {
    for (let i = 0; i < 200; i++) {
      const hit = lines.find(pred);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`no log line: ${what}\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
  };
  const listening = await waitFor((l) => l.msg === 'txrelay listening', 'listening');
  const base = `http://${listening.http}`;

  // debug lines appear only once the new level is in force.
  write('[log]\nlevel = "debug"\n[limits]\nip_rps = 2000\n');
  child.kill('SIGHUP');
  const reloaded = await waitFor((l) => /^configuration reloaded/.test(l.msg), 'reloaded');
  assert.deepEqual(reloaded.applied, ['log.level']);
  assert.deepEqual(reloaded.restart_needed, ['limits.ip_rps']);

  // An invalid file changes nothing; the relay keeps running.
  write('[log]\nlevel = "loud"\n');
  child.kill('SIGHUP');
  const refused = await waitFor((l) => /^reload refused/.test(l.msg), 'refused');
  assert.match(refused.error, /log\.level/);
  assert.equal(await (await fetch(`${base}/ping`)).text(), 'pong');

  // Reloading the same content again: nothing changed (compared with what is in force).
  write('[log]\nlevel = "debug"\n[limits]\nip_rps = 1000\n');
  child.kill('SIGHUP');
  await waitFor((l) => l.msg === 'configuration reloaded: nothing changed', 'nothing changed');

  const code = await new Promise<number | null>((resolve) => {
    child.on('exit', (c) => resolve(c));
    child.kill('SIGTERM');
  });
  assert.equal(code, 0);
});
