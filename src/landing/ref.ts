/**
 * What landing follows a forwarded transaction by (docs/protocol.md#status),
 * read from its check's job slot: a Solana transaction's recent blockhash,
 * an EVM transaction's sender and nonce. Built only where the family is
 * followed, so a relay without a chain RPC pays nothing for it.
 */
import { S_BLOCKHASH, type JobTable } from '../exec/jobs.js';
import { base58EncodeAt } from '../native/base58.js';
import type { Trace } from '../status/trace.js';

type LandingRef = NonNullable<Trace['landingRef']>;

const HASH_BYTES = 32;
const ADDRESS_BYTES = 20;

/** A single Solana transaction at bytes[txAt..], checked in slot `s`. */
export function solanaRef(jobs: JobTable, s: number, bytes: Uint8Array, txAt: number, lane: string): LandingRef {
  return { lane, blockhash: base58EncodeAt(bytes, txAt + jobs.field(s, S_BLOCKHASH), HASH_BYTES) };
}

/** A bundle's members, checked in `slots` (in order), with their signatures (`ids`). */
export function bundleRef(jobs: JobTable, slots: readonly number[], bytes: Uint8Array, offsets: readonly number[], ids: readonly string[], lane: string): LandingRef {
  const members = slots.map((s, i) => ({ signature: ids[i]!, blockhash: base58EncodeAt(bytes, offsets[i]! + jobs.field(s, S_BLOCKHASH), HASH_BYTES) }));
  return { lane, blockhash: members[0]!.blockhash, members };
}

/** An EVM transaction checked in slot `s`: the sender its signature recovered and its nonce. */
export function evmRef(jobs: JobTable, s: number, lane: string): LandingRef {
  const at = jobs.senderAt(s);
  return { lane, from: '0x' + Buffer.from(jobs.bytes.buffer, jobs.bytes.byteOffset + at, ADDRESS_BYTES).toString('hex'), nonce: jobs.nonce(s) };
}
