/**
 * Builds the TPU route from `[solana.tpu]` (docs/protocol.md#forwarding), or
 * says in one start-up line why it stays off: not enabled, no
 * `solana.chain_rpc`, acceptor threads, or the QUIC library (a native
 * optional dependency) not loading. A keypair file that cannot be read stops
 * start-up instead: the operator asked for that identity.
 */
import type { Config } from '../config/schema.js';
import { E, TxrelayError } from '../errors.js';
import type { Logger } from '../obs/log.js';
import type { Metrics } from '../obs/metrics.js';
import { registerTpuMetrics } from '../obs/tpu-metrics.js';
import { loadQuic } from './conn.js';
import { loadIdentity, type TpuIdentity } from './identity.js';
import { LeaderTracker } from './leaders.js';
import { TpuPoolThread } from './pool-thread.js';
import { TpuRoute } from './route.js';

interface TpuStartOptions {
  /** HTTP acceptor threads: the route runs on the main thread's lane only. */
  threads: number;
  /** Tests: a quicker handshake time-out, a quicker slot poll. */
  handshakeTimeoutMs?: number;
  pollMs?: number;
}

/** The route, started (leaders read, slot followed), or null with the reason logged. */
export async function startTpu(cfg: Config, log: Logger, opts: TpuStartOptions): Promise<TpuRoute | null> {
  const t = cfg.solana.tpu;
  if (!t.enabled || !cfg.solana.enabled) return null;
  const off = (why: string): null => {
    log.warn({ component: 'tpu' }, `solana.tpu is enabled but stays off: ${why}`);
    return null;
  };
  if (!cfg.solana.chain_rpc) return off('solana.chain_rpc is empty (the leader schedule and the leaders\' addresses are read from it)');
  if (opts.threads > 1) return off(`http.acceptors runs ${opts.threads} HTTP threads; the TPU route runs with one (set http.acceptors = 1)`);
  // Tried here first: the one line says so before a thread is started for it.
  const lib = await loadQuic();
  if (typeof lib === 'string') return off(`the QUIC library @matrixai/quic cannot load (${lib})`);
  let me: TpuIdentity;
  try {
    me = loadIdentity(t.identity_keypair_file || null);
  } catch (e) {
    throw new TxrelayError(E.CONFIG, e instanceof Error ? e.message : String(e));
  }
  const tracker = new LeaderTracker({
    rpc: cfg.solana.chain_rpc,
    slotWs: t.slot_ws,
    pollMs: opts.pollMs,
    log: (level, msg, fields) => log[level]({ ...fields, component: 'tpu' }, msg),
  });
  // The QUIC library's CPU (docs/benchmarks.md#tpu) is kept off the thread that admits.
  const pool = await TpuPoolThread.start(me, opts.handshakeTimeoutMs);
  if (typeof pool === 'string') return off(pool);
  // One leader more than a send uses: the next one's handshake is done before its first slot.
  tracker.onSlot = (slot) => pool.window(tracker.leaders(slot, t.leaders_ahead + 1));
  await tracker.start();
  log.info(
    { component: 'tpu', identity: me.pubkey, staked_identity: me.fromFile, leaders_ahead: t.leaders_ahead, mode: t.mode, slot: tracker.slot },
    `TPU: Solana transactions also go straight to the next ${t.leaders_ahead} leaders over QUIC${t.mode === 'only' ? ' (and only there)' : ''}`,
  );
  return new TpuRoute(tracker, pool, me.pubkey, t.leaders_ahead);
}

/** `txrelay_tpu_*` for a started route. */
export function tpuMetrics(m: Metrics, r: TpuRoute): void {
  registerTpuMetrics(m, {
    stats: r.pool.stats,
    open: () => r.pool.open,
    slot: () => r.tracker.slot,
    slotAgeSeconds: () => r.tracker.slotAgeMs() / 1000,
  });
}
