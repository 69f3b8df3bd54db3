/**
 * Landing end to end (docs/protocol.md#status): a real relay follows what it
 * forwarded on the stand-in chains it forwarded to. Solana: litesvm behind a
 * JSON-RPC server (test/helpers/svm-rpc.ts) is both the upstream that
 * executes the transactions and `solana.chain_rpc`. EVM: ganache is both the
 * paid lane's upstream and `evm.chain_rpc`; the free lane's upstream takes
 * transactions and never submits them (for a replacement by the same nonce).
 * Every transition is also pushed over /ws to a subscribed `ws` client.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';
import { startChain, chainCall, type TestChain } from '../helpers/ganache.js';
import { testAccount, RECIPIENT } from '../helpers/evm.js';
import { WsClient } from '../helpers/ws-client.js';

const jito = await import('jito-js-rpc').catch(() => null);
const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const RENT_EXEMPT = 1_000_000; // above a 0-byte account's rent-exempt minimum
const wsUrl = (r: TestRelay): string => r.base.replace('http', 'ws') + '/ws';

async function status(r: TestRelay, key: string, id: string): Promise<any> {
  // Each relay here serves one family: the credential header picks it (api-key Solana, bearer EVM).
  const headers: Record<string, string> = id.startsWith('0x') ? { authorization: `Bearer ${key}` } : { 'api-key': key };
  const res = await fetch(`${r.base}/v1/status/${encodeURIComponent(id)}`, { headers });
  assert.equal(res.status, 200);
  return res.json();
}

/** Waits for the status of `id` to reach `state` and returns it. */
async function until(r: TestRelay, key: string, id: string, state: string, pred: (s: any) => boolean = () => true): Promise<any> {
  let last: any;
  const end = Date.now() + 15_000;
  while (Date.now() < end) {
    last = await status(r, key, id);
    if (last.state === state && pred(last)) return last;
    // Status reads are rate limited per account: a few a second.
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`timed out waiting for ${id} to read ${state}; last: ${JSON.stringify(last)}`);
}

async function rpc(r: TestRelay, key: string, method: string, params: unknown[]): Promise<any> {
  // EVM methods take the key as a bearer token, Solana ones as api-key.
  const auth: Record<string, string> = method.startsWith('eth_') ? { authorization: `Bearer ${key}` } : { 'api-key': key };
  const res = await fetch(r.base + '/', { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return res.json();
}

/** A signed transfer sent by `sendTransaction`: its signature, once the relay answered with it. */
async function sendTransfer(r: TestRelay, key: string, payer: ReturnType<typeof newKeypair>, lamports: number, blockhash: string): Promise<string> {
  const tx = legacyTransfer({ from: payer, lamports, blockhash });
  const a = await rpc(r, key, 'sendTransaction', [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }]);
  assert.equal(a.result, tx.signature, JSON.stringify(a));
  return tx.signature;
}

/** The pushes a socket got for `id`, their states in order. */
const pushed = (c: WsClient, id: string): any[] => c.messages.filter((m) => m.method === 'txrelay_status' && m.params.result.id === id).map((m) => m.params.result);

describe('Solana landing through the relay (litesvm)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  let r: TestRelay;
  let key: string;
  let ws: WsClient;
  const payer = newKeypair();

  before(async () => {
    chain = await startSvmRpc({ finalizeAfter: 3, slotMs: 100 });
    chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    r = await startTestRelay({
      evm: { enabled: false },
      solana: { rpc_upstreams: [chain.url], bundle_upstreams: [chain.url], chain_rpc: chain.url, landing_poll_ms: 100, landing_commitment: 'confirmed' },
    });
    key = (await r.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } })).uuid;
    ws = await WsClient.open(wsUrl(r), { headers: { 'api-key': key } });
    assert.equal(typeof (await ws.call('txrelay_subscribe', ['statuses'])).result, 'number');
  });
  after(async () => {
    ws?.ws.close();
    await r?.stop();
    await chain?.close();
  });

  const send = (lamports: number, blockhash = chain.blockhash()): Promise<string> => sendTransfer(r, key, payer, lamports, blockhash);

  test('a transfer that executes reads landed, in the slot the chain put it in, confirmed; pushed on /ws', async () => {
    const sig = await send(RENT_EXEMPT);
    const s = await until(r, key, sig, 'landed');
    const [onChain] = (await chain.call('getSignatureStatuses', [[sig]])).value;
    assert.equal(s.onchain.slot, onChain.slot);
    assert.equal(s.onchain.err, null);
    assert.equal(typeof s.onchain.ack_to_landed_ms, 'number');
    assert.ok(Date.parse(s.onchain.landed_at) >= Date.parse(s.received_at));
    assert.deepEqual(s.events.map((e: any) => e.stage), ['received', 'forwarded', 'landed']);
    // Followed up to the configured commitment, then done.
    assert.equal((await until(r, key, sig, 'landed', (x) => x.landing === 'done')).onchain.confirmation, 'confirmed');
    await ws.until(() => (pushed(ws, sig).some((p) => p.state === 'landed' && p.landing === 'done') ? true : undefined), 10_000, 'the landed push');
    const states = pushed(ws, sig).map((p) => p.state);
    assert.deepEqual(states.slice(0, 2), ['queued', 'forwarded']);
    assert.ok(states.slice(2).every((x) => x === 'landed'), states.join());
    assert.equal(pushed(ws, sig).at(-1).onchain.slot, onChain.slot);
  });

  test('a transfer that executes and fails reads landed_failed with the error as the chain RPC gives it; pushed on /ws', async () => {
    const sig = await send(1_000_000_000_000_000);
    const s = await until(r, key, sig, 'landed_failed');
    assert.deepEqual(s.onchain.err, { InstructionError: [0, { Custom: 1 }] });
    assert.equal(typeof s.onchain.slot, 'number');
    await ws.until(() => (pushed(ws, sig).some((p) => p.state === 'landed_failed') ? true : undefined), 10_000, 'the landed_failed push');
  });

  test('a bundle lands whole: its first signature and its bundle id read landed with the slot and each member; jito-js-rpc reads it', async () => {
    const a = legacyTransfer({ from: payer, lamports: RENT_EXEMPT + 11, blockhash: chain.blockhash() });
    const b = legacyTransfer({ from: payer, lamports: RENT_EXEMPT + 12, blockhash: chain.blockhash() });
    const sent = await rpc(r, key, 'sendBundle', [[a, b].map((t) => Buffer.from(t.bytes).toString('base64')), { encoding: 'base64' }]);
    assert.equal(typeof sent.result, 'string', JSON.stringify(sent));
    const s = await until(r, key, a.signature, 'landed');
    const statuses = (await chain.call('getSignatureStatuses', [[a.signature, b.signature]])).value;
    assert.equal(s.onchain.slot, statuses[0].slot);
    assert.deepEqual(
      s.onchain.transactions.map((t: any) => [t.id, t.state, t.chain.slot]),
      [
        [a.signature, 'landed', statuses[0].slot],
        [b.signature, 'landed', statuses[1].slot],
      ],
    );
    // The id sendBundle answered (Jito's bundle id) reads the same status.
    const byBundleId = await until(r, key, sent.result, 'landed', (x) => x.landing === 'done');
    assert.equal(byBundleId.id, a.signature);
    // Jito's own client reads it with only the base URL changed.
    if (jito === null) return;
    const client = new jito.JitoJsonRpcClient(`${r.base}/api/v1`, key);
    const got = await client.getBundleStatuses([[sent.result]]);
    assert.deepEqual(got.result!.value, [
      { bundle_id: sent.result, transactions: [a.signature, b.signature], slot: statuses[0].slot, confirmation_status: 'confirmed', err: { Ok: null } },
    ]);
    assert.equal(got.result!.context.slot, statuses[0].slot);
    const inflight = await client.getInFlightBundleStatuses([[sent.result]]);
    assert.deepEqual(inflight.result!.value, [{ bundle_id: sent.result, status: 'Landed', landed_slot: statuses[0].slot }]);
  });

  test('a transfer whose blockhash expired before it reached the chain reads not_landed, blockhash_expired; pushed on /ws', async () => {
    const old = chain.blockhash();
    chain.expireBlockhash();
    const sig = await send(RENT_EXEMPT + 1, old);
    const s = await until(r, key, sig, 'not_landed');
    assert.equal(s.reason, 'blockhash_expired');
    assert.equal(s.onchain.reason, 'blockhash_expired');
    assert.equal(s.onchain.ack_to_landed_ms, null);
    assert.equal(s.landing, 'done');
    await ws.until(() => (pushed(ws, sig).some((p) => p.state === 'not_landed') ? true : undefined), 10_000, 'the not_landed push');
  });

  test('with acceptor threads, what a thread forwarded is followed by the main thread and lands in that thread\'s status', async (t) => {
    const threaded = await startTestRelay({
      http: { acceptors: 2 },
      evm: { enabled: false },
      solana: { rpc_upstreams: [chain.url], chain_rpc: chain.url, landing_poll_ms: 100 },
    });
    t.after(() => threaded.stop());
    if (threaded.relay.acceptors < 2) return t.skip('this uWebSockets.js build cannot hand connections to other threads');
    const k = (await threaded.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } })).uuid;
    const sigs: string[] = [];
    // Every HTTP request is served by a thread (the main thread keeps UDP), whose tracker holds its status.
    for (let i = 0; i < 4; i++) {
      const tx = legacyTransfer({ from: payer, lamports: RENT_EXEMPT + 100 + i, blockhash: chain.blockhash() });
      const a = await rpc(threaded, k, 'sendTransaction', [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }]);
      assert.equal(a.result, tx.signature);
      sigs.push(tx.signature);
    }
    for (const sig of sigs) assert.equal(typeof (await until(threaded, k, sig, 'landed', (x) => x.landing === 'done')).onchain.slot, 'number');
  });

  test('txrelay send --wait landed waits for the chain and txrelay status prints its slot', async () => {
    const tx = legacyTransfer({ from: payer, lamports: RENT_EXEMPT + 200, blockhash: chain.blockhash() });
    const sent = await run(process.execPath, [CLI, 'send', 'solana-rpc', Buffer.from(tx.bytes).toString('base64'), '--key', key, '--url', r.base, '--wait', 'landed', '--timeout', '15s']);
    const out = JSON.parse(sent.stdout);
    assert.equal(out.signature, tx.signature);
    assert.equal(out.landing.state, 'landed');
    const [onChain] = (await chain.call('getSignatureStatuses', [[tx.signature]])).value;
    assert.equal(out.landing.onchain.slot, onChain.slot);
    const st = await run(process.execPath, [CLI, 'status', tx.signature, '--key', key, '--url', r.base]);
    assert.match(st.stdout, new RegExp(`^${tx.signature} landed\n`));
    assert.match(st.stdout, new RegExp(`\n  chain: slot ${onChain.slot} (processed|confirmed), ok, \\d+ ms after the ack`));
  });

  test('landing metrics count each result per lane', async () => {
    await eventually(async () => (await r.metric('txrelay_landed_total', { lane: 'solana-single', result: 'landed' })) >= 1, 5000, 'landed counted');
    assert.equal(await r.metric('txrelay_landed_total', { lane: 'solana-single', result: 'landed_failed' }), 1);
    assert.equal(await r.metric('txrelay_landed_total', { lane: 'solana-single', result: 'not_landed_blockhash_expired' }), 1);
    assert.ok((await r.metric('txrelay_chain_rpc_calls_total', { family: 'solana', method: 'getSignatureStatuses' })) > 0);
  });
});

/**
 * The chain RPC down, then back. The upstream stays up (it is the same chain,
 * reached directly), so what this shows is landing's part alone: admission and
 * forwarding go on, statuses say `behind`, then catch up. The outage lasts
 * TXRELAY_TEST_OUTAGE_S seconds (5 by default: past the point where tracking
 * reads behind, which is all a longer one changes; docs/reliability.md has a
 * 30 s run).
 */
describe('Solana landing with the chain RPC down and back', { skip: SVM_SKIP }, () => {
  test('admission and forwarding go on, statuses read behind, then every transaction sent meanwhile reads landed', async (t) => {
    const chain = await startSvmRpc({ finalizeAfter: 3, slotMs: 100 });
    t.after(() => chain.close());
    const payer = newKeypair();
    chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    // The chain RPC as the relay reaches it: a pass-through that can be cut.
    let cut = false;
    const proxy = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        if (cut) return void res.writeHead(503).end('down');
        fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(parts) })
          .then(async (up) => res.writeHead(up.status, { 'content-type': 'application/json' }).end(Buffer.from(await up.arrayBuffer())))
          .catch(() => res.writeHead(502).end());
      });
    });
    await new Promise<void>((ok) => proxy.listen(0, '127.0.0.1', ok));
    t.after(() => new Promise<void>((ok) => proxy.close(() => ok())));
    const chainRpc = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const r = await startTestRelay({
      evm: { enabled: false },
      solana: { rpc_upstreams: [chain.url], chain_rpc: chainRpc, landing_poll_ms: 100, landing_commitment: 'confirmed' },
    });
    t.after(() => r.stop());
    const key = (await r.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } })).uuid;
    const send = (lamports: number): Promise<string> => sendTransfer(r, key, payer, lamports, chain.blockhash());

    const before = await send(RENT_EXEMPT + 1);
    await until(r, key, before, 'landed');
    cut = true;
    const outageMs = Number(process.env['TXRELAY_TEST_OUTAGE_S'] ?? 5) * 1000;
    const cutAt = Date.now();
    const during: string[] = [];
    // Sent while the chain RPC is down: admitted and forwarded as ever (the upstream executes them).
    for (let i = 0; i < 3; i++) during.push(await send(RENT_EXEMPT + 10 + i));
    for (const sig of during) await until(r, key, sig, 'forwarded');
    const behind = await until(r, key, during[0]!, 'forwarded', (s) => s.landing === 'behind');
    assert.equal(behind.onchain, undefined);
    assert.ok((await r.metric('txrelay_chain_rpc_errors_total', { family: 'solana', method: 'getSignatureStatuses' })) > 0);
    assert.ok((await r.metric('txrelay_landing_lag_seconds', { family: 'solana' })) > 0);
    during.push(await send(RENT_EXEMPT + 20));
    await new Promise((ok) => setTimeout(ok, Math.max(0, outageMs - (Date.now() - cutAt))));
    const [executed] = (await chain.call('getSignatureStatuses', [[during[0]]])).value;
    assert.equal(typeof executed.slot, 'number', 'the upstream executed it during the outage');

    cut = false;
    for (const sig of during) {
      const s = await until(r, key, sig, 'landed', (x) => x.landing === 'done');
      const [onChain] = (await chain.call('getSignatureStatuses', [[sig]])).value;
      assert.equal(s.onchain.slot, onChain.slot, sig);
    }
    await eventually(async () => (await r.metric('txrelay_landing_lag_seconds', { family: 'solana' })) === 0, 5000, 'lag back to 0');
  });
});

describe('EVM landing through the relay (ganache)', () => {
  let chain: TestChain;
  let sink: TestUpstream;
  let r: TestRelay;
  let paid: string;
  let free: string;
  let ws: WsClient;
  let nonce = 0;

  before(async () => {
    chain = await startChain();
    sink = await startUpstream({ mode: 'ok' });
    r = await startTestRelay({ solana: { enabled: false }, evm: { upstreams: { paid: [chain.url], free: [sink.url] }, chain_rpc: chain.url } });
    paid = (await r.createAccount({ plan: 'paid' })).uuid;
    free = (await r.createAccount({ plan: 'free' })).uuid;
    ws = await WsClient.open(wsUrl(r), { headers: { 'api-key': paid } });
    assert.equal(typeof (await ws.call('txrelay_subscribe', ['statuses'])).result, 'number');
  });
  after(async () => {
    ws?.ws.close();
    await r?.stop();
    await sink?.close();
    await chain?.close();
  });

  const sign = (o: { nonce: number; data?: `0x${string}`; to?: `0x${string}` | null; gas?: bigint }) =>
    testAccount.signTransaction({
      chainId: 1,
      type: 'eip1559',
      ...(o.to === null ? {} : { to: o.to ?? RECIPIENT }),
      value: o.to === null ? 0n : 1n,
      nonce: o.nonce,
      gas: o.gas ?? 21_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 1n,
      data: o.data,
    });

  test('a transfer mined reads landed with its block, block hash and confirmations; pushed on /ws', async () => {
    const raw = await sign({ nonce: nonce++ });
    const sent = await rpc(r, paid, 'eth_sendRawTransaction', [raw]);
    const hash = sent.result;
    assert.ok(hash, JSON.stringify(sent));
    const s = await until(r, paid, hash, 'landed');
    const receipt = await chainCall(chain.url, 'eth_getTransactionReceipt', [hash]);
    assert.equal(s.onchain.block, Number(BigInt(receipt.blockNumber)));
    assert.equal(s.onchain.block_hash, receipt.blockHash);
    assert.ok(s.onchain.confirmations >= 1);
    assert.equal(s.onchain.err, null);
    assert.equal(s.landing, 'done');
    await ws.until(() => (pushed(ws, hash).some((p) => p.state === 'landed') ? true : undefined), 10_000, 'the landed push');
  });

  test('a call that reverts reads landed_failed (receipt status 0)', async () => {
    // Init code that reverts at once: PUSH1 0 PUSH1 0 REVERT.
    const raw = await sign({ nonce: nonce++, to: null, data: '0x60006000fd', gas: 100_000n });
    const sent = await rpc(r, paid, 'eth_sendRawTransaction', [raw]);
    const hash = sent.result;
    assert.ok(hash, JSON.stringify(sent));
    const s = await until(r, paid, hash, 'landed_failed');
    assert.equal(s.onchain.err, 'reverted');
    assert.equal((await chainCall(chain.url, 'eth_getTransactionReceipt', [hash])).status, '0x0');
    await ws.until(() => (pushed(ws, hash).some((p) => p.state === 'landed_failed') ? true : undefined), 10_000, 'the landed_failed push');
  });

  test('a transaction whose nonce another took reads not_landed, replaced, naming the other', async () => {
    const n = nonce++;
    // Through the free lane, whose upstream never submits it; then another with the same nonce straight to the chain.
    const mine = await sign({ nonce: n });
    const hash = (await rpc(r, free, 'eth_sendRawTransaction', [mine])).result;
    await until(r, free, hash, 'forwarded');
    const other = await chainCall(chain.url, 'eth_sendRawTransaction', [await sign({ nonce: n, to: '0x4545454545454545454545454545454545454545' })]);
    const s = await until(r, free, hash, 'not_landed');
    assert.equal(s.reason, 'replaced');
    assert.equal(s.onchain.replaced_by, other);
  });
});
