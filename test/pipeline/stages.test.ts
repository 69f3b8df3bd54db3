/**
 * Each stage of the pipeline on its own, without a socket
 * (test/helpers/pipeline.ts): what it returns (go on, an outcome, or wait)
 * and what it leaves on the submission. The order per kind is the table's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E, RelayError } from '../../src/errors.js';
import { JobKind, JobResult, S_RESULT } from '../../src/exec/jobs.js';
import { Outcome } from '../../src/pipeline/outcome.js';
import { Kind, Next, Submission, type DoorIo } from '../../src/pipeline/submission.js';
import * as stages from '../../src/pipeline/stages.js';
import { HEAD, NEXT, READ, STAGES, WAIT, runStages } from '../../src/pipeline/stages.js';
import * as sol from '../helpers/solana.js';
import * as evm from '../helpers/evm.js';
import { TIP, assertNothingHeld, bodyDoor, harness, type Harness } from '../helpers/pipeline.js';

/** A door with a peer address and nothing else. */
function quietDoor(): DoorIo {
  return { peer: () => '192.0.2.7' };
}

/** A submission ready for the stage at `name` of its kind, whose sink collects outcomes. */
function at(kind: Kind, family: 'evm' | 'solana', name: string, io: DoorIo = quietDoor()): { sub: Submission; got: Outcome[] } {
  const sub = new Submission(kind, family, io);
  const got: Outcome[] = [];
  sub.sink = (_s, o) => got.push(o);
  sub.step = STAGES[kind]!.findIndex((s) => s.name === name) + 1;
  assert.ok(sub.step > 0, `${name} is a stage of kind ${kind}`);
  return { sub, got };
}

async function authenticated(h: Harness, sub: Submission, key: string): Promise<void> {
  sub.credential = key;
  sub.ip = '192.0.2.7';
  assert.equal(stages.gate(h.pipeline, sub), NEXT);
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('the table: every kind passes the door and the gate first, and ends in the stage that waits for or queues it', () => {
  const names = STAGES.map((list) => list.map((s) => s.name));
  assert.deepEqual(names, [
    ['door', 'arrive', 'gate', 'invalid', 'read', 'solanaBody', 'place', 'check', 'enqueue'],
    ['door', 'arrive', 'gate', 'invalid', 'read', 'placeMembers', 'checkMembers', 'enqueueBundle'],
    ['door', 'arrive', 'gate', 'invalid', 'read', 'evmBody', 'place', 'check', 'enqueue'],
    ['door', 'arrive', 'gate', 'invalid', 'record'],
    ['door', 'arrive', 'gate', 'read', 'expand'],
    ['door', 'arrive', 'gate', 'invalid', 'read', 'status'],
  ]);
  assert.equal(Kind.SolanaTx, 0);
  assert.equal(Kind.Query, STAGES.length - 1, 'one row per kind, indexed by it');
});

test('door and invalid: a refusal the door found stops the submission with it; none goes on', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const sub = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  assert.equal(stages.door(h.pipeline, sub), NEXT);
  assert.equal(stages.invalid(h.pipeline, sub), NEXT);
  sub.refused = new RelayError(E.INVALID_REQUEST, 'not this door');
  const o = stages.door(h.pipeline, sub) as Outcome;
  assert.equal(o.error, sub.refused);
  sub.invalid = new RelayError(E.INVALID_PARAMS, 'bad params');
  sub.hash = '0xabc';
  const bad = stages.invalid(h.pipeline, sub) as Outcome;
  assert.equal(bad.error, sub.invalid);
  assert.equal(bad.id, '0xabc', 'what could be hashed is named');
});

test('gate: an account and its lane on the submission, or the refusal as an outcome', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const sub = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  await authenticated(h, sub, key);
  assert.ok(sub.account !== null);
  assert.equal(sub.lane, 'solana-single');
  assert.equal(sub.ip, '192.0.2.7', 'the peer read at the gate');
  const none = new Submission(Kind.EvmTx, 'evm', quietDoor());
  none.ip = '192.0.2.7';
  const o = stages.gate(h.pipeline, none) as Outcome;
  assert.equal(o.error?.spec, E.AUTH_MISSING);
  const wrongHead = new Submission(Kind.EvmTx, 'evm', quietDoor());
  wrongHead.refused = new RelayError(E.UNSUPPORTED_MEDIA, 'use text/plain');
  assert.equal((stages.gate(h.pipeline, wrongHead) as Outcome).error, wrongHead.refused, 'the head the door read, refused before the IP bucket');
});

test('arrive: draining and shed before anything of the request is read; then the door reads the head, unless it knew the peer already', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const sub = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  assert.equal(stages.arrive(h.pipeline, sub), HEAD);
  sub.ip = '192.0.2.7';
  assert.equal(stages.arrive(h.pipeline, sub), NEXT, 'a datagram, a WebSocket message: the peer is known');
  sub.arrived = true;
  h.pipeline.draining = true;
  assert.equal(stages.arrive(h.pipeline, sub), NEXT, 'a call of a body that arrived: its gate says draining');
  sub.arrived = false;
  assert.equal((stages.arrive(h.pipeline, sub) as Outcome).error?.spec, E.DRAINING);
});

test('read: a payload that came with the head goes on; a body to come stops the run, and admit tells the door to read it', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const sub = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  assert.equal(stages.read(h.pipeline, sub), NEXT);
  sub.maxBody = 4096;
  assert.equal(stages.read(h.pipeline, sub), READ);
  assert.equal(sub.body, h.pipeline, 'the body comes back to the pipeline');
  const whole = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  whole.credential = key;
  whole.ip = '192.0.2.7';
  whole.maxBody = 4096;
  const got: Outcome[] = [];
  assert.equal(
    h.pipeline.admit(whole, (_s, o) => got.push(o)),
    Next.Body,
  );
  assert.equal(got.length, 0, 'nothing answered before the body');
  assert.equal(STAGES[Kind.SolanaTx]![whole.step], stages.solanaBody, 'the body resumes at the stage after read');
  whole.tooLarge(5000);
  assert.equal(got[0]!.error?.spec, E.SOL_DECODE);
});

test('solanaBody and evmBody: a body read is turned into what place takes; none read passes', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const s = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  assert.equal(stages.solanaBody(h.pipeline, s), NEXT);
  s.received = new Uint8Array(0);
  assert.equal((stages.solanaBody(h.pipeline, s) as Outcome).error?.spec, E.SOL_DECODE, 'an empty chunked body');
  s.received = Uint8Array.of(1, 2, 3);
  assert.equal(stages.solanaBody(h.pipeline, s), NEXT);
  assert.deepEqual([s.bytes, s.end], [s.received, 3], 'a chunked body, to be copied into the slab');
  const e = new Submission(Kind.EvmTx, 'evm', quietDoor());
  e.received = Buffer.from(' \t0xabcd\r\n');
  assert.equal(stages.evmBody(h.pipeline, e), NEXT);
  assert.equal(e.text, '0xabcd');
});

test('place: bytes into the slab, or the decoding refusal; placeMembers: a bundle\'s texts decoded', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const tx = sol.legacyTransfer();
  const s = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  s.bytes = tx.bytes;
  s.end = tx.bytes.length;
  assert.equal(stages.place(h.pipeline, s), NEXT);
  assert.ok(s.offset >= 0);
  assert.deepEqual(h.slab.bytes.subarray(s.offset, s.offset + s.length), tx.bytes);
  assert.equal(stages.place(h.pipeline, s), NEXT, 'placed once');
  h.pipeline.release(s);
  const e = new Submission(Kind.EvmTx, 'evm', quietDoor());
  e.text = '0xzz';
  assert.equal((stages.place(h.pipeline, e) as Outcome).error?.spec, E.TX_INVALID);
  const b = new Submission(Kind.Bundle, 'solana', quietDoor());
  b.texts = [Buffer.from(tx.bytes).toString('base64')];
  assert.equal(stages.placeMembers(h.pipeline, b), NEXT);
  assert.equal(b.offsets!.length, 1);
  h.pipeline.release(b);
  assertNothingHeld(h);
});

test('check then enqueue: a placed transaction waits for its check, then is queued under its signature', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tx = sol.legacyTransfer();
  const { sub, got } = at(Kind.SolanaTx, 'solana', 'check');
  await authenticated(h, sub, key);
  sub.bytes = tx.bytes;
  sub.end = tx.bytes.length;
  assert.equal(stages.place(h.pipeline, sub), NEXT);
  assert.equal(stages.check(h.pipeline, sub), WAIT);
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
  const sub = new Submission(Kind.SolanaTx, 'solana', quietDoor());
  sub.slot = h.jobs.acquire();
  h.jobs.set(sub.slot, JobKind.SolanaTx, 0, 0, 0);
  h.jobs.setField(sub.slot, S_RESULT, JobResult.BadSignature);
  assert.equal((stages.enqueue(h.pipeline, sub) as Outcome).error?.spec, E.SOL_SIGNATURE);
  h.jobs.setField(sub.slot, S_RESULT, JobResult.Expired);
  assert.equal((stages.enqueue(h.pipeline, sub) as Outcome).error?.spec, E.CAPACITY);
  assert.equal(h.forwarder.stats().lanes['solana-single'].admitted, 0);
  h.pipeline.release(sub);
});

test('checkMembers: a bundle without a tip stops before any check', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const b = new Submission(Kind.Bundle, 'solana', quietDoor());
  await authenticated(h, b, key);
  b.texts = [Buffer.from(sol.legacyTransfer().bytes).toString('base64')];
  assert.equal(stages.placeMembers(h.pipeline, b), NEXT);
  assert.equal((stages.checkMembers(h.pipeline, b) as Outcome).error?.spec, E.TIP_NOT_FOUND);
  h.pipeline.release(b);
  assertNothingHeld(h);
});

test('checkMembers then enqueueBundle: a tipped bundle waits for its members\' checks, then is queued whole; again, a duplicate', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const tip = sol.tipTransfer(TIP, 1500);
  for (const status of ['queued', 'duplicate']) {
    const { sub, got } = at(Kind.Bundle, 'solana', 'checkMembers');
    await authenticated(h, sub, key);
    sub.texts = [Buffer.from(tip.bytes).toString('base64')];
    assert.equal(stages.placeMembers(h.pipeline, sub), NEXT);
    const step = stages.checkMembers(h.pipeline, sub);
    if (status === 'duplicate') {
      assert.equal((step as Outcome).status, 'duplicate', 'a duplicate found before any check');
      h.pipeline.release(sub);
      continue;
    }
    assert.equal(step, WAIT);
    assert.equal(STAGES[Kind.Bundle]!.at(-1), stages.enqueueBundle, 'resumed at the last stage, enqueueBundle');
    await nextTurn();
    assert.equal(got[0]!.status, 'queued');
    assert.deepEqual(got[0]!.ids, [tip.signature]);
  }
  assert.equal(h.forwarder.stats().lanes['solana-bundle'].admitted, 1);
  assertNothingHeld(h);
});

test('expand: a body the door could not split is refused whole; its calls are admitted and the group answers once', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const refused = new RelayError(E.PARSE);
  const bad = at(Kind.Calls, 'evm', 'expand');
  bad.sub.invalid = refused;
  assert.equal((stages.expand(h.pipeline, bad.sub) as Outcome).error, refused);
  const [a, b] = await Promise.all([evm.signed1559({ nonce: 81 }), evm.signed1559({ nonce: 82 })]);
  const calls = (): Submission[] =>
    [a!.hex, b!.hex].map((hex) => {
      const c = new Submission(Kind.EvmTx, 'evm', quietDoor());
      c.credential = key;
      c.text = hex;
      return c;
    });
  const good = at(Kind.Calls, 'evm', 'expand');
  good.sub.ip = '192.0.2.7';
  good.sub.calls = calls();
  assert.equal(stages.expand(h.pipeline, good.sub), WAIT);
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
  const { sub, got } = at(Kind.EvmBatch, 'evm', 'record', bodyDoor(new Uint8Array(0)));
  await authenticated(h, sub, key);
  sub.texts = [a.hex, 'nope'];
  const answered = new Promise<void>((resolve) => {
    sub.sink = (_s, o) => {
      got.push(o);
      resolve();
    };
  });
  assert.equal(stages.record(h.pipeline, sub), WAIT);
  await answered;
  await nextTurn();
  assert.equal(got.length, 1);
  assert.deepEqual(got[0]!.items!.map((x) => x.status), ['queued', 'not-sent']);
  assert.deepEqual(h.batches.get(got[0]!.id!)!.tx_hashes, [a.hash, null]);
  assertNothingHeld(h);
});

test('status: the ids of the query, or the door\'s refusal of its body', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const key = (await h.account()).uuid;
  const { sub, got } = at(Kind.Query, 'solana', 'status');
  await authenticated(h, sub, key);
  sub.queryIds = ['nothing-known'];
  assert.equal(stages.status(h.pipeline, sub), WAIT);
  assert.equal(got[0]!.status, 'answered');
  assert.equal(got[0]!.statuses!.length, 1);
  const refused = new RelayError(E.INVALID_REQUEST, 'no ids');
  const body = at(Kind.Query, 'solana', 'status');
  body.sub.invalid = refused;
  assert.equal((stages.status(h.pipeline, body.sub) as Outcome).error, refused);
});

test('runStages: the first outcome ends the run and is answered, counted, once', async (t) => {
  const h = await harness();
  t.after(() => h.close());
  const sub = new Submission(Kind.EvmTx, 'evm', quietDoor());
  const got: Outcome[] = [];
  sub.sink = (_s, o) => got.push(o);
  assert.equal(runStages(h.pipeline, sub), Next.Head, 'the door reads the head first');
  sub.ip = '192.0.2.7';
  assert.equal(runStages(h.pipeline, sub), Next.Done);
  assert.equal(got.length, 1);
  assert.equal(got[0]!.error?.spec, E.AUTH_MISSING);
  assert.equal(sub.step, STAGES[Kind.EvmTx]!.indexOf(stages.gate) + 1, 'stopped at the gate');
  assert.equal(h.pipeline.rejected.get('TXR_AUTH_MISSING'), 1);
});
