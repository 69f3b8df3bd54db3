/**
 * Bundles against the litesvm stand-in, whose sendBundle lands all or none:
 * the joined status lands with the members' slot, or ends not_landed when a
 * member's failure kept the whole bundle out.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChainRpc } from '../../src/landing/chain-rpc.js';
import { BundleJoin, type BundleLanding } from '../../src/landing/bundle-join.js';
import { SolanaLandingWatch } from '../../src/landing/solana-watch.js';
import { systemClock } from '../../src/clock.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';

describe('bundle landing (litesvm)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  let rpc: ChainRpc;
  const payer = newKeypair();
  before(async () => {
    chain = await startSvmRpc();
    chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    rpc = new ChainRpc(chain.url, 1_000);
  });
  after(async () => {
    await rpc.close();
    await chain.close();
  });

  const run = async (lamports: number[]) => {
    const bh = chain.blockhash();
    const txs = lamports.map((l) => legacyTransfer({ from: payer, lamports: l, blockhash: bh }));
    const join = new BundleJoin();
    const out: BundleLanding[] = [];
    const watch = new SolanaLandingWatch(rpc, {
      commitment: 'confirmed',
      clock: systemClock,
      blockhashCheckMs: 0, // ask every poll: the test expires the blockhash between two
      onLanding: (e) => {
        const b = join.offer(e);
        if (b) out.push(b);
      },
    });
    join.add(txs[0]!.signature, txs.map((t) => t.signature));
    for (const t of txs) watch.track(t.signature, bh);
    await rpc.call('sendBundle', [txs.map((t) => Buffer.from(t.bytes).toString('base64')), { encoding: 'base64' }]);
    return { txs, out, watch, join };
  };

  it('lands a bundle whole, with the slot its members share and each member status', async () => {
    const { txs, out, watch, join } = await run([1_000_000, 2_000_000, 3_000_000]);
    const slot = chain.slot();
    await watch.poll();
    chain.advance(1);
    await watch.poll();
    assert.deepEqual(out.map((b) => [b.id, b.event.state, b.event.chain.slot, b.event.chain.confirmation, b.event.final]), [
      [txs[0]!.signature, 'landed', slot, 'processed', false],
      [txs[0]!.signature, 'landed', slot, 'confirmed', true],
    ]);
    assert.deepEqual(out[1]!.transactions.map((t) => t.id), txs.map((t) => t.signature));
    assert.equal(join.size, 0);
  });

  it('a member that would fail keeps the whole bundle out: not_landed once the blockhash expires', async () => {
    const { out, watch } = await run([1_000_000, 1_000_000_000_000_000]);
    await watch.poll();
    assert.equal(out.length, 0, 'nothing landed, nothing told');
    chain.expireBlockhash();
    await watch.poll();
    assert.deepEqual(out.map((b) => [b.event.state, b.event.chain.reason, b.event.final]), [['not_landed', 'blockhash_expired', true]]);
  });
});
