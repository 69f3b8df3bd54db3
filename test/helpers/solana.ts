/**
 * Builds and signs real Solana transactions for tests and benches: legacy and
 * v0 through @solana/web3.js 1.99, v1 (SIMD-0385) by hand.
 *
 * web3.js 1.99 has no v1 support (nor does any other installed library), so
 * `v1Transaction` compiles the accounts and instructions with web3.js's
 * legacy compiler (same key ordering rules), lays them out as SIMD-0385
 * describes, and signs the message bytes with each Keypair's secret key.
 * web3.js also refuses to serialize anything over 1232 bytes, so
 * `paddedTransaction` writes oversized legacy transactions with the same
 * hand serializer (checked against web3.js in solana-decode.test.ts).
 *
 * Every builder returns the wire bytes and the base58 first signature.
 *
 * Keys are made and messages signed with Node's own Ed25519 (the same
 * deterministic signatures as web3.js's pure-JS one, ~50x cheaper), and
 * web3.js does not verify again what was just signed: suites build thousands
 * of transactions, and at ~5 ms each that was a large share of their CPU.
 */

import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import bs58 from 'bs58';
import {
  AddressLookupTableAccount,
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';

export { Keypair, PublicKey, SystemProgram, TransactionInstruction, AddressLookupTableAccount };

export interface BuiltTx {
  /** Serialized, signed transaction (a plain Uint8Array, not a Buffer). */
  bytes: Uint8Array;
  /** Base58 first signature: the transaction id. */
  signature: string;
}

export type Version = 'legacy' | 'v0' | 'v1';

/** SIMD-0385 TransactionConfigMask values; each present field sets its bit(s). */
export interface V1Config {
  priorityFeeLamports?: bigint | number;
  computeUnitLimit?: number;
  loadedAccountsDataSizeLimit?: number;
  heapSize?: number;
}

export interface BuildOpts {
  /** Signers besides the payer, in any order. */
  signers?: Keypair[];
  /** Base58; a random one by default so every transaction is unique. */
  blockhash?: string;
  /** v0 only. */
  lookupTables?: AddressLookupTableAccount[];
  /** v1 only. */
  config?: V1Config;
}

export interface TransferOpts {
  from?: Keypair;
  to?: PublicKey | string;
  lamports?: number | bigint;
  /** Instructions appended after the transfer. */
  extra?: TransactionInstruction[];
  blockhash?: string;
}

export function randomBlockhash(): string {
  return bs58.encode(randomBytes(32));
}

export function newKeypair(): Keypair {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  // The raw seed and public key are the last 32 bytes of their DER forms.
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return Keypair.fromSecretKey(Buffer.concat([seed, pub]), { skipValidation: true });
}

const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The Ed25519 signature of `message` by a 64-byte (seed || public key) secret key. */
export function signWith(secretKey: Uint8Array, message: Uint8Array): Buffer {
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, secretKey.subarray(0, 32)]), format: 'der', type: 'pkcs8' });
  return sign(null, message, key);
}

export function randomAddress(): PublicKey {
  return new PublicKey(randomBytes(32));
}

function pk(k: PublicKey | string | undefined): PublicKey {
  if (k === undefined) return randomAddress();
  return typeof k === 'string' ? new PublicKey(k) : k;
}

function done(bytes: Uint8Array, sigOffset: number): BuiltTx {
  const plain = Uint8Array.from(bytes);
  return { bytes: plain, signature: bs58.encode(plain.subarray(sigOffset, sigOffset + 64)) };
}

// ---- generic builders ------------------------------------------------------

/** Any transaction of any version from web3.js instructions. */
export function buildTransaction(version: Version, payer: Keypair, instructions: TransactionInstruction[], opts: BuildOpts = {}): BuiltTx {
  if (version === 'legacy') return legacyTransaction(payer, instructions, opts);
  if (version === 'v0') return v0Transaction(payer, instructions, opts);
  return v1Transaction(payer, instructions, opts);
}

/** Legacy, serialized by web3.js `Transaction`. */
export function legacyTransaction(payer: Keypair, instructions: TransactionInstruction[], opts: BuildOpts = {}): BuiltTx {
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: opts.blockhash ?? randomBlockhash() });
  tx.add(...instructions);
  // What tx.sign does, with the native signer.
  const signers = [...new Map([payer, ...(opts.signers ?? [])].map((k) => [k.publicKey.toBase58(), k])).values()];
  tx.setSigners(...signers.map((k) => k.publicKey));
  const message = tx.serializeMessage();
  for (const k of signers) tx.addSignature(k.publicKey, signWith(k.secretKey, message));
  return done(tx.serialize({ verifySignatures: false }), 1);
}

/** v0, compiled and serialized by web3.js (`compileToV0Message`, `VersionedTransaction`). */
export function v0Transaction(payer: Keypair, instructions: TransactionInstruction[], opts: BuildOpts = {}): BuiltTx {
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: opts.blockhash ?? randomBlockhash(),
    instructions,
  }).compileToV0Message(opts.lookupTables ?? []);
  const tx = new VersionedTransaction(message);
  const data = message.serialize();
  for (const k of [payer, ...(opts.signers ?? [])]) tx.addSignature(k.publicKey, signWith(k.secretKey, data));
  return done(tx.serialize(), 1);
}

/** v1 (SIMD-0385), laid out and signed here; see the file comment. */
export function v1Transaction(payer: Keypair, instructions: TransactionInstruction[], opts: BuildOpts = {}): BuiltTx {
  const compiled = compileLegacy(payer, instructions, opts.blockhash);
  const message = serializeV1Message(compiled, opts.config ?? {});
  const signatures = signAll(message, compiled, [payer, ...(opts.signers ?? [])]);
  const out = new Uint8Array(message.length + 64 * signatures.length);
  out.set(message, 0);
  signatures.forEach((s, i) => out.set(s, message.length + 64 * i));
  return done(out, message.length);
}

// ---- transfers --------------------------------------------------------------

/** Legacy System Program transfer (accounts: payer, destination, system program). */
export function legacyTransfer(opts: TransferOpts = {}): BuiltTx {
  const from = opts.from ?? newKeypair();
  return legacyTransaction(from, [transferIx(from.publicKey, pk(opts.to), opts.lamports ?? 1000), ...(opts.extra ?? [])], opts);
}

/**
 * v0 transfer whose destination is loaded through an address lookup table
 * (`tableAddresses` joins it in the table). The table account is built
 * locally; nothing reads chain state.
 */
export function v0WithLookup(
  opts: TransferOpts & { tableAddresses?: PublicKey[]; tableKey?: PublicKey } = {},
): BuiltTx & { table: AddressLookupTableAccount; to: PublicKey } {
  const from = opts.from ?? newKeypair();
  const to = pk(opts.to);
  const table = new AddressLookupTableAccount({
    key: opts.tableKey ?? randomAddress(),
    state: {
      deactivationSlot: BigInt('18446744073709551615'),
      lastExtendedSlot: 0,
      lastExtendedSlotStartIndex: 0,
      authority: undefined,
      addresses: [...(opts.tableAddresses ?? []), to],
    },
  });
  const built = v0Transaction(from, [transferIx(from.publicKey, to, opts.lamports ?? 1000), ...(opts.extra ?? [])], {
    blockhash: opts.blockhash,
    lookupTables: [table],
  });
  return { ...built, table, to };
}

export function v1Transfer(opts: TransferOpts & { config?: V1Config } = {}): BuiltTx {
  const from = opts.from ?? newKeypair();
  return v1Transaction(from, [transferIx(from.publicKey, pk(opts.to), opts.lamports ?? 1000), ...(opts.extra ?? [])], opts);
}

/** A transfer of `lamports` to `to` (a tip account), as its own transaction. */
export function tipTransfer(
  to: PublicKey | string,
  lamports: number | bigint,
  opts: { from?: Keypair; version?: Version; extra?: TransactionInstruction[] } = {},
): BuiltTx {
  const from = opts.from ?? newKeypair();
  return buildTransaction(opts.version ?? 'legacy', from, [transferIx(from.publicKey, pk(to), lamports), ...(opts.extra ?? [])]);
}

/**
 * `TransferWithSeed` of `lamports` to `to` from the address derived from
 * (base, seed, owner); the base signs and pays.
 */
export function tipTransferWithSeed(
  to: PublicKey | string,
  lamports: number | bigint,
  opts: { base?: Keypair; seed?: string; owner?: PublicKey; version?: Version } = {},
): BuiltTx {
  const base = opts.base ?? newKeypair();
  return buildTransaction(opts.version ?? 'legacy', base, [transferWithSeedIx(base.publicKey, pk(to), lamports, opts.seed, opts.owner)]);
}

export function transferIx(from: PublicKey, to: PublicKey, lamports: number | bigint): TransactionInstruction {
  return SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports: BigInt(lamports) });
}

export function transferWithSeedIx(
  base: PublicKey,
  to: PublicKey,
  lamports: number | bigint,
  seed = 'tip',
  owner: PublicKey = SystemProgram.programId,
): TransactionInstruction {
  const from = deriveWithSeed(base, seed, owner);
  return SystemProgram.transfer({ fromPubkey: from, basePubkey: base, toPubkey: to, lamports: BigInt(lamports), seed, programId: owner });
}

/** sha256(base || seed || owner), as Address::create_with_seed (web3.js's PublicKey.createWithSeed is async). */
function deriveWithSeed(base: PublicKey, seed: string, owner: PublicKey): PublicKey {
  return new PublicKey(createHash('sha256').update(base.toBuffer()).update(Buffer.from(seed)).update(owner.toBuffer()).digest());
}

/** An instruction for a random program carrying `dataBytes` of payload (to size transactions). */
export function payloadIx(dataBytes: number, program: PublicKey = randomAddress()): TransactionInstruction {
  return new TransactionInstruction({ programId: program, keys: [], data: Buffer.alloc(dataBytes, 7) });
}

/**
 * A signed transaction of exactly `totalBytes`, padded with instruction data.
 * Legacy may exceed 1232 here (hand-serialized), to test size limits.
 */
export function paddedTransaction(version: 'legacy' | 'v1', totalBytes: number, payer: Keypair = newKeypair()): BuiltTx {
  const build = (n: number): BuiltTx => {
    if (version === 'v1') return v1Transaction(payer, [payloadIx(n, SystemProgram.programId)]);
    const compiled = compileLegacy(payer, [payloadIx(n, SystemProgram.programId)]);
    const message = serializeLegacyMessage(compiled);
    return done(signaturesFirst(message, signAll(message, compiled, [payer])), 1);
  };
  const probe = build(0);
  // Data length is a u16 (v1) or compact-u16 (legacy) whose width may grow with n.
  for (let n = totalBytes - probe.bytes.length; n >= 0; n--) {
    const tx = build(n);
    if (tx.bytes.length === totalBytes) return tx;
    if (tx.bytes.length < totalBytes) break;
  }
  throw new Error(`cannot pad a ${version} transaction to exactly ${totalBytes} bytes`);
}

// ---- hand serialization -----------------------------------------------------

export interface CompiledMessage {
  header: { numRequiredSignatures: number; numReadonlySignedAccounts: number; numReadonlyUnsignedAccounts: number };
  accountKeys: PublicKey[];
  recentBlockhash: string;
  instructions: { programIdIndex: number; accountKeyIndexes: number[]; data: Uint8Array }[];
}

export function compileLegacy(payer: Keypair, instructions: TransactionInstruction[], blockhash?: string): CompiledMessage {
  const m = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash ?? randomBlockhash(),
    instructions,
  }).compileToLegacyMessage();
  return {
    header: { ...m.header },
    accountKeys: m.accountKeys,
    recentBlockhash: m.recentBlockhash,
    instructions: m.compiledInstructions.map((ix) => ({
      programIdIndex: ix.programIdIndex,
      accountKeyIndexes: [...ix.accountKeyIndexes],
      data: Uint8Array.from(ix.data),
    })),
  };
}

export function shortU16(n: number): number[] {
  const out: number[] = [];
  let v = n;
  for (;;) {
    const low = v & 0x7f;
    v >>>= 7;
    if (v === 0) return [...out, low];
    out.push(low | 0x80);
  }
}

/** Legacy message bytes, any size (web3.js stops at 1232). */
export function serializeLegacyMessage(m: CompiledMessage): Uint8Array {
  const out: number[] = [m.header.numRequiredSignatures, m.header.numReadonlySignedAccounts, m.header.numReadonlyUnsignedAccounts];
  out.push(...shortU16(m.accountKeys.length));
  for (const k of m.accountKeys) out.push(...k.toBytes());
  out.push(...bs58.decode(m.recentBlockhash));
  out.push(...shortU16(m.instructions.length));
  for (const ix of m.instructions) {
    out.push(ix.programIdIndex, ...shortU16(ix.accountKeyIndexes.length), ...ix.accountKeyIndexes);
    out.push(...shortU16(ix.data.length), ...ix.data);
  }
  return Uint8Array.from(out);
}

/** SIMD-0385 message: everything a v1 transaction signs (it ends where the signatures start). */
export function serializeV1Message(m: CompiledMessage, config: V1Config = {}): Uint8Array {
  let mask = 0;
  const values: number[] = [];
  if (config.priorityFeeLamports !== undefined) {
    mask |= 0b11;
    values.push(...u64le(BigInt(config.priorityFeeLamports)));
  }
  if (config.computeUnitLimit !== undefined) {
    mask |= 1 << 2;
    values.push(...u32le(config.computeUnitLimit));
  }
  if (config.loadedAccountsDataSizeLimit !== undefined) {
    mask |= 1 << 3;
    values.push(...u32le(config.loadedAccountsDataSizeLimit));
  }
  if (config.heapSize !== undefined) {
    mask |= 1 << 4;
    values.push(...u32le(config.heapSize));
  }
  const out: number[] = [0x81, m.header.numRequiredSignatures, m.header.numReadonlySignedAccounts, m.header.numReadonlyUnsignedAccounts];
  out.push(...u32le(mask));
  out.push(...bs58.decode(m.recentBlockhash));
  out.push(m.instructions.length, m.accountKeys.length);
  for (const k of m.accountKeys) out.push(...k.toBytes());
  out.push(...values);
  for (const ix of m.instructions) out.push(ix.programIdIndex, ix.accountKeyIndexes.length, ...u16le(ix.data.length));
  for (const ix of m.instructions) out.push(...ix.accountKeyIndexes, ...ix.data);
  return Uint8Array.from(out);
}

/** Signatures for signer slots 0..numRequiredSignatures-1, in key order. */
export function signAll(message: Uint8Array, m: CompiledMessage, signers: Keypair[]): Uint8Array[] {
  const sigs: Uint8Array[] = [];
  for (let i = 0; i < m.header.numRequiredSignatures; i++) {
    const key = m.accountKeys[i]!;
    const kp = signers.find((s) => s.publicKey.equals(key));
    if (!kp) throw new Error(`no signer for ${key.toBase58()}`);
    sigs.push(signWith(kp.secretKey, message));
  }
  return sigs;
}

/** Legacy/v0 envelope: compact-u16 count, signatures, message. */
export function signaturesFirst(message: Uint8Array, signatures: Uint8Array[]): Uint8Array {
  const head = shortU16(signatures.length);
  const out = new Uint8Array(head.length + 64 * signatures.length + message.length);
  out.set(head, 0);
  signatures.forEach((s, i) => out.set(s, head.length + 64 * i));
  out.set(message, head.length + 64 * signatures.length);
  return out;
}

function u16le(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff];
}

function u32le(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}

function u64le(n: bigint): number[] {
  const out: number[] = [];
  for (let i = 0n; i < 8n; i++) out.push(Number((n >> (8n * i)) & 0xffn));
  return out;
}
