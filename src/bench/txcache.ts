/**
 * On-disk cache of pre-signed bench transactions, so a rerun does not pay the
 * signing cost again. One file per key (door, count, chain id and whatever
 * else shapes the transactions); written to a temporary name and renamed, so
 * a killed run never leaves a half file under the real name.
 *
 * Layout: "TXRBENCH" (8) | u32 LE header length | header JSON | u32 LE count |
 * count x (u16 LE length | bytes). The header repeats the key and records
 * when the file was made and when it was last used: a rerun inside the
 * relay's dedup window (`dedup.window_s`) sends transactions the relay has
 * already seen, and the bench warns about it.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const MAGIC = Buffer.from('TXRBENCH');

export interface CacheKey {
  door: string;
  count: number;
  chainId: number;
  /** Transactions per request (bundles, batches); 1 otherwise. */
  batch?: number;
  tipAccount?: string;
  tipLamports?: number;
}

interface CacheHeader {
  key: CacheKey;
  createdAt: string;
  lastUsedAt?: string;
}

export function cacheFile(dir: string, key: CacheKey): string {
  const parts = [key.door, `n${key.count}`, `chain${key.chainId}`];
  if (key.batch !== undefined && key.batch !== 1) parts.push(`b${key.batch}`);
  if (key.tipAccount) parts.push(`tip${key.tipAccount.slice(0, 8)}-${key.tipLamports ?? 0}`);
  return join(dir, parts.join('-') + '.bin');
}

function sameKey(a: CacheKey, b: CacheKey): boolean {
  return (
    a.door === b.door &&
    a.count === b.count &&
    a.chainId === b.chainId &&
    (a.batch ?? 1) === (b.batch ?? 1) &&
    (a.tipAccount ?? '') === (b.tipAccount ?? '') &&
    (a.tipLamports ?? 0) === (b.tipLamports ?? 0)
  );
}

export function writeTxCache(dir: string, key: CacheKey, txs: Uint8Array[], header: Partial<CacheHeader> = {}): string {
  mkdirSync(dir, { recursive: true });
  const file = cacheFile(dir, key);
  const head = Buffer.from(JSON.stringify({ createdAt: new Date().toISOString(), ...header, key }));
  let size = 8 + 4 + head.length + 4;
  for (const t of txs) size += 2 + t.length;
  const out = Buffer.allocUnsafe(size);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(head.length, 8);
  head.copy(out, 12);
  let o = 12 + head.length;
  out.writeUInt32LE(txs.length, o);
  o += 4;
  for (const t of txs) {
    if (t.length > 0xffff) throw new Error(`transaction of ${t.length} bytes cannot be cached`);
    out.writeUInt16LE(t.length, o);
    out.set(t, o + 2);
    o += 2 + t.length;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, out);
  renameSync(tmp, file);
  return file;
}

/** The cached transactions for `key`, or null when absent, for another key, or damaged. Views on one Buffer. */
export function readTxCache(dir: string, key: CacheKey): { txs: Buffer[]; header: CacheHeader; file: string } | null {
  const file = cacheFile(dir, key);
  if (!existsSync(file)) return null;
  try {
    const buf = readFileSync(file);
    if (buf.length < 16 || !buf.subarray(0, 8).equals(MAGIC)) return null;
    const hl = buf.readUInt32LE(8);
    const header = JSON.parse(buf.subarray(12, 12 + hl).toString('utf8')) as CacheHeader;
    if (!sameKey(header.key, key)) return null;
    let o = 12 + hl;
    const n = buf.readUInt32LE(o);
    o += 4;
    if (n !== key.count) return null;
    const txs: Buffer[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const len = buf.readUInt16LE(o);
      if (o + 2 + len > buf.length) return null;
      txs[i] = buf.subarray(o + 2, o + 2 + len);
      o += 2 + len;
    }
    if (o !== buf.length) return null;
    return { txs, header, file };
  } catch {
    return null;
  }
}

/** Rewrites the header's lastUsedAt (the whole file: small next to the signing it saves). */
export function markTxCacheUsed(dir: string, key: CacheKey, txs: Uint8Array[], createdAt: string): void {
  writeTxCache(dir, key, txs, { createdAt, lastUsedAt: new Date().toISOString() });
}
