/**
 * Acknowledge first, then forward (src/ingress/ack-first.ts, `http.ack_first`):
 * the module's rules, a lane that waits for the acknowledgement's flush, and
 * the order on real sockets: the client's answer, then the upstream's request.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { AckFirst } from '../../src/ingress/ack-first.js';
import { laneHarness } from '../helpers/lanes.js';
import { eventually, startTestRelay } from '../helpers/relay.js';
import { legacyTransfer } from '../helpers/solana.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const microtasks = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

test('outside an ack scope the work is a microtask', async () => {
  const ack = new AckFirst();
  const ran: string[] = [];
  ack.after(() => ran.push('a'));
  assert.deepEqual(ran, []);
  await microtasks();
  assert.deepEqual(ran, ['a']);
});

test('inside a scope it waits past microtasks until drained, in order, once', async () => {
  const ack = new AckFirst();
  const ran: string[] = [];
  ack.enter();
  try {
    ack.after(() => ran.push('a'));
    ack.after(() => ran.push('b'));
  } finally {
    ack.leave();
  }
  await microtasks();
  assert.deepEqual(ran, []);
  assert.equal(ack.pending, 2);
  ack.drain();
  assert.deepEqual(ran, ['a', 'b']);
  assert.equal(ack.pending, 0);
  await turn();
  assert.deepEqual(ran, ['a', 'b']);
});

test('undrained, it runs at the end of the event-loop turn', async () => {
  const ack = new AckFirst();
  const ran: string[] = [];
  ack.enter();
  ack.after(() => ran.push('a'));
  ack.leave();
  await turn();
  assert.deepEqual(ran, ['a']);
  // The end-of-turn callback is re-armed for the next scope.
  ack.enter();
  ack.after(() => ran.push('b'));
  ack.leave();
  await turn();
  assert.deepEqual(ran, ['a', 'b']);
});

test('http.ack_first off: a microtask even inside a scope', async () => {
  const ack = new AckFirst(false);
  const ran: string[] = [];
  ack.enter();
  try {
    ack.after(() => ran.push('micro'));
    assert.equal(ack.pending, 0);
    await microtasks();
    assert.deepEqual(ran, ['micro']);
  } finally {
    ack.leave();
  }
});

test('two relays in one process: one relay\'s scope does not hold the other\'s work', async () => {
  const a = new AckFirst();
  const b = new AckFirst(false);
  const ran: string[] = [];
  a.enter();
  try {
    a.after(() => ran.push('a'));
    b.after(() => ran.push('b'));
    await microtasks();
    assert.deepEqual(ran, ['b'], 'b has no scope open, and its setting is its own');
  } finally {
    a.leave();
  }
  a.drain();
  assert.deepEqual(ran, ['b', 'a']);
});

const { upstream, lane } = laneHarness();

test('a lane kicked inside a scope sends nothing until the acknowledgements are out', async () => {
  const ack = new AckFirst();
  const up = await upstream();
  const l = lane('solana-single', { upstreams: [up.url], schedule: ack.after });
  ack.enter();
  try {
    assert.equal(l.offer(Buffer.alloc(120, 7).toString('base64')), true);
  } finally {
    ack.leave();
  }
  await microtasks();
  assert.equal(l.stats().upstreams[0]!.requests, 0);
  ack.drain();
  assert.equal(l.stats().upstreams[0]!.requests, 1);
  await l.whenIdle();
  assert.equal(up.requests.length, 1);
  assert.equal(l.stats().forwarded, 1);
});

/**
 * A JSON-RPC upstream on a raw socket, so the request's first bytes are seen in the very callback
 * that reads them (node:http would surface the call a tick or two later). Answers every call with a result.
 */
function rawUpstream(onFirstBytes: () => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (d) => {
      if (buf === '') onFirstBytes();
      buf += d.toString('latin1');
      const head = buf.indexOf('\r\n\r\n');
      const len = /content-length: *(\d+)/i.exec(buf);
      if (head < 0 || !len || buf.length < head + 4 + Number(len[1])) return;
      const id = /"id":(\d+)/.exec(buf.slice(head))![1];
      buf = '';
      const body = `{"jsonrpc":"2.0","id":${id},"result":"ok"}`;
      s.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

/**
 * Which of the two arrives first for a POST /v2: the client's answer or the upstream's request. The
 * first transaction opens the relay's upstream connection (a write waiting for a connect would go
 * last whatever the order); the second one is the one timed.
 */
async function firstArrival(ackFirst: boolean): Promise<string[]> {
  let order: string[] = [];
  const up = await rawUpstream(() => order.push('forward'));
  // threads 0: the check runs inline, inside the body callback, as on a lightly loaded relay.
  const relay = await startTestRelay({ http: { ack_first: ackFirst }, workers: { threads: 0 }, solana: { rpc_upstreams: [up.url] } });
  const sock = net.connect(relay.relay.ports.http, '127.0.0.1');
  try {
    const key = (await relay.createAccount()).uuid;
    let text = '';
    let answered: () => void = () => {};
    sock.on('data', (d) => {
      if (text === '') order.push('ack');
      text += d.toString('latin1');
      if (text.includes('\r\n\r\n') && text.endsWith('}')) answered();
    });
    const exchange = async (): Promise<string> => {
      text = '';
      order = [];
      const tx = legacyTransfer().bytes;
      const done = new Promise<void>((r) => (answered = r));
      sock.write(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-length: ${tx.length}\r\n\r\n`);
      sock.write(tx);
      await done;
      await eventually(() => order.length === 2, 5000, 'the forward');
      assert.match(text, /^HTTP\/1\.1 200 OK/);
      return text;
    };
    await exchange();
    await exchange();
    assert.equal(await relay.metric('txrelay_lane_forwarded_total'), 2);
    return order;
  } finally {
    sock.destroy();
    await relay.stop();
    await up.close();
  }
}

test('over real sockets the acknowledgement reaches the client before the forward reaches the upstream', async () => {
  assert.deepEqual(await firstArrival(true), ['ack', 'forward']);
});

test('with http.ack_first off an HTTP answer still goes first: a transaction is queued only after its socket\'s callback (docs/protocol.md#deviations)', async () => {
  assert.deepEqual(await firstArrival(false), ['ack', 'forward']);
});
