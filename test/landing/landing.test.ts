/**
 * Landing as the relay runs it: both families' watchers on their timers,
 * against litesvm behind the stand-in RPC and ganache; what it reports per
 * lane, and a family without a chain RPC not tracked at all.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { Landing } from '../../src/landing/landing.js';
import { Metrics } from '../../src/obs/metrics.js';
import { registerLandingMetrics } from '../../src/obs/landing-metrics.js';
import type { LandingEvent } from '../../src/landing/event.js';
import { systemClock } from '../../src/clock.js';
import { SVM_SKIP, startSvmRpc, type SvmRpc } from '../helpers/svm-rpc.js';
import { startChain, chainCall, type TestChain } from '../helpers/ganache.js';
import { legacyTransfer, newKeypair } from '../helpers/solana.js';
import { testAccount, RECIPIENT } from '../helpers/evm.js';

describe('Landing (both families on their timers)', { skip: SVM_SKIP }, () => {
  let svm: SvmRpc;
  let evm: TestChain;
  before(async () => {
    svm = await startSvmRpc({ slotMs: 40 });
    evm = await startChain();
  });
  after(async () => {
    await svm.close();
    await evm.close();
  });

  it('reports a Solana transfer and an EVM transfer landed, counted per lane with ack-to-landed times', async () => {
    const seen = new EventEmitter();
    const events: [LandingEvent, string, number | null][] = [];
    const landing = new Landing({
      clock: systemClock,
      solana: { rpc: svm.url, pollMs: 50, commitment: 'confirmed', timeoutMs: 60_000 },
      evm: { rpc: evm.url, pollMs: 50, timeoutMs: 60_000 },
      onLanding: (e, x) => {
        events.push([e, x.lane, x.ackToLandedMs]);
        if (e.final) seen.emit(e.id);
      },
    });
    landing.start();
    try {
      const payer = newKeypair();
      svm.airdrop(payer.publicKey.toBase58(), 10_000_000_000n);
      const sol = legacyTransfer({ from: payer, lamports: 1_000_000, blockhash: svm.blockhash() });
      const raw = await testAccount.signTransaction({ chainId: 1, type: 'eip1559', to: RECIPIENT, value: 1n, nonce: 0, gas: 21_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n });
      const t0 = systemClock();
      const solDone = once(seen, sol.signature);
      await chainCall(svm.url, 'sendTransaction', [Buffer.from(sol.bytes).toString('base64'), { encoding: 'base64' }]);
      landing.followSolana(sol.signature, svm.blockhash(), 'solana-single', t0);
      const hash: string = await chainCall(evm.url, 'eth_sendRawTransaction', [raw]);
      const evmDone = once(seen, hash.toLowerCase());
      landing.followEvm(hash, testAccount.address, 0n, 'evm', t0);
      await Promise.all([solDone, evmDone]);
      const sol1 = events.filter(([e]) => e.id === sol.signature);
      // Slots pass every 40 ms: a late poll may first see it confirmed, or even finalized.
      assert.ok(sol1.length >= 1 && sol1.length <= 2, `one or two reports: ${sol1.length}`);
      assert.ok(sol1.every(([e, lane]) => e.state === 'landed' && lane === 'solana-single'));
      assert.ok(['confirmed', 'finalized'].includes(sol1.at(-1)![0].chain.confirmation!));
      assert.equal(sol1.at(-1)![0].final, true);
      const evm1 = events.filter(([e]) => e.id === hash.toLowerCase());
      assert.deepEqual(evm1.map(([e, lane]) => [e.state, lane]), [['landed', 'evm']]);
      assert.ok(evm1[0]![2]! >= 0);
      assert.equal(landing.results.get('solana-single/landed'), 1, 'counted once across its confirmation levels');
      assert.equal(landing.results.get('evm/landed'), 1);
      assert.equal(landing.ackToLanded.get('evm')!.counts.reduce((a, b) => a + b), 1);
      assert.equal(landing.size, 0);
      const m = new Metrics();
      registerLandingMetrics(m, landing, () => ['solana-single', 'evm', 'solana-bundle']);
      const text = (await m.render()).body;
      for (const line of [
        'txrelay_landed_total{lane="solana-single",result="landed"} 1',
        'txrelay_landed_total{lane="evm",result="landed"} 1',
        'txrelay_landed_total{lane="solana-bundle",result="landed"} 0',
        'txrelay_ack_to_landed_seconds_count{lane="evm"} 1',
        'txrelay_landing_lag_seconds{family="evm"} 0',
        'txrelay_landing_tracked 0',
        'txrelay_chain_rpc_errors_total',
      ]) assert.ok(text.includes(line), `metrics carry ${line}`);
      assert.match(text, /txrelay_chain_rpc_calls_total\{family="solana",method="getSignatureStatuses"\} [1-9]/);
      assert.doesNotMatch(text, /127\.0\.0\.1/, 'no RPC URL in a label');
    } finally {
      landing.stop();
    }
  });

  it('a family without a chain RPC is not tracked', () => {
    const landing = new Landing({ clock: systemClock, onLanding: () => assert.fail('nothing is followed') });
    assert.equal(landing.tracks('solana'), false);
    assert.equal(landing.tracks('evm'), false);
    landing.followSolana('x', 'y', 'solana-single', 0);
    assert.equal(landing.size, 0);
  });
});
