/**
 * Finding the account behind a presented key (docs/protocol.md#authentication),
 * synchronously, from UUID text or the 16 raw bytes of a UDP packet.
 *
 * Embedded registry: records carry their key, indexed by its 128 bits.
 * Postgres registry: records carry only SHA-256 of the key's 16 bytes (the
 * database never holds a usable key), indexed by the digest's first 128 bits.
 * A presented key is hashed once (~1-3 µs); a key that matched is then
 * remembered by its own bits, so an account's later requests cost what they
 * cost in the embedded registry. Only keys that matched are remembered, so
 * the memory is bounded by the accounts, not by what clients send.
 */
import { hash } from 'node:crypto';
import { uuidTextWords, type UuidWords } from './ids.js';

/**
 * 128-bit words -> value, keyed by 30 bits of word 0 (a V8 small integer,
 * random in v4 UUIDs and in digests), collisions chained and compared on all
 * 128 bits: 16-34 ns per lookup from packet bytes vs 330-430 ns via a hex
 * string and a string Map.
 */
interface Slot<T> {
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
  readonly value: T;
  next: Slot<T> | undefined;
}

export class WordIndex<T> {
  private readonly slots = new Map<number, Slot<T>>();

  find(w: UuidWords): T | undefined {
    const w0 = w[0]!, w1 = w[1]!, w2 = w[2]!, w3 = w[3]!;
    for (let s = this.slots.get(w0 >>> 2); s !== undefined; s = s.next) {
      if (s.w0 === w0 && s.w1 === w1 && s.w2 === w2 && s.w3 === w3) return s.value;
    }
    return undefined;
  }

  set(w: UuidWords, value: T): void {
    this.delete(w);
    const key = w[0]! >>> 2;
    this.slots.set(key, { w0: w[0]!, w1: w[1]!, w2: w[2]!, w3: w[3]!, value, next: this.slots.get(key) });
  }

  delete(w: UuidWords): void {
    const key = w[0]! >>> 2;
    let prev: Slot<T> | undefined;
    for (let s = this.slots.get(key); s !== undefined; prev = s, s = s.next) {
      if (s.w0 === w[0] && s.w1 === w[1] && s.w2 === w[2] && s.w3 === w[3]) {
        if (prev) prev.next = s.next;
        else if (s.next) this.slots.set(key, s.next);
        else this.slots.delete(key);
        return;
      }
    }
  }

  clear(): void {
    this.slots.clear();
  }
}

/** What the index needs of a record: its id, and its key or the key's digest. */
interface Keyed {
  readonly id: number;
  readonly uuid?: string;
  /** SHA-256 of the key's 16 bytes, hex (postgres registry). */
  readonly key_sha256?: string;
}

/** SHA-256 of a key's 16 bytes: what the postgres registry stores instead of the key. */
function keyDigest(words: UuidWords): Buffer {
  const b = Buffer.allocUnsafe(16);
  for (let j = 0; j < 4; j++) b.writeInt32BE(words[j]!, 4 * j);
  return hash('sha256', b, 'buffer') as unknown as Buffer;
}

/** The digest of canonical UUID text, hex; undefined if it is not a UUID. */
export function keyDigestHex(uuid: string): string | undefined {
  const w: UuidWords = new Int32Array(4);
  return uuidTextWords(uuid, w) ? keyDigest(w).toString('hex') : undefined;
}

function digestWords(d: Uint8Array, out: UuidWords): UuidWords {
  for (let j = 0; j < 4; j++) out[j] = (d[4 * j]! << 24) | (d[4 * j + 1]! << 16) | (d[4 * j + 2]! << 8) | d[4 * j + 3]!;
  return out;
}

/** The live records of one registry, by key: plain (embedded) or hashed (postgres). */
export class KeyIndex<R extends Keyed> {
  /** Plain: key words -> record. Hashed: digest words -> record. */
  private readonly primary = new WordIndex<R>();
  /** Hashed only: key words of keys that matched -> account id, and back (to forget them on revocation). */
  private readonly seen = new WordIndex<number>();
  private readonly seenWords = new Map<number, Int32Array>();
  private readonly byId = new Map<number, R>();
  private readonly w: UuidWords = new Int32Array(4);

  constructor(readonly hashed: boolean) {}

  /** The live record for key words (scratch, not kept). */
  find(key: UuidWords): R | undefined {
    if (!this.hashed) return this.primary.find(key);
    const id = this.seen.find(key);
    if (id !== undefined) return this.byId.get(id);
    const rec = this.primary.find(digestWords(keyDigest(key), this.w));
    if (rec !== undefined) {
      const words = Int32Array.from(key);
      this.seen.set(words, rec.id);
      this.seenWords.set(rec.id, words);
    }
    return rec;
  }

  /** Indexes a live record (replacing its previous version). */
  set(rec: R): void {
    this.primary.set(this.wordsOf(rec), rec);
    this.byId.set(rec.id, rec);
  }

  /** Forgets a record (revoked). */
  delete(rec: R): void {
    this.primary.delete(this.wordsOf(rec));
    this.byId.delete(rec.id);
    const words = this.seenWords.get(rec.id);
    if (words !== undefined) {
      this.seen.delete(words);
      this.seenWords.delete(rec.id);
    }
  }

  clear(): void {
    this.primary.clear();
    this.seen.clear();
    this.seenWords.clear();
    this.byId.clear();
  }

  private wordsOf(rec: R): UuidWords {
    const w = this.w;
    if (this.hashed) {
      // Straight from the hex: a replica of a million accounts builds its index without a Buffer per record.
      const hex = rec.key_sha256!;
      for (let j = 0; j < 4; j++) w[j] = parseInt(hex.slice(8 * j, 8 * j + 8), 16) | 0;
      return w;
    }
    uuidTextWords(rec.uuid!, w);
    return w;
  }
}
