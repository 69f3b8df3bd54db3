/**
 * The seven doors the bench drives, and for each one the pre-built request
 * bodies (Buffers made once before the run, so the hot loop never stringifies
 * or encodes) and the fixed path and headers.
 */
import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { evmTransfers, solanaTransfers, type SolanaPayer } from './txgen.js';
import { bundleBody, udpPacket, uuidBytes } from '../client/solana.js';

export const DOORS = ['solana-rpc', 'solana-v2', 'solana-bundle', 'solana-udp', 'evm-rpc', 'evm-text', 'evm-batch'] as const;
export type Door = (typeof DOORS)[number];
/** solana-bundle's tip per bundle when --tip-lamports is not given. */
export const DEFAULT_TIP_LAMPORTS = 100_000;

export function isDoor(s: string): s is Door {
  return (DOORS as readonly string[]).includes(s);
}

const isEvm = (d: Door): boolean => d.startsWith('evm-');

/** 1-4 transactions per bundle (docs/protocol.md#solana-bundles). */
export const MAX_BUNDLE = 4;

/** Transactions carried by one request (datagram) of this door. */
export function txsPerRequest(door: Door, batch: number): number {
  return door === 'solana-bundle' || door === 'evm-batch' ? batch : 1;
}

interface HttpTarget {
  kind: 'http';
  door: Door;
  path: string;
  headers: Record<string, string>;
  bodies: Buffer[];
  /** evm-batch: per-item outcomes live in the body, so it is read and scanned. */
  readBody: boolean;
}

interface UdpTarget {
  kind: 'udp';
  door: Door;
  datagrams: Buffer[];
}

type Target = HttpTarget | UdpTarget;

export interface GenOptions {
  chainId: number;
  batch: number;
  /** solana-bundle: base58 tip account; transaction 0 of every bundle pays it. */
  tipAccount?: string;
  tipLamports?: number;
  /** Solana: transactions meant to land (a funded payer, a current blockhash) and each transfer's lamports. */
  solana?: SolanaPayer & { lamports?: bigint };
}

/** Signs `count` fresh transactions shaped for `door` (raw bytes; EVM as typed-transaction bytes). */
export async function generateTransactions(door: Door, count: number, o: GenOptions): Promise<Buffer[]> {
  if (isEvm(door)) return evmTransfers(count, { chainId: o.chainId });
  const s = o.solana ?? {};
  const lamports = s.lamports;
  if (door !== 'solana-bundle') return solanaTransfers(count, { ...s, lamports: lamports === undefined ? undefined : () => lamports });
  const tip = o.tipAccount ? bs58.decode(o.tipAccount) : null;
  if (tip !== null && tip.length !== 32) throw new Error('--tip-account is not a 32-byte base58 address');
  const tipLamports = BigInt(o.tipLamports ?? 0);
  // Under one fixed blockhash, tips to one account would sign the same bytes: each bundle tips a lamport more.
  const tipOf = (i: number): bigint => tipLamports + (s.blockhash && tip ? BigInt(Math.floor(i / o.batch)) : 0n);
  return solanaTransfers(count, {
    ...s,
    to: (i) => (i % o.batch === 0 ? tip : null),
    lamports: (i) => (i % o.batch === 0 ? tipOf(i) : (lamports ?? 1000n + BigInt(i % 1000))),
  });
}

/** A stand-in tip account when none is given: random, so only a relay with the tip rule off accepts it. */
export function randomTipAccount(): string {
  return bs58.encode(randomBytes(32));
}

const JSON_HEAD = '{"jsonrpc":"2.0","id":';

/** Builds every request of the run from the transactions (grouped by `batch` where the door takes several). */
export function buildTarget(door: Door, txs: Buffer[], key: string, batch: number): Target {
  const per = txsPerRequest(door, batch);
  const n = Math.floor(txs.length / per);
  const bodies: Buffer[] = new Array(n);
  const group = (i: number): Buffer[] => txs.slice(i * per, (i + 1) * per);
  const hex = (t: Buffer): string => '0x' + t.toString('hex');
  switch (door) {
    case 'solana-udp': {
      let k: Uint8Array;
      try {
        k = uuidBytes(key);
      } catch {
        throw new Error('--key is not a UUID');
      }
      for (let i = 0; i < n; i++) bodies[i] = udpPacket(k, txs[i]!);
      return { kind: 'udp', door, datagrams: bodies };
    }
    case 'solana-rpc':
      for (let i = 0; i < n; i++) {
        bodies[i] = Buffer.from(`${JSON_HEAD}${i},"method":"sendTransaction","params":["${txs[i]!.toString('base64')}",{"encoding":"base64"}]}`);
      }
      return http(door, '/', { 'content-type': 'application/json', 'api-key': key }, bodies);
    case 'solana-v2':
      for (let i = 0; i < n; i++) bodies[i] = txs[i]!;
      return http(door, '/v2', { 'content-type': 'application/octet-stream', 'api-key': key }, bodies);
    case 'solana-bundle':
      for (let i = 0; i < n; i++) bodies[i] = bundleBody(group(i));
      return http(door, '/v2/batch', { 'content-type': 'application/octet-stream', 'api-key': key }, bodies);
    case 'evm-rpc':
      for (let i = 0; i < n; i++) {
        bodies[i] = Buffer.from(`${JSON_HEAD}${i},"method":"eth_sendRawTransaction","params":["${hex(txs[i]!)}"]}`);
      }
      return http(door, '/', { 'content-type': 'application/json', authorization: `Bearer ${key}` }, bodies);
    case 'evm-text':
      for (let i = 0; i < n; i++) bodies[i] = Buffer.from(hex(txs[i]!));
      return http(door, `/v2/svc_send_raw_transaction?auth=${encodeURIComponent(key)}`, { 'content-type': 'text/plain' }, bodies);
    case 'evm-batch':
      for (let i = 0; i < n; i++) {
        const items = group(i).map((t) => `"${hex(t)}"`).join(',');
        bodies[i] = Buffer.from(`${JSON_HEAD}${i},"method":"svc_sendRawTransactionBatch","params":[${items}]}`);
      }
      return { ...http(door, '/', { 'content-type': 'application/json', authorization: `Bearer ${key}` }, bodies), readBody: true };
  }
}

function http(door: Door, path: string, headers: Record<string, string>, bodies: Buffer[]): HttpTarget {
  return { kind: 'http', door, path, headers, bodies, readBody: false };
}

/** evm-batch answer: items the relay marked duplicate, and items not sent (any reason). Scans, no JSON.parse. */
export function scanBatchItems(body: string): { duplicate: number; notSent: number } {
  return { duplicate: countOf(body, '"duplicate":true'), notSent: countOf(body, '"status":"not-sent"') };
}

function countOf(s: string, needle: string): number {
  let n = 0;
  for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}
