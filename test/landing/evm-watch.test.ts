/**
 * The EVM landing watcher against ganache: a transfer mined, a revert, a
 * replacement by the same nonce, one never mined, and the calls it makes
 * (block reads per block, receipts only for matches).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChainRpc } from '../../src/landing/chain-rpc.js';
import type { LandingEvent } from '../../src/landing/event.js';
import { EvmLandingWatch } from '../../src/landing/evm-watch.js';
import { systemClock } from '../../src/clock.js';
import { startChain, chainCall, type TestChain } from '../helpers/ganache.js';
import { testAccount, RECIPIENT } from '../helpers/evm.js';

describe('EVM landing watch (ganache)', () => {
  let chain: TestChain;
  let rpc: ChainRpc;
  let nonce = 0;

  before(async () => {
    chain = await startChain();
    rpc = new ChainRpc(chain.url, 2_000);
  });
  after(async () => {
    await rpc.close();
    await chain.close();
  });

  const sign = (o: { nonce: number; data?: `0x${string}`; to?: `0x${string}`; gas?: bigint }) =>
    testAccount.signTransaction({ chainId: 1, type: 'eip1559', to: o.to ?? RECIPIENT, value: 1n, nonce: o.nonce, gas: o.gas ?? 21_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, data: o.data });
  const send = (raw: string): Promise<string> => chainCall(chain.url, 'eth_sendRawTransaction', [raw]);
  const watch = (timeoutMs = 60_000, clock = systemClock) => {
    const events: LandingEvent[] = [];
    const w = new EvmLandingWatch(rpc, { timeoutMs, clock, onLanding: (e) => events.push(e) });
    return { w, events };
  };

  it('reports a mined transfer as landed with its block, hash and confirmations', async () => {
    const { w, events } = watch();
    await w.poll(); // starts at the head
    const raw = await sign({ nonce: nonce++ });
    const hash = await send(raw);
    w.track(hash, testAccount.address, BigInt(nonce - 1));
    await w.poll();
    const block = await chainCall(chain.url, 'eth_getTransactionReceipt', [hash]);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.state, 'landed');
    assert.equal(events[0]!.chain.block, Number(BigInt(block.blockNumber)));
    assert.equal(events[0]!.chain.block_hash, block.blockHash);
    assert.equal(events[0]!.chain.confirmations, 1);
    assert.equal(events[0]!.chain.err, null);
  });

  it('reports a reverted call as landed_failed', async () => {
    // Init code that reverts at once: PUSH1 0 PUSH1 0 REVERT.
    const { w, events } = watch();
    const raw = await testAccount.signTransaction({ chainId: 1, type: 'eip1559', nonce: nonce++, gas: 100_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, data: '0x60006000fd' });
    const hash = await send(raw);
    w.track(hash, testAccount.address, BigInt(nonce - 1));
    await w.poll();
    assert.deepEqual(events.map((e) => [e.state, e.chain.err]), [['landed_failed', 'reverted']]);
  });

  it('ends a transaction whose nonce another took as not_landed, replaced, naming the other', async () => {
    const { w, events } = watch();
    await w.poll();
    const mine = await sign({ nonce, to: '0x2222222222222222222222222222222222222222' });
    const other = await sign({ nonce: nonce++ });
    const { keccak256 } = await import('viem');
    const mineHash = keccak256(mine);
    w.track(mineHash, testAccount.address, BigInt(nonce - 1)); // forwarded, but the other reached the chain first
    const otherHash = await send(other);
    await w.poll();
    assert.deepEqual(events.map((e) => [e.id, e.state, e.chain.reason, e.chain.replaced_by]), [[mineHash, 'not_landed', 'replaced', otherHash]]);
  });

  it('finds a transaction tracked after a round already read its block (a dev chain mines before the upstream answers)', async () => {
    const { w, events } = watch();
    w.track('0x' + 'cd'.repeat(32), '0x' + '98'.repeat(20), 0n); // keeps the watcher reading blocks
    await w.poll();
    const hash = await send(await sign({ nonce: nonce++ }));
    await w.poll(); // reads the block holding it, not tracked yet
    w.track(hash, testAccount.address, BigInt(nonce - 1));
    await w.poll();
    assert.deepEqual(events.map((e) => [e.id, e.state]), [[hash.toLowerCase(), 'landed']]);
  });

  it('ends one never mined after the time-out, and reads one block per block, receipts only for matches', async () => {
    let now = 5_000_000;
    const { w, events } = watch(180_000, () => now);
    await w.poll();
    const ghost = '0x' + 'ab'.repeat(32);
    w.track(ghost, '0x' + '99'.repeat(20), 0n);
    const before = new Map(rpc.calls);
    const delta = (m: string) => (rpc.calls.get(m) ?? 0) - (before.get(m) ?? 0);
    for (let i = 0; i < 3; i++) await send(await sign({ nonce: nonce++ })); // three blocks (ganache mines each)
    await w.poll();
    assert.equal(delta('eth_getBlockByNumber'), 3);
    assert.equal(delta('eth_getTransactionReceipt'), 0);
    assert.equal(events.length, 0);
    now += 180_000;
    await w.poll();
    assert.deepEqual(events.map((e) => [e.id, e.state, e.chain.reason]), [[ghost, 'not_landed', 'timeout']]);
    assert.equal(w.size, 0);
  });
});
