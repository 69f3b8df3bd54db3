/**
 * Authentication from the replica: the live account behind a presented key,
 * from its UUID text, over 100k accounts. Embedded registry (keys indexed
 * directly) against the postgres registry (digests indexed): a key seen
 * before is remembered by its own bits, so only a key's first request on a
 * node, or a key that matches nothing, pays the SHA-256.
 */
import { randomUUID } from 'node:crypto';
import { KeyIndex, keyDigestHex } from '../src/store/key-index.js';
import { uuidTextWords } from '../src/store/ids.js';

const ACCOUNTS = 100_000;
const BATCH = 256;

/** Results feed this so no call can be optimised away. */
export let sink = 0;

interface Rec {
  id: number;
  uuid?: string;
  key_sha256?: string;
}

const keys = Array.from({ length: ACCOUNTS }, () => randomUUID());
const plain = new KeyIndex<Rec>(false);
const hashed = new KeyIndex<Rec>(true);
keys.forEach((k, i) => {
  plain.set({ id: i + 1, uuid: k });
  hashed.set({ id: i + 1, key_sha256: keyDigestHex(k)! });
});
const probe = Array.from({ length: BATCH }, (_, i) => keys[(i * 7919) % ACCOUNTS]!);
const unknown = Array.from({ length: BATCH }, () => randomUUID());
const w = new Int32Array(4);
let at = 0;

function lookup(index: KeyIndex<Rec>, texts: string[]): void {
  for (let i = 0; i < BATCH; i++) {
    const k = texts[(at + i) % BATCH]!;
    if (uuidTextWords(k, w)) sink += index.find(w)?.id ?? 0;
  }
  at++;
}

export const benches: { name: string; items: number; setup?: () => Promise<void> | void; fn: () => void }[] = [
  { name: 'account from key text, embedded registry (100k accounts)', items: BATCH, fn: () => lookup(plain, probe) },
  {
    name: 'account from key text, postgres registry, key seen before (100k accounts)',
    items: BATCH,
    setup: () => lookup(hashed, probe),
    fn: () => lookup(hashed, probe),
  },
  { name: 'account from key text, postgres registry, unknown key: one SHA-256', items: BATCH, fn: () => lookup(hashed, unknown) },
];
