/**
 * waitLanded's stopping rule over a sequence of status reads, as a node that
 * follows the chain gives them (docs/protocol.md#status): it waits through
 * `queued` and `forwarded`, stops at the commitment asked for, at an end short
 * of the chain, and at once where the node does not follow the family.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitLanded } from '../../src/client/status.js';
import type { StatusObject } from '../../src/shared/status.js';

const base: StatusObject = { id: 'sig', request_id: 'r', chain: 'solana', door: 'v2', node: 'n', received_at: null, state: 'queued', reason: null, events: [], forwards: [] };
const landedAt = { landed_at: '2026-01-01T00:00:00.000Z', ack_to_landed_ms: 420 };

/** Reads the given statuses in turn (the last one repeats), counting the reads. */
function reads(...list: Partial<StatusObject>[]) {
  let n = 0;
  const get = async (): Promise<StatusObject> => ({ ...base, ...list[Math.min(n++, list.length - 1)] });
  return { get, count: () => n };
}

describe('waitLanded', () => {
  it('waits through queued and forwarded, then stops at the commitment asked for', async () => {
    const r = reads(
      { state: 'queued' },
      { state: 'forwarded', landing: 'following' },
      { state: 'landed', landing: 'following', onchain: { slot: 9, confirmation: 'processed', ...landedAt } },
      { state: 'landed', landing: 'done', onchain: { slot: 9, confirmation: 'confirmed', ...landedAt } },
    );
    const s = await waitLanded(r.get, 'sig', { pollMs: 1, timeout: 5_000 });
    assert.deepEqual([s.state, s.onchain?.confirmation, s.timedOut, r.count()], ['landed', 'confirmed', false, 4]);
  });

  it('processed is enough when asked for', async () => {
    const r = reads({ state: 'landed', landing: 'following', onchain: { slot: 9, confirmation: 'processed', ...landedAt } });
    const s = await waitLanded(r.get, 'sig', { pollMs: 1, commitment: 'processed' });
    assert.deepEqual([s.state, r.count()], ['landed', 1]);
  });

  it('a node that stops following before the level asked for ends the wait (landing done)', async () => {
    const r = reads({ state: 'landed', landing: 'done', onchain: { slot: 9, confirmation: 'confirmed', ...landedAt } });
    const s = await waitLanded(r.get, 'sig', { pollMs: 1, commitment: 'finalized' });
    assert.deepEqual([s.onchain?.confirmation, s.timedOut], ['confirmed', false]);
  });

  it('ends at landed_failed, not_landed and refusals short of the chain', async () => {
    for (const last of [
      { state: 'landed_failed' as const, landing: 'done' as const, onchain: { slot: 3, confirmation: 'confirmed' as const, err: { InstructionError: [0, { Custom: 1 }] }, ...landedAt } },
      { state: 'not_landed' as const, reason: 'blockhash_expired', onchain: { reason: 'blockhash_expired' as const, ...landedAt, ack_to_landed_ms: null } },
      { state: 'upstream_rejected' as const },
      { state: 'dropped' as const },
    ]) {
      const s = await waitLanded(reads({ state: 'forwarded', landing: 'following' }, last).get, 'sig', { pollMs: 1 });
      assert.equal(s.state, last.state);
      assert.equal(s.timedOut, false);
    }
  });

  it('forwarded on a node that does not follow the family (or says nothing of landing) ends at once', async () => {
    for (const landing of ['not_tracked' as const, undefined]) {
      const r = reads({ state: 'forwarded', ...(landing ? { landing } : {}) });
      const s = await waitLanded(r.get, 'sig', { pollMs: 1 });
      assert.deepEqual([s.state, r.count()], ['forwarded', 1]);
    }
  });

  it('a wait that runs out resolves with the last status and timedOut', async () => {
    const s = await waitLanded(reads({ state: 'forwarded', landing: 'behind' }).get, 'sig', { pollMs: 1, timeout: 30 });
    assert.deepEqual([s.state, s.landing, s.timedOut], ['forwarded', 'behind', true]);
  });
});
