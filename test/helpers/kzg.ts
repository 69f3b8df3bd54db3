/**
 * Real KZG material for blob transactions, and a check of it that does not
 * need kzg-wasm's trusted setup.
 *
 * kzg-wasm spends ~13 s of CPU loading the mainnet setup (its cell-proof
 * tables), so what it computes for a blob (commitment, blob proof, the 128
 * cell proofs) is kept in node_modules/.cache/txrelay-kzg, one file per blob
 * content and kzg-wasm version; a run that finds it there never loads the
 * setup. `verifyBlobProof` is EIP-4844's verify_blob_kzg_proof with
 * @noble/curves' pairing and only the setup's [tau]G2, so every run checks
 * that the commitment and proof it uses belong to the blob, cached or not.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes, keccak256, type Hex } from 'viem';

interface KzgMaterial {
  commitment: Hex;
  /** The EIP-4844 blob proof. */
  proof: Hex;
  /** The EIP-7594 cell proofs, 128. */
  cellProofs: Hex[];
}

interface Kzg {
  blobToKZGCommitment(blob: string): string;
  computeBlobKZGProof(blob: string, commitment: string): string;
  computeCellsAndKZGProofs(blob: string): { proofs: string[]; cells: string[] };
}

const require = createRequire(import.meta.url);
// The package's folder (its exports map hides package.json), and the node_modules holding it: the cache sits with the installed packages.
const KZG_ENTRY = require.resolve('kzg-wasm');
const NODE_MODULES = KZG_ENTRY.slice(0, KZG_ENTRY.lastIndexOf('/kzg-wasm/'));
const KZG_DIR = join(NODE_MODULES, 'kzg-wasm');
const KZG_VERSION = (JSON.parse(readFileSync(join(KZG_DIR, 'package.json'), 'utf8')) as { version: string }).version;
const CACHE = join(NODE_MODULES, '.cache', 'txrelay-kzg');

let kzgPromise: Promise<Kzg> | null = null;
/** kzg-wasm with the mainnet trusted setup, loaded once per process, only on a cache miss. */
function loadKzg(): Promise<Kzg> {
  kzgPromise ??= import('kzg-wasm').then((m) => m.loadKZG() as Promise<Kzg>);
  return kzgPromise;
}

/** What kzg-wasm computes for `blob`: from the cache, else computed once and cached. */
export async function realMaterial(blob: Hex): Promise<KzgMaterial> {
  const file = join(CACHE, `${KZG_VERSION}-${keccak256(blob).slice(2, 34)}.json`);
  if (existsSync(file)) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as KzgMaterial;
    } catch {
      // A torn or foreign file: computed again below.
    }
  }
  const kzg = await loadKzg();
  const commitment = kzg.blobToKZGCommitment(blob) as Hex;
  const m: KzgMaterial = {
    commitment,
    proof: kzg.computeBlobKZGProof(blob, commitment) as Hex,
    cellProofs: kzg.computeCellsAndKZGProofs(blob).proofs as Hex[],
  };
  try {
    mkdirSync(CACHE, { recursive: true });
    // Whole or absent: a reader never sees half a file.
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(m));
    renameSync(tmp, file);
  } catch {
    // A read-only install: no cache, the next run computes again.
  }
  return m;
}

const { G1, G2, fields } = bls12_381;
const Fr = fields.Fr;
const WIDTH = 4096;

/** The setup's [tau]G2: the second of g2_monomial's 96-byte points (kzg-wasm's own copy of the mainnet setup). */
async function tauG2(): Promise<InstanceType<typeof G2.Point>> {
  const url = pathToFileURL(join(KZG_DIR, 'dist', 'esm', 'trustedSetup.js')).href;
  const setup = ((await import(url)) as { default: { g2_monomial: string } }).default;
  return G2.Point.fromHex(setup.g2_monomial.slice(192, 384));
}

/** The 4096th roots of unity in bit-reversed order (EIP-4844 compute_roots_of_unity + bit_reversal_permutation). */
function rootsBrp(): bigint[] {
  const w = Fr.pow(7n, (Fr.ORDER - 1n) / BigInt(WIDTH));
  const roots: bigint[] = [];
  for (let i = 0, x = 1n; i < WIDTH; i++, x = Fr.mul(x, w)) roots.push(x);
  const bits = Math.log2(WIDTH);
  return roots.map((_, i) => roots[parseInt(i.toString(2).padStart(bits, '0').split('').reverse().join(''), 2)]!);
}

const big = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString('hex') || '0'}`);

/**
 * EIP-4844 verify_blob_kzg_proof: the Fiat-Shamir challenge z, the blob's
 * polynomial evaluated at z, then e(C - [y]G1, -G2) * e(proof, [tau - z]G2) == 1.
 */
export async function verifyBlobProof(blob: Hex, commitment: Hex, proof: Hex): Promise<boolean> {
  const b = hexToBytes(blob);
  const c = hexToBytes(commitment);
  const degree = new Uint8Array(16);
  new DataView(degree.buffer).setUint32(12, WIDTH);
  const z = Fr.create(big(sha256(Buffer.concat([Buffer.from('FSBLOBVERIFY_V1_'), degree, b, c]))));
  const poly = Array.from({ length: WIDTH }, (_, i) => big(b.subarray(32 * i, 32 * i + 32)));
  if (poly.some((x) => x >= Fr.ORDER)) return false;
  const roots = rootsBrp();
  let y: bigint;
  const at = roots.indexOf(z);
  if (at >= 0) y = poly[at]!;
  else {
    let sum = 0n;
    for (let i = 0; i < WIDTH; i++) sum = Fr.add(sum, Fr.div(Fr.mul(poly[i]!, roots[i]!), Fr.sub(z, roots[i]!)));
    y = Fr.mul(sum, Fr.div(Fr.sub(Fr.pow(z, BigInt(WIDTH)), 1n), BigInt(WIDTH)));
  }
  const C = G1.Point.fromHex(commitment.slice(2));
  const P = G1.Point.fromHex(proof.slice(2));
  // multiplyUnsafe: takes 0 as well, and nothing here is secret.
  const pMinusY = C.subtract(G1.Point.BASE.multiplyUnsafe(y));
  const xMinusZ = (await tauG2()).subtract(G2.Point.BASE.multiplyUnsafe(z));
  const gt = bls12_381.pairingBatch([
    { g1: pMinusY, g2: G2.Point.BASE.negate() },
    { g1: P, g2: xMinusZ },
  ]);
  return fields.Fp12.eql(gt, fields.Fp12.ONE);
}
