/**
 * The TPU route end to end (docs/protocol.md#forwarding): a real relay sends
 * real signed transactions over QUIC to stand-in leaders. No Agave validator
 * can run here, so each leader is a QUIC server built to Agave's conventions
 * (test/helpers/tpu-standin.ts) and the leader schedule is served by a
 * stand-in RPC whose slot the test moves. What the leaders receive is run on
 * the litesvm stand-in chain where it loads.
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bs58 from 'bs58';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { legacyTransfer, newKeypair, paddedTransaction, type BuiltTx } from '../helpers/solana.js';
import { startSvmRpc, SVM_SKIP, type SvmRpc } from '../helpers/svm-rpc.js';
import { QUIC_SKIP, deadAddress, startScheduleRpc, startValidator, type ScheduleRpc, type StandInValidator } from '../helpers/tpu-standin.js';

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

async function send(r: TestRelay, key: string, tx: BuiltTx): Promise<void> {
  const res = await fetch(r.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'api-key': key },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [b64(tx.bytes), { encoding: 'base64' }] }),
  });
  const body = (await res.json()) as { result?: string; error?: unknown };
  assert.equal(body.result, tx.signature, JSON.stringify(body));
}

async function status(r: TestRelay, key: string, id: string): Promise<any> {
  const res = await fetch(`${r.base}/v1/status/${id}`, { headers: { 'api-key': key } });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

// The tests poll statuses every 10 ms: reads are not what they are about, so their limit is out of the way.
const READS = { reads_per_s: 100_000, reads_burst: 100_000 };

const got = (v: StandInValidator, tx: BuiltTx): boolean => v.received.some((x) => x.signature === tx.signature);

/** Waits until the relay's leader tracker has heard of `slot` and has opened the connections to the `open` reachable leaders of its window. */
async function atSlot(r: TestRelay, rpc: ScheduleRpc, slot: number, open: number): Promise<void> {
  rpc.slot = slot;
  await eventually(async () => (await r.metric('txrelay_tpu_slot')) === slot, 5000, `tracker at slot ${slot}`);
  await eventually(async () => (await r.metric('txrelay_tpu_connections')) === open, 10_000, `${open} connections open`);
}

describe('TPU route, mode "only", no RPC upstream', { skip: QUIC_SKIP || undefined }, () => {
  let a: StandInValidator, b: StandInValidator, c: StandInValidator;
  let dead: string;
  const DEAD = bs58.encode(Buffer.alloc(32, 9));
  let rpc: ScheduleRpc;
  let relay: TestRelay;
  let key: string;
  let chain: SvmRpc | null = null;
  const payer = newKeypair();
  const idFile = join(mkdtempSync(join(tmpdir(), 'txrelay-tpu-')), 'id.json');
  const me = newKeypair();

  before(async () => {
    if (!SVM_SKIP) {
      chain = await startSvmRpc();
      chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    }
    // A leader runs what it reads on the stand-in chain (a second leader's copy is a duplicate there).
    const run = (tx: Buffer): void => void chain?.call('sendTransaction', [b64(tx), { encoding: 'base64' }]).catch(() => {});
    [a, b, c] = await Promise.all([startValidator(run), startValidator(run), startValidator(run)]);
    dead = await deadAddress();
    const A = a.identity.pubkey, B = b.identity.pubkey, C = c.identity.pubkey;
    // Epochs of 12 slots (three leader runs): epoch 0 A B C, epoch 1 C A DEAD, then B C A.
    const epochs = [[A, B, C], [C, A, DEAD]];
    rpc = await startScheduleRpc({
      epochLength: 12,
      leaderOf: (e, run) => (epochs[e] ?? [B, C, A])[run]!,
      nodes: () => ({ [A]: a.address, [B]: b.address, [C]: c.address, [DEAD]: dead }),
      // Landing reads getSignatureStatuses on solana.chain_rpc: the stand-in chain answers it.
      fallback: chain?.url,
    });
    writeFileSync(idFile, JSON.stringify([...me.secretKey]));
    relay = await startTestRelay({
      http: { acceptors: 1 },
      status: READS,
      solana: {
        rpc_upstreams: [],
        chain_rpc: rpc.url,
        landing_poll_ms: 100,
        landing_commitment: 'confirmed',
        tpu: { enabled: true, mode: 'only', leaders_ahead: 2, identity_keypair_file: idFile },
      },
    });
    key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
    await atSlot(relay, rpc, 0, 3);
  });

  after(async () => {
    await relay?.stop();
    await Promise.all([a?.stop(), b?.stop(), c?.stop(), rpc?.close(), chain?.close()]);
  });

  const transfer = (): BuiltTx => legacyTransfer({ from: payer, lamports: 1_000_000, blockhash: chain?.blockhash() });

  test('each transaction reaches the current and the next leader, one signed transaction per stream, and lands through the TPU', async () => {
    const tx = transfer();
    await send(relay, key, tx);
    await eventually(() => got(a, tx) && got(b, tx), 5000, 'A and B have it');
    assert.equal(got(c, tx), false, 'the leader after next does not get it');
    assert.deepEqual([...a.malformed, ...b.malformed], []);
    // The identity from the keypair file is the one the leaders see.
    assert.equal(a.received[0]!.client, me.publicKey.toBase58());
    await eventually(async () => (await status(relay, key, tx.signature)).forwards.every((f: any) => f.upstream_result === 'written'), 5000, 'both written');
    const s = await status(relay, key, tx.signature);
    // Landing is read every 100 ms: it may already have moved it on.
    assert.ok(['forwarded', 'landed'].includes(s.state), s.state);
    assert.deepEqual(
      s.forwards.map((f: any) => [f.upstream, f.slot, f.address, f.upstream_result]),
      [
        [`tpu:${a.identity.pubkey}`, 0, a.address, 'written'],
        [`tpu:${b.identity.pubkey}`, 4, b.address, 'written'],
      ],
    );
    if (chain !== null) {
      await eventually(async () => (await chain!.call('getSignatureStatuses', [[tx.signature]])).value[0] !== null, 5000, 'landed on the stand-in chain');
      // Only the leaders' TPU had it: the status reads landed, its forwards the TPU sends.
      await eventually(async () => (await status(relay, key, tx.signature)).state === 'landed', 10_000, 'the status reads landed');
      const l = await status(relay, key, tx.signature);
      assert.deepEqual(
        l.forwards.map((f: any) => [f.upstream, f.upstream_result]),
        [
          [`tpu:${a.identity.pubkey}`, 'written'],
          [`tpu:${b.identity.pubkey}`, 'written'],
        ],
      );
    }
  });

  test('as the slot advances the next leaders get the transactions, across an epoch boundary too', async () => {
    await atSlot(relay, rpc, 5, 3);
    const t1 = transfer();
    await send(relay, key, t1);
    await eventually(() => got(b, t1) && got(c, t1), 5000, 'B and C have it');
    assert.equal(got(a, t1), false);
    // Slot 9: C to the end of epoch 0 and again first in epoch 1, then A.
    await atSlot(relay, rpc, 9, 2);
    const t2 = transfer();
    await send(relay, key, t2);
    await eventually(() => got(c, t2) && got(a, t2), 5000, 'C and A have it');
    assert.equal(got(b, t2), false);
    const s = await status(relay, key, t2.signature);
    assert.deepEqual(s.forwards.map((f: any) => f.slot), [9, 16]);
  });

  test('a leader that is down costs its own sends only: the next leader gets every transaction, the lane goes on', async () => {
    // Slot 20: the dead leader's run, then B's (epoch 2).
    await atSlot(relay, rpc, 20, 2);
    const txs = [transfer(), transfer(), transfer()];
    for (const tx of txs) await send(relay, key, tx);
    await eventually(() => txs.every((tx) => got(b, tx)), 5000, 'B has every one');
    for (const tx of txs) {
      await eventually(async () => (await status(relay, key, tx.signature)).forwards.every((f: any) => f.upstream_result !== undefined), 5000, 'every send ended');
      const s = await status(relay, key, tx.signature);
      assert.ok(['forwarded', 'landed'].includes(s.state), s.state);
      const byLeader = Object.fromEntries(s.forwards.map((f: any) => [f.upstream, f.upstream_result]));
      assert.equal(byLeader[`tpu:${b.identity.pubkey}`], 'written');
      assert.ok(['connect_failed', 'skipped'].includes(byLeader[`tpu:${DEAD}`]), JSON.stringify(s.forwards));
    }
    assert.ok((await relay.metric('txrelay_tpu_sends_total', { result: 'connect_failed' })) >= 1);
    assert.ok((await relay.metric('txrelay_tpu_handshake_failures_total')) >= 1);
  });

  test('a transaction over 1232 bytes is not sent over TPU; with no RPC upstream it is dropped', async () => {
    await atSlot(relay, rpc, 24, 3);
    const big = paddedTransaction('v1', 1500);
    await send(relay, key, big);
    await eventually(async () => (await status(relay, key, big.signature)).state !== 'queued', 5000, 'an end');
    const s = await status(relay, key, big.signature);
    assert.equal(s.state, 'dropped');
    assert.match(s.reason, /1232/);
    assert.deepEqual(s.forwards, []);
    assert.equal(await relay.metric('txrelay_tpu_oversize_total'), 1);
    for (const v of [a, b, c]) {
      assert.equal(got(v, big), false);
      assert.deepEqual(v.malformed, []);
    }
  });
});

describe('TPU route, mode "also": TPU and the RPC upstream', { skip: QUIC_SKIP || undefined }, () => {
  let a: StandInValidator, b: StandInValidator, c: StandInValidator;
  let rpc: ScheduleRpc;
  let up: TestUpstream;
  let relay: TestRelay;
  let key: string;

  before(async () => {
    [a, b, c] = await Promise.all([startValidator(), startValidator(), startValidator()]);
    const ids = [a, b, c].map((v) => v.identity.pubkey);
    rpc = await startScheduleRpc({ epochLength: 12, leaderOf: (_e, run) => ids[run % 3]!, nodes: () => Object.fromEntries([a, b, c].map((v) => [v.identity.pubkey, v.address])) });
    up = await startUpstream();
    relay = await startTestRelay({ http: { acceptors: 1 }, status: READS, solana: { rpc_upstreams: [up.url], chain_rpc: rpc.url, tpu: { enabled: true, leaders_ahead: 2 } } });
    key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 } })).uuid;
    await atSlot(relay, rpc, 0, 3);
  });

  after(async () => {
    await relay?.stop();
    await Promise.all([a?.stop(), b?.stop(), c?.stop(), rpc?.close(), up?.close()]);
  });

  test('both routes get each transaction, and the status lists both', async () => {
    const tx = legacyTransfer();
    await send(relay, key, tx);
    await eventually(() => got(a, tx) && got(b, tx) && up.calls().length === 1, 5000, 'RPC, A and B have it');
    assert.equal(got(c, tx), false);
    // An identity made for this start: a key of its own, not a validator's.
    assert.ok(![a, b, c].some((v) => v.identity.pubkey === a.received[0]!.client));
    await eventually(async () => (await status(relay, key, tx.signature)).forwards.length === 3, 5000, 'three entries');
    const s = await status(relay, key, tx.signature);
    assert.equal(s.state, 'forwarded');
    assert.equal(s.forwards[0].upstream_result, 'accepted');
    assert.deepEqual(s.forwards.slice(1).map((f: any) => f.upstream), [`tpu:${a.identity.pubkey}`, `tpu:${b.identity.pubkey}`]);
  });

  test('a transaction over 1232 bytes goes by RPC only', async () => {
    const big = paddedTransaction('v1', 1500);
    await send(relay, key, big);
    await eventually(async () => (await status(relay, key, big.signature)).state === 'forwarded', 5000, 'forwarded by RPC');
    const s = await status(relay, key, big.signature);
    assert.equal(s.forwards.length, 1);
    assert.equal(s.forwards[0].upstream_result, 'accepted');
    assert.equal(await relay.metric('txrelay_tpu_oversize_total'), 1);
    for (const v of [a, b, c]) {
      assert.equal(got(v, big), false);
      assert.deepEqual(v.malformed, []);
    }
  });
});
