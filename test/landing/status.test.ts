/**
 * Landing as statuses read it: a tracker whose forwarded traces are followed
 * on the litesvm stand-in chain, and what /v1/status would show at each step
 * (`landing`, the landed state, the `onchain` facts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Landing } from '../../src/landing/landing.js';
import { Tracker } from '../../src/status/tracker.js';
import { systemClock } from '../../src/clock.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';

describe('landing in statuses (litesvm)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  before(async () => {
    chain = await startSvmRpc();
  });
  after(() => chain.close());

  /** With a Solana chain RPC, or with none (no family followed). */
  const setup = (withChain: boolean) => {
    let tracker: Tracker | null = null;
    const landing = new Landing({
      clock: systemClock,
      ...(withChain ? { solana: { rpc: chain.url, pollMs: 400, commitment: 'confirmed' as const, timeoutMs: 60_000 } } : {}),
      onLanding: (e, x) =>
        tracker!.landed(e.id, { state: e.state, chain: e.chain, at: e.at, ackToLandedMs: x.ackToLandedMs, following: !e.final, ...(x.transactions ? { transactions: x.transactions } : {}) }),
    });
    tracker = new Tracker({ retentionMs: 60_000, maxEntries: 1000, node: 'n1', landing });
    return { tracker, landing };
  };

  it('a forwarded transfer reads following, then landed with its slot and confirmation, then done', async () => {
    const { tracker, landing } = setup(true);
    const payer = newKeypair();
    chain.airdrop(payer.publicKey.toBase58(), 10_000_000_000n);
    const tx = legacyTransfer({ from: payer, lamports: 1_000_000, blockhash: chain.blockhash() });
    const t = tracker.open(tx.signature, 'req-1', 7, 'solana', 'v2');
    t.landingRef = { lane: 'solana-single', blockhash: chain.blockhash() };
    t.final('forwarded', null, Date.now());
    assert.equal(tracker.status(tx.signature, 7).landing, 'following');
    await chain.call('sendTransaction', [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }]);
    const slot = chain.slot();
    const sol = (landing as unknown as { solana: { poll(): Promise<void> } }).solana;
    await sol.poll();
    let v = tracker.status(tx.signature, 7);
    assert.equal(v.state, 'landed');
    assert.equal(v.landing, 'following');
    assert.equal(v.onchain?.slot, slot);
    assert.equal(v.onchain?.confirmation, 'processed');
    chain.advance(1);
    await sol.poll();
    v = tracker.status(tx.signature, 7);
    assert.deepEqual([v.state, v.landing, v.onchain?.confirmation, v.onchain?.err], ['landed', 'done', 'confirmed', null]);
    assert.ok(typeof v.onchain?.ack_to_landed_ms === 'number' && typeof v.onchain.landed_at === 'string');
    assert.deepEqual(v.events.map((e) => e.stage), ['received', 'forwarded', 'landed']);
    assert.equal(tracker.status(tx.signature, 8).state, 'unknown', 'another account still reads nothing');
  });

  it('without a chain RPC for its family a forwarded status says not_tracked; a tracker without landing says nothing of it', () => {
    const { tracker } = setup(false);
    const t = tracker.open('sig', 'req-2', 7, 'solana', 'v2');
    t.landingRef = { lane: 'solana-single', blockhash: 'x' };
    t.final('forwarded', null, Date.now());
    const v = tracker.status('sig', 7);
    assert.equal(v.state, 'forwarded');
    assert.equal(v.landing, 'not_tracked');
    assert.equal(v.onchain, undefined);
    const plain = new Tracker({ retentionMs: 60_000, maxEntries: 10, node: 'n1' });
    plain.open('sig2', 'req-3', 7, 'solana', 'v2').final('forwarded', null, Date.now());
    assert.equal('landing' in plain.status('sig2', 7), false);
  });
});
