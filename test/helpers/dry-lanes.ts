/**
 * A relay whose paid EVM lane forwards to a real upstream while the free lane
 * and both Solana lanes have none and run dry (docs/protocol.md#dry-run), with
 * an account of each plan: the tests of dry-run answers over HTTP and `/ws`.
 */
import { startTestRelay, type TestRelay } from './relay.js';
import { startUpstream } from './upstream.js';

interface HalfDryRelay {
  relay: TestRelay;
  /** A free-plan account (dry EVM lane) with Solana quota (dry Solana lanes). */
  free: string;
  /** A paid-plan account: its EVM transactions are forwarded. */
  paid: string;
  close(): Promise<void>;
}

export async function startHalfDryRelay(): Promise<HalfDryRelay> {
  const up = await startUpstream();
  const relay = await startTestRelay({ evm: { upstreams: { paid: [up.url] } } });
  const free = (await relay.createAccount({ plan: 'free', evm: { tps: 100, burst: 100 }, solana: { tps: 100, burst: 100 } })).uuid;
  const paid = (await relay.createAccount({ plan: 'paid', evm: { tps: 100, burst: 100 } })).uuid;
  return {
    relay,
    free,
    paid,
    close: async () => {
      await relay.stop();
      await up.close();
    },
  };
}
