/**
 * The spill's file handling (src/forward/spill.ts): a replay that has not
 * finished (a crash) leaves its file for the next start, a half-written file
 * is ignored, and entries that are not what a lane queues are never sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Forwarder } from '../../src/forward/forwarder.js';
import { Replay, SPILL_DIR, readSpills, writeSpill } from '../../src/forward/spill.js';
import type { SpillEntry } from '../../src/forward/lane.js';
import { startUpstream } from '../helpers/upstream.js';
import { eventually } from '../helpers/relay.js';

const b64 = (i: number): string => Buffer.alloc(100, i).toString('base64');
const entry = (i: number, ackedAt = Date.now()): SpillEntry => ({ lane: 'solana-single', family: 'solana', item: b64(i), ackedAt, account: 7 });
const quiet = (): void => {};

test('a replay not yet final leaves its file; the next start sends the entries again, then removes it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-spill-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeSpill(dir, [entry(1), entry(2), entry(3)]);

  const hung = await startUpstream({ mode: 'hang' });
  t.after(() => hung.close());
  const f1 = new Forwarder({ lanes: { 'solana-single': [hung.url] }, timeoutMs: 60_000 });
  const r1 = Replay.start({ dataDir: dir, lane: (n) => f1.lane(n), solanaMaxAgeMs: 60_000, log: quiet })!;
  assert.equal(r1.resent, 3);
  await hung.waitForCalls(3);
  // A crash now: nothing reached an upstream that answered, so the file stays.
  assert.equal(r1.done, false);
  r1.stop();
  await f1.close();
  assert.equal(readdirSync(join(dir, SPILL_DIR)).length, 1);

  const up = await startUpstream();
  t.after(() => up.close());
  const f2 = new Forwarder({ lanes: { 'solana-single': [up.url] } });
  t.after(() => f2.close());
  const r2 = Replay.start({ dataDir: dir, lane: (n) => f2.lane(n), solanaMaxAgeMs: 60_000, log: quiet })!;
  await up.waitForCalls(3);
  assert.deepEqual(new Set(up.calls().map((c) => (c.params as string[])[0])), new Set([b64(1), b64(2), b64(3)]));
  await eventually(() => r2.done, 2000, 'replay final');
  assert.deepEqual(readdirSync(join(dir, SPILL_DIR)), []);
});

test('a half-written file is ignored and removed; entries that are not pure hex or base64 for their lane are skipped', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-spill-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeSpill(dir, [entry(1)]);
  writeFileSync(join(dir, SPILL_DIR, '.999-1-x.json.tmp'), '{"format":1,"entries":[');
  const bad = [
    { lane: 'solana-single', family: 'solana', item: 'AAAA","method":"x', ackedAt: 1, account: 1 },
    { lane: 'evm-paid', family: 'evm', item: b64(2), ackedAt: 1, account: 1 },
    { lane: 'evm-paid', family: 'solana', item: '0x01', ackedAt: 1, account: 1 },
    { lane: 'nope', family: 'evm', item: '0x01', ackedAt: 1, account: 1 },
  ];
  writeFileSync(join(dir, SPILL_DIR, '2-1-y.json'), JSON.stringify({ format: 1, entries: [...bad, { lane: 'evm-free', family: 'evm', item: '0xab', ackedAt: 1, account: 2 }] }));
  const logged: string[] = [];
  const { files, entries } = readSpills(dir, (_l, msg) => logged.push(msg));
  assert.equal(files.length, 2);
  assert.deepEqual(entries.map((e) => e.item).sort(), ['0xab', b64(1)].sort());
  assert.ok(logged.some((m) => m.includes('invalid entries skipped')));
  assert.ok(!readdirSync(join(dir, SPILL_DIR)).some((n) => n.endsWith('.tmp')));
});
