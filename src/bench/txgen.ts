/**
 * Pre-signed, valid, distinct bench transactions, built by hand so the
 * generator needs neither @solana/web3.js nor viem:
 *
 *   Solana: legacy one-signer System transfer (215 bytes) with a random recent
 *           blockhash, so first signatures (the dedup key) never repeat.
 *   EVM:    EIP-1559 transfer of 1 wei, gas 21000, from a fresh key per
 *           generation with nonces 0..n-1, so hashes never repeat.
 *
 * Signing: sodium-native (else node:crypto) and the `secp256k1` package, whose
 * main entry falls back to its JavaScript `elliptic` build by itself.
 */
import { createRequire } from 'node:module';
import { createPrivateKey, createPublicKey, randomBytes, randomFillSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { initKeccak, keccak256 } from '../chains/evm/hash.js';

const require = createRequire(import.meta.url);

// ---- ed25519 -----------------------------------------------------------------

interface Sodium {
  crypto_sign_seed_keypair(pk: Uint8Array, sk: Uint8Array, seed: Uint8Array): void;
  crypto_sign_detached(sig: Uint8Array, msg: Uint8Array, sk: Uint8Array): void;
}

function loadSodium(): Sodium | null {
  if (process.env.TXRELAY_ED25519_BACKEND === 'node:crypto') return null;
  try {
    const s = require('sodium-native') as Partial<Sodium>;
    return typeof s.crypto_sign_detached === 'function' && typeof s.crypto_sign_seed_keypair === 'function' ? (s as Sodium) : null;
  } catch {
    return null;
  }
}
const sodium = loadSodium();
export const ed25519SignBackend: 'sodium-native' | 'node:crypto' = sodium ? 'sodium-native' : 'node:crypto';

interface Ed25519Key {
  publicKey: Uint8Array; // 32
  secretKey: Uint8Array; // 64 (seed || public key), libsodium's layout
  /** node:crypto's form of the same key, when sodium-native is not there. */
  keyObject: KeyObject | null;
}

/** DER PKCS#8 prefix of a raw Ed25519 seed (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function ed25519Key(seed: Uint8Array = randomBytes(32)): Ed25519Key {
  if (sodium) {
    const publicKey = new Uint8Array(32);
    const secretKey = new Uint8Array(64);
    sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed);
    return { publicKey, secretKey, keyObject: null };
  }
  const keyObject = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(keyObject).export({ format: 'der', type: 'spki' });
  const publicKey = new Uint8Array(spki.subarray(spki.length - 32));
  const secretKey = new Uint8Array(64);
  secretKey.set(seed);
  secretKey.set(publicKey, 32);
  return { publicKey, secretKey, keyObject };
}

function ed25519SignInto(sig: Uint8Array, msg: Uint8Array, key: Ed25519Key): void {
  if (sodium) sodium.crypto_sign_detached(sig, msg, key.secretKey);
  else sig.set(cryptoSign(null, msg, key.keyObject!));
}

// ---- Solana legacy transfer ----------------------------------------------------

/** 1 signature + header 3 + 3 keys + blockhash + 1 instruction (program, 2 accounts, 12 data bytes). */
const SOLANA_TRANSFER_BYTES = 1 + 64 + 3 + 1 + 3 * 32 + 32 + 1 + 1 + 1 + 2 + 1 + 12;
const MSG_OFFSET = 1 + 64;
const KEYS_OFFSET = MSG_OFFSET + 4;
const BLOCKHASH_OFFSET = KEYS_OFFSET + 96;
const LAMPORTS_OFFSET = SOLANA_TRANSFER_BYTES - 8;

/**
 * Everything but blockhash and signature: header 1/0/1 (the System Program is
 * read-only), keys [payer, to, System Program], one Transfer (program 2, accounts [0, 1]).
 */
function transferTemplate(payer: Uint8Array, to: Uint8Array, lamports: bigint): Uint8Array {
  const t = new Uint8Array(SOLANA_TRANSFER_BYTES);
  const dv = new DataView(t.buffer);
  t[0] = 1; // compact-u16 signature count
  t.set([1, 0, 1, 3], MSG_OFFSET); // header, then compact-u16 key count 3
  t.set(payer, KEYS_OFFSET);
  t.set(to, KEYS_OFFSET + 32);
  // System Program id is all zeros: nothing to write.
  let o = BLOCKHASH_OFFSET + 32;
  t.set([1, 2, 2, 0, 1, 12], o); // 1 instruction: program 2, 2 accounts [0, 1], 12 data bytes
  o += 6;
  dv.setUint32(o, 2, true); // SystemInstruction::Transfer
  dv.setBigUint64(o + 4, lamports, true);
  return t;
}

/**
 * A funded payer and a blockhash the chain accepts, for transactions meant to
 * land (`bench --landed`): a fixed blockhash still gives distinct signatures,
 * as every transfer goes to its own random recipient.
 */
export interface SolanaPayer {
  /** The payer's 32-byte ed25519 seed; default a fresh random key. */
  payerSeed?: Uint8Array;
  /** 32 bytes; default a random one per transaction. */
  blockhash?: Uint8Array;
}

/**
 * `n` signed transfers from one payer; transfer `i` goes to `to(i)` (a
 * random address when it returns null). Returns one Buffer per transaction,
 * views on a single backing allocation.
 */
export function solanaTransfers(n: number, opts: { to?: (i: number) => Uint8Array | null; lamports?: (i: number) => bigint } & SolanaPayer = {}): Buffer[] {
  const payer = ed25519Key(opts.payerSeed);
  const all = Buffer.allocUnsafe(n * SOLANA_TRANSFER_BYTES);
  const random = Buffer.allocUnsafe(64 * Math.min(n, 4096));
  const out: Buffer[] = new Array(n);
  let r = random.length;
  for (let i = 0; i < n; i++) {
    if (r === random.length) {
      randomFillSync(random);
      r = 0;
    }
    const to = opts.to?.(i) ?? random.subarray(r, r + 32);
    const t = transferTemplate(payer.publicKey, to, opts.lamports?.(i) ?? 1000n + BigInt(i % 1000));
    t.set(opts.blockhash ?? random.subarray(r + 32, r + 64), BLOCKHASH_OFFSET);
    r += 64;
    ed25519SignInto(t.subarray(1, 65), t.subarray(MSG_OFFSET), payer);
    const tx = all.subarray(i * SOLANA_TRANSFER_BYTES, (i + 1) * SOLANA_TRANSFER_BYTES);
    tx.set(t);
    out[i] = tx;
  }
  return out;
}

// ---- EVM EIP-1559 --------------------------------------------------------------

interface Secp {
  ecdsaSign(msg32: Uint8Array, seckey: Uint8Array): { signature: Uint8Array; recid: number };
  privateKeyVerify(k: Uint8Array): boolean;
}
let secp: Secp | null = null;
function loadSecp(): Secp {
  // The main entry tries the native binding, then its own JavaScript build.
  secp ??= require('secp256k1') as Secp;
  return secp;
}

/** Minimal RLP: byte strings and lists of them. */
function rlpBytes(b: Uint8Array): Uint8Array {
  if (b.length === 1 && b[0]! < 0x80) return b;
  return concat([rlpHead(0x80, b.length), b]);
}
function rlpList(items: Uint8Array[]): Uint8Array {
  const body = concat(items);
  return concat([rlpHead(0xc0, body.length), body]);
}
function rlpHead(base: number, len: number): Uint8Array {
  if (len < 56) return Uint8Array.of(base + len);
  const l = beBytes(BigInt(len));
  return concat([Uint8Array.of(base + 55 + l.length), l]);
}
/** Canonical big-endian, no leading zeros; zero is empty. */
function beBytes(x: bigint): Uint8Array {
  if (x === 0n) return new Uint8Array(0);
  let h = x.toString(16);
  if (h.length % 2) h = '0' + h;
  return Uint8Array.from(Buffer.from(h, 'hex'));
}
function stripZeros(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  return b.subarray(i);
}
function concat(parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(parts));
}

interface EvmGenOpts {
  chainId: number;
  /** Recipient, 20 bytes; a fixed non-zero address by default. */
  to?: Uint8Array;
}

/** Fee fields: a 1 gwei tip under a 30 gwei cap, well inside any stateless rule. */
const TIP_WEI = 1_000_000_000n;
const FEE_CAP_WEI = 30_000_000_000n;
/** Intrinsic gas of a plain transfer. */
const TRANSFER_GAS = 21_000n;

/** `n` signed EIP-1559 transfers (typed-transaction bytes: 0x02 || rlp). */
export async function evmTransfers(n: number, opts: EvmGenOpts): Promise<Buffer[]> {
  await initKeccak();
  const s = loadSecp();
  let key: Uint8Array;
  do key = randomBytes(32);
  while (!s.privateKeyVerify(key));
  const to = opts.to ?? Uint8Array.from(Buffer.from('00000000000000000000000000000000000b3ec4', 'hex'));
  const fixedTail = [beBytes(TIP_WEI), beBytes(FEE_CAP_WEI), beBytes(TRANSFER_GAS), to, beBytes(1n), new Uint8Array(0)].map(rlpBytes);
  const chain = rlpBytes(beBytes(BigInt(opts.chainId)));
  const emptyList = Uint8Array.of(0xc0); // access list
  const out: Buffer[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const fields = [chain, rlpBytes(beBytes(BigInt(i))), ...fixedTail, emptyList];
    const unsigned = concat([Uint8Array.of(2), rlpList(fields)]);
    const { signature, recid } = s.ecdsaSign(keccak256(unsigned), key);
    const signed = rlpList([
      ...fields,
      rlpBytes(beBytes(BigInt(recid))),
      rlpBytes(stripZeros(signature.subarray(0, 32))),
      rlpBytes(stripZeros(signature.subarray(32, 64))),
    ]);
    out[i] = Buffer.concat([Buffer.of(2), signed]);
  }
  return out;
}

export const secpSignBackend = (): string => {
  try {
    require('secp256k1/bindings');
    return 'libsecp256k1';
  } catch {
    return 'elliptic (JavaScript)';
  }
};
