/**
 * `txrelay status` and `txrelay send --wait`, run as real child processes
 * against a real relay and real upstreams: lines or JSON per id, exit code 1
 * when an id is unknown, and the forward outcome printed after a send.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Keypair } from '@solana/web3.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type UpstreamCall } from '../helpers/upstream.js';
import { legacyTransfer, tipTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';
import { EvmClient } from '../../src/client/index.js';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const TIP = Keypair.generate().publicKey.toBase58();
let relay: TestRelay;
let up: Awaited<ReturnType<typeof startUpstream>>;
let key: string;
let nonce = 100;
const refused = new Set<string>();
const refuse = (c: UpstreamCall) => typeof c.params?.[0] === 'string' && refused.has(c.params[0]);
const fresh = () => signed1559({ nonce: nonce++ });
const randomHash = () => '0x' + randomBytes(32).toString('hex');

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args, '--key', key, '--url', relay.base]);
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e: any) {
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

before(async () => {
  up = await startUpstream({ mode: { rejectIf: refuse } });
  relay = await startTestRelay({
    solana: { rpc_upstreams: [up.url], bundle_upstreams: [up.url], tip_accounts: [TIP] },
    evm: { upstreams: { free: [up.url] } },
  });
  key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000, min_tip_lamports: 0 }, evm: { tps: 1000, burst: 1000 } })).uuid;
});

after(async () => {
  await relay?.stop();
  await up?.close();
});

describe('txrelay status', { concurrency: true }, () => {
  test('status prints a line per id and per upstream request; exit 0 when every id is known', async () => {
    const tx = await fresh();
    const c = new EvmClient({ url: relay.base, uuid: key, heartbeatMs: 0 });
    let requestId: string;
    try {
      const out = await c.sendRawTransaction(tx.hex);
      requestId = out.requestId!;
      await c.waitForward(requestId, { timeout: 5000 });
    } finally {
      await c.close();
    }
    const r = await cli('status', tx.hash, requestId);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], `${tx.hash} forwarded`);
    assert.match(lines[1]!, /^ {2}\S+ attempt 1: http 200 in \d+ ms$/);
    assert.ok(lines.includes(`${requestId} forwarded`));
    const j = await cli('status', tx.hash, '--json');
    assert.equal(j.code, 0);
    const parsed = JSON.parse(j.stdout);
    assert.equal(parsed.length, 1);
    assert.equal(parsed[0].id, tx.hash);
    assert.equal(parsed[0].state, 'forwarded');
    assert.equal(parsed[0].request_id, requestId);
  });

  test('status exits 1 when an id is unknown, and still prints every id', async () => {
    const tx = await fresh();
    const w = await cli('send', 'evm-rpc', tx.hex, '--wait');
    assert.equal(w.code, 0, w.stderr);
    const unknown = randomHash();
    const r = await cli('status', tx.hash, unknown);
    assert.equal(r.code, 1);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], `${tx.hash} forwarded`);
    assert.equal(lines.at(-1), `${unknown} unknown`);
    const j = await cli('status', unknown, '--json');
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.stdout)[0].state, 'unknown');
  });

  test('status with a bad key exits 1 with the 401 on stderr', async () => {
    const r = await run(process.execPath, [CLI, 'status', randomHash(), '--key', '00000000-0000-4000-8000-000000000000', '--url', relay.base]).catch((e) => e);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /401/);
  });

  test('send --wait prints the forward state: forwarded exits 0, an upstream rejection exits 1', async () => {
    const tx = await fresh();
    let r = await cli('send', 'evm-rpc', tx.hex, '--wait', '--timeout', '5s');
    assert.equal(r.code, 0, r.stderr);
    let out = JSON.parse(r.stdout);
    assert.equal(out.kind, 'queued');
    assert.equal(out.forward.state, 'forwarded');
    assert.equal(out.forward.request_id, out.requestId);
    assert.equal(out.forward.timedOut, false);

    const bad = await fresh();
    refused.add(bad.hex);
    r = await cli('send', 'evm-text', bad.hex, '--wait');
    assert.equal(r.code, 1);
    out = JSON.parse(r.stdout);
    assert.equal(out.kind, 'queued');
    assert.equal(out.forward.state, 'upstream_rejected');

    const s = legacyTransfer();
    r = await cli('send', 'solana-rpc', Buffer.from(s.bytes).toString('base64'), '--wait');
    assert.equal(r.code, 0, r.stderr);
    out = JSON.parse(r.stdout);
    assert.equal(out.signature, s.signature);
    assert.equal(out.forward.state, 'forwarded');

    // A duplicate waits on the first request's outcome.
    r = await cli('send', 'solana-rpc', Buffer.from(s.bytes).toString('base64'), '--wait');
    assert.equal(r.code, 0, r.stderr);
    out = JSON.parse(r.stdout);
    assert.equal(out.duplicate, true);
    assert.equal(out.forward.state, 'forwarded');
  });

  test('send --wait for a bundle, a batch and a UDP datagram', async () => {
    const txs = [legacyTransfer(), tipTransfer(TIP, 10)];
    let r = await cli('send', 'solana-bundle', ...txs.map((t) => Buffer.from(t.bytes).toString('base64')), '--wait');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).forward.state, 'forwarded');

    const [a, b] = [await fresh(), await fresh()];
    r = await cli('send', 'evm-batch', a.hex, b.hex, '--wait');
    assert.equal(r.code, 0, r.stderr);
    const batch = JSON.parse(r.stdout);
    assert.deepEqual(batch.forward.map((f: any) => f.state), ['forwarded', 'forwarded']);

    const u = legacyTransfer();
    r = await cli('send', 'solana-udp', Buffer.from(u.bytes).toString('base64'), '--wait', '--udp-port', String(relay.udpPort));
    assert.equal(r.code, 0, r.stderr);
    const udp = JSON.parse(r.stdout);
    assert.equal(udp.signature, u.signature);
    assert.equal(udp.forward.state, 'forwarded');
  });
});
