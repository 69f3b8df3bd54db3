/**
 * Jobs checked together (a verify worker under load: src/exec/check.ts
 * runClaimedBatch) get exactly the verdicts they get checked one by one in the
 * same order: valid, forged, duplicated within the batch, malformed,
 * multi-signature, bundle members and EVM jobs mixed, in batches of 1 to 40;
 * and a transaction that passes leaves in its slot what the pipeline reads
 * after a check (its signature's and recent blockhash's offsets, for the id
 * and for landing) as the single check does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slab } from '../../src/tables/slab.js';
import { DedupFilter } from '../../src/tables/dedup.js';
import { systemClock } from '../../src/clock.js';
import { initKeccak } from '../../src/chains/evm/hash.js';
import { decodeSolanaTransaction, maxSizeFor } from '../../src/chains/solana/decode.js';
import { batchesSignatures, runCheck, runClaimedBatch, type CheckContext } from '../../src/exec/check.js';
import { JobKind, JobResult, JobTable, S_AUX0, S_AUX1, S_AUX2, S_AUX3, S_AUX4, S_BLOCKHASH, S_RESULT } from '../../src/exec/jobs.js';
import { buildTransaction, newKeypair, randomAddress, transferIx } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

await initKeccak();

const skip = batchesSignatures ? false : 'the native ed25519 verifier is not in use in this process';

interface Job {
  kind: JobKind;
  bytes: Uint8Array;
}

function context(): CheckContext & { add(j: Job): number } {
  const slab = Slab.create({ capacity: 8 << 20 });
  const jobs = JobTable.create(4096);
  const dedup = DedupFilter.create({ windowMs: 60_000, capacity: 100_000 });
  const add = (j: Job): number => {
    const off = slab.alloc(j.bytes.length);
    slab.bytes.set(j.bytes, off);
    const s = jobs.acquire();
    jobs.set(s, j.kind, off, j.bytes.length, 0);
    if (j.kind === JobKind.SolanaVerify) {
      // As the main thread does for a bundle member (src/pipeline/admit.ts).
      const v = decodeSolanaTransaction(j.bytes, maxSizeFor(j.bytes, false));
      jobs.setField(s, S_AUX0, v.signaturesOffset);
      jobs.setField(s, S_AUX1, v.numSignatures);
      jobs.setField(s, S_AUX2, v.accountKeysOffset);
      jobs.setField(s, S_AUX3, v.messageOffset);
      jobs.setField(s, S_AUX4, v.messageLength);
    }
    return s;
  };
  return { jobs, slab: slab.bytes, dedup, chainId: 1n, clock: systemClock, maxWaitMs: Infinity, add };
}

const flip = (b: Uint8Array, at: number): Uint8Array => Uint8Array.from(b, (x, i) => (i === at ? x ^ 1 : x));

test('jobs checked together get the verdicts they get one by one, in batches of 1 to 40', { skip }, async () => {
  const evm = (await signed1559({ nonce: 3 })).raw;
  const jobs: Job[] = [];
  for (let i = 0; i < 120; i++) {
    // Every fifth transaction has three signers (three signatures in the batch).
    const signers = Array.from({ length: i % 5 === 0 ? 3 : 1 }, newKeypair);
    const ixs = signers.map((k) => transferIx(k.publicKey, randomAddress(), 1000));
    const tx = buildTransaction(i % 3 === 0 ? 'v1' : 'legacy', signers[0]!, ixs, { signers: signers.slice(1) }).bytes;
    switch (i % 9) {
      case 1: jobs.push({ kind: JobKind.SolanaTx, bytes: flip(tx, tx.length - 1) }, { kind: JobKind.SolanaTx, bytes: tx }); break; // forged copy first
      case 2: jobs.push({ kind: JobKind.SolanaTx, bytes: tx }, { kind: JobKind.SolanaTx, bytes: tx }); break; // the same twice
      case 3: jobs.push({ kind: JobKind.SolanaTx, bytes: tx.subarray(0, 40) }); break;
      case 4: jobs.push({ kind: JobKind.SolanaVerify, bytes: tx }, { kind: JobKind.SolanaVerify, bytes: flip(tx, tx.length - 2) }); break;
      case 5: jobs.push({ kind: JobKind.EvmTx, bytes: i === 5 ? evm : flip(evm, evm.length - 3) }); break;
      case 6: jobs.push({ kind: JobKind.SolanaTx, bytes: flip(tx, 70) }); break; // a bad signature byte
      default: jobs.push({ kind: JobKind.SolanaTx, bytes: tx });
    }
  }
  const alone = context();
  /** The verdict, and for a Solana transaction that passed, the offsets the pipeline reads from its slot. */
  const seen = (c: ReturnType<typeof context>, s: number, kind: JobKind): string => {
    const r = c.jobs.field(s, S_RESULT) as JobResult;
    if (kind !== JobKind.SolanaTx || r !== JobResult.Ok) return String(r);
    return `${r} sig@${c.jobs.field(s, S_AUX0)} blockhash@${c.jobs.field(s, S_BLOCKHASH)}`;
  };
  const want = jobs.map((j) => {
    const s = alone.add(j);
    runCheck(alone, s);
    return seen(alone, s, j.kind);
  });
  for (const r of [JobResult.Ok, JobResult.BadSignature, JobResult.Duplicate, JobResult.Invalid]) assert.ok(want.some((w) => w.startsWith(String(r))), `a case with result ${r}`);
  const together = context();
  const got: string[] = [];
  for (let from = 0, size = 1; from < jobs.length; from += size, size = (size % 40) + 1) {
    const batch = jobs.slice(from, from + size);
    const slots = batch.map((j) => together.add(j));
    runClaimedBatch(together, slots);
    slots.forEach((s, i) => got.push(seen(together, s, batch[i]!.kind)));
  }
  assert.deepEqual(got, want);
});
