import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { KeyIndex, WordIndex, keyDigestHex } from '../../src/store/key-index.js';
import { uuidToBytes, uuidTextWords } from '../../src/store/ids.js';

test('the UUID index tells apart UUIDs that share a hash slot', () => {
  const index = new WordIndex<{ id: number }>();
  const rec = (id: number) => ({ id });
  // Same first word (same slot), or first words differing only in the 2 bits the slot key drops.
  const words = [
    [0x12345678, 1, 2, 3],
    [0x12345678, 1, 2, 4],
    [0x12345679, 1, 2, 3],
    [0x1234567b | 0, 9, 9, 9],
    [-1, -1, -1, -1],
    [-2, -1, -1, -1],
  ].map((w) => Int32Array.from(w));
  words.forEach((w, i) => index.set(w, rec(i)));
  words.forEach((w, i) => assert.equal(index.find(w)?.id, i));
  index.delete(words[1]!);
  index.delete(words[4]!);
  assert.equal(index.find(words[1]!), undefined);
  assert.equal(index.find(words[4]!), undefined);
  for (const i of [0, 2, 3, 5]) assert.equal(index.find(words[i]!)?.id, i);
  index.set(words[0]!, rec(10));
  assert.equal(index.find(words[0]!)?.id, 10);
});

test('the key digest is SHA-256 of the key\'s 16 bytes, whatever the case of its text', () => {
  const key = randomUUID();
  const expected = createHash('sha256').update(uuidToBytes(key)!).digest('hex');
  assert.equal(keyDigestHex(key), expected);
  assert.equal(keyDigestHex(key.toUpperCase()), expected);
  assert.equal(keyDigestHex('not-a-uuid'), undefined);
});

test('a hashed index finds a live record by its key, from the digest alone, and forgets it on revocation', () => {
  const index = new KeyIndex<{ id: number; key_sha256: string }>(true);
  const keys = Array.from({ length: 50 }, () => randomUUID());
  keys.forEach((k, i) => index.set({ id: i + 1, key_sha256: keyDigestHex(k)! }));
  const w = new Int32Array(4);
  for (let round = 0; round < 2; round++) {
    // The second round finds the keys remembered by the first.
    keys.forEach((k, i) => {
      uuidTextWords(k, w);
      assert.equal(index.find(w)?.id, i + 1);
    });
  }
  uuidTextWords(randomUUID(), w);
  assert.equal(index.find(w), undefined);
  const updated = { id: 3, key_sha256: keyDigestHex(keys[2]!)! };
  index.set(updated);
  uuidTextWords(keys[2]!, w);
  assert.equal(index.find(w), updated, 'a remembered key finds the record\'s newest version');
  index.delete(updated);
  assert.equal(index.find(w), undefined, 'revoked: neither the remembered key nor its digest finds it');
});
