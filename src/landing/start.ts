/**
 * Landing as the relay runs it (docs/protocol.md#status): built from the
 * configuration where a family has a chain RPC, its metrics registered, and
 * what the chain says handed to every tracker that asked (the main thread's,
 * and the acceptor threads' through their messages).
 */
import type { Config } from '../config/schema.js';
import type { Clock } from '../clock.js';
import type { Metrics } from '../obs/metrics.js';
import { registerLandingMetrics } from '../obs/landing-metrics.js';
import type { Landed } from '../status/trace.js';
import { Landing, type Family } from './landing.js';
import { landingFamilies } from './families.js';

/** A signature the chain never reports is ended `timeout` after this long: a blockhash is valid for about 60-90 s, so this is only a backstop. */
const SOLANA_MAX_AGE_MS = 180_000;
/** `eth_blockNumber` once a second: a new block is read within a second of it, at any block time. */
const EVM_POLL_MS = 1_000;
/** How often whether tracking is behind is looked at, for the acceptor threads' statuses. */
const BEHIND_CHECK_MS = 1_000;

const LANES: Record<Family, readonly string[]> = { solana: ['solana-single', 'solana-bundle'], evm: ['evm-paid', 'evm-free'] };

/** Where landings go: a service's tracker, or the acceptor threads. */
interface LandingSink {
  landed(id: string, l: Landed): void;
  landingBehind?(behind: Record<Family, boolean>): void;
}

export class LandingService {
  readonly landing: Landing;
  private sinks: LandingSink[] = [];
  private timer: NodeJS.Timeout | null = null;
  private behind = '';

  /** For a configuration that follows at least one family (`landingFamilies`); with none, statuses end at `forwarded` (`landing: "not_tracked"`) and nothing here is built. */
  constructor(cfg: Config, clock: Clock) {
    const families = landingFamilies(cfg);
    this.landing = new Landing({
      clock,
      solana: families.has('solana')
        ? { rpc: cfg.solana.chain_rpc, pollMs: cfg.solana.landing_poll_ms, commitment: cfg.solana.landing_commitment, timeoutMs: SOLANA_MAX_AGE_MS }
        : undefined,
      evm: families.has('evm') ? { rpc: cfg.evm.chain_rpc, pollMs: EVM_POLL_MS, timeoutMs: cfg.evm.landing_timeout_s * 1000 } : undefined,
      onLanding: (e, x) => {
        const l: Landed = {
          state: e.state,
          chain: e.chain,
          at: e.at,
          ackToLandedMs: x.ackToLandedMs,
          following: !e.final,
          ...(x.transactions ? { transactions: x.transactions.map((t) => ({ id: t.id, state: t.state, chain: t.chain })) } : {}),
        };
        for (const s of this.sinks) s.landed(e.id, l);
      },
    });
  }

  /** Starts following: what the chain says goes to `sinks`, figures to `metrics`. */
  start(metrics: Metrics, sinks: readonly (LandingSink | null)[]): void {
    this.sinks = sinks.filter((s): s is LandingSink => s !== null);
    const l = this.landing;
    registerLandingMetrics(metrics, l, () => (['solana', 'evm'] as const).filter((f) => l.tracks(f)).flatMap((f) => LANES[f]));
    l.start();
    this.timer = setInterval(() => {
      const b = { solana: l.behind('solana'), evm: l.behind('evm') };
      const key = `${b.solana}/${b.evm}`;
      if (key === this.behind) return;
      this.behind = key;
      for (const s of this.sinks) s.landingBehind?.(b);
    }, BEHIND_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.landing.stop();
  }
}
