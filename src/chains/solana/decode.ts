/**
 * Strict decoder for serialized Solana transactions (legacy, v0, v1 =
 * SIMD-0385) applying Agave's sanitize rules (transaction-view `sanitize.rs`;
 * SIMD-0385 "Transaction Constraints"), so the relay refuses locally what the
 * chain would refuse. The result is offsets into the caller's bytes, which may
 * sit in the shared slab and must not change while a view of them is in use.
 *
 * Wire layouts (all integers little-endian, "cu16" = canonical compact-u16):
 *
 *   legacy / v0                          v1 (SIMD-0385)
 *   cu16   signature count               u8      0x81
 *   [64]   signatures                    u8 x3   header
 *   ---- message starts here ----        u32     config mask
 *   u8     0x80 (v0 only)                [32]    lifetime (blockhash)
 *   u8 x3  header                        u8      instruction count (<= 64)
 *   cu16   static key count              u8      address count (<= 64)
 *   [32]   static keys                   [32]    addresses
 *   [32]   recent blockhash              [4]     config values (popcount(mask))
 *   cu16   instruction count             (u8 program, u8 nacc, u16 ndata) per ix
 *     u8 program, cu16+[u8] accounts,    accounts then data, per ix
 *     cu16+[u8] data                     ---- message ends here ----
 *   cu16 lookups (v0 only)               [64] x header[0] signatures
 *     [32] table, cu16+[u8] writable,
 *     cu16+[u8] readonly
 */

import { base58EncodeAt } from '../../native/base58.js';
import { DecodeError } from '../../errors.js';
import { ByteReader } from './bytes.js';

/** Solana's UDP packet payload: IPv6 minimum MTU 1280 - 40 (IPv6 header) - 8 (fragment header). Legacy/v0 everywhere, v1 over UDP (docs/protocol.md#limits). */
export const PACKET_DATA_SIZE = 1232;
/** SIMD-0385 "Transaction Constraints": v1 may reach 4096 bytes, which only fits the HTTP doors (docs/protocol.md#limits). */
export const MAX_V1_TX_SIZE = 4096;
/** SIMD-0385 VersionByte: MESSAGE_VERSION_PREFIX (0x80) | 1. */
const V1_VERSION_BYTE = 0x81;
/** 1232 / (64-byte signature + 32-byte key): Agave's MAX_SIGNATURES_PER_PACKET; SIMD-0385 keeps 12 for v1. */
const MAX_SIGNATURES = 12;

const SIGNATURE_BYTES = 64;
const KEY_BYTES = 32;
/** Account indexes are u8, so Agave's sanitize caps static + looked-up accounts at 256. */
const MAX_ACCOUNTS = 256;
/** SIMD-0385: NumInstructions and NumAddresses above 64 are sanitization failures. */
const V1_MAX_INSTRUCTIONS = 64;
const V1_MAX_ADDRESSES = 64;
/** SIMD-0385 config bits: 0-1 priority fee (u64), 2 CU limit, 3 loaded data size, 4 heap size. Others are reserved. */
const V1_KNOWN_CONFIG_BITS = 0b1_1111;
const V1_HEAP_BIT = 1 << 4;
/** SIMD-0385: a requested heap size is a multiple of 1 KiB in [32 KiB, 256 KiB]. */
const V1_MIN_HEAP = 32 * 1024;
const V1_MAX_HEAP = 256 * 1024;
/** Smallest legacy/v0 instruction: program index + two zero-length cu16 (bounds the count before allocating). */
const MIN_INSTRUCTION_BYTES = 3;
/** Smallest v0 lookup entry: 32-byte table key and two cu16 lengths (an empty one is then refused by name). */
const MIN_LOOKUP_BYTES = 34;

type SolanaTxVersion = 'legacy' | 'v0' | 'v1';

/** Layout of `SolanaTxView.instructions`: IX_STRIDE numbers per instruction, at these positions. */
export const IX_STRIDE = 5;
export const IX_PROGRAM = 0;
export const IX_ACCOUNTS_OFFSET = 1;
export const IX_ACCOUNTS_LENGTH = 2;
export const IX_DATA_OFFSET = 3;
export const IX_DATA_LENGTH = 4;

const NO_INSTRUCTIONS = new Uint32Array(0);

/** Offsets into the decoded bytes; every field starts as a number so all views share one hidden class. */
export class SolanaTxView {
  version: SolanaTxVersion = 'legacy';
  /** Total transaction length in bytes. */
  size = 0;
  numSignatures = 0;
  signaturesOffset = 0;
  /** The signed bytes: legacy/v0 from the message prefix to the end, v1 from 0x81 up to the signatures. */
  messageOffset = 0;
  messageLength = 0;
  numRequiredSignatures = 0;
  numReadonlySigned = 0;
  numReadonlyUnsigned = 0;
  accountKeysOffset = 0;
  numStaticKeys = 0;
  recentBlockhashOffset = 0;
  /** v0 only: lookup entries and the addresses they load (writable, then readonly). */
  numLookups = 0;
  lookupsOffset = 0;
  numWritableLookupKeys = 0;
  numReadonlyLookupKeys = 0;
  numLookupKeys = 0;
  /** v1 only: TransactionConfigMask and where its 4-byte values start. */
  configMask = 0;
  configValuesOffset = 0;
  numInstructions = 0;
  /** Read only `numInstructions` entries: a reused view keeps a larger table with a stale tail. */
  instructions: Uint32Array = NO_INSTRUCTIONS;
  /** Whether this view is decoded into again and again (its table is kept and grown, never shrunk). */
  reused = false;

  /** Back to the freshly constructed state, keeping a reused view's table. */
  reset(): void {
    this.version = 'legacy';
    this.size = 0;
    this.numSignatures = 0;
    this.signaturesOffset = 0;
    this.messageOffset = 0;
    this.messageLength = 0;
    this.numRequiredSignatures = 0;
    this.numReadonlySigned = 0;
    this.numReadonlyUnsigned = 0;
    this.accountKeysOffset = 0;
    this.numStaticKeys = 0;
    this.recentBlockhashOffset = 0;
    this.numLookups = 0;
    this.lookupsOffset = 0;
    this.numWritableLookupKeys = 0;
    this.numReadonlyLookupKeys = 0;
    this.numLookupKeys = 0;
    this.configMask = 0;
    this.configValuesOffset = 0;
    this.numInstructions = 0;
  }

  /** Static keys plus lookup-loaded addresses: the range of an instruction account index. */
  get numAccounts(): number {
    return this.numStaticKeys + this.numLookupKeys;
  }

  programIdIndex(ix: number): number {
    return this.instructions[ix * IX_STRIDE + IX_PROGRAM]!;
  }

  accountsOffset(ix: number): number {
    return this.instructions[ix * IX_STRIDE + IX_ACCOUNTS_OFFSET]!;
  }

  accountsLength(ix: number): number {
    return this.instructions[ix * IX_STRIDE + IX_ACCOUNTS_LENGTH]!;
  }

  dataOffset(ix: number): number {
    return this.instructions[ix * IX_STRIDE + IX_DATA_OFFSET]!;
  }

  dataLength(ix: number): number {
    return this.instructions[ix * IX_STRIDE + IX_DATA_LENGTH]!;
  }
}

/** Size limit for one transaction (docs/protocol.md#limits): 4096 for v1 over HTTP, 1232 otherwise. */
export function maxSizeFor(bytes: Uint8Array, overUdp: boolean): number {
  return !overUdp && bytes.length > 0 && bytes[0] === V1_VERSION_BYTE ? MAX_V1_TX_SIZE : PACKET_DATA_SIZE;
}

// One reader per thread (decoding is synchronous): a decode is ~0.1 µs (bench/solana.bench.ts), so per-call garbage would dominate.
const reader = new ByteReader();

/**
 * Decodes and sanitizes one serialized transaction; throws only `DecodeError`
 * (submitter-safe message), whatever the bytes. `maxSize` is the transport's
 * limit (`maxSizeFor`); the on-chain 1232 / 4096 limits apply regardless.
 */
export function decodeSolanaTransaction(bytes: Uint8Array, maxSize: number, into?: SolanaTxView): SolanaTxView {
  const len = bytes.length;
  // Size first, before reading any structure.
  if (len > maxSize) throw new DecodeError(`transaction is ${len} bytes, over the ${maxSize}-byte limit`);
  if (len === 0) throw new DecodeError('empty transaction');
  const first = bytes[0]!;
  let view: SolanaTxView;
  if (into === undefined) view = new SolanaTxView();
  else {
    // The hot path decodes every transaction into one per-thread view: no garbage per decode.
    view = into;
    view.reset();
    view.reused = true;
  }
  view.size = len;
  const r = reader.reset(bytes);
  try {
    if (first === V1_VERSION_BYTE) {
      if (len > MAX_V1_TX_SIZE) throw new DecodeError(`v1 transaction is ${len} bytes, over the ${MAX_V1_TX_SIZE}-byte limit`);
      decodeV1(r, view);
    } else {
      if (len > PACKET_DATA_SIZE) {
        throw new DecodeError(`legacy/v0 transaction is ${len} bytes, over the ${PACKET_DATA_SIZE}-byte limit`);
      }
      // A signature count is at most 12, so a set high bit means a message-first envelope.
      if (first === 0x80) throw new DecodeError('v0 transaction must start with its signatures');
      if (first > 0x80) throw new DecodeError(`unsupported transaction version ${first & 0x7f}`);
      decodeSignaturesFirst(r, view);
    }
  } finally {
    reader.release();
  }
  return view;
}

/** The instruction table for `numIx` instructions: exact for a fresh view, the kept (grown) one for a reused view. */
function instructionTable(view: SolanaTxView, numIx: number): Uint32Array {
  if (numIx === 0) return view.reused ? view.instructions : NO_INSTRUCTIONS;
  const need = numIx * IX_STRIDE;
  if (!view.reused) return new Uint32Array(need);
  // 64 instructions (the v1 cap) covers nearly every transaction at the first allocation.
  if (view.instructions.length < need) view.instructions = new Uint32Array(Math.max(need, 64 * IX_STRIDE));
  return view.instructions;
}

/** Primitive steps taken by the last decode (DoS tests: must stay linear in input length). */
export function lastDecodeOps(): number {
  return reader.ops;
}

function decodeSignaturesFirst(r: ByteReader, view: SolanaTxView): void {
  const numSignatures = r.shortU16();
  if (numSignatures > MAX_SIGNATURES) throw new DecodeError(`${numSignatures} signatures, at most ${MAX_SIGNATURES} allowed`);
  view.numSignatures = numSignatures;
  view.signaturesOffset = r.skip(numSignatures * SIGNATURE_BYTES);
  view.messageOffset = r.pos;

  const prefix = r.u8();
  let numRequired: number;
  if ((prefix & 0x80) !== 0) {
    const v = prefix & 0x7f;
    if (v !== 0) throw new DecodeError(v === 1 ? 'v1 message must not follow signatures' : `unsupported message version ${v}`);
    view.version = 'v0';
    numRequired = r.u8();
  } else {
    view.version = 'legacy';
    numRequired = prefix;
  }
  const numReadonlySigned = r.u8();
  const numReadonlyUnsigned = r.u8();
  if (numSignatures !== numRequired) {
    throw new DecodeError(`signature count ${numSignatures} does not match the ${numRequired} required signatures`);
  }
  const numStatic = r.shortU16();
  checkHeader(numRequired, numReadonlySigned, numReadonlyUnsigned, numStatic);
  view.numRequiredSignatures = numRequired;
  view.numReadonlySigned = numReadonlySigned;
  view.numReadonlyUnsigned = numReadonlyUnsigned;
  view.numStaticKeys = numStatic;
  view.accountKeysOffset = r.skip(numStatic * KEY_BYTES);
  view.recentBlockhashOffset = r.skip(KEY_BYTES);

  const numIx = r.shortU16();
  if (numIx * MIN_INSTRUCTION_BYTES > r.remaining()) throw new DecodeError(`${numIx} instructions cannot fit in the transaction`);
  const table = instructionTable(view, numIx);
  let maxAccountIndex = -1;
  for (let i = 0, t = 0; i < numIx; i++, t += IX_STRIDE) {
    const program = r.u8();
    checkProgramIndex(i, program, numStatic);
    const numAccounts = r.shortU16();
    const accountsOffset = r.pos;
    const m = r.maxByte(numAccounts);
    if (m > maxAccountIndex) maxAccountIndex = m;
    const dataLength = r.shortU16();
    table[t + IX_PROGRAM] = program;
    table[t + IX_ACCOUNTS_OFFSET] = accountsOffset;
    table[t + IX_ACCOUNTS_LENGTH] = numAccounts;
    table[t + IX_DATA_OFFSET] = r.skip(dataLength);
    table[t + IX_DATA_LENGTH] = dataLength;
  }
  view.numInstructions = numIx;
  view.instructions = table;

  if (view.version === 'v0') {
    const numLookups = r.shortU16();
    if (numLookups * MIN_LOOKUP_BYTES > r.remaining()) throw new DecodeError(`${numLookups} address table lookups cannot fit in the transaction`);
    view.numLookups = numLookups;
    view.lookupsOffset = r.pos;
    let writable = 0;
    let readonly = 0;
    for (let i = 0; i < numLookups; i++) {
      r.skip(KEY_BYTES);
      const w = r.shortU16();
      r.skip(w);
      const ro = r.shortU16();
      r.skip(ro);
      if (w + ro === 0) throw new DecodeError(`address table lookup ${i} loads no address`);
      writable += w;
      readonly += ro;
    }
    view.numWritableLookupKeys = writable;
    view.numReadonlyLookupKeys = readonly;
    view.numLookupKeys = writable + readonly;
  }
  r.expectEnd();

  const total = numStatic + view.numLookupKeys;
  if (total > MAX_ACCOUNTS) throw new DecodeError(`${total} accounts, at most ${MAX_ACCOUNTS} allowed`);
  // Instruction accounts may index lookup-loaded addresses, so they are range-checked only now.
  if (maxAccountIndex >= total) throw new DecodeError(`account index ${maxAccountIndex} out of range (${total} accounts)`);
  view.messageLength = view.size - view.messageOffset;
}

function decodeV1(r: ByteReader, view: SolanaTxView): void {
  view.version = 'v1';
  view.messageOffset = r.skip(1); // the version byte is signed too (SIMD-0385 "Signatures")
  const numRequired = r.u8();
  const numReadonlySigned = r.u8();
  const numReadonlyUnsigned = r.u8();
  if (numRequired > MAX_SIGNATURES) throw new DecodeError(`${numRequired} signatures, at most ${MAX_SIGNATURES} allowed`);

  const mask = r.u32le();
  if ((mask & ~V1_KNOWN_CONFIG_BITS) !== 0) throw new DecodeError('v1 config mask sets reserved bits');
  if ((mask & 1) !== ((mask >>> 1) & 1)) throw new DecodeError('v1 priority fee needs both config mask bits 0 and 1');
  view.configMask = mask;
  view.recentBlockhashOffset = r.skip(KEY_BYTES);

  const numIx = r.u8();
  if (numIx > V1_MAX_INSTRUCTIONS) throw new DecodeError(`${numIx} instructions, at most ${V1_MAX_INSTRUCTIONS} allowed`);
  const numAddresses = r.u8();
  if (numAddresses > V1_MAX_ADDRESSES) throw new DecodeError(`${numAddresses} addresses, at most ${V1_MAX_ADDRESSES} allowed`);
  checkHeader(numRequired, numReadonlySigned, numReadonlyUnsigned, numAddresses);
  view.numRequiredSignatures = numRequired;
  view.numReadonlySigned = numReadonlySigned;
  view.numReadonlyUnsigned = numReadonlyUnsigned;
  view.numStaticKeys = numAddresses;
  view.accountKeysOffset = r.skip(numAddresses * KEY_BYTES);
  checkDistinctKeys(r, view.accountKeysOffset, numAddresses);

  const numValues = popcount5(mask);
  const valuesOffset = r.skip(numValues * 4);
  view.configValuesOffset = valuesOffset;
  if ((mask & V1_HEAP_BIT) !== 0) {
    const heap = r.u32leAt(valuesOffset + 4 * popcount5(mask & (V1_HEAP_BIT - 1)));
    if (heap % 1024 !== 0 || heap < V1_MIN_HEAP || heap > V1_MAX_HEAP) {
      throw new DecodeError('v1 heap size must be a multiple of 1024 in [32768, 262144]');
    }
  }

  const headersOffset = r.skip(numIx * 4);
  const table = instructionTable(view, numIx);
  for (let i = 0, t = 0, h = headersOffset; i < numIx; i++, t += IX_STRIDE, h += 4) {
    const program = r.u8At(h);
    checkProgramIndex(i, program, numAddresses);
    const numAccounts = r.u8At(h + 1);
    const dataLength = r.u16leAt(h + 2);
    const accountsOffset = r.pos;
    const m = r.maxByte(numAccounts);
    if (m >= numAddresses) throw new DecodeError(`account index ${m} out of range (${numAddresses} accounts)`);
    table[t + IX_PROGRAM] = program;
    table[t + IX_ACCOUNTS_OFFSET] = accountsOffset;
    table[t + IX_ACCOUNTS_LENGTH] = numAccounts;
    table[t + IX_DATA_OFFSET] = r.skip(dataLength);
    table[t + IX_DATA_LENGTH] = dataLength;
  }
  view.numInstructions = numIx;
  view.instructions = table;

  // v1 has no signature count: exactly num_required_signatures, as the last bytes.
  view.messageLength = r.pos - view.messageOffset;
  view.numSignatures = numRequired;
  view.signaturesOffset = r.skip(numRequired * SIGNATURE_BYTES);
  r.expectEnd();
}

/** Agave sanitize_account_access / SIMD-0385 LegacyHeader and NumAddresses rules. */
function checkHeader(numRequired: number, readonlySigned: number, readonlyUnsigned: number, numKeys: number): void {
  if (numRequired === 0) throw new DecodeError('no required signature (the fee payer must sign)');
  if (readonlySigned >= numRequired) {
    throw new DecodeError(`readonly signed accounts (${readonlySigned}) must be fewer than required signatures (${numRequired})`);
  }
  if (numRequired > numKeys) throw new DecodeError(`${numRequired} required signatures but only ${numKeys} account keys`);
  if (readonlyUnsigned > numKeys - numRequired) {
    throw new DecodeError(`readonly unsigned accounts (${readonlyUnsigned}) exceed the ${numKeys - numRequired} unsigned account keys`);
  }
}

/** Agave sanitize_instructions: a program is a static key and never the fee payer. */
function checkProgramIndex(ix: number, program: number, numStatic: number): void {
  if (program === 0 || program >= numStatic) {
    throw new DecodeError(`instruction ${ix}: program id index ${program} out of range (1..${numStatic - 1})`);
  }
}

/** SIMD-0385 Addresses: duplicates are a sanitization failure. At most 64 keys, so pairwise is bounded (2016 compares). */
function checkDistinctKeys(r: ByteReader, offset: number, n: number): void {
  if (n < 2) return;
  const b = r.bytes;
  r.charge((n * (n - 1)) >>> 1);
  for (let i = 1; i < n; i++) {
    const a = offset + i * KEY_BYTES;
    for (let j = 0; j < i; j++) {
      const c = offset + j * KEY_BYTES;
      if (b[a] !== b[c] || b[a + 1] !== b[c + 1]) continue;
      let k = 2;
      while (k < KEY_BYTES && b[a + k] === b[c + k]) k++;
      if (k === KEY_BYTES) throw new DecodeError(`address ${i} duplicates address ${j}`);
    }
  }
}

function popcount5(x: number): number {
  return (x & 1) + ((x >>> 1) & 1) + ((x >>> 2) & 1) + ((x >>> 3) & 1) + ((x >>> 4) & 1);
}

/** Signature 0: the transaction id (a subarray, no copy). */
export function firstSignature(bytes: Uint8Array, view: SolanaTxView): Uint8Array {
  return bytes.subarray(view.signaturesOffset, view.signaturesOffset + SIGNATURE_BYTES);
}

export function signatureAt(bytes: Uint8Array, view: SolanaTxView, i: number): Uint8Array {
  if (i < 0 || i >= view.numSignatures) throw new RangeError(`signature ${i} of ${view.numSignatures}`);
  const o = view.signaturesOffset + i * SIGNATURE_BYTES;
  return bytes.subarray(o, o + SIGNATURE_BYTES);
}

/** Static account key `i` (signer `i` for i < numRequiredSignatures). */
export function accountKeyAt(bytes: Uint8Array, view: SolanaTxView, i: number): Uint8Array {
  if (i < 0 || i >= view.numStaticKeys) throw new RangeError(`account key ${i} of ${view.numStaticKeys}`);
  const o = view.accountKeysOffset + i * KEY_BYTES;
  return bytes.subarray(o, o + KEY_BYTES);
}

/** The bytes every signature signs. */
export function messageBytes(bytes: Uint8Array, view: SolanaTxView): Uint8Array {
  return bytes.subarray(view.messageOffset, view.messageOffset + view.messageLength);
}

/** The transaction signature as Solana RPCs print it. */
export function firstSignatureBase58(bytes: Uint8Array, view: SolanaTxView): string {
  // The native addon encodes in place (28x bs58 for 64 bytes; falls back to bs58 itself).
  return base58EncodeAt(bytes, view.signaturesOffset, 64);
}
