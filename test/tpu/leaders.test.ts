/**
 * The leader tracker (src/tpu/leaders.ts) against a stand-in RPC: the slot
 * from `slotSubscribe` notifications, the distinct leaders from a slot on,
 * and an RPC that is down costing nothing but stale knowledge.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import { LeaderTracker } from '../../src/tpu/leaders.js';
import { startScheduleRpc } from '../helpers/tpu-standin.js';
import { eventually } from '../helpers/relay.js';

test('slotSubscribe moves the slot; the leaders are the distinct ones from it, with their addresses', async () => {
  const rpc = await startScheduleRpc({ epochLength: 16, leaderOf: (_e, run) => ['A', 'A', 'B', 'C'][run]!, nodes: () => ({ A: '127.0.0.1:1001', B: '127.0.0.1:1002' }) });
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
  const sockets: import('ws').WebSocket[] = [];
  wss.on('connection', (ws) => {
    ws.on('message', (m) => {
      const call = JSON.parse(String(m));
      if (call.method === 'slotSubscribe') {
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: 7 }));
        sockets.push(ws);
      }
    });
  });
  const notify = (slot: number): void => {
    for (const ws of sockets) ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'slotNotification', params: { subscription: 7, result: { slot, parent: slot - 1, root: slot - 32 } } }));
  };
  const t = new LeaderTracker({ rpc: rpc.url, slotWs: `ws://127.0.0.1:${(wss.address() as { port: number }).port}` });
  try {
    await t.start();
    assert.equal(t.slot, 0);
    // A holds runs 0 and 1: it counts once, then B; C has no address.
    assert.deepEqual(t.leaders(0, 2), [
      { identity: 'A', address: '127.0.0.1:1001', slot: 0 },
      { identity: 'B', address: '127.0.0.1:1002', slot: 8 },
    ]);
    await eventually(() => sockets.length === 1, 5000, 'subscribed');
    notify(9);
    await eventually(() => t.slot === 9, 5000, 'slot 9 heard');
    assert.deepEqual(t.leaders(9, 3).map((l) => [l.identity, l.address, l.slot]), [
      ['B', '127.0.0.1:1002', 9],
      ['C', null, 12],
      ['A', '127.0.0.1:1001', 16],
    ]);
  } finally {
    t.stop();
    wss.close();
    await rpc.close();
  }
});

test('an RPC that is down: start-up goes on, no leader is known, and the failure is logged once per method', async () => {
  const lines: string[] = [];
  const t = new LeaderTracker({ rpc: 'http://127.0.0.1:9', pollMs: 20, log: (_l, msg, f) => lines.push(`${f?.method}: ${msg}`) });
  try {
    await t.start();
    assert.equal(t.slot, -1);
    assert.deepEqual(t.leaders(t.slot, 2), []);
    await eventually(() => lines.some((l) => l.startsWith('getSlot')), 5000, 'getSlot failure logged');
    // Five polls failed, one line.
    const calls = (t as unknown as { rpc: { calls: Map<string, number> } }).rpc.calls;
    await eventually(() => (calls.get('getSlot') ?? 0) >= 5, 5000, 'five polls');
    assert.equal(lines.filter((l) => l.startsWith('getSlot')).length, 1);
    assert.ok(lines.some((l) => l.startsWith('getClusterNodes')));
  } finally {
    t.stop();
  }
});
