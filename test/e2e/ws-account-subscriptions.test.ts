/**
 * Status subscriptions are bounded per account, not per socket
 * (docs/protocol.md#websocket): however many sockets one account opens, its
 * subscriptions together stay within `ws.max_account_subscriptions` (per HTTP
 * thread), so one status change is pushed at most that many times, while
 * another account's subscription is made and gets its own pushes. Real `ws`
 * clients, a real relay and a real upstream; transactions signed by
 * @solana/web3.js.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';
import { WsClient } from '../helpers/ws-client.js';

const CAP = 8;
const SOCKETS = 6;
const PER_SOCKET = 4;

/** A client socket of one account, with the pushes it got and the subscriptions it made. */
class Peer extends WsClient {
  static async of(r: TestRelay, key: string): Promise<Peer> {
    const p = Object.setPrototypeOf(await WsClient.open(r.base.replace('http', 'ws') + '/ws', { headers: { 'api-key': key } }), Peer.prototype) as Peer;
    p.subscribed = [];
    return p;
  }

  /** Notifications of the transaction `id`, as `subscription state`. */
  pushes(id: string): string[] {
    return this.messages.filter((m) => m.method === 'txrelay_status' && m.params.result.id === id).map((m) => `${m.params.subscription} ${m.params.result.state}`);
  }

  /** This socket's subscription ids that were made. */
  subscribed: number[] = [];
}

async function sendV2(r: TestRelay, key: string): Promise<string> {
  const tx = legacyTransfer();
  const res = await fetch(r.base + '/v2', { method: 'POST', headers: { 'api-key': key, 'content-type': 'application/octet-stream' }, body: tx.bytes });
  assert.equal(res.status, 200, await res.text());
  return tx.signature;
}

test(`one account's sockets hold at most ws.max_account_subscriptions together; each change is pushed that many times at most; another account is not affected`, async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const r = await startTestRelay({
    solana: { rpc_upstreams: [up.url] },
    ws: { max_subscriptions: 16, max_account_subscriptions: CAP },
    status: { reads_per_s: 10_000, reads_burst: 10_000 },
    limits: { ip_rps: 100_000, ip_burst: 100_000 },
  });
  t.after(() => r.stop());
  // The cap is per HTTP thread: with several acceptor threads the account's sockets spread over them.
  const capNode = CAP * r.relay.acceptors;
  const a = await r.createAccount({ plan: 'free' });
  const b = await r.createAccount({ plan: 'free' });

  const peers: Peer[] = [];
  t.after(() => peers.forEach((p) => p.ws.terminate()));
  let refused = 0;
  for (let i = 0; i < SOCKETS; i++) {
    const p = await Peer.of(r, a.uuid);
    peers.push(p);
    for (let k = 0; k < PER_SOCKET; k++) {
      const m = await p.call('txrelay_subscribe', ['statuses']);
      if (typeof m.result === 'number') p.subscribed.push(m.result);
      else {
        assert.equal(m.error.code, -32602);
        assert.match(m.error.message, /at most \d+ subscriptions across its sockets \(ws\.max_account_subscriptions\)/);
        refused++;
      }
    }
  }
  const made = peers.reduce((n, p) => n + p.subscribed.length, 0);
  assert.equal(made + refused, SOCKETS * PER_SOCKET);
  assert.ok(made >= CAP && made <= capNode, `${made} subscriptions made (cap ${CAP} per thread, ${r.relay.acceptors} thread(s))`);
  if (r.relay.acceptors === 1) assert.equal(made, CAP);

  // Another account, over its own cap's worth of nothing: its subscription is made.
  const other = await Peer.of(r, b.uuid);
  peers.push(other);
  const bSub = await other.call('txrelay_subscribe', ['statuses']);
  assert.equal(typeof bSub.result, 'number', JSON.stringify(bSub));

  // One transaction of A: each made subscription gets queued then forwarded, and nothing more.
  const sigA = await sendV2(r, a.uuid);
  const sigB = await sendV2(r, b.uuid);
  for (const p of peers.slice(0, SOCKETS)) {
    await p.until(() => (p.pushes(sigA).length === 2 * p.subscribed.length ? true : undefined), 5000, `A's ${2 * p.subscribed.length} pushes`);
  }
  await other.until(() => (other.pushes(sigB).some((x) => x.endsWith('forwarded')) ? true : undefined), 5000, "B's forwarded push");
  // Let anything extra arrive before counting.
  await new Promise((res) => setTimeout(res, 200));
  const total = peers.slice(0, SOCKETS).reduce((n, p) => n + p.pushes(sigA).length, 0);
  t.diagnostic(`${made} of ${SOCKETS * PER_SOCKET} subscriptions made; ${total} notifications for one transaction`);
  assert.equal(total, 2 * made, 'queued and forwarded, once per made subscription');
  assert.ok(total <= 2 * capNode);
  for (const p of peers.slice(0, SOCKETS)) {
    const want = p.subscribed.flatMap((s) => [`${s} queued`, `${s} forwarded`]).sort();
    assert.deepEqual(p.pushes(sigA).sort(), want);
    assert.deepEqual(p.pushes(sigB), [], "B's transaction is not pushed to A");
  }
  assert.deepEqual(other.pushes(sigB), [`${bSub.result} queued`, `${bSub.result} forwarded`]);
  assert.deepEqual(other.pushes(sigA), []);

  // What an unsubscribe or a close gives back can be subscribed again.
  if (r.relay.acceptors === 1) {
    const holder = peers.find((p) => p.subscribed.length > 0)!;
    const last = peers.slice(0, SOCKETS).findLast((p) => p.subscribed.length === 0)!;
    assert.ok((await last.call('txrelay_subscribe', ['statuses'])).error, 'still full');
    assert.equal((await holder.call('txrelay_unsubscribe', [holder.subscribed.pop()])).result, true);
    const again = await last.call('txrelay_subscribe', ['statuses']);
    assert.equal(typeof again.result, 'number', JSON.stringify(again));
    const closing = peers.find((p) => p !== last && p.subscribed.length > 0)!;
    const freed = closing.subscribed.length;
    closing.ws.close();
    await new Promise<void>((res) => closing.ws.once('close', () => res()));
    let more = 0;
    for (let k = 0; k < freed + 1; k++) if (typeof (await last.call('txrelay_subscribe', ['statuses'])).result === 'number') more++;
    assert.equal(more, freed, 'a closed socket gives its subscriptions back');
  }
});
