/**
 * The landing service following 10,000 Solana signatures at once against
 * litesvm behind the stand-in RPC (test/helpers/svm-rpc.ts): 7,000 transfers
 * that execute, 1,000 that execute and fail, 2,000 never sent whose blockhash
 * then expires. Rounds are driven by hand (`Landing.poll`) on an injected
 * clock, so each round's calls to the stand-in can be counted:
 * getSignatureStatuses goes 256 signatures a call (docs/protocol.md#status).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { Landing } from '../../src/landing/landing.js';
import type { LandingEvent } from '../../src/landing/event.js';
import { STATUS_CHUNK } from '../../src/landing/solana-watch.js';
import { solanaTransfers } from '../../src/bench/txgen.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { newKeypair } from '../helpers/solana.js';

const LAND = 7000;
const FAIL = 1000;
const EXPIRE = 2000;
const ALL = LAND + FAIL + EXPIRE;
const signature = (tx: Buffer): string => bs58.encode(tx.subarray(1, 65));

describe('Landing with 10,000 signatures followed (litesvm)', { skip: SVM_SKIP }, () => {
  let chain: SvmRpc;
  before(async () => {
    chain = await startSvmRpc({ finalizeAfter: 3 });
  });
  after(() => chain?.close());

  it('ends every one in its state, reading statuses 256 a call', async () => {
    const payer = newKeypair();
    chain.airdrop(payer.publicKey.toBase58(), 100_000_000_000n);
    const o = { payerSeed: payer.secretKey.subarray(0, 32), blockhash: bs58.decode(chain.blockhash()) };
    // Each transfer goes to its own random address: distinct signatures under one blockhash.
    const land = solanaTransfers(LAND, { ...o, lamports: () => 1_000_000n });
    const fail = solanaTransfers(FAIL, { ...o, lamports: () => 10n ** 15n }); // more than the payer has
    const expire = solanaTransfers(EXPIRE, { ...o, lamports: () => 1_000_000n });
    const sent = [...land, ...fail];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < sent.length) {
          const tx = sent[next++]!;
          const r = await chain.call('sendTransaction', [tx.toString('base64'), { encoding: 'base64' }]);
          assert.equal(r, signature(tx));
        }
      }),
    );

    let now = 1_000_000;
    const final = new Map<string, LandingEvent[]>();
    const landing = new Landing({
      clock: () => now,
      solana: { rpc: chain.url, pollMs: 400, commitment: 'confirmed', timeoutMs: 180_000 },
      onLanding: (e) => {
        if (e.final) final.set(e.id, [...(final.get(e.id) ?? []), e]);
      },
    });
    const hash = chain.blockhash();
    for (const tx of [...land, ...fail, ...expire]) landing.followSolana(signature(tx), hash, 'solana-single', now);
    assert.equal(landing.size, ALL);

    const round = async (): Promise<Record<string, number>> => {
      const mark = chain.calls.length;
      await landing.poll();
      const made: Record<string, number> = {};
      for (const m of chain.calls.slice(mark)) made[m] = (made[m] ?? 0) + 1;
      return made;
    };
    const chunks = (n: number): number => Math.ceil(n / STATUS_CHUNK);
    assert.equal(STATUS_CHUNK, 256);

    // Round 1: the 8,000 sent are processed (not yet the commitment); the 2,000 unseen have a valid blockhash.
    assert.deepEqual(await round(), { getSignatureStatuses: chunks(ALL), isBlockhashValid: 1 });
    assert.equal(final.size, 0);
    assert.equal(landing.size, ALL);

    // Round 2, a slot on and the blockhash expired: the 8,000 are confirmed; the unseen 2,000 get one last look, then end.
    chain.advance(1);
    chain.expireBlockhash();
    now += 2_001; // past the watcher's blockhash re-check interval
    assert.deepEqual(await round(), { getSignatureStatuses: chunks(ALL) + chunks(EXPIRE), isBlockhashValid: 1 });
    assert.equal(landing.size, 0);

    // Nothing left: a round asks nothing.
    assert.deepEqual(await round(), {});

    // Every one ended once, in its own state.
    assert.equal(final.size, ALL);
    assert.ok([...final.values()].every((l) => l.length === 1));
    const state = (tx: Buffer): LandingEvent => final.get(signature(tx))![0]!;
    for (const tx of land) {
      const e = state(tx);
      assert.deepEqual([e.state, e.chain.confirmation, e.chain.err], ['landed', 'confirmed', null]);
    }
    for (const tx of fail) {
      const e = state(tx);
      assert.deepEqual([e.state, e.chain.confirmation, e.chain.err], ['landed_failed', 'confirmed', { InstructionError: [0, { Custom: 1 }] }]);
    }
    for (const tx of expire) assert.deepEqual([state(tx).state, state(tx).chain.reason], ['not_landed', 'blockhash_expired']);
    assert.deepEqual(Object.fromEntries(landing.results), {
      'solana-single/landed': LAND,
      'solana-single/landed_failed': FAIL,
      'solana-single/not_landed_blockhash_expired': EXPIRE,
    });
  });
});
