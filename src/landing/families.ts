/**
 * Which families a configuration follows on chain, apart from the landing
 * code itself: a start that follows none never loads it (nor its HTTP pool).
 */
import type { Config } from '../config/schema.js';
import type { Family } from './landing.js';

/** The families followed on chain: enabled, with a chain RPC. */
export function landingFamilies(cfg: Config): Set<Family> {
  const out = new Set<Family>();
  if (cfg.solana.enabled && cfg.solana.chain_rpc !== '') out.add('solana');
  if (cfg.evm.enabled && cfg.evm.chain_rpc !== '') out.add('evm');
  return out;
}
