/**
 * `txrelay send`: one transaction (hex, base64, base58 or a file)
 * or a bundle / batch through each door, outcome printed as JSON, exit code 0
 * when acknowledged. The CLI runs as a real child process against a real relay.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import bs58 from 'bs58';
import { Keypair } from '@solana/web3.js';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer, tipTransfer, v0WithLookup } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const TIP = Keypair.generate().publicKey.toBase58();
let relay: TestRelay;
let up: Awaited<ReturnType<typeof startUpstream>>;
let key: string;
let dir: string;

/** An acknowledgement names its request (x-svc-request-id); the rest of the outcome is compared as before. */
function acked<T extends object>(o: T): Omit<T, 'requestId'> {
  const { requestId, ...rest } = o as T & { requestId?: unknown };
  assert.equal(typeof requestId, 'string', 'an acknowledgement carries its request id');
  return rest;
}

async function send(...args: string[]): Promise<{ code: number; out: any }> {
  try {
    const r = await run(process.execPath, [CLI, 'send', ...args, '--key', key, '--url', relay.base, '--udp-port', String(relay.udpPort)]);
    return { code: 0, out: JSON.parse(r.stdout) };
  } catch (e: any) {
    return { code: e.code, out: e.stdout ? JSON.parse(e.stdout) : e.stderr };
  }
}

before(async () => {
  up = await startUpstream();
  relay = await startTestRelay({
    solana: { rpc_upstreams: [up.url], bundle_upstreams: [up.url], tip_accounts: [TIP] },
    evm: { upstreams: { free: [up.url] } },
  });
  key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000, min_tip_lamports: 0 }, evm: { tps: 1000, burst: 1000 } })).uuid;
  dir = mkdtempSync(join(tmpdir(), 'txrelay-send-'));
});

after(async () => {
  await relay?.stop();
  await up?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('txrelay send', { concurrency: true }, () => {
  test('send solana-v2 from a raw file, solana-rpc from base64 and base58 text', async () => {
    const a = legacyTransfer();
    writeFileSync(join(dir, 'a.bin'), a.bytes);
    let r = await send('solana-v2', `@${join(dir, 'a.bin')}`);
    assert.equal(r.code, 0);
    assert.deepEqual(acked(r.out), { kind: 'accepted', signature: a.signature, duplicate: false });
    const b = v0WithLookup();
    r = await send('solana-rpc', Buffer.from(b.bytes).toString('base64'));
    assert.equal(r.out.signature, b.signature);
    const c = legacyTransfer();
    r = await send('solana-rpc', bs58.encode(c.bytes));
    assert.equal(r.code, 0);
    assert.equal(r.out.signature, c.signature);
    r = await send('solana-v2', `@${join(dir, 'a.bin')}`);
    assert.equal(r.out.duplicate, true);
  });

  test('send solana-bundle with several transactions, solana-udp reaches the upstream', async () => {
    const txs = [legacyTransfer(), tipTransfer(TIP, 10)];
    const r = await send('solana-bundle', ...txs.map((t) => Buffer.from(t.bytes).toString('base64')));
    assert.equal(r.code, 0);
    assert.deepEqual(r.out.signatures, txs.map((t) => t.signature));
    const u = legacyTransfer();
    const s = await send('solana-udp', Buffer.from(u.bytes).toString('base64'));
    assert.equal(s.out.kind, 'sent');
    await eventually(
      () => up.calls().some((c) => c.method === 'sendTransaction' && (c.params as string[])[0] === Buffer.from(u.bytes).toString('base64')),
      5000,
      'UDP transaction forwarded',
    );
  });

  test('send evm-text, evm-rpc and evm-batch; a rejection exits 1', async () => {
    const a = await signed1559({ nonce: 1 });
    let r = await send('evm-text', a.hex);
    assert.equal(r.code, 0);
    assert.deepEqual(acked(r.out), { kind: 'queued', hash: a.hash });
    const b = await signed1559({ nonce: 2 });
    writeFileSync(join(dir, 'b.hex'), b.hex + '\n');
    r = await send('evm-rpc', `@${join(dir, 'b.hex')}`);
    assert.equal(r.out.hash, b.hash);
    const c = await signed1559({ nonce: 3 });
    r = await send('evm-batch', c.hex, a.hex);
    assert.equal(r.code, 0);
    assert.deepEqual(r.out.items.map((i: any) => i.kind), ['queued', 'duplicate']);
    const bad = await signed1559({ nonce: 4, chainId: 5 });
    r = await send('evm-rpc', bad.hex);
    assert.equal(r.code, 1);
    assert.equal(r.out.kind, 'rejected');
  });

  test('a relay that is not there: send says not-sent (retry-safe) and exits 1; bench fails at once in one line', async () => {
    const net = await import('node:net');
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const dead = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    await new Promise((r) => srv.close(r));
    const file = join(dir, 'dead.bin');
    writeFileSync(file, legacyTransfer().bytes);
    const r = await run(process.execPath, [CLI, 'send', 'solana-v2', file, '--key', key, '--url', dead]).catch((e: any) => e);
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout);
    assert.equal(out.kind, 'not-sent');
    assert.equal(out.retry, 'retry_safe');
    const b = await run(process.execPath, [CLI, 'bench', 'solana-v2', '--key', key, '--url', dead, '--duration', '10s', '--no-cache']).catch((e: any) => e);
    assert.notEqual(b.code ?? 0, 0);
    assert.match(b.stderr, /^txrelay bench: no relay answers at http:\/\/127\.0\.0\.1:\d+\/? \(ECONNREFUSED\)/m);
    assert.equal(b.stdout, '', 'refused before the run: no report');
  });
});
