/**
 * EVM batches (docs/protocol.md#evm-batches, #batch-records). The receive
 * record holds every item's hash and is durable before any item is admitted,
 * so each item is decoded, checked and hashed here first. The results travel
 * in the item's job slot (hashes in its bytes, signature place and recovery id
 * in its fields), so the check only recovers the sender.
 */
import { DecodeError, E, RelayError } from '../errors.js';
import { decodeEvmTransaction, EvmTx } from '../chains/evm/decode.js';
import { validateEvmTransaction } from '../chains/evm/validate.js';
import { signingHashAt, txHashAt, keccak256At } from '../chains/evm/hash.js';
import { JobKind, KEY_BYTES, S_AUX0, S_AUX1, S_AUX2, S_AUX3, S_AUX4, type JobTable } from '../exec/jobs.js';
import type { Placer } from './place.js';
import type { Outcome } from './outcome.js';
import type { Admission } from './admission.js';

/** The durable batch receive record (src/store/batches.ts). */
export interface BatchRecorder {
  newId(): string;
  persist(rec: { batch_id: string; received_at: string; account_id: number; client_ip: string; tx_hashes: (string | null)[] }): Promise<void>;
  /** Resolves once the items' outcomes are durable; rejects if they could not be written. */
  updateOutcome(batchId: string, items: readonly Outcome[]): Promise<void>;
}

const scratchTx = new EvmTx();
/** The hash of an item that holds no job slot. */
const hash32 = new Uint8Array(KEY_BYTES);

/**
 * Decodes, checks and hashes one placed item holding job slot `item.slot`
 * (-1: none free; refused for capacity in its turn, but still hashed for the
 * record). An invalid item gets `item.invalid`, keeps its raw hash (the
 * reconciliation handle) and gives its bytes and slot back.
 */
export function prepareItem(p: Placer, jobs: JobTable, chainId: bigint, item: Admission): void {
  const raw = p.view(item.offset, item.length);
  const s = item.slot;
  try {
    const tx = decodeEvmTransaction(raw, scratchTx);
    validateEvmTransaction(tx, { chainId });
    const out = s >= 0 ? jobs.bytes : hash32;
    const at = s >= 0 ? jobs.keyAt(s) : 0;
    txHashAt(raw, tx, out, at);
    item.hash = '0x' + Buffer.from(out.buffer, out.byteOffset + at, KEY_BYTES).toString('hex');
    if (s < 0) return;
    signingHashAt(raw, tx, jobs.bytes, jobs.msgAt(s));
    jobs.set(s, JobKind.EvmRecover, item.offset, item.length, 0);
    jobs.setField(s, S_AUX0, tx.rAt);
    jobs.setField(s, S_AUX1, tx.rLen);
    jobs.setField(s, S_AUX2, tx.sAt);
    jobs.setField(s, S_AUX3, tx.sLen);
    jobs.setField(s, S_AUX4, tx.yParity);
    jobs.setNonce(s, tx.nonce);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    item.invalid = new RelayError(E.TX_INVALID, e.message);
    keccak256At(raw, 0, raw.length, hash32, 0);
    item.hash = '0x' + Buffer.from(hash32).toString('hex');
    p.releaseOf(item);
    if (s >= 0) {
      jobs.release(s);
      item.slot = -1;
    }
  }
}
