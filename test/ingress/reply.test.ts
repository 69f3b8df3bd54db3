/**
 * Answer coalescing in `Replier.send` (src/ingress/reply.ts): the first answer of an
 * event-loop turn is written at once, later answers of the same turn at the
 * end of the turn, back to back; an answer whose client went away meanwhile
 * is dropped, never written.
 *
 * Which answers are held inside one turn cannot be seen through a socket, so
 * the first two tests drive `send` with a recording stand-in for uWS's
 * response object (the one place this file does not use the real thing);
 * the last one answers parked requests in one turn through the real acceptor
 * (uWS where a build loads, node:http otherwise) over real sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { Replier, type Res } from '../../src/ingress/reply.js';
import { AckFirst } from '../../src/ingress/ack-first.js';

/** A relay's replier, coalescing as by default; `plain` is one with `http.coalesce_answers` off. */
const rp = new Replier({ coalesce: true, ack: new AckFirst(), node: 'test' });
const plain = new Replier({ coalesce: false, ack: new AckFirst(), node: 'test' });
import { loadAcceptor, type HttpResponse, type us_listen_socket } from '../../src/ingress/uws.js';
import { RawConnection } from '../helpers/raw-http.js';

/** Records what a handler wrote; `abort()` plays a client closing its connection. */
function recorder(log: string[], name: string): Res & { abort(): void } {
  let onAborted: (() => void) | null = null;
  const r = {
    onAborted(h: () => void) {
      onAborted = h;
      return r;
    },
    cork(cb: () => void) {
      cb();
      return r;
    },
    writeStatus(s: string) {
      log.push(`${name} ${s}`);
      return r;
    },
    writeHeader() {
      return r;
    },
    end(body: string) {
      log.push(`${name} body ${body}`);
      return r;
    },
    abort() {
      onAborted?.();
    },
  };
  return rp.guard(r as unknown as HttpResponse) as Res & { abort(): void };
}

test('the first answer of a turn is written at once; later answers of that turn at its end, in order', async () => {
  await nextTurn(); // start from a fresh turn
  const log: string[] = [];
  const [a, b, c] = ['a', 'b', 'c'].map((n) => recorder(log, n));
  rp.send(a!, 200, null, '1');
  assert.deepEqual(log, ['a 200 OK', 'a body 1'], 'the first answer went out synchronously');
  rp.send(b!, 429, null, '2');
  rp.send(c!, 503, null, '3');
  assert.equal(log.length, 2, 'the second and third answers are held until the turn ends');
  await nextTurn();
  assert.deepEqual(log, ['a 200 OK', 'a body 1', 'b 429 Too Many Requests', 'b body 2', 'c 503 Service Unavailable', 'c body 3']);
  const d = recorder(log, 'd');
  rp.send(d, 200, null, '4');
  assert.deepEqual(log.slice(-2), ['d 200 OK', 'd body 4'], 'a new turn starts with an immediate answer again');
});

test('holdAnswers (a verifier batch answered outside a socket callback) holds the first answer too, until the flush', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b] = ['a', 'b'].map((n) => recorder(log, n));
  rp.holdAnswers();
  rp.send(a!, 200, null, '1');
  rp.send(b!, 200, null, '2');
  assert.equal(log.length, 0, 'nothing written while the batch is answered');
  rp.flushHeld();
  assert.deepEqual(log, ['a 200 OK', 'a body 1', 'b 200 OK', 'b body 2'], 'the whole batch written back to back, in order');
  await nextTurn();
  const c = recorder(log, 'c');
  rp.send(c, 200, null, '3');
  assert.deepEqual(log.slice(-2), ['c 200 OK', 'c body 3'], 'the next turn starts with an immediate answer again');
  // With coalescing off nothing is ever held.
  plain.holdAnswers();
  plain.send(recorder(log, 'd'), 200, null, '4');
  assert.deepEqual(log.slice(-2), ['d 200 OK', 'd body 4']);
});

test('a held refusal (limits.shed_hold_ms) is written once its hold is over, in arrival order; a client that left gets nothing', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b, c] = ['a', 'b', 'c'].map((n) => recorder(log, n));
  const t0 = performance.now();
  rp.sendHeld(a!, 40, 503, null, '1');
  rp.sendHeld(b!, 40, 503, null, '2');
  rp.sendHeld(c!, 40, 503, null, '3');
  assert.equal(rp.heldRefusals(), 3);
  await nextTurn();
  assert.equal(log.length, 0, 'nothing written in the turn, nor at its end');
  b!.abort();
  rp.send(a!, 200, null, 'again');
  // Each is due 40 ms after its own push: on a loaded host the three can fall due a timer apart.
  while (rp.heldRefusals() > 0) await sleep(5);
  assert.ok(performance.now() - t0 >= 39, `written after its hold (${(performance.now() - t0).toFixed(1)} ms)`);
  assert.deepEqual(log, ['a 503 Service Unavailable', 'a body 1', 'c 503 Service Unavailable', 'c body 3'], 'answering it again was a no-op');
  assert.equal(rp.heldRefusals(), 0);
  // A hold of 0 is an ordinary answer.
  await nextTurn();
  rp.sendHeld(recorder(log, 'd'), 0, 503, null, '4');
  assert.deepEqual(log.slice(-2), ['d 503 Service Unavailable', 'd body 4']);
});

test('held refusals are all written at once on shutdown (releaseHeld), none left for the closing listeners', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b] = ['a', 'b'].map((n) => recorder(log, n));
  rp.sendHeld(a!, 10_000, 503, null, '1');
  rp.sendHeld(b!, 5, 503, null, '2');
  assert.equal(log.length, 0);
  rp.releaseHeld();
  assert.deepEqual(log, ['a 503 Service Unavailable', 'a body 1', 'b 503 Service Unavailable', 'b body 2'], 'in arrival order');
  assert.equal(rp.heldRefusals(), 0);
  await sleep(20);
  assert.equal(log.length, 4, 'and never again when their timers would have run');
});

test('a held answer whose client went away before the turn ended is dropped, and the others still go out', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b, c] = ['a', 'b', 'c'].map((n) => recorder(log, n));
  rp.send(a!, 200, null, '1');
  rp.send(b!, 200, null, '2');
  rp.send(c!, 200, null, '3');
  b!.abort();
  await nextTurn();
  assert.deepEqual(log, ['a 200 OK', 'a body 1', 'c 200 OK', 'c body 3']);
  // Answering twice is still a no-op, held or not.
  rp.send(c!, 500, null, 'again');
  await nextTurn();
  assert.equal(log.length, 4);
});

test('answers held in a turn go out when their maker flushes, before the turn ends', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b, c] = ['a', 'b', 'c'].map((n) => recorder(log, n));
  rp.send(a!, 200, null, '1');
  rp.send(b!, 200, null, '2');
  rp.flushHeld();
  assert.deepEqual(log, ['a 200 OK', 'a body 1', 'b 200 OK', 'b body 2']);
  rp.send(c!, 200, null, '3');
  assert.equal(log.length, 4, 'the turn has not ended: later answers are still held');
  await nextTurn();
  assert.deepEqual(log.slice(-2), ['c 200 OK', 'c body 3']);
});

test('with http.coalesce_answers off every answer is written when it is made', async () => {
  await nextTurn();
  const log: string[] = [];
  const [a, b] = ['a', 'b'].map((n) => recorder(log, n));
  plain.send(a!, 200, null, '1');
  plain.send(b!, 200, null, '2');
  assert.deepEqual(log, ['a 200 OK', 'a body 1', 'b 200 OK', 'b body 2']);
});

test('requests answered together in one turn all get their own answer, over real sockets', async () => {
  const acceptor = loadAcceptor('auto');
  const app = acceptor.uws.App();
  const parked: Res[] = [];
  const N = 8;
  app.post('/park', (r) => {
    const res = rp.guard(r);
    parked.push(res);
    // Read the (empty) body so uWS considers the request complete.
    res.onData(() => {});
    if (parked.length === N) {
      // One turn answers all of them: the first at once, the rest at the turn's end.
      parked.forEach((p, i) => rp.send(p, 200, 'text/plain', `answer ${i}`));
    }
  });
  const listen = await new Promise<us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('listen failed')))),
  );
  const port = acceptor.uws.us_socket_local_port(listen);
  const conns: RawConnection[] = [];
  try {
    for (let i = 0; i < N; i++) {
      const c = new RawConnection(port);
      conns.push(c);
      await c.write(`POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
      // Keep arrival order = park order, so answer i belongs to connection i.
      while (parked.length < i + 1) await nextTurn();
    }
    await Promise.all(conns.map((c) => c.until(() => c.responses().length >= 1, 5_000)));
    conns.forEach((c, i) => {
      const r = c.responses();
      assert.equal(r.length, 1, `connection ${i} got exactly one answer`);
      assert.equal(r[0]!.status, 200);
      assert.equal(r[0]!.body, `answer ${i}`);
    });
  } finally {
    for (const c of conns) c.destroy();
    acceptor.uws.us_listen_socket_close(listen);
    app.close();
  }
});

test('answers made in their handlers, several in one turn, go out without the door registering an abort handler', async () => {
  // A refusal at the gate is answered before its handler returns, with no abort handler of its own;
  // a second one in the same turn is held past the return, which uWS allows only with one (else it
  // aborts the process, and the node:http acceptor throws): send registers it for what it holds.
  const acceptor = loadAcceptor('auto');
  const app = acceptor.uws.App();
  let n = 0;
  app.post('/refuse', (r) => rp.send(rp.begin(r), 429, 'text/plain', `refused ${n++}`));
  const listen = await new Promise<us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('listen failed')))),
  );
  const port = acceptor.uws.us_socket_local_port(listen);
  const N = 8;
  const conns = Array.from({ length: N }, () => new RawConnection(port));
  try {
    await Promise.all(conns.map((c) => c.connected()));
    // Written together, read by the acceptor in one poll: one turn answers them all.
    await Promise.all(conns.map((c) => c.write(`POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`)));
    await Promise.all(conns.map((c) => c.until(() => c.responses().length >= 1, 5_000)));
    for (const c of conns) assert.deepEqual(c.responses().map((r) => r.status), [429]);
    assert.equal(n, N);
  } finally {
    for (const c of conns) c.destroy();
    acceptor.uws.us_listen_socket_close(listen);
    app.close();
  }
});

test('commits: a transaction checked inside a socket callback is queued after it, its answer then written at once; a close first means no commit', async () => {
  await nextTurn();
  const ack = new AckFirst();
  const r = new Replier({ coalesce: true, ack, node: 'test' });
  const log: string[] = [];
  const mk = (name: string) => {
    let onAborted: (() => void) | null = null;
    const x = {
      onAborted: (h: () => void) => ((onAborted = h), x),
      cork: (cb: () => void) => (cb(), x),
      writeStatus: (s: string) => (log.push(`${name} ${s}`), x),
      writeHeader: () => x,
      end: (body: string) => (log.push(`${name} body ${body}`), x),
      abort: () => onAborted?.(),
    };
    return r.guard(x as unknown as HttpResponse) as Res & { abort(): void };
  };
  // Slot i stands for a checked transaction answered on res[i]; `checked` is the pipeline's resumption.
  const res: [Res, string][] = [];
  const commit = (res: Res, name: string): void => {
    if (res.aborted) return void log.push(`${name} not queued`);
    log.push(`${name} queued`);
    r.send(res, 200, null, name);
  };
  r.drive({ verifier: { inflight: 0, tick: () => {}, wake: () => {} }, checked: (s) => commit(...res[s]!) });
  // What the pipeline does with a checked slot (src/pipeline/admit.ts onChecked), reading the Turn.
  const checked = (s: number): boolean => {
    if (r.committing || (r.ack.depth === 0 && !r.holding)) return false;
    if (r.commits.push(s) === 1) setImmediate(r.runCommits);
    return true;
  };
  const [kept, closed] = [mk('kept'), mk('closed')];
  res.push([kept, 'kept'], [closed, 'closed']);
  ack.enter();
  try {
    assert.equal(checked(0), true, 'inside the callback it waits');
    assert.equal(checked(1), true);
    r.runCommits();
    closed.abort(); // uWS closing a pipelining connection, inside the same read
  } finally {
    ack.leave();
  }
  assert.deepEqual(log, [], 'nothing queued or written inside the callback');
  await nextTurn();
  assert.deepEqual(log, ['kept queued', 'kept 200 OK', 'kept body kept', 'closed not queued']);
  // Outside a callback, with an answer already written this turn (coalescing would hold the next): it waits too.
  log.length = 0;
  res.push([mk('later'), 'later']);
  r.send(mk('first'), 200, null, 'first');
  assert.equal(checked(2), true);
  await nextTurn();
  assert.deepEqual(log, ['first 200 OK', 'first body first', 'later queued', 'later 200 OK', 'later body later']);
  // A fresh turn outside any callback: at once.
  await nextTurn();
  assert.equal(checked(3), false);
});
