/**
 * Behind a trusted proxy (`http.trust_proxy`), the per-IP limit keys on the
 * address the proxy wrote, on both acceptors, whether the proxy appends to
 * the client's X-Forwarded-For line or adds a line of its own (HAProxy's
 * `option forwardfor`): several lines are one list in order
 * (docs/protocol.md#rate-limits). Raw sockets, so the header lines go out
 * exactly as written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { startTestRelay } from '../helpers/relay.js';
import { rawExchange } from '../helpers/raw-http.js';
import { legacyTransfer } from '../helpers/solana.js';

const probe = loadAcceptor('auto');
const skipOf = (acceptor: 'uws' | 'node'): string | false =>
  acceptor === 'uws' && probe.kind !== 'uws' ? `no uWebSockets.js build loads here (${probe.skipped.join('; ')}): skipping its X-Forwarded-For case` : false;

const RPS = 5;
const SENT = 40;

async function flood(acceptor: 'uws' | 'node', proxyLine: (i: number) => string): Promise<{ passed: number; limited: number; elapsedS: number }> {
  const relay = await startTestRelay({
    http: { acceptor, trust_proxy: true, proxy_hops: 1 },
    limits: { ip_rps: RPS, ip_burst: RPS },
  });
  try {
    assert.equal(relay.relay.acceptor, acceptor);
    const acct = await relay.createAccount({ solana: { tps: 1000, burst: 1000 } });
    const port = Number(new URL(relay.base).port);
    let passed = 0;
    let limited = 0;
    const t0 = performance.now();
    for (let i = 0; i < SENT; i++) {
      const tx = Buffer.from(legacyTransfer().bytes);
      // The client forges a fresh address in its own line every time; the proxy adds its line after it.
      const head =
        `POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${acct.uuid}\r\nContent-Type: application/octet-stream\r\n` +
        `X-Forwarded-For: 198.51.100.${i}\r\n${proxyLine(i)}Content-Length: ${tx.length}\r\n\r\n`;
      const r = await rawExchange(port, Buffer.concat([Buffer.from(head, 'latin1'), tx]));
      const status = r.responses[0]?.status;
      assert.ok(status !== undefined, `request ${i} got an answer`);
      if (status === 429) limited++;
      else if (status === 200) passed++;
      else assert.fail(`request ${i}: status ${status} ${r.responses[0]!.body}`);
    }
    return { passed, limited, elapsedS: (performance.now() - t0) / 1000 };
  } finally {
    await relay.stop();
  }
}

for (const acceptor of ['uws', 'node'] as const) {
  for (const [what, proxyLine] of [
    ['its own line', () => 'X-Forwarded-For: 203.0.113.9\r\n'],
    ['its own line with a port', (i: number) => `X-Forwarded-For: 203.0.113.9:${40000 + i}\r\n`],
  ] as const) {
    test(`${acceptor}: a proxy that adds ${what} to X-Forwarded-For keeps ip_rps ${RPS} for the client it names`, { skip: skipOf(acceptor) }, async (t) => {
      const { passed, limited, elapsedS } = await flood(acceptor, proxyLine);
      t.diagnostic(`${passed} of ${SENT} passed, ${limited} refused 429, in ${elapsedS.toFixed(2)} s`);
      // The burst plus what the bucket refilled while the requests went out: every other request is refused.
      const allowed = RPS + Math.ceil(RPS * elapsedS);
      assert.ok(passed >= 1, 'the first requests pass');
      assert.ok(passed <= allowed, `${passed} of ${SENT} passed in ${elapsedS.toFixed(2)} s (at most ${allowed} allowed)`);
      assert.equal(passed + limited, SENT);
    });
  }
}
