/**
 * The Solana landing watcher against a real SVM (litesvm behind a stand-in
 * RPC, test/helpers/svm-rpc.ts): transfers that land, fail on chain, never
 * land because their blockhash expired, and an RPC outage.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChainRpc } from '../../src/landing/chain-rpc.js';
import type { LandingEvent } from '../../src/landing/event.js';
import { SolanaLandingWatch, STATUS_CHUNK } from '../../src/landing/solana-watch.js';
import { systemClock } from '../../src/clock.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { legacyTransfer, newKeypair, type BuiltTx } from '../helpers/solana.js';

const RENT_EXEMPT = 1_000_000; // above a 0-byte account's rent-exempt minimum

describe('Solana landing watch (litesvm)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  let rpc: ChainRpc;
  const payer = newKeypair();

  before(async () => {
    chain = await startSvmRpc({ finalizeAfter: 3 });
    chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    rpc = new ChainRpc(chain.url, 1_000);
  });
  after(async () => {
    await rpc.close();
    await chain.close();
  });

  const transfer = (lamports = RENT_EXEMPT, blockhash = chain.blockhash()): BuiltTx => legacyTransfer({ from: payer, lamports, blockhash });
  const send = (tx: BuiltTx): Promise<string> => rpc.call('sendTransaction', [Buffer.from(tx.bytes).toString('base64'), { encoding: 'base64' }]);
  const watch = (commitment: 'confirmed' | 'finalized' = 'confirmed', extra: Partial<ConstructorParameters<typeof SolanaLandingWatch>[1]> = {}) => {
    const events: LandingEvent[] = [];
    const w = new SolanaLandingWatch(rpc, { commitment, clock: systemClock, onLanding: (e) => events.push(e), ...extra });
    return { w, events };
  };

  it('follows a transfer through processed, confirmed and finalized, and stops at the commitment asked for', async () => {
    const tx = transfer();
    assert.equal(await send(tx), tx.signature);
    const { w, events } = watch('finalized');
    w.track(tx.signature, chain.blockhash());
    await w.poll();
    assert.deepEqual(events.map((e) => [e.state, e.chain.confirmation, e.chain.slot, e.final]), [['landed', 'processed', chain.slot(), false]]);
    chain.advance(1);
    await w.poll();
    chain.advance(3);
    await w.poll();
    assert.deepEqual(events.map((e) => e.chain.confirmation), ['processed', 'confirmed', 'finalized']);
    assert.equal(events[2]!.final, true);
    assert.equal(events[2]!.chain.err, null);
    assert.equal(w.size, 0);
  });

  it('reports a transfer that executed and failed as landed_failed, with the error as the RPC gives it', async () => {
    const tx = transfer(1_000_000_000_000_000);
    await send(tx);
    const { w, events } = watch();
    w.track(tx.signature, chain.blockhash());
    chain.advance(1);
    await w.poll();
    assert.equal(events.length, 1);
    assert.equal(events[0]!.state, 'landed_failed');
    assert.deepEqual(events[0]!.chain.err, { InstructionError: [0, { Custom: 1 }] });
    assert.equal(events[0]!.final, true);
  });

  it('ends transactions whose blockhash expired as not_landed, asking once per distinct blockhash', async () => {
    const old = chain.blockhash();
    const stale = [transfer(RENT_EXEMPT, old), transfer(RENT_EXEMPT + 1, old), transfer(RENT_EXEMPT + 2, old)];
    chain.expireBlockhash();
    for (const tx of stale) await send(tx); // the SVM refuses them: they never land
    const fresh = transfer();
    const { w, events } = watch();
    for (const tx of stale) w.track(tx.signature, old);
    w.track(fresh.signature, chain.blockhash()); // tracked before it is sent: unseen, blockhash valid
    const mark = chain.calls.length;
    await w.poll();
    const made = chain.calls.slice(mark);
    assert.equal(made.filter((m) => m === 'isBlockhashValid').length, 2, `one per distinct blockhash: ${made.join(',')}`);
    assert.deepEqual(events.map((e) => [e.id, e.state, e.chain.reason]).sort(), stale.map((t) => [t.signature, 'not_landed', 'blockhash_expired']).sort());
    assert.equal(w.size, 1);
    await send(fresh);
    await w.poll();
    assert.equal(events.at(-1)!.id, fresh.signature);
    assert.equal(events.at(-1)!.state, 'landed');
  });

  it('reads statuses in calls of at most 256 signatures', async () => {
    const { w } = watch();
    const n = STATUS_CHUNK * 2 + 10;
    const bh = chain.blockhash();
    for (let i = 0; i < n; i++) w.track(transfer(RENT_EXEMPT + 10 + i, bh).signature, bh);
    const mark = chain.calls.length;
    await w.poll();
    assert.equal(chain.calls.slice(mark).filter((m) => m === 'getSignatureStatuses').length, 3);
    assert.equal(w.size, n);
  });

  it('falls behind while the RPC is down and catches up when it is back', async () => {
    let now = 1_000_000;
    const { w, events } = watch('confirmed', { clock: () => now });
    const tx = transfer(RENT_EXEMPT + 7);
    w.track(tx.signature, chain.blockhash());
    chain.down();
    now += 400;
    await assert.rejects(w.poll(), /HTTP 503/);
    now += 30_000;
    assert.equal(w.lagMs(), 30_400);
    await send(tx).catch(() => {}); // refused while down
    chain.up();
    await send(tx);
    chain.advance(1);
    await w.poll();
    assert.equal(w.lagMs(), 0);
    assert.deepEqual(events.map((e) => [e.state, e.chain.confirmation]), [['landed', 'confirmed']]);
  });
});
