/**
 * Request bodies on disk, shared by every load generator of a run (wrk's Lua
 * script and the open-loop generators): each record is a u16 little-endian
 * length and the bytes. One file per phase, so no transaction is ever sent
 * twice to the relay (a repeat would take its dedup fast path).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evmTransfers, solanaTransfers } from '../../src/bench/txgen.js';

export function encodeBodies(bodies: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const b of bodies) {
    if (b.length > 0xffff) throw new Error(`body of ${b.length} bytes does not fit a u16 length`);
    total += 2 + b.length;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const b of bodies) {
    out.writeUInt16LE(b.length, at);
    out.set(b, at + 2);
    at += 2 + b.length;
  }
  return out;
}

export function decodeBodies(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at + 2 <= buf.length) {
    const len = buf.readUInt16LE(at);
    if (at + 2 + len > buf.length) throw new Error('truncated bodies file');
    out.push(buf.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

export const writeBodies = (file: string, bodies: readonly Uint8Array[]): void => writeFileSync(file, encodeBodies(bodies));
export const readBodies = (file: string): Buffer[] => decodeBodies(readFileSync(file));

/**
 * `count` raw signed transactions of a family, signed once and cached in
 * `cacheDir` (bench/.cache/e2e, git-ignored): every benchmark that needs the
 * same pool reads the same file, and each relay start has fresh dedup state.
 */
export async function cachedPool(family: 'evm' | 'solana', count: number, chainId: number, cacheDir: string, log: (m: string) => void): Promise<Buffer[]> {
  mkdirSync(cacheDir, { recursive: true });
  const file = join(cacheDir, `${family}-${count}-chain${chainId}.bodies`);
  if (existsSync(file)) {
    const txs = readBodies(file);
    if (txs.length === count) return txs;
  }
  log(`signing ${count} ${family} transactions (cached afterwards in ${file})`);
  const t = performance.now();
  const txs = family === 'solana' ? solanaTransfers(count) : await evmTransfers(count, { chainId });
  writeFileSync(file + '.tmp', encodeBodies(txs));
  renameSync(file + '.tmp', file);
  log(`signed in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return txs;
}
