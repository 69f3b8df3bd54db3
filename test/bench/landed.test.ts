/**
 * `txrelay bench --landed` against a real relay whose upstream and
 * `solana.chain_rpc` are both the litesvm stand-in (test/helpers/svm-rpc.ts,
 * wired as in test/e2e/landing.test.ts): the bench signs with a funded payer
 * and the chain's blockhash, then follows what the relay acknowledged. Its
 * counts are checked against what the chain did (the payer's balance).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { newKeypair } from '../helpers/solana.js';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const N = 20;
const LAMPORTS = 1_000_000; // above a 0-byte account's rent-exempt minimum
const FEE = 5000; // litesvm's fee per signature

describe('txrelay bench --landed (litesvm chain)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  let r: TestRelay;
  let key: string;
  let dir: string;
  let payerFile: string;
  const payer = newKeypair();
  const balance = async (): Promise<number> => (await chain.call('getBalance', [payer.publicKey.toBase58()])).value;

  before(async () => {
    chain = await startSvmRpc({ finalizeAfter: 3, slotMs: 100 });
    chain.airdrop(payer.publicKey.toBase58(), 10_000_000_000n);
    r = await startTestRelay({
      evm: { enabled: false },
      solana: { rpc_upstreams: [chain.url], chain_rpc: chain.url, landing_poll_ms: 100, landing_commitment: 'confirmed' },
    });
    key = (await r.createAccount({ plan: 'paid', solana: { tps: 1000, burst: 1000 } })).uuid;
    dir = mkdtempSync(join(tmpdir(), 'txrelay-bench-landed-'));
    payerFile = join(dir, 'payer.json');
    writeFileSync(payerFile, JSON.stringify([...payer.secretKey]));
  });
  after(async () => {
    await r?.stop();
    await chain?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const bench = async (name: string, extra: string[]): Promise<{ stdout: string; json: any; html: string }> => {
    const json = join(dir, `${name}.json`);
    const html = join(dir, `${name}.html`);
    const out = await run(process.execPath, [
      CLI, 'bench', 'solana-v2', '--url', r.base, '--key', key, '--rate', String(N), '--duration', '1s', '--warmup', '0s', '--count', String(N),
      '--payer', payerFile, '--landed', '--landed-timeout', '20s', '--json', json, '--report', html, ...extra,
    ], { timeout: 60_000 });
    return { stdout: out.stdout, json: JSON.parse(readFileSync(json, 'utf8')), html: readFileSync(html, 'utf8') };
  };

  test('transfers that execute count as landed, each with its ack-to-landed time; the chain took exactly those', async () => {
    const before = await balance();
    const { stdout, json, html } = await bench('landed', ['--blockhash', chain.blockhash(), '--lamports', String(LAMPORTS)]);
    assert.equal(json.requests.ok, N, stdout);
    const l = json.landing;
    assert.equal(l.tracked, N);
    assert.equal(l.landed, N, stdout);
    assert.equal(l.landedFailed, 0);
    assert.deepEqual([l.notLanded, l.notOnChain, l.unknown, l.notTracked], [{}, {}, {}, 0]);
    assert.equal(l.ackToLandedMs.count, N);
    assert.ok(l.ackToLandedMs.p50 <= l.ackToLandedMs.p90 && l.ackToLandedMs.p90 <= l.ackToLandedMs.p99 && l.ackToLandedMs.p99 <= l.ackToLandedMs.max);
    assert.ok(l.reads >= 1);
    assert.equal(before - (await balance()), N * (LAMPORTS + FEE));
    assert.match(stdout, new RegExp(`^landing: ${N} acknowledged transactions followed`, 'm'));
    assert.match(stdout, new RegExp(`^landed\\s+${N}\\s+100\\.0$`, 'm'));
    assert.match(stdout, /^ack to landed \(ms\), 20 landed\s+p50\s+p90\s+p99\s+max$/m);
    assert.match(html, /<section id="landing"><h2>Landing<\/h2>/);
    assert.match(html, new RegExp(`<tr><th>landed</th><td>${N}</td><td>100.0</td></tr>`));
  });

  test('transfers the chain executes with an error count as landed_failed', async () => {
    const before = await balance();
    const { json, stdout } = await bench('failed', ['--blockhash', chain.blockhash(), '--lamports', String(before * 2)]);
    assert.equal(json.landing.landedFailed, N, stdout);
    assert.equal(json.landing.landed, 0);
    assert.equal(json.landing.ackToLandedMs.count, N);
    // Each paid its fee and moved nothing.
    assert.equal(before - (await balance()), N * FEE);
  });

  test('transfers under a blockhash the chain no longer takes count as not_landed: blockhash_expired', async () => {
    const old = chain.blockhash();
    chain.expireBlockhash();
    const before = await balance();
    const { json, stdout } = await bench('expired', ['--blockhash', old, '--lamports', String(LAMPORTS)]);
    assert.equal(json.requests.ok, N, stdout);
    assert.deepEqual(json.landing.notLanded, { blockhash_expired: N }, stdout);
    assert.equal(json.landing.landed + json.landing.landedFailed, 0);
    assert.equal(json.landing.ackToLandedMs, null);
    assert.match(stdout, new RegExp(`^not_landed: blockhash_expired\\s+${N}\\s+100\\.0$`, 'm'));
    assert.equal(await balance(), before);
  });

  test('without --landed the JSON says landing null', async () => {
    const out = await run(process.execPath, [CLI, 'bench', 'solana-v2', '--url', r.base, '--key', key, '--rate', '5', '--duration', '1s', '--warmup', '0s', '--count', '5', '--no-cache', '--json', join(dir, 'plain.json')]);
    assert.doesNotMatch(out.stdout, /^landing:/m);
    assert.equal(JSON.parse(readFileSync(join(dir, 'plain.json'), 'utf8')).landing, null);
  });
});
