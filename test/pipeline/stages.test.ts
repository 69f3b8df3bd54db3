/**
 * Each stage of the pipeline on its own, without a socket
 * (test/helpers/pipeline.ts): what it returns (go on, an outcome, or wait)
 * and what it leaves on the admission. The order per kind is the table's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E, RelayError } from '../../src/errors.js';
import { JobKind, JobResult, S_RESULT } from '../../src/exec/jobs.js';
import { Outcome } from '../../src/pipeline/outcome.js';
import { Kind, bundle, calls, evmBatch, evmTx, query, solanaTx, type Submission } from '../../src/pipeline/submission.js';
import { Admission } from '../../src/pipeline/admission.js';
import * as stages from '../../src/pipeline/stages.js';
import { NEXT, READ, STAGES, WAIT, runStages } from '../../src/pipeline/stages.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';
import { TIP, assertNothingHeld, harness, type Harness } from '../helpers/pipeline.js';

const PEER = '192.0.2.7';

/** An admission of `sub`, ready for the stage `name` of its kind, whose sink collects outcomes. */
function at(h: Harness, sub: Submission, name: string): { a: Admission; got: Outcome[] } {
  const got: Outcome[] = [];
  const a = new Admission(sub, (_s, o) => got.push(o), h.pipeline);
  a.step = STAGES[sub.kind]!.findIndex((s) => s.name === name) + 1;
  assert.ok(a.step > 0, `${name} is a stage of kind ${sub.kind}`);
  return { a, got };
}

/** A bare admission of `sub` (no stage run yet). */
function bare(h: Harness, sub: Submission): Admission {
  return new Admission(sub, () => {}, h.pipeline);
}

function authenticated(h: Harness, a: Admission): void {
  assert.equal(stages.gate(h.pipeline, a), NEXT);
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('the table: every kind passes the door and the gate first, and ends in the stage that waits for or queues it', () => {
  const names = STAGES.map((list) => list.map((s) => s.name));
  assert.deepEqual(names, [
    ['door', 'gate', 'invalid', 'read', 'solanaBody', 'place', 'check', 'enqueue'],
    ['door', 'gate', 'invalid', 'read', 'placeMembers', 'checkMembers', 'enqueueBundle'],
    ['door', 'gate', 'invalid', 'read', 'evmBody', 'place', 'check', 'enqueue'],
    ['door', 'gate', 'invalid', 'record'],
    ['door', 'gate', 'read', 'expand'],
    ['door', 'gate', 'invalid', 'read', 'status'],
  ]);
  assert.equal(Kind.SolanaTx, 0);
  assert.equal(Kind.Query, STAGES.length - 1, 'one row per kind, indexed by it');
});

test('door and invalid: a refusal the door found stops the submission with it; none goes on', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const ok = bare(h, solanaTx('solana-v2', { ip: PEER }));
  assert.equal(stages.door(h.pipeline, ok), NEXT);
  assert.equal(stages.invalid(h.pipeline, ok), NEXT);
  const refused = new RelayError(E.INVALID_REQUEST, 'not this door');
  assert.equal((stages.door(h.pipeline, bare(h, solanaTx('solana-v2', { refused }))) as Outcome).error, refused);
  const invalid = new RelayError(E.INVALID_PARAMS, 'bad params');
  const a = bare(h, evmTx('jsonrpc', { invalid, ip: PEER }));
  a.hash = '0xabc';
  const bad = stages.invalid(h.pipeline, a) as Outcome;
  assert.equal(bad.error, invalid);
  assert.equal(bad.id, '0xabc', 'what could be hashed is named');
  const item = bare(h, evmTx('jsonrpc', { ip: PEER }));
  item.invalid = new RelayError(E.TX_INVALID, 'what the pipeline found');
  assert.equal((stages.invalid(h.pipeline, item) as Outcome).error, item.invalid, 'or what the pipeline found (a batch item)');
});

test('gate: an account and its lane on the admission, or the refusal as an outcome', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const a = bare(h, solanaTx('solana-v2', { credential: key, ip: PEER }));
  authenticated(h, a);
  assert.ok(a.account !== null);
  assert.equal(a.lane, 'solana-single');
  const none = bare(h, evmTx('evm-text', { ip: PEER }));
  assert.equal((stages.gate(h.pipeline, none) as Outcome).error?.spec, E.AUTH_MISSING);
});

test('arrive: draining and shed before anything of the request is read; a member of a body that arrived is refused draining by its own gate', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  assert.equal(h.pipeline.arrive(Kind.SolanaTx, 'solana'), null);
  h.pipeline.draining = true;
  assert.equal(h.pipeline.arrive(Kind.SolanaTx, 'solana')?.spec, E.DRAINING);
  assert.equal(h.pipeline.arrive(Kind.Calls, 'evm'), null, 'a body arrives: its calls are refused one by one');
  const parent = bare(h, calls('jsonrpc', 'evm', { credential: key, ip: PEER }));
  const m = h.pipeline.member(evmTx('jsonrpc', { credential: key, ip: PEER }), parent);
  assert.equal((stages.gate(h.pipeline, m) as Outcome).error?.spec, E.DRAINING);
});

test('read: a payload that came with the submission goes on; a body to come stops the run, and admit hands the door the admission to push it into', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  assert.equal(stages.read(h.pipeline, bare(h, solanaTx('udp', { ip: PEER }))), NEXT);
  assert.equal(stages.read(h.pipeline, bare(h, solanaTx('solana-v2', { ip: PEER, maxBody: 4096 }))), READ);
  const got: Outcome[] = [];
  const a = h.pipeline.admit(solanaTx('solana-v2', { credential: key, ip: PEER, maxBody: 4096 }), (_s, o) => got.push(o));
  assert.ok(a !== null);
  assert.equal(got.length, 0, 'nothing answered before the body');
  assert.equal(STAGES[Kind.SolanaTx]![a.step], stages.solanaBody, 'the body resumes at the stage after read');
  a.tooLarge(5000);
  assert.equal(got[0]!.error?.spec, E.SOL_DECODE);
});

test('solanaBody and evmBody: a body read is turned into what place takes; none read passes', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const s = bare(h, solanaTx('solana-v2', { ip: PEER, maxBody: 4096 }));
  assert.equal(stages.solanaBody(h.pipeline, s), NEXT);
  s.received = new Uint8Array(0);
  assert.equal((stages.solanaBody(h.pipeline, s) as Outcome).error?.spec, E.SOL_DECODE, 'an empty chunked body');
  s.received = Uint8Array.of(1, 2, 3);
  assert.equal(stages.solanaBody(h.pipeline, s), NEXT, 'a chunked body, to be copied into the slab');
  assert.equal(stages.place(h.pipeline, s), NEXT);
  assert.deepEqual([...h.slab.bytes.subarray(s.offset, s.offset + s.length)], [1, 2, 3]);
  h.pipeline.release(s);
  const e = bare(h, evmTx('evm-text', { ip: PEER, maxBody: 4096 }));
  e.received = Buffer.from(' \t0xabcd\r\n');
  assert.equal(stages.evmBody(h.pipeline, e), NEXT);
  assert.equal(e.text, '0xabcd');
  assertNothingHeld(h);
});

test('place: bytes into the slab, or the decoding refusal; placeMembers: a bundle\'s texts decoded', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const tx = sol.legacyTransfer();
  const s = bare(h, solanaTx('udp', { bytes: tx.bytes, end: tx.bytes.length }));
  assert.equal(stages.place(h.pipeline, s), NEXT);
  assert.ok(s.offset >= 0);
  assert.deepEqual(h.slab.bytes.subarray(s.offset, s.offset + s.length), tx.bytes);
  assert.equal(stages.place(h.pipeline, s), NEXT, 'placed once');
  h.pipeline.release(s);
  const e = bare(h, evmTx('jsonrpc', { text: '0xzz' }));
  assert.equal((stages.place(h.pipeline, e) as Outcome).error?.spec, E.TX_INVALID);
  const b = bare(h, bundle('jsonrpc', { texts: [Buffer.from(tx.bytes).toString('base64')] }));
  assert.equal(stages.placeMembers(h.pipeline, b), NEXT);
  assert.equal(b.bundle!.offsets!.length, 1);
  h.pipeline.release(b);
  assertNothingHeld(h);
});

test('check then enqueue: a placed transaction waits for its check, then is queued under its signature', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tx = sol.legacyTransfer();
  const { a, got } = at(h, solanaTx('udp', { credential: key, ip: PEER, bytes: tx.bytes, end: tx.bytes.length }), 'check');
  authenticated(h, a);
  assert.equal(stages.place(h.pipeline, a), NEXT);
  assert.equal(stages.check(h.pipeline, a), WAIT);
  await nextTurn();
  assert.equal(got.length, 1);
  assert.equal(got[0]!.status, 'queued');
  assert.equal(got[0]!.id, tx.signature);
  assert.equal(h.forwarder.stats().lanes['solana-single'].admitted, 1);
  assertNothingHeld(h);
});

test('enqueue: a check that failed is the refusal its result names, nothing offered to the lane', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const a = bare(h, solanaTx('solana-v2', { ip: PEER }));
  a.slot = h.jobs.acquire();
  h.jobs.set(a.slot, JobKind.SolanaTx, 0, 0, 0);
  h.jobs.setField(a.slot, S_RESULT, JobResult.BadSignature);
  assert.equal((stages.enqueue(h.pipeline, a) as Outcome).error?.spec, E.SOL_SIGNATURE);
  h.jobs.setField(a.slot, S_RESULT, JobResult.Expired);
  assert.equal((stages.enqueue(h.pipeline, a) as Outcome).error?.spec, E.CAPACITY);
  assert.equal(h.forwarder.stats().lanes['solana-single'].admitted, 0);
  h.pipeline.release(a);
});

test('checkMembers: a bundle without a tip stops before any check', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const b = bare(h, bundle('jsonrpc', { credential: key, ip: PEER, texts: [Buffer.from(sol.legacyTransfer().bytes).toString('base64')] }));
  authenticated(h, b);
  assert.equal(stages.placeMembers(h.pipeline, b), NEXT);
  assert.equal((stages.checkMembers(h.pipeline, b) as Outcome).error?.spec, E.TIP_NOT_FOUND);
  h.pipeline.release(b);
  assertNothingHeld(h);
});

test('checkMembers then enqueueBundle: a tipped bundle waits for its members\' checks, then is queued whole with its id; again, a duplicate', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tip = sol.tipTransfer(TIP, 1500);
  for (const status of ['queued', 'duplicate']) {
    const { a, got } = at(h, bundle('jsonrpc', { credential: key, ip: PEER, texts: [Buffer.from(tip.bytes).toString('base64')] }), 'checkMembers');
    authenticated(h, a);
    assert.equal(stages.placeMembers(h.pipeline, a), NEXT);
    const step = stages.checkMembers(h.pipeline, a);
    if (status === 'duplicate') {
      assert.equal((step as Outcome).status, 'duplicate', 'a duplicate found before any check');
      assert.equal((step as Outcome).bundleId, a.bundle!.id);
      h.pipeline.release(a);
      continue;
    }
    assert.equal(step, WAIT);
    assert.equal(STAGES[Kind.Bundle]!.at(-1), stages.enqueueBundle, 'resumed at the last stage, enqueueBundle');
    await nextTurn();
    assert.equal(got[0]!.status, 'queued');
    assert.deepEqual(got[0]!.ids, [tip.signature]);
    assert.match(got[0]!.bundleId!, /^[0-9a-f]{64}$/, 'the outcome names the bundle, as Jito does');
  }
  assert.equal(h.forwarder.stats().lanes['solana-bundle'].admitted, 1);
  assertNothingHeld(h);
});

test('expand: a body the door could not split is refused whole; its calls are admitted and the group answers once, with each call\'s outcome', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const refused = new RelayError(E.PARSE);
  const bad = at(h, calls('jsonrpc', 'evm', { ip: PEER }), 'expand');
  bad.a.parsed = refused;
  assert.equal((stages.expand(h.pipeline, bad.a) as Outcome).error, refused);
  const [a, b] = await Promise.all([evm.signed1559({ nonce: 81 }), evm.signed1559({ nonce: 82 })]);
  const good = at(h, calls('jsonrpc', 'evm', { ip: PEER }), 'expand');
  good.a.parsed = [a!.hex, b!.hex].map((hex) => evmTx('jsonrpc', { credential: key, ip: PEER, text: hex }));
  assert.equal(stages.expand(h.pipeline, good.a), WAIT);
  await nextTurn();
  assert.equal(good.got.length, 1);
  assert.deepEqual(good.got[0]!.items!.map((x) => x.id), [a!.hash, b!.hash]);
  assertNothingHeld(h);
});

test('record: an EVM batch waits for its durable record, then its items are admitted in order', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const a = await evm.signed1559({ nonce: 91 });
  const got: Outcome[] = [];
  let answered!: () => void;
  const done = new Promise<void>((resolve) => (answered = resolve));
  const batch = new Admission(evmBatch('jsonrpc', { credential: key, ip: PEER, texts: [a.hex, 'nope'] }), (_s, o) => {
    got.push(o);
    answered();
  }, h.pipeline);
  authenticated(h, batch);
  assert.equal(stages.record(h.pipeline, batch), WAIT);
  await done;
  await nextTurn();
  assert.equal(got.length, 1);
  assert.deepEqual(got[0]!.items!.map((x) => x.status), ['queued', 'not-sent']);
  assert.deepEqual(h.batches.get(got[0]!.id!)!.tx_hashes, [a.hash, null]);
  assertNothingHeld(h);
});

test('status: the ids of the submission or of the door\'s reading of its body, or the door\'s refusal of its body; the answer names the account', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const { a, got } = at(h, query('status', 'solana', { credential: key, ip: PEER, queryIds: ['nothing-known'] }), 'status');
  authenticated(h, a);
  assert.equal(stages.status(h.pipeline, a), WAIT);
  assert.equal(got[0]!.status, 'answered');
  assert.equal(got[0]!.statuses!.length, 1);
  assert.equal(got[0]!.account, a.account, 'whose reads they were');
  const read = at(h, query('status', 'solana', { credential: key, ip: PEER, maxBody: 1024 }), 'status');
  authenticated(h, read.a);
  read.a.parsed = ['one', 'two'];
  assert.equal(stages.status(h.pipeline, read.a), WAIT);
  assert.equal(read.got[0]!.statuses!.length, 2, 'the ids the door read from the body');
  const refused = new RelayError(E.INVALID_REQUEST, 'no ids');
  const body = at(h, query('status', 'solana', { ip: PEER, maxBody: 1024 }), 'status');
  body.a.parsed = refused;
  assert.equal((stages.status(h.pipeline, body.a) as Outcome).error, refused);
});

test('runStages: the first outcome ends the run and is answered, counted, once', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const got: Outcome[] = [];
  const a = new Admission(evmTx('evm-text', { ip: PEER }), (_s, o) => got.push(o), h.pipeline);
  assert.equal(runStages(h.pipeline, a), false, 'nothing for the door to read');
  assert.equal(got.length, 1);
  assert.equal(got[0]!.error?.spec, E.AUTH_MISSING);
  assert.equal(a.step, STAGES[Kind.EvmTx]!.indexOf(stages.gate) + 1, 'stopped at the gate');
  assert.equal(h.pipeline.rejected.get('TXR_AUTH_MISSING'), 1);
});

test('a submission is built once and not changed by the pipeline: what the stages find is on the admission', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tx = sol.legacyTransfer();
  const sub = solanaTx('udp', { credential: key, ip: PEER, bytes: tx.bytes, end: tx.bytes.length, overUdp: true });
  const before = JSON.stringify(sub);
  const got = await h.admit(sub);
  assert.equal(got[0]!.status, 'queued');
  assert.equal(JSON.stringify(sub), before, 'every field as the door built it');
  assertNothingHeld(h);
});
