/**
 * Nothing acknowledged is lost at a stop (docs/operations.md#graceful-shutdown):
 * what the drain cannot forward (a hung upstream) is written to the data
 * directory, and the next start on that directory sends it; Solana entries
 * older than `solana.spill_max_age_s` are counted expired instead. Real
 * sockets, real signed transactions, a real upstream that hangs.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAcceptor } from '../../src/ingress/uws.js';
import { SPILL_DIR } from '../../src/forward/spill.js';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';
import { RawConnection } from '../helpers/raw-http.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';

const probe = loadAcceptor('auto');
const app = probe.uws.App();
const noThreads =
  typeof app.getDescriptor !== 'function' || typeof app.addChildAppDescriptor !== 'function'
    ? `${probe.name} cannot hand connections to other threads: skipping the acceptor-thread case`
    : false;
app.close();

const N_SOLANA = 12;
const N_EVM = 8;
/**
 * These waits are about what goes out, not how fast: CI's slowest hosts, four
 * test files at once, have taken over 5 s from a start to its first forward.
 */
const WAIT_MS = 30_000;

/** Waits for n upstream calls; on a timeout the error carries the relay's lane counters. */
async function resent(relay: TestRelay, up: TestUpstream, n: number): Promise<void> {
  try {
    await up.waitForCalls(n, WAIT_MS);
  } catch (e) {
    const text = await (await fetch(relay.admin + '/metrics')).text();
    const lanes = text.split('\n').filter((l) => l.startsWith('txrelay_lane_') && !l.endsWith(' 0'));
    throw new Error(`${(e as Error).message}; the relay's non-zero lane counters:\n${lanes.join('\n')}`);
  }
}

/** One request on a connection of its own: with acceptor threads, connections go to the threads in turn. */
async function send(relay: TestRelay, req: string | Buffer): Promise<number> {
  const c = new RawConnection(relay.relay.ports.http);
  try {
    await c.connected();
    await c.write(req);
    await c.until(() => c.responses().length > 0, 5000);
    return c.responses()[0]!.status;
  } finally {
    c.destroy();
  }
}

/** Sends N_SOLANA Solana and N_EVM EVM transactions, each acknowledged; returns what an upstream should see of them. */
async function acknowledge(relay: TestRelay, key: string): Promise<{ solana: string[]; evm: string[] }> {
  const out = { solana: [] as string[], evm: [] as string[] };
  for (let i = 0; i < N_SOLANA; i++) {
    const tx = sol.legacyTransfer();
    const status = await send(relay, Buffer.concat([Buffer.from(`POST /v2 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nContent-Length: ${tx.bytes.length}\r\n\r\n`), tx.bytes]));
    assert.equal(status, 200, 'Solana transaction acknowledged');
    out.solana.push(Buffer.from(tx.bytes).toString('base64'));
  }
  for (let i = 0; i < N_EVM; i++) {
    const tx = await evm.signed1559({ nonce: i });
    const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_sendRawTransaction', params: [tx.hex] });
    const status = await send(relay, `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    assert.equal(status, 202, 'EVM transaction acknowledged');
    out.evm.push(tx.hex.toLowerCase());
  }
  return out;
}

function spillFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, SPILL_DIR)).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
}

function spilled(dir: string): { family: string; item: string }[] {
  return spillFiles(dir).flatMap((n) => (JSON.parse(readFileSync(join(dir, SPILL_DIR, n), 'utf8')) as { entries: { family: string; item: string }[] }).entries);
}

const lanes = (up: TestUpstream) => ({ solana: { rpc_upstreams: [up.url] }, evm: { upstreams: { free: [up.url], paid: [up.url] } } });

/** A relay on `dir` with a hung upstream, sent everything, then stopped: what it acknowledged. */
async function stopWithHungUpstream(dir: string, acceptors: number): Promise<{ solana: string[]; evm: string[] }> {
  const hung = await startUpstream({ mode: 'hang' });
  try {
    const relay = await startTestRelay({ ...lanes(hung), http: { acceptors } }, dir);
    const key = (await relay.createAccount({ solana: { tps: 1000, burst: 1000 }, evm: { tps: 1000, burst: 1000 } })).uuid;
    const sent = await acknowledge(relay, key);
    for (let i = 0; acceptors > 1 && i < acceptors; i++) {
      assert.ok((await relay.metric('txrelay_acceptor_requests_total', { acceptor: String(i) })) > 0, `thread ${i} acknowledged some, so its lanes hold some`);
    }
    await hung.waitForCalls(1, WAIT_MS);
    await relay.stop();
    return sent;
  } finally {
    await hung.close();
  }
}

async function resendCase(acceptors: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-spill-'));
  try {
    const sent = await stopWithHungUpstream(dir, acceptors);
    const written = spilled(dir);
    assert.equal(written.length, N_SOLANA + N_EVM, 'every acknowledged transaction is written down');
    assert.deepEqual(new Set(written.map((e) => e.item)), new Set([...sent.solana, ...sent.evm]));
    assert.ok(!readFileSync(join(dir, SPILL_DIR, spillFiles(dir)[0]!), 'utf8').includes('"key"'));

    const up = await startUpstream();
    try {
      const relay = await startTestRelay({ ...lanes(up), http: { acceptors } }, dir);
      try {
        await resent(relay, up, N_SOLANA + N_EVM);
        const got = up.calls().map((c) => String((c.params as string[])[0]).toLowerCase());
        const want = [...sent.solana.map((s) => s.toLowerCase()), ...sent.evm];
        assert.deepEqual(new Set(got), new Set(want), 'the next start sends exactly what was acknowledged');
        assert.equal(got.length, want.length, 'each once');
        await eventually(() => spillFiles(dir).length === 0, WAIT_MS, 'spill removed once everything in it was sent');
      } finally {
        await relay.stop();
      }
      assert.equal(spillFiles(dir).length, 0, 'a clean stop writes nothing');
    } finally {
      await up.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('spill on stop', { concurrency: true }, () => {
  test('a stop with a hung upstream writes every acknowledged transaction down, and the next start sends them all', async () => {
    await resendCase(1);
  });

  test('with acceptor threads, every thread\'s leftovers are written down and sent by the next start', { skip: noThreads }, async () => {
    await resendCase(2);
  });

  test('Solana transactions written down longer ago than solana.spill_max_age_s are counted expired and not sent; EVM ones are still sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'txrelay-spill-'));
    try {
      const sent = await stopWithHungUpstream(dir, 1);
      assert.equal(spilled(dir).length, N_SOLANA + N_EVM);
      // The drain itself waits seconds on the hung upstream; this makes sure of the age.
      await new Promise((r) => setTimeout(r, 1100));
      const up = await startUpstream();
      try {
        const relay = await startTestRelay({ ...lanes(up), solana: { rpc_upstreams: [up.url], spill_max_age_s: 1 } }, dir);
        try {
          assert.equal(await relay.metric('txrelay_lane_dropped_total', { lane: 'solana-single', reason: 'expired_after_restart' }), N_SOLANA);
          await resent(relay, up, N_EVM);
          await eventually(() => spillFiles(dir).length === 0, WAIT_MS, 'spill removed');
          const got = up.calls().map((c) => String((c.params as string[])[0]).toLowerCase());
          assert.deepEqual(new Set(got), new Set(sent.evm), 'only the EVM transactions are sent');
        } finally {
          await relay.stop();
        }
      } finally {
        await up.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
