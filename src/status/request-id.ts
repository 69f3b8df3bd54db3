/**
 * Request ids (`x-svc-request-id`, docs/protocol.md#status): 32 hex
 * characters, this thread's request counter and a random thread tag
 * encrypted as one AES block under a key drawn at start. Opaque: two ids
 * reveal nothing of how many requests the node took between them. Unique on
 * a node across threads (each has its own tag and key) and restarts (new
 * keys). Not a credential either: a status read checks the account.
 * Decrypting gives the counter back, which places a request in a tracker's
 * ring (`requestSeq`), so finding a request costs no hash-map entry per
 * transaction; another thread's id, or any other text, fails the tag check.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const key = randomBytes(16);
// ECB on a single block is a keyed permutation of it: the counter is never repeated, so no block is.
const enc = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
const dec = createDecipheriv('aes-128-ecb', key, null).setAutoPadding(false);
/** Bytes 0-7: this thread's tag; 8-15: the counter. */
const tag = randomBytes(8);
const tagHi = tag.readUInt32BE(0);
const tagLo = tag.readUInt32BE(4);
/**
 * Ids are encrypted AHEAD blocks at a time, in one cipher call: a call per
 * request cost about 1.7 us of a transaction's CPU (bench:ab, profiled).
 */
const AHEAD = 64;
const blocks = Buffer.alloc(16 * AHEAD);
for (let i = 0; i < AHEAD; i++) tag.copy(blocks, 16 * i);
let ready = '';
let readyFrom = 1;
/** Ids handed out: `requestSeq` knows no counter above it. */
let counter = 0;
// The last id made, and its counter: a request's traces ask for the same id several times.
let lastId = '';
let lastSeq = -1;
const HEX = /^[0-9a-f]{32}$/;

export function nextRequestId(): string {
  const n = ++counter;
  if (n >= readyFrom + AHEAD || ready === '') {
    readyFrom = n;
    for (let i = 0; i < AHEAD; i++) {
      const c = n + i;
      blocks.writeUInt32BE(Math.floor(c / 0x1_0000_0000), 16 * i + 8);
      blocks.writeUInt32BE(c >>> 0, 16 * i + 12);
    }
    ready = enc.update(blocks).toString('hex');
  }
  const at = 32 * (n - readyFrom);
  lastId = ready.slice(at, at + 32);
  lastSeq = n;
  return lastId;
}

/** The counter of a request id made by this thread; -1 for any other text. */
export function requestSeq(id: string): number {
  if (id === lastId) return lastSeq;
  if (id.length !== 32 || !HEX.test(id)) return -1;
  const b = dec.update(Buffer.from(id, 'hex'));
  if (b.length !== 16 || b.readUInt32BE(0) !== tagHi || b.readUInt32BE(4) !== tagLo) return -1;
  const n = b.readUInt32BE(8) * 0x1_0000_0000 + b.readUInt32BE(12);
  return n > 0 && n <= counter ? n : -1;
}
