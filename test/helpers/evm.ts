/**
 * Real signed Ethereum transactions of every type, produced by viem, for any
 * test (and the EVM benchmark) that needs family A input.
 *
 *   signedLegacy / signed2930 / signed1559 / signed7702 / signed4844
 *     -> { raw, hex, hash }, where `hash` is viem's keccak256 of the canonical
 *        serialization (for 4844 network forms: of the form without sidecar).
 *   signCustom
 *     -> the same for hand-built field lists viem's serializer would refuse
 *        (empty blob list, tip above fee cap, ...), still signed by viem's account.
 *
 * Blob transactions: with `kzg: 'real'` (default) commitments and proofs come
 * from kzg-wasm and the official trusted setup, so they are what a node would
 * accept; they are cached on disk per blob (helpers/kzg.ts: loading the setup
 * costs ~13 s of CPU, so only a run without the cache pays it). `kzg: 'fake'` uses
 * random 48-byte commitments and zero proofs: the relay does not verify KZG
 * proofs, so such transactions pass its checks, and they cost nothing to build.
 */

import { randomBytes } from 'node:crypto';
import {
  concatHex,
  fromRlp,
  hexToBytes,
  keccak256,
  numberToHex,
  parseSignature,
  sha256,
  toRlp,
  type Hex,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { realMaterial } from './kzg.js';

/** A well-known test key (never holds funds). */
export const TEST_PRIVATE_KEY: Hex = '0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318';
export const testAccount: PrivateKeyAccount = privateKeyToAccount(TEST_PRIVATE_KEY);
export const RECIPIENT: Hex = '0x3535353535353535353535353535353535353535';
/** Delegation target for EIP-7702 authorizations. */
export const DELEGATE: Hex = '0x1111111111111111111111111111111111111111';

/** Order of the secp256k1 group. */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

export interface SignedTx {
  raw: Uint8Array;
  hex: Hex;
  /** viem's keccak256 of the canonical encoding, i.e. the transaction hash. */
  hash: Hex;
}

export interface TxOpts {
  account?: PrivateKeyAccount;
  /** Default 1. */
  chainId?: number;
  nonce?: number;
  /** Default: enough for the intrinsic gas and the EIP-7623 floor of the data. */
  gas?: bigint;
  /** `null` creates a contract. Default RECIPIENT. */
  to?: Hex | null;
  value?: bigint;
  data?: Hex;
  accessList?: { address: Hex; storageKeys: Hex[] }[];
}

/** viem's RLP input: a hex string or a (nested) list of them. */
export type RlpItem = Hex | readonly RlpItem[];

function dataLength(data: Hex | undefined): number {
  return data === undefined ? 0 : (data.length - 2) / 2;
}

function defaultGas(o: TxOpts): bigint {
  // Intrinsic gas is at most 53000 + 18 per byte (+ access list); the floor is 21000 + 40 per byte.
  const al = o.accessList ?? [];
  const keys = al.reduce((n, e) => n + e.storageKeys.length, 0);
  return 100_000n + 40n * BigInt(dataLength(o.data)) + 2400n * BigInt(al.length) + 1900n * BigInt(keys);
}

function done(hex: Hex, canonical: Hex = hex): SignedTx {
  return { raw: hexToBytes(hex), hex, hash: keccak256(canonical) };
}

function common(o: TxOpts) {
  return {
    chainId: o.chainId ?? 1,
    nonce: o.nonce ?? 7,
    gas: o.gas ?? defaultGas(o),
    to: o.to === null ? undefined : (o.to ?? RECIPIENT),
    value: o.value ?? 1_000_000_000_000_000n,
    data: o.data,
  };
}

/** Legacy transaction; EIP-155 protected unless `chainId` is null (v = 27/28). */
export async function signedLegacy(o: Omit<TxOpts, 'chainId' | 'accessList'> & { chainId?: number | null; gasPrice?: bigint } = {}): Promise<SignedTx> {
  const account = o.account ?? testAccount;
  const c = common({ ...o, chainId: o.chainId ?? undefined });
  const hex = await account.signTransaction({
    type: 'legacy',
    ...c,
    chainId: o.chainId === null ? undefined : c.chainId,
    gasPrice: o.gasPrice ?? 20_000_000_000n,
  });
  return done(hex);
}

/** EIP-2930 access-list transaction. */
export async function signed2930(o: TxOpts & { gasPrice?: bigint } = {}): Promise<SignedTx> {
  const account = o.account ?? testAccount;
  const hex = await account.signTransaction({
    type: 'eip2930',
    ...common(o),
    gasPrice: o.gasPrice ?? 20_000_000_000n,
    accessList: o.accessList ?? [{ address: RECIPIENT, storageKeys: [numberToHex(1, { size: 32 })] }],
  });
  return done(hex);
}

/** EIP-1559 dynamic-fee transaction. */
export async function signed1559(o: TxOpts & { maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint } = {}): Promise<SignedTx> {
  const account = o.account ?? testAccount;
  const hex = await account.signTransaction({
    type: 'eip1559',
    ...common(o),
    maxFeePerGas: o.maxFeePerGas ?? 30_000_000_000n,
    maxPriorityFeePerGas: o.maxPriorityFeePerGas ?? 1_000_000_000n,
    accessList: o.accessList ?? [],
  });
  return done(hex);
}

/** EIP-7702 set-code transaction with `authorizations` signed delegations (default 1). */
export async function signed7702(o: TxOpts & { authorizations?: number } = {}): Promise<SignedTx> {
  const account = o.account ?? testAccount;
  const c = common(o);
  const count = o.authorizations ?? 1;
  const authorizationList = [];
  for (let i = 0; i < count; i++) {
    authorizationList.push(await account.signAuthorization({ address: DELEGATE, chainId: c.chainId, nonce: (o.nonce ?? 7) + 1 + i }));
  }
  const gas = o.gas ?? defaultGas(o) + 25_000n * BigInt(count);
  const hex = await account.signTransaction({
    type: 'eip7702',
    ...c,
    gas,
    maxFeePerGas: 30_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    accessList: o.accessList ?? [],
    authorizationList,
  });
  return done(hex);
}

// ---------------------------------------------------------------------------
// EIP-4844 / EIP-7594

/** Bytes in a blob: 4096 field elements of 32 bytes. */
export const BLOB_BYTES = 131072;
const CELLS_PER_EXT_BLOB = 128;

/**
 * A valid blob: every 32-byte field element starts with a zero byte, so it is
 * below the BLS12-381 scalar modulus. Content is a function of `seed`.
 */
export function makeBlob(seed: number): Hex {
  const b = new Uint8Array(BLOB_BYTES);
  let x = (seed * 2654435761 + 1) >>> 0;
  for (let i = 0; i < BLOB_BYTES; i++) {
    if (i % 32 === 0) continue;
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return numberToHexBytes(b);
}

function numberToHexBytes(b: Uint8Array): Hex {
  return `0x${Buffer.from(b).toString('hex')}`;
}

interface BlobMaterial {
  commitment: Hex;
  versionedHash: Hex;
  proof: Hex;
  cellProofs: Hex[];
}

const materialCache = new Map<string, BlobMaterial>();

async function blobMaterial(blob: Hex, kzgMode: 'real' | 'fake', sidecar: 'none' | 'v0' | 'cells'): Promise<BlobMaterial> {
  const key = `${kzgMode}:${sidecar === 'cells' ? 'cells' : 'blob'}:${keccak256(blob)}`;
  const hit = materialCache.get(key);
  if (hit) return hit;
  let m: BlobMaterial;
  if (kzgMode === 'fake') {
    const commitment = numberToHexBytes(randomBytes(48));
    const zero = numberToHexBytes(new Uint8Array(48));
    m = { commitment, versionedHash: versionedHash(commitment), proof: zero, cellProofs: Array(CELLS_PER_EXT_BLOB).fill(zero) };
  } else {
    const real = await realMaterial(blob);
    const proof = sidecar === 'v0' ? real.proof : ('0x' as Hex);
    const cellProofs = sidecar === 'cells' ? real.cellProofs : [];
    m = { commitment: real.commitment, versionedHash: versionedHash(real.commitment), proof, cellProofs };
  }
  materialCache.set(key, m);
  return m;
}

/** EIP-4844 kzg_to_versioned_hash: 0x01 || sha256(commitment)[1:]. */
export function versionedHash(commitment: Hex): Hex {
  return `0x01${sha256(commitment).slice(4)}`;
}

export interface BlobOpts extends TxOpts {
  /** Number of blobs, default 1. */
  blobs?: number;
  /** 'v0': EIP-4844 network form (default); 'cells': EIP-7594 cell proofs; 'none': canonical form. */
  sidecar?: 'none' | 'v0' | 'cells';
  kzg?: 'real' | 'fake';
  maxFeePerBlobGas?: bigint;
  /** Seed of the first blob's content; blob i uses seed + i. */
  seed?: number;
}

export interface SignedBlobTx extends SignedTx {
  /** The same transaction in canonical form (no sidecar); its hash is `hash`. */
  canonical: SignedTx;
}

/** EIP-4844 blob transaction, by default in the network form with its sidecar. */
export async function signed4844(o: BlobOpts = {}): Promise<SignedBlobTx> {
  const account = o.account ?? testAccount;
  const sidecarMode = o.sidecar ?? 'v0';
  const kzgMode = o.kzg ?? 'real';
  const blobs: Hex[] = [];
  const material: BlobMaterial[] = [];
  for (let i = 0; i < (o.blobs ?? 1); i++) {
    const blob = makeBlob((o.seed ?? 1) + i);
    blobs.push(blob);
    material.push(await blobMaterial(blob, kzgMode, sidecarMode));
  }
  const c = common(o);
  const tx = {
    type: 'eip4844' as const,
    ...c,
    to: c.to ?? RECIPIENT,
    maxFeePerGas: 30_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    maxFeePerBlobGas: o.maxFeePerBlobGas ?? 5_000_000_000n,
    accessList: o.accessList ?? [],
    blobVersionedHashes: material.map((m) => m.versionedHash),
  };
  const canonicalHex = await account.signTransaction({ ...tx, sidecars: false });
  const canonical = done(canonicalHex);
  if (sidecarMode === 'none') return { ...canonical, canonical };
  if (sidecarMode === 'v0') {
    const sidecars = blobs.map((blob, i) => ({ blob, commitment: material[i]!.commitment, proof: material[i]!.proof }));
    const hex = await account.signTransaction({ ...tx, sidecars });
    return { ...done(hex, canonicalHex), canonical };
  }
  // viem has no EIP-7594 serializer: wrap the signed canonical body ourselves.
  const body = fromRlp(`0x${canonicalHex.slice(4)}`) as RlpItem;
  const hex = concatHex([
    '0x03',
    toRlp([body, '0x01', blobs, material.map((m) => m.commitment), material.flatMap((m) => m.cellProofs)]),
  ]);
  return { ...done(hex, canonicalHex), canonical };
}

/**
 * Wraps a signed canonical blob transaction into a network form with the
 * given sidecar lists, for tests that need inconsistent sidecars.
 */
export function wrapBlobTx(canonical: Hex, version: 0 | 1, blobs: Hex[], commitments: Hex[], proofs: Hex[]): SignedTx {
  const body = fromRlp(`0x${canonical.slice(4)}`) as RlpItem;
  const items: RlpItem[] = version === 0 ? [body, blobs, commitments, proofs] : [body, '0x01', blobs, commitments, proofs];
  return done(concatHex(['0x03', toRlp(items)]), canonical);
}

// ---------------------------------------------------------------------------
// Hand-built transactions

/** Canonical RLP integer: empty for zero, even-length big-endian hex otherwise. */
export function rlpInt(x: bigint | number): Hex {
  const v = BigInt(x);
  if (v === 0n) return '0x';
  const h = v.toString(16);
  return `0x${h.length % 2 === 1 ? '0' : ''}${h}`;
}

export interface CustomSignOpts {
  account?: PrivateKeyAccount;
  /** Legacy only: EIP-155 chain id, or null for an unprotected signature. Default 1. */
  chainId?: number | null;
  /** Replace s by n - s and flip the parity: same signer, malleable high-s form. */
  highS?: boolean;
}

/**
 * Signs an arbitrary field list (everything before the signature) as a
 * transaction of `type`, with viem's account, and serializes it with the
 * signature appended. Field lists use viem's RLP input: hex strings and arrays.
 */
export async function signCustom(type: number, fields: RlpItem[], o: CustomSignOpts = {}): Promise<SignedTx & { signedFields: RlpItem[] }> {
  const account = o.account ?? testAccount;
  const chainId = o.chainId === undefined ? 1 : o.chainId;
  const prefix: Hex = type === 0 ? '0x' : rlpInt(type);
  const payload =
    type === 0
      ? toRlp(chainId === null ? fields : [...fields, rlpInt(chainId), '0x', '0x'])
      : concatHex([prefix, toRlp(fields)]);
  const sig = parseSignature(await account.sign({ hash: keccak256(payload) }));
  const r = BigInt(sig.r);
  let s = BigInt(sig.s);
  let parity = sig.yParity;
  if (o.highS) {
    s = SECP256K1_N - s;
    parity = parity === 0 ? 1 : 0;
  }
  const v = type !== 0 ? BigInt(parity) : chainId === null ? 27n + BigInt(parity) : BigInt(chainId) * 2n + 35n + BigInt(parity);
  const signedFields = [...fields, rlpInt(v), rlpInt(r), rlpInt(s)];
  const hex = type === 0 ? toRlp(signedFields) : concatHex([prefix, toRlp(signedFields)]);
  return { ...done(hex), signedFields };
}

/** Field list of a plain EIP-1559 transfer, for signCustom; override entries by index. */
export function fields1559(over: Partial<Record<number, RlpItem>> = {}): RlpItem[] {
  const f: RlpItem[] = [
    rlpInt(1), // chainId
    rlpInt(7), // nonce
    rlpInt(1_000_000_000n), // maxPriorityFeePerGas
    rlpInt(30_000_000_000n), // maxFeePerGas
    rlpInt(100_000), // gas
    RECIPIENT, // to
    rlpInt(1), // value
    '0x', // data
    [], // accessList
  ];
  for (const [i, v] of Object.entries(over)) f[Number(i)] = v!;
  return f;
}

/** Field list of a canonical EIP-4844 transaction, for signCustom; override entries by index. */
export function fields4844(hashes: Hex[], over: Partial<Record<number, RlpItem>> = {}): RlpItem[] {
  const f = fields1559();
  f.push(rlpInt(5_000_000_000n), hashes); // maxFeePerBlobGas, blobVersionedHashes
  for (const [i, v] of Object.entries(over)) f[Number(i)] = v!;
  return f;
}

/** Field list of an EIP-7702 transaction with the given (already encoded) authorization tuples. */
export function fields7702(authorizations: RlpItem[], over: Partial<Record<number, RlpItem>> = {}): RlpItem[] {
  const f = fields1559();
  f.push(authorizations);
  for (const [i, v] of Object.entries(over)) f[Number(i)] = v!;
  return f;
}
