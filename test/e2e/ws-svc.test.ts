/**
 * A `/ws` answer says what HTTP says in `x-svc-request-id`, `x-svc-duplicate`
 * and `x-svc-dry-run`, in the response object's `svc` member
 * (docs/protocol.md#websocket): the same cases sent both ways read the same.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHalfDryRelay } from '../helpers/dry-lanes.js';
import { WsClient } from '../helpers/ws-client.js';
import { signed1559 } from '../helpers/evm.js';
import { legacyTransfer } from '../helpers/solana.js';

let nonce = 0;

// The paid EVM lane forwards; the free lane and both Solana lanes run dry.
const { relay, free, paid, close } = await startHalfDryRelay();
after(close);

interface Facts {
  duplicate: boolean;
  dry_run: boolean;
  request_id: string | null;
}

async function overHttp(key: string, method: string, params: unknown, solana: boolean): Promise<Facts> {
  const r = await fetch(relay.base + '/', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(solana ? { 'api-key': key } : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await r.json()) as { result?: unknown; svc?: unknown };
  assert.ok(body.result !== undefined, JSON.stringify(body));
  // HTTP says it in headers only.
  assert.equal(body.svc, undefined);
  return {
    duplicate: r.headers.get('x-svc-duplicate') === 'true',
    dry_run: r.headers.get('x-svc-dry-run') === 'true',
    request_id: r.headers.get('x-svc-request-id'),
  };
}

async function overWs(ws: WsClient, method: string, params: unknown): Promise<Facts> {
  const m = await ws.call(method, params);
  assert.ok(m.result !== undefined, JSON.stringify(m));
  const svc = (m.svc ?? {}) as Partial<Facts>;
  return { duplicate: svc.duplicate === true, dry_run: svc.dry_run === true, request_id: svc.request_id ?? null };
}

/** What a status read by `id` names as its request (the key as `?api-key=`, which the status API takes too). */
async function requestOf(key: string, id: string): Promise<string> {
  const r = await fetch(`${relay.base}/v1/status/${encodeURIComponent(id)}?api-key=${key}`);
  assert.equal(r.status, 200);
  return ((await r.json()) as { request_id: string }).request_id;
}

const wsOf = (key: string) => WsClient.open(`${relay.base.replace('http', 'ws')}/ws?api-key=${key}`);

test('EVM over /ws and over HTTP: the same request id, duplicate and dry-run facts', async () => {
  const ws = await wsOf(paid);
  try {
    const a = await signed1559({ nonce: nonce++ });
    const b = await signed1559({ nonce: nonce++ });
    const fresh = [await overHttp(paid, 'eth_sendRawTransaction', [a.hex], false), await overWs(ws, 'eth_sendRawTransaction', [b.hex])];
    for (const f of fresh) {
      assert.equal(f.duplicate, false);
      assert.equal(f.dry_run, false);
      assert.ok(f.request_id);
    }
    // The request ids are the ones the status API files the transactions under.
    assert.equal(await requestOf(paid, a.hash), fresh[0]!.request_id);
    assert.equal(await requestOf(paid, b.hash), fresh[1]!.request_id);
    assert.notEqual(fresh[0]!.request_id, fresh[1]!.request_id);

    // Each sent again the other way: a duplicate both ways.
    const again = [await overHttp(paid, 'eth_sendRawTransaction', [b.hex], false), await overWs(ws, 'eth_sendRawTransaction', [a.hex])];
    for (const f of again) {
      assert.equal(f.duplicate, true);
      assert.equal(f.dry_run, false);
      assert.ok(f.request_id);
    }
  } finally {
    ws.ws.close();
  }
});

test('a lane with no upstream: dry_run over /ws where HTTP sends x-svc-dry-run, EVM and Solana', async () => {
  const ws = await wsOf(free);
  try {
    const evm = [
      await overHttp(free, 'eth_sendRawTransaction', [(await signed1559({ nonce: nonce++ })).hex], false),
      await overWs(ws, 'eth_sendRawTransaction', [(await signed1559({ nonce: nonce++ })).hex]),
    ];
    const t1 = legacyTransfer();
    const t2 = legacyTransfer();
    const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
    const solana = [
      await overHttp(free, 'sendTransaction', [b64(t1.bytes), { encoding: 'base64' }], true),
      await overWs(ws, 'sendTransaction', [b64(t2.bytes), { encoding: 'base64' }]),
    ];
    for (const f of [...evm, ...solana]) {
      assert.deepEqual({ duplicate: f.duplicate, dry_run: f.dry_run }, { duplicate: false, dry_run: true });
      assert.ok(f.request_id);
    }
    const dup = [
      await overHttp(free, 'sendTransaction', [b64(t2.bytes), { encoding: 'base64' }], true),
      await overWs(ws, 'sendTransaction', [b64(t1.bytes), { encoding: 'base64' }]),
    ];
    for (const f of dup) assert.deepEqual({ duplicate: f.duplicate, dry_run: f.dry_run }, { duplicate: true, dry_run: true });
  } finally {
    ws.ws.close();
  }
});

test('an array over /ws: each answer that sent has its own svc with the array\'s one request id, as HTTP\'s one header; the refused member has none', async () => {
  const ws = await wsOf(paid);
  try {
    const [a, b, c] = [await signed1559({ nonce: nonce++ }), await signed1559({ nonce: nonce++ }), await signed1559({ nonce: nonce++ })];
    const call = (id: number, hex: string) => ({ jsonrpc: '2.0', id, method: 'eth_sendRawTransaction', params: [hex] });
    const http = await fetch(relay.base + '/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${paid}` },
      body: JSON.stringify([call(1, a.hex), call(2, '0x12')]),
    });
    const httpRequest = http.headers.get('x-svc-request-id');
    assert.ok(httpRequest);
    const httpBody = (await http.json()) as { result?: string; svc?: unknown }[];
    assert.ok(httpBody.every((m) => m.svc === undefined), 'HTTP says it in headers only');

    // b is new, 0x12 is refused, a was sent over HTTP above.
    ws.ws.send(JSON.stringify([call(1, b.hex), call(2, '0x12'), call(3, a.hex), call(4, c.hex)]));
    const answers = (await ws.until(() => ws.messages.find((m) => Array.isArray(m)), 5000, 'the array\'s answer')) as any[];
    const byId = new Map(answers.map((m) => [m.id, m]));
    assert.equal(byId.get(2).error.code, -32602);
    assert.equal(byId.get(2).svc, undefined);
    const sent = [byId.get(1), byId.get(3), byId.get(4)];
    for (const m of sent) assert.ok(m.result && m.svc?.request_id, JSON.stringify(m));
    const wsRequest = byId.get(1).svc.request_id as string;
    assert.ok(sent.every((m) => m.svc.request_id === wsRequest), 'one request id for the whole array');
    assert.notEqual(wsRequest, httpRequest);
    assert.deepEqual(sent.map((m) => m.svc.duplicate === true), [false, true, false]);
    // Both ids are the ones the status API files the transactions under.
    assert.equal(await requestOf(paid, a.hash), httpRequest);
    assert.equal(await requestOf(paid, b.hash), wsRequest);
    assert.equal(await requestOf(paid, c.hash), wsRequest);
  } finally {
    ws.ws.close();
  }
});

test('a refusal over /ws carries no svc member, as HTTP sends none of those headers', async () => {
  const ws = await wsOf(paid);
  try {
    const m = await ws.call('eth_sendRawTransaction', ['0x1234']);
    assert.equal(m.error.code, -32602);
    assert.equal(m.svc, undefined);
  } finally {
    ws.ws.close();
  }
});
