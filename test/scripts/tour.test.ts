/**
 * The README's Quick tour, run as written: its `sh` blocks, in order, in one
 * bash, from the repository's root, as a newcomer pastes them. It starts the
 * stand-in upstream and the relay on the tour's fixed ports, so it skips
 * when one of them is taken (a relay of your own on 8080, say).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The tour's shell blocks: everything fenced as `sh` between "## Quick tour" and the next section. */
function tourScript(): string {
  const readme = readFileSync(ROOT + 'README.md', 'utf8');
  const section = readme.split('\n## Quick tour\n')[1]!.split('\n## ')[0]!;
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  assert.ok(blocks.length >= 3, 'the tour has its shell blocks');
  return blocks.join('\n');
}

async function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => resolve(false));
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The tour's variables are its own: the test's TXRELAY_* (CI's acceptor choice, say) are not the reader's. */
function readerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  return env;
}

test('the README Quick tour runs top to bottom as written', async (t) => {
  const ports = [8080, 8081, 8899];
  for (const p of ports) {
    if (!(await tcpFree(p))) return t.skip(`port ${p} is in use: the tour needs 8080, 8081, 8899 and UDP 16888`);
  }
  if (!(await udpFree(16888))) return t.skip('UDP port 16888 is in use: the tour needs it');
  const rootFiles = new Set(readdirSync(ROOT));

  // Its own process group, so that a tour failing halfway leaves no relay or upstream behind.
  const bash = spawn('bash', ['-e', '-c', tourScript()], { cwd: ROOT, env: readerEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  bash.stdout.on('data', (d: Buffer) => (out += d.toString()));
  bash.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => process.kill(-bash.pid!, 'SIGKILL'), 150_000);
  const code = await new Promise<number | null>((resolve) => bash.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  try {
    process.kill(-bash.pid!, 'SIGTERM');
  } catch {
    // Nothing left: the tour cleaned up after itself.
  }

  assert.equal(code, 0, out);
  assert.doesNotMatch(out, /command not found|Error:|\n\s+at /, 'no failure and no stack trace along the way');

  // Solana: the JSON-RPC answer carries the signature the demo script printed; /v2 sees it as a duplicate.
  const sig = out.match(/^([1-9A-HJ-NP-Za-km-z]{64,88})$/m)?.[1];
  assert.ok(sig, 'demo-solana-tx printed a signature');
  assert.ok(out.includes(`{"jsonrpc":"2.0","result":"${sig}","id":1}`), 'JSON-RPC answered the signature');
  assert.match(out, /x-svc-duplicate: true/);
  assert.match(out, /"kind": "accepted"/, 'the bundle was accepted');
  assert.match(out, /"kind": "sent"/, 'the datagram was sent');

  // EVM: the plain-text answer and both batch items queued.
  assert.match(out, /HTTP\/1\.1 202 Accepted/);
  assert.match(out, /"message":"Successfully forwarded"/);
  assert.equal((out.match(/"kind": "queued"/g) ?? []).length, 2, 'the batch queued both items');

  // The stand-in upstream's lines: the duplicate was not forwarded again.
  const calls = (m: string) => (out.match(new RegExp(`Z ${m} `, 'g')) ?? []).length;
  assert.equal(calls('sendTransaction'), 2, 'JSON-RPC and the datagram');
  assert.equal(calls('sendBundle'), 1);
  assert.equal(calls('eth_sendRawTransaction'), 3);
  assert.match(out, /^txrelay_admitted_total\{lane="solana-single"\} 2$/m);
  assert.match(out, /^txrelay_duplicates_total\{lane="solana-single"\} 1$/m);

  // Every file the tour wrote went to its temporary directory.
  const added = readdirSync(ROOT).filter((f) => !rootFiles.has(f));
  assert.deepEqual(added, [], 'nothing new in the repository root');
});
