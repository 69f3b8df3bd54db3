/**
 * The chain RPC client against a real HTTP server: one call, a JSON-RPC array
 * answered out of order with an error for one of its calls, a node that does
 * not answer in time, and what it counts by method.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChainRpc } from '../../src/landing/chain-rpc.js';

interface Call {
  id: number;
  method: string;
  params: unknown[];
}

/** A node that echoes each call's first param, refuses the param "bad", and never answers the method "slow". */
async function node(): Promise<{ url: string; bodies: unknown[]; close(): Promise<void> }> {
  const bodies: unknown[] = [];
  const answer = (c: Call) => (c.params[0] === 'bad' ? { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: 'no' } } : { jsonrpc: '2.0', id: c.id, result: c.params[0] });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      const body = JSON.parse(text) as Call | Call[];
      bodies.push(body);
      if (!Array.isArray(body) && body.method === 'slow') return;
      res.setHeader('content-type', 'application/json');
      // Arrays answered in reverse: a node may order them as it likes.
      res.end(JSON.stringify(Array.isArray(body) ? body.map(answer).reverse() : answer(body)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/some/path?key=k`,
    bodies,
    close: () => new Promise<void>((r) => server.close(() => r())).then(() => undefined),
  };
}

test('one call, an array of calls matched by id with a refused one as null, a time-out, and the counts', async (t) => {
  const n = await node();
  const rpc = new ChainRpc(n.url, 300);
  t.after(async () => {
    await rpc.close();
    await n.close();
  });
  assert.equal(await rpc.call<string>('echo', ['one']), 'one');
  await assert.rejects(rpc.call('echo', ['bad']), /echo: no/);
  assert.deepEqual(await rpc.batch<string>('echo', [['a'], ['bad'], ['c']]), ['a', null, 'c']);
  assert.equal((n.bodies.at(-1) as Call[]).length, 3, 'the three calls in one request');
  assert.deepEqual(await rpc.batch('echo', []), []);
  await assert.rejects(rpc.call('slow', []), /slow: no answer in 300 ms/);
  assert.deepEqual(Object.fromEntries(rpc.calls), { echo: 5, slow: 1 });
  assert.deepEqual(Object.fromEntries(rpc.errors), { echo: 2, slow: 1 });
});
