/**
 * HTTP pipelining on both acceptors (docs/protocol.md#deviations): rounds of
 * [ping, EVM, Solana /v2, ping, EVM] written back to back on one connection,
 * against a relay with real stand-in upstreams. Every request is answered in
 * order, or the connection is closed after complete answers; either way the
 * upstreams never receive a transaction whose answer the client did not see.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { RawConnection, parseResponses, type RawResponse } from '../helpers/raw-http.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';

const probe = loadAcceptor('auto');
const ACCEPTORS: { kind: 'uws' | 'node'; skip: string | false }[] = [
  { kind: 'uws', skip: probe.kind === 'uws' ? false : `no uWebSockets.js build loads here (${probe.skipped.join('; ')}): skipping its pipelining test` },
  { kind: 'node', skip: false },
];

interface Sent {
  /** 'ping', or the transaction id the upstream will see (EVM hex, Solana base64). */
  what: string;
  request: Buffer;
}

let nonce = 0;

async function round(key: string, jsonRpc: boolean): Promise<Sent[]> {
  const ping: Sent = { what: 'ping', request: Buffer.from('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n') };
  const evmTx = async (rpc: boolean): Promise<Sent> => {
    const tx = await evm.signedLegacy({ nonce: nonce++ });
    const body = rpc ? JSON.stringify({ jsonrpc: '2.0', id: nonce, method: 'eth_sendRawTransaction', params: [tx.hex] }) : tx.hex;
    const head = rpc
      ? `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
      : `POST /v2/svc_send_raw_transaction?auth=${key} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n`;
    return { what: tx.hex, request: Buffer.from(head + body) };
  };
  const s = sol.legacyTransfer();
  const solana: Sent = {
    what: Buffer.from(s.bytes).toString('base64'),
    request: Buffer.concat([Buffer.from(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Length: ${s.bytes.length}\r\n\r\n`), s.bytes]),
  };
  return [ping, await evmTx(jsonRpc), solana, ping, await evmTx(!jsonRpc)];
}

/** Every transaction the upstreams received, as sent. */
function forwarded(ups: TestUpstream[]): Set<string> {
  const out = new Set<string>();
  for (const u of ups) for (const c of u.calls()) if (Array.isArray(c.params) && typeof c.params[0] === 'string') out.add(c.params[0]);
  return out;
}

/** What the client saw on one connection, checked against what was sent and what was forwarded. */
function account(sent: Sent[], c: RawConnection, fwd: Set<string>): { answered: number; lost: string[]; accepted: string[]; refusedButSent: string[] } {
  const answers: RawResponse[] = c.responses();
  assert.ok(answers.length <= sent.length, 'no answer without a request');
  if (answers.length < sent.length) {
    // The connection ends after complete answers: closed, and no torn answer behind them.
    assert.ok(c.closed, 'fewer answers than requests only when the connection closed');
    assert.equal(parseResponses(c.data, false).length, answers.length, 'no partial answer');
  }
  const accepted: string[] = [];
  const refused: string[] = [];
  for (let i = 0; i < answers.length; i++) {
    const a = answers[i]!;
    const s = sent[i]!;
    // In order: a ping is answered `pong`, a transaction by its own id.
    if (s.what === 'ping') assert.deepEqual([a.status, a.body], [200, 'pong'], `answer ${i} is the ping's`);
    else {
      // Accepted, or refused for load (a 503 under this burst): never another request's answer.
      assert.notEqual(a.body, 'pong', `answer ${i} is a transaction's`);
      assert.ok([200, 202, 503].includes(a.status), `answer ${i}: ${a.status} ${a.body}`);
      const ok = a.status !== 503 && !a.body.includes('"error"');
      (ok ? accepted : refused).push(s.what);
    }
  }
  const lost = sent.slice(answers.length).filter((s) => s.what !== 'ping' && fwd.has(s.what)).map((s) => s.what);
  return { answered: answers.length, lost, accepted, refusedButSent: refused.filter((w) => fwd.has(w)) };
}

for (const { kind, skip } of ACCEPTORS) {
  test(`${kind}: pipelined [ping, EVM, Solana, ping, EVM] rounds are answered in order, and nothing unanswered is forwarded`, { skip }, async (t) => {
    const evmUp = await startUpstream();
    const solUp = await startUpstream();
    t.after(() => Promise.all([evmUp.close(), solUp.close()]));
    const relay: TestRelay = await startTestRelay({
      http: { acceptor: kind },
      evm: { upstreams: { paid: [evmUp.url], free: [evmUp.url] } },
      solana: { rpc_upstreams: [solUp.url] },
    });
    t.after(() => relay.stop());
    const key = (await relay.createAccount({ plan: 'paid', evm: { tps: 100_000, burst: 100_000 }, solana: { tps: 100_000, burst: 100_000 } })).uuid;

    const ROUNDS = 40;
    let answered = 0;
    let requests = 0;
    const lost: string[] = [];
    const accepted: string[] = [];
    const refusedButSent: string[] = [];
    // The whole stream on one connection, then the same on a fresh connection per round.
    const batches: Sent[][] = [];
    const all: Sent[] = [];
    for (let r = 0; r < ROUNDS; r++) all.push(...(await round(key, r % 2 === 0)));
    batches.push(all);
    for (let r = 0; r < ROUNDS; r++) batches.push(await round(key, r % 2 === 1));
    const conns: { c: RawConnection; sent: Sent[] }[] = [];
    for (const sent of batches) {
      const c = new RawConnection(relay.relay.ports.http);
      t.after(() => c.destroy());
      await c.write(Buffer.concat(sent.map((s) => s.request)));
      conns.push({ c, sent });
    }
    for (const { c, sent } of conns) await c.until(() => c.responses().length >= sent.length, 10_000);
    // Anything forwarded has reached the upstreams by now: the relay forwards at once.
    await new Promise((r) => setTimeout(r, 500));
    const fwd = forwarded([evmUp, solUp]);
    for (const { c, sent } of conns) {
      const r = account(sent, c, fwd);
      answered += r.answered;
      requests += sent.length;
      lost.push(...r.lost);
      accepted.push(...r.accepted);
      refusedButSent.push(...r.refusedButSent);
    }
    const txAnswered = conns.reduce((n, { c, sent }) => n + sent.slice(0, c.responses().length).filter((s) => s.what !== 'ping').length, 0);
    t.diagnostic(`${kind}: ${answered} of ${requests} requests answered; ${txAnswered} transaction answers, ${accepted.length} accepted; ${fwd.size} forwarded`);
    assert.deepEqual(lost, [], 'no transaction forwarded without its answer');
    assert.deepEqual(refusedButSent, [], 'no refused transaction forwarded');
    assert.deepEqual(accepted.filter((w) => !fwd.has(w)), [], 'every accepted transaction forwarded');
    assert.equal(fwd.size, accepted.length, 'forwarded = accepted answers seen');
    assert.ok(fwd.size <= txAnswered);
    // node:http answers pipelined requests in order; uWS closes such a connection (docs/protocol.md#deviations).
    if (kind === 'node') assert.equal(answered, requests, 'node:http answers every pipelined request');

    // The same requests one at a time on one connection: every answer, every transaction forwarded once.
    const before = forwarded([evmUp, solUp]).size;
    const seq = await round(key, true);
    const c = new RawConnection(relay.relay.ports.http);
    t.after(() => c.destroy());
    for (let i = 0; i < seq.length; i++) {
      await c.write(seq[i]!.request);
      assert.ok(await c.until(() => c.responses().length > i, 5000), `sequential answer ${i}`);
    }
    assert.equal(c.closed, false);
    const txs = seq.filter((s) => s.what !== 'ping').map((s) => s.what);
    const deadline = Date.now() + 5000;
    while (!txs.every((w) => forwarded([evmUp, solUp]).has(w)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(forwarded([evmUp, solUp]).size, before + txs.length, 'each sequential transaction forwarded');
  });
}

for (const { kind, skip } of ACCEPTORS) {
  test(`${kind}: a pipelined JSON-RPC array's items are forwarded only when its answer is seen`, { skip }, async (t) => {
    const up = await startUpstream();
    t.after(() => up.close());
    const relay: TestRelay = await startTestRelay({ http: { acceptor: kind }, evm: { upstreams: { paid: [up.url], free: [up.url] } } });
    t.after(() => relay.stop());
    const key = (await relay.createAccount({ plan: 'paid', evm: { tps: 100_000, burst: 100_000 } })).uuid;
    const arrayRequest = async (): Promise<{ hexes: string[]; request: Buffer }> => {
      const hexes: string[] = [];
      for (let i = 0; i < 4; i++) hexes.push((await evm.signedLegacy({ nonce: nonce++ })).hex);
      const body = JSON.stringify(hexes.map((h, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendRawTransaction', params: [h] })));
      const head = `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      return { hexes, request: Buffer.from(head + body) };
    };
    const ping = Buffer.from('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n');
    // 20 connections, each [array, ping, array] written at once.
    const conns: { c: RawConnection; arrays: string[][] }[] = [];
    for (let i = 0; i < 20; i++) {
      const a = await arrayRequest();
      const b = await arrayRequest();
      const c = new RawConnection(relay.relay.ports.http);
      t.after(() => c.destroy());
      await c.write(Buffer.concat([a.request, ping, b.request]));
      conns.push({ c, arrays: [a.hexes, b.hexes] });
    }
    for (const { c } of conns) await c.until(() => c.responses().length >= 3 || c.closed, 10_000);
    await new Promise((r) => setTimeout(r, 500));
    const fwd = forwarded([up]);
    let seen = 0;
    for (const { c, arrays } of conns) {
      const answers = c.responses();
      // Answer 0 is the first array's, answer 2 the second's (answer 1 the ping's).
      const answeredArrays = [answers.length >= 1, answers.length >= 3];
      arrays.forEach((hexes, i) => {
        if (answeredArrays[i]) seen++;
        else assert.deepEqual(hexes.filter((h) => fwd.has(h)), [], `an unanswered array's items are not forwarded (${kind})`);
      });
    }
    t.diagnostic(`${kind}: ${seen} of 40 array answers seen, ${fwd.size} items forwarded`);
    // Every item forwarded belongs to an answered array, and an answered array's accepted items were forwarded.
    for (const { c, arrays } of conns) {
      const answers = c.responses();
      [answers[0], answers[2]].forEach((a, i) => {
        if (a === undefined) return;
        const items = JSON.parse(a.body) as { result?: string; error?: { code: number } }[];
        items.forEach((it, j) => {
          if (it.result !== undefined) assert.ok(fwd.has(arrays[i]![j]!), `accepted item ${j} forwarded (${kind})`);
          else assert.ok(!fwd.has(arrays[i]![j]!) && [-32001, -32006].includes(it.error!.code), `item ${j}: ${JSON.stringify(it)}`);
        });
      });
    }
    if (kind === 'node') {
      assert.equal(seen, 40, 'node:http answers every pipelined array');
      assert.ok(fwd.size > 0, 'items were forwarded');
    }
  });
}
