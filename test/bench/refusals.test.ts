/**
 * txrelay bench says why requests were refused: the first refusal text of
 * each status, whose limit a 429 was, and, when nothing succeeded, the
 * relay's own words (a wrong chain id on evm-text).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { startTestRelay } from '../helpers/relay.js';
import { startSink } from '../../src/bench/sink.js';
import { runBench } from '../../src/bench/generator.js';
import { formatReport } from '../../src/bench/report.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

test('bench evm-text against a chain-1337 relay says why nothing succeeded', { timeout: 60_000 }, async (t) => {
  const sink = await startSink({ port: 0 });
  t.after(() => sink.close());
  const relay = await startTestRelay({ evm: { chain_id: 1337, upstreams: { paid: [sink.url], free: [sink.url] } } });
  t.after(() => relay.stop());
  const { uuid } = (await relay.createAccount({ evm: { tps: 1000, burst: 1000 } })) as unknown as { uuid: string };
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [CLI, 'bench', 'evm-text', '--url', relay.base, '--key', uuid, '--rate', '20', '--duration', '500ms', '--warmup', '0s', '--no-cache'],
      { env },
      (err, stdout, stderr) => resolve({ code: err ? (err as any).code : 0, stdout, stderr }),
    ),
  );
  assert.equal(r.code, 1, r.stderr);
  const last = r.stderr.trim().split('\n').pop()!;
  assert.match(last, /^txrelay bench: no request succeeded; the relay said: 400 .*chain/i);
  assert.match(last, /1337/, 'the relay\'s chain id is in its refusal');
  assert.match(r.stdout, /^first refusal text by status:\n {2}400: .*chain/im);
});

test('bench names the per-address limit when it, not the account, refused', { timeout: 60_000 }, async (t) => {
  const sink = await startSink({ port: 0 });
  t.after(() => sink.close());
  const relay = await startTestRelay({ limits: { ip_rps: 20, ip_burst: 20 }, evm: { upstreams: { paid: [sink.url], free: [sink.url] } } });
  t.after(() => relay.stop());
  const { uuid } = (await relay.createAccount({ evm: { tps: 100_000, burst: 100_000 } })) as unknown as { uuid: string };
  const r = await runBench({ door: 'evm-rpc', url: relay.base, key: uuid, rate: 200, durationMs: 1000, warmupMs: 0, cacheDir: null });
  assert.ok((r.statuses['429'] ?? 0) > 0, JSON.stringify(r.statuses));
  assert.match(r.refusals['429']!, /^IP rate limit: 20 per second/);
  const w = r.warnings.find((x) => x.includes('429'));
  assert.ok(w && /per-address limit \(limits\.ip_rps/.test(w) && /TXRELAY_LIMITS_IP_RPS/.test(w), w);
  assert.match(formatReport(r), /\n {2}429: IP rate limit: 20 per second/);
});

test('bench names the account\'s limit when the account refused', { timeout: 60_000 }, async (t) => {
  const sink = await startSink({ port: 0 });
  t.after(() => sink.close());
  const relay = await startTestRelay({ limits: { ip_rps: 1_000_000, ip_burst: 1_000_000 }, evm: { upstreams: { paid: [sink.url], free: [sink.url] } } });
  t.after(() => relay.stop());
  const { uuid } = (await relay.createAccount({ evm: { tps: 10, burst: 10 } })) as unknown as { uuid: string };
  const r = await runBench({ door: 'evm-rpc', url: relay.base, key: uuid, rate: 200, durationMs: 1000, warmupMs: 0, cacheDir: null });
  assert.match(r.refusals['429']!, /^Account rate limit: 10 per second/);
  const w = r.warnings.find((x) => x.includes('429'));
  assert.ok(w && /by the account's limit/.test(w), w);
});
