import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  BATCH_ID_PATTERN,
  BatchIdGenerator,
  batchIdFloor,
  batchIdTime,
  nextBatchId,
  uuidByteWords,
  uuidTextWords,
  uuidToBytes,
} from '../../src/store/ids.js';

test('batch ids: 100k generated in a tight loop are unique, 26 Crockford characters and strictly increasing', () => {
  const started = performance.now();
  const ids = new Array<string>(100_000);
  for (let i = 0; i < ids.length; i++) ids[i] = nextBatchId();
  const ms = performance.now() - started;
  assert.equal(new Set(ids).size, ids.length);
  for (let i = 0; i < ids.length; i++) {
    assert.match(ids[i]!, BATCH_ID_PATTERN);
    if (i > 0) assert.ok(ids[i - 1]! < ids[i]!, `id ${i} sorts after id ${i - 1}`);
  }
  assert.ok(ms < 2000, `100k ids took ${ms.toFixed(0)} ms`);
});

test('batch ids stay monotonic within one millisecond and when the clock steps back', () => {
  const times = [1000, 1000, 1000, 999, 500, 1001, 1001];
  let i = 0;
  const gen = new BatchIdGenerator(() => times[i++]!);
  const ids = times.map(() => gen.next());
  for (let k = 1; k < ids.length; k++) assert.ok(ids[k - 1]! < ids[k]!, `${ids[k - 1]} < ${ids[k]}`);
  assert.deepEqual(ids.map(batchIdTime), [1000, 1000, 1000, 1000, 1000, 1001, 1001]);
  // Within a millisecond only the random part moves, by one.
  assert.equal(ids[0]!.slice(0, 18), ids[1]!.slice(0, 18));
});

test('batch ids carry their millisecond, and the floor of a time sorts between earlier and later ids', () => {
  const t = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
  const at = (ms: number) => new BatchIdGenerator(() => ms).next();
  assert.equal(batchIdTime(at(t)), t);
  assert.ok(at(t - 1) < batchIdFloor(t));
  assert.ok(batchIdFloor(t) <= at(t));
  assert.equal(batchIdTime(batchIdFloor(t)), t);
});

test('uuid text parses in either case to the same words as its 16 canonical bytes', () => {
  for (let i = 0; i < 200; i++) {
    const u = randomUUID();
    const a = new Int32Array(4);
    const b = new Int32Array(4);
    const c = new Int32Array(4);
    assert.ok(uuidTextWords(u, a));
    assert.ok(uuidTextWords(u.toUpperCase(), b));
    const bytes = uuidToBytes(u)!;
    assert.equal(Buffer.from(bytes).toString('hex'), u.replaceAll('-', ''));
    assert.ok(uuidByteWords(bytes, 0, c));
    assert.deepEqual(a, b);
    assert.deepEqual(a, c);
  }
});

test('malformed uuid text and out-of-bounds bytes are refused without throwing', () => {
  const w = new Int32Array(4);
  const u = '0f8fad5b-d9cb-469f-a165-70867728950e';
  for (const bad of ['', u.slice(1), u + '0', u.replaceAll('-', ''), `{${u.slice(1, -1)}}`, u.replace('a', 'g'),
    u.replace('-', '_'), u.replace('0', '\u0660'), u.replace('f', '\uff46'), ' ' + u.slice(1)]) {
    assert.equal(uuidTextWords(bad, w), false, JSON.stringify(bad));
  }
  const b = new Uint8Array(20);
  assert.equal(uuidByteWords(b, 5, w), false);
  assert.equal(uuidByteWords(b, -1, w), false);
  assert.equal(uuidByteWords(b, 4, w), true);
});
