/**
 * The leader pool on a thread of its own, as the relay runs it
 * (src/tpu/pool-thread.ts): a transaction reaches a real stand-in leader
 * through it with the client certificate's identity, the counts the metrics
 * read come back to the main thread, a leader without an address is skipped
 * at once, and after close every send is skipped with the reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TpuPoolThread } from '../../src/tpu/pool-thread.js';
import { loadIdentity } from '../../src/tpu/identity.js';
import type { SendResult } from '../../src/tpu/conn.js';
import type { Leader } from '../../src/tpu/leaders.js';
import { legacyTransfer } from '../helpers/solana.js';
import { eventually } from '../helpers/relay.js';
import { QUIC_SKIP, startValidator } from '../helpers/tpu-standin.js';

const sent = (pool: TpuPoolThread, l: Leader, bytes: Uint8Array) =>
  new Promise<{ r: SendResult; why: string | null }>((resolve) => pool.send(l, bytes, (r, why) => resolve({ r, why })));

test('a transaction through the pool thread reaches the leader; its counts come back; after close sends are skipped', { skip: QUIC_SKIP || undefined }, async (t) => {
  const v = await startValidator();
  t.after(() => v.stop());
  const me = loadIdentity(null);
  const pool = await TpuPoolThread.start(me, 2_000);
  assert.ok(typeof pool !== 'string', String(pool));
  t.after(() => pool.close());
  const leader: Leader = { identity: v.identity.pubkey, address: v.address, slot: 0 };
  pool.window([leader]);
  await eventually(() => pool.open === 1, 10_000, 'the window\'s connection open');

  const txs = [legacyTransfer(), legacyTransfer()];
  const results = await Promise.all(txs.map((tx) => sent(pool, leader, tx.bytes)));
  assert.deepEqual(results.map((x) => x.r), ['written', 'written']);
  await eventually(() => v.received.length === 2, 10_000, 'both streams read by the leader');
  assert.deepEqual(new Set(v.received.map((x) => x.signature)), new Set(txs.map((tx) => tx.signature)));
  assert.ok(v.received.every((x) => x.client === me.pubkey), 'the certificate carries the identity given');
  assert.equal(pool.stats.results.written, 2);
  assert.equal(pool.stats.warm, 2, 'both found the connection open');
  assert.equal(pool.stats.handshakes, 1);
  assert.equal(pool.stats.handshakeSeconds.count, 1, 'the handshake\'s time observed here');

  assert.deepEqual(await sent(pool, { ...leader, address: null }, txs[0]!.bytes), { r: 'skipped', why: 'no TPU QUIC address for this leader in getClusterNodes' });
  await pool.close();
  assert.deepEqual(await sent(pool, leader, txs[0]!.bytes), { r: 'skipped', why: 'shutting down' });
});
