/**
 * The bundle tip rule (docs/protocol.md#solana-bundles): the lamports System
 * Program `Transfer` and `TransferWithSeed` instructions send to a tip account.
 * Only a static-key destination counts: lookup-table addresses are invisible
 * to a relay that reads no chain state. A 0-lamport transfer is still found.
 * Data is bincode (solana-system-interface `SystemInstruction`, u32 LE variant
 * first); the program allows trailing bytes (`limited_deserialize`), so this
 * does too, and what it would fail to deserialize is not counted.
 */

import bs58 from 'bs58';
import { IX_ACCOUNTS_LENGTH, IX_ACCOUNTS_OFFSET, IX_DATA_LENGTH, IX_DATA_OFFSET, IX_PROGRAM, IX_STRIDE, type SolanaTxView } from './decode.js';
import { ConfigError } from '../../errors.js';

/** SystemInstruction::Transfer { lamports: u64 }; accounts [from, to]. */
const TRANSFER = 2;
/** SystemInstruction::TransferWithSeed { lamports: u64, from_seed: String, from_owner: Pubkey }; accounts [from, base, to]. */
const TRANSFER_WITH_SEED = 11;
/** Address::MAX_SEED_LEN: a longer seed fails create_with_seed, so the transfer cannot execute. */
const MAX_SEED_LEN = 32;
const KEY_BYTES = 32;

/** The tip accounts as raw keys; a 4-byte prefix Map keeps lookup cost flat in the number of accounts. */
export class TipAccounts {
  readonly addresses: readonly string[];
  private readonly keys: Uint8Array;
  private readonly byPrefix = new Map<number, number[]>();

  constructor(addresses: readonly string[]) {
    const unique: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < addresses.length; i++) {
      const a = addresses[i]!;
      if (typeof a !== 'string' || a.length === 0) throw new ConfigError(`solana.tip_accounts: tip account #${i} is empty`);
      let raw: Uint8Array;
      try {
        raw = bs58.decode(a);
      } catch {
        throw new ConfigError(`solana.tip_accounts: tip account #${i} "${a}" is not valid base58`);
      }
      if (raw.length !== KEY_BYTES) throw new ConfigError(`solana.tip_accounts: tip account #${i} "${a}" decodes to ${raw.length} bytes, expected 32`);
      const canonical = bs58.encode(raw);
      if (seen.has(canonical)) continue;
      seen.add(canonical);
      unique.push(canonical);
    }
    this.addresses = Object.freeze(unique);
    this.keys = new Uint8Array(unique.length * KEY_BYTES);
    for (let i = 0; i < unique.length; i++) {
      const raw = bs58.decode(unique[i]!);
      this.keys.set(raw, i * KEY_BYTES);
      const p = prefix(raw, 0);
      const list = this.byPrefix.get(p);
      if (list) list.push(i);
      else this.byPrefix.set(p, [i]);
    }
  }

  get size(): number {
    return this.addresses.length;
  }

  /** Is the 32-byte key at `bytes[offset]` a tip account? */
  has(bytes: Uint8Array, offset: number): boolean {
    const list = this.byPrefix.get(prefix(bytes, offset));
    if (list === undefined) return false;
    const keys = this.keys;
    for (let n = 0; n < list.length; n++) {
      const base = list[n]! * KEY_BYTES;
      let k = 4;
      while (k < KEY_BYTES && keys[base + k] === bytes[offset + k]) k++;
      if (k === KEY_BYTES) return true;
    }
    return false;
  }
}

function prefix(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

interface TipSum {
  /** At least one System transfer to a tip account (otherwise 606). */
  found: boolean;
  /** Their lamports (below the plan minimum is 607). */
  lamports: bigint;
}

/** Tips in one decoded transaction. `view` must come from decoding `bytes`. */
export function sumTips(bytes: Uint8Array, view: SolanaTxView, tips: TipAccounts): TipSum {
  let found = false;
  let lamports = 0n;
  if (tips.size === 0) return { found, lamports };
  const table = view.instructions;
  const keys = view.accountKeysOffset;
  const numStatic = view.numStaticKeys;
  for (let t = 0, end = view.numInstructions * IX_STRIDE; t < end; t += IX_STRIDE) {
    if (!isSystemProgram(bytes, keys + table[t + IX_PROGRAM]! * KEY_BYTES)) continue;
    const d = table[t + IX_DATA_OFFSET]!;
    const dataLength = table[t + IX_DATA_LENGTH]!;
    if (dataLength < 12) continue; // every counted variant has a u32 tag and a u64 amount
    const variant = readU32(bytes, d);
    let destinationSlot: number;
    if (variant === TRANSFER) {
      destinationSlot = 1;
    } else if (variant === TRANSFER_WITH_SEED) {
      if (!isWellFormedTransferWithSeed(bytes, d, dataLength)) continue;
      destinationSlot = 2;
    } else {
      continue;
    }
    if (table[t + IX_ACCOUNTS_LENGTH]! <= destinationSlot) continue; // NotEnoughAccountKeys on chain
    const to = bytes[table[t + IX_ACCOUNTS_OFFSET]! + destinationSlot]!;
    if (to >= numStatic) continue; // loaded from a lookup table: invisible
    if (!tips.has(bytes, keys + to * KEY_BYTES)) continue;
    found = true;
    lamports += readU64(bytes, d + 4);
  }
  return { found, lamports };
}

/** Tips across a bundle (the tip may sit in any one transaction). */
export function sumBundleTips(txs: readonly { bytes: Uint8Array; view: SolanaTxView }[], tips: TipAccounts): TipSum {
  let found = false;
  let lamports = 0n;
  for (const tx of txs) {
    const s = sumTips(tx.bytes, tx.view, tips);
    if (s.found) found = true;
    lamports += s.lamports;
  }
  return { found, lamports };
}

function isSystemProgram(b: Uint8Array, o: number): boolean {
  for (let k = 0; k < KEY_BYTES; k++) if (b[o + k] !== 0) return false;
  return true;
}

/** bincode: u32 tag, u64 lamports, u64 seed length, seed (UTF-8), 32-byte owner. */
function isWellFormedTransferWithSeed(b: Uint8Array, d: number, length: number): boolean {
  if (length < 4 + 8 + 8) return false;
  const seedLenLo = readU32(b, d + 12);
  const seedLenHi = readU32(b, d + 16);
  if (seedLenHi !== 0 || seedLenLo > MAX_SEED_LEN) return false;
  if (length < 20 + seedLenLo + KEY_BYTES) return false;
  return isUtf8(b, d + 20, seedLenLo);
}

function readU32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

function readU64(b: Uint8Array, o: number): bigint {
  const lo = readU32(b, o);
  const hi = readU32(b, o + 4);
  return hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo);
}

/** Strict UTF-8 as Rust's String::from_utf8 (no overlongs, no surrogates, <= U+10FFFF). */
function isUtf8(b: Uint8Array, o: number, n: number): boolean {
  const end = o + n;
  let i = o;
  while (i < end) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else {
      return false;
    }
    if (i + need >= end) return false;
    let cp = c & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const cc = b[i + k]!;
      if ((cc & 0xc0) !== 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += need + 1;
  }
  return true;
}
