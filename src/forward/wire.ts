/**
 * The wire format of the three kinds of send (docs/protocol.md#forwarding):
 *
 *   EVM            {"jsonrpc":"2.0","id":N,"method":"eth_sendRawTransaction","params":["0x…"]}
 *   Solana single  … "method":"sendTransaction","params":["<b64>",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}
 *   Solana bundle  … "method":"sendBundle","params":[["<b64>",…],{"encoding":"base64"}]}
 *
 * Bodies are concatenated, not JSON.stringify'd: the params are hex or base64
 * our decoders accepted, so they need no escaping (1.2 vs 3.3 µs per Solana
 * call). The id is the item's sequence number in its lane, so a batch answer
 * maps back in any order and upstream logs correlate with ours.
 */
const HEAD = '{"jsonrpc":"2.0","id":';
const EVM_MID = ',"method":"eth_sendRawTransaction","params":["';
const EVM_TAIL = '"]}';
const SOL_MID = ',"method":"sendTransaction","params":["';
const SOL_TAIL = '",{"encoding":"base64","skipPreflight":true,"maxRetries":0}]}';
const BUNDLE_MID = ',"method":"sendBundle","params":[["';
const BUNDLE_TAIL = '"],{"encoding":"base64"}]}';

export function evmCall(id: number, hex: string): string {
  return HEAD + id + EVM_MID + hex + EVM_TAIL;
}

/** Preflight off and no RPC-side retries: the relay lands bytes fast, it does not simulate. */
export function solanaCall(id: number, base64: string): string {
  return HEAD + id + SOL_MID + base64 + SOL_TAIL;
}

export function bundleCall(id: number, txs: readonly string[]): string {
  let s = HEAD + id + BUNDLE_MID + txs[0];
  for (let i = 1; i < txs.length; i++) s += '","' + txs[i];
  return s + BUNDLE_TAIL;
}

/**
 * The same calls written as bytes into a request buffer, so no body string is
 * built per request (bench/forward: 0.4 vs 1.3 KB of heap per request).
 * test/forward/wire.test.ts pins them to the string forms above.
 */
export const CallKind = { EVM: 0, SOLANA: 1, BUNDLE: 2 } as const;
export type CallKind = (typeof CallKind)[keyof typeof CallKind];

const HEAD_B = Buffer.from(HEAD, 'latin1');
const MID_B = [Buffer.from(EVM_MID, 'latin1'), Buffer.from(SOL_MID, 'latin1'), Buffer.from(BUNDLE_MID, 'latin1')];
const TAIL_B = [Buffer.from(EVM_TAIL, 'latin1'), Buffer.from(SOL_TAIL, 'latin1'), Buffer.from(BUNDLE_TAIL, 'latin1')];
const FIXED = [0, 1, 2].map((k) => HEAD_B.length + MID_B[k]!.length + TAIL_B[k]!.length);

/** Bytes of one call; `item` is the hex/base64 string, or the bundle's base64 strings. */
export function callLength(kind: CallKind, id: number, item: string | readonly string[]): number {
  let n = FIXED[kind]! + decimalDigits(id);
  if (kind !== CallKind.BUNDLE) return n + (item as string).length;
  const txs = item as readonly string[];
  for (let i = 0; i < txs.length; i++) n += txs[i]!.length;
  return n + 3 * (txs.length - 1);
}

/** Writes one call at buf[off..] (room checked by the caller); returns the offset after it. */
export function writeCall(buf: Buffer, off: number, kind: CallKind, id: number, item: string | readonly string[]): number {
  buf.set(HEAD_B, off);
  off = writeDecimal(buf, off + HEAD_B.length, id);
  const mid = MID_B[kind]!;
  buf.set(mid, off);
  off += mid.length;
  if (kind !== CallKind.BUNDLE) {
    off += buf.write(item as string, off, 'latin1');
  } else {
    const txs = item as readonly string[];
    off += buf.write(txs[0]!, off, 'latin1');
    for (let i = 1; i < txs.length; i++) {
      buf[off] = 0x22;
      buf[off + 1] = 0x2c;
      buf[off + 2] = 0x22;
      off += buf.write(txs[i]!, off + 3, 'latin1') + 3;
    }
  }
  const tail = TAIL_B[kind]!;
  buf.set(tail, off);
  return off + tail.length;
}

export function decimalDigits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** A non-negative integer (below 2^53) in decimal at buf[off..]; returns the offset after it. */
export function writeDecimal(buf: Buffer, off: number, n: number): number {
  const end = off + decimalDigits(n);
  let p = end;
  do {
    const q = Math.floor(n / 10);
    buf[--p] = 48 + (n - q * 10);
    n = q;
  } while (n > 0);
  return end;
}
