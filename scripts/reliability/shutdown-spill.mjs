#!/usr/bin/env node
/**
 * shutdown-spill: a SIGTERM loses nothing acknowledged
 * (docs/operations.md#graceful-shutdown). With every upstream hung, `txrelay
 * serve` acknowledges `--solana` Solana (POST /v2) and `--evm` EVM
 * (eth_sendRawTransaction) transactions over a few connections, then gets a
 * SIGTERM: its drain cannot send them, so it writes them to the data
 * directory. The upstream recovers, a new `txrelay serve` starts on the same
 * directory, and every acknowledged transaction must reach the upstream.
 * Reports how many were written down, the time to write them (from the stop's
 * log line), the stop's duration, and the time from the new start until the
 * last one arrived.
 *
 *   node scripts/reliability/shutdown-spill.mjs [--solana 150] [--evm 81] [--acceptors 1]
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'undici';
import { startRelay, tempDir, emit, deadline, args, sleep, round } from './lib.mjs';
import { startUpstream } from './upstream.mjs';
import { evmTransfers, solanaTransfers } from '../../dist/src/bench/txgen.js';

const NAME = 'shutdown-spill';
const CONNECTIONS = 4;
const RESEND_WAIT_MS = 20_000;

const o = args({ solana: 150, evm: 81, acceptors: 1 });
deadline(NAME, 120_000);

const upstream = await startUpstream();
upstream.hang();
const dataDir = join(tempDir(), 'data');
const env = {
  TXRELAY_UDP_ENABLED: 'false',
  TXRELAY_LIMITS_IP_RPS: '1000000',
  TXRELAY_LIMITS_IP_BURST: '2000000',
  TXRELAY_HTTP_ACCEPTORS: String(o.acceptors),
  TXRELAY_EVM_UPSTREAMS_PAID: upstream.url,
  TXRELAY_SOLANA_RPC_UPSTREAMS: upstream.url,
};

const first = await startRelay({ env, dataDir, label: 'first relay' });
const uuid = (await first.createAccount({ plan: 'paid', evm: { tps: 1_000_000, burst: 1_000_000 }, solana: { tps: 1_000_000, burst: 1_000_000 } })).uuid;
const sol = solanaTransfers(o.solana);
const evm = (await evmTransfers(o.evm, { chainId: 1 })).map((t) => '0x' + t.toString('hex'));
const work = [...sol.map((b) => ({ solana: b })), ...evm.map((h, i) => ({ evm: h, id: i }))];
const acked = new Set();
let refused = 0;
const clients = Array.from({ length: CONNECTIONS }, () => new Client(first.base, { pipelining: 1 }));
let next = 0;
await Promise.all(
  clients.map(async (c) => {
    while (next < work.length) {
      const w = work[next++];
      const r = w.solana
        ? await c.request({ path: '/v2', method: 'POST', headers: { 'api-key': uuid }, body: w.solana })
        : await c.request({
            path: '/',
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${uuid}` },
            body: JSON.stringify({ jsonrpc: '2.0', id: w.id, method: 'eth_sendRawTransaction', params: [w.evm] }),
          });
      await r.body.text();
      if (r.statusCode === 200 || r.statusCode === 202) acked.add(w.solana ? w.solana.toString('base64') : w.evm.toLowerCase());
      else refused++;
    }
  }),
);
await Promise.all(clients.map((c) => c.close()));

const t0 = performance.now();
const exit1 = await first.stop();
const stopMs = performance.now() - t0;
const spillLine = first
  .logTail()
  .map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      return null;
    }
  })
  .find((j) => j && typeof j.msg === 'string' && j.msg.startsWith('shutdown: acknowledged transactions no upstream accepted'));
const spillDir = join(dataDir, 'spill');
const filesAfterStop = existsSync(spillDir) ? readdirSync(spillDir).filter((n) => n.endsWith('.json')).length : 0;

upstream.recover();
const before = new Set(upstream.delivered);
const second = await startRelay({ env, dataDir, label: 'second relay' });
const t1 = performance.now();
const missing = () => [...acked].filter((k) => !upstream.delivered.has(k));
while (missing().length > 0 && performance.now() - t1 < RESEND_WAIT_MS) await sleep(20);
const resendMs = performance.now() - t1;
const lost = missing().length;
await sleep(300);
const filesAfterResend = existsSync(spillDir) ? readdirSync(spillDir).filter((n) => n.endsWith('.json')).length : 0;
const exit2 = await second.stop();
await upstream.close();

const result = {
  ok: lost === 0 && exit1.code === 0 && exit2.code === 0,
  acknowledged: acked.size,
  refused,
  delivered_before_stop: before.size,
  spilled: spillLine?.items ?? 0,
  spill_write_ms: spillLine?.write_ms ?? null,
  stop_ms: round(stopMs, 0),
  resent_within_ms: round(resendMs, 0),
  lost,
  spill_files_after_stop: filesAfterStop,
  spill_files_after_resend: filesAfterResend,
  checks: [
    { what: 'every acknowledged transaction reached the upstream after the restart', got: `${acked.size - lost} of ${acked.size}`, pass: lost === 0 },
    { what: 'the spill is removed once resent', got: filesAfterResend, pass: filesAfterResend === 0 },
  ],
};
emit(
  NAME,
  result,
  [
    `acknowledged ${acked.size} (refused ${refused}) with every upstream hung; stop took ${result.stop_ms} ms`,
    `written down at the stop: ${result.spilled} in ${result.spill_write_ms} ms (${filesAfterStop} file)`,
    `after the restart: ${acked.size - lost} of ${acked.size} reached the upstream within ${result.resent_within_ms} ms; lost ${lost}; spill files left ${filesAfterResend}`,
  ],
);
process.exit(result.ok ? 0 : 1);
