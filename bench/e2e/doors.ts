/**
 * The entry points the end-to-end benchmark drives, each as the exact HTTP
 * request a client sends (path, headers, body built from its signed
 * transactions) and the status txrelay answers on acceptance. The bare uWS
 * server (the acceptor ceiling) answers the same requests with the same
 * status and a body of about the same size.
 *
 * A request carries `txPerRequest` transactions and counts `unitsPerRequest`
 * times in `txrelay_admitted_total`: a bundle is admitted once, a family A
 * batch once per item. Per-"tx" figures of a door are per admitted unit.
 */
export type DoorName = 'solana-v2' | 'evm-text' | 'solana-rpc' | 'evm-rpc' | 'solana-bundle' | 'evm-batch';
export type Family = 'solana' | 'evm';

export interface Door {
  name: DoorName;
  family: Family;
  label: string;
  /** Path with query, given the account UUID. */
  path(uuid: string): string;
  headers(uuid: string): Record<string, string>;
  txPerRequest: number;
  unitsPerRequest: number;
  /** Wire body for the `txPerRequest` signed transactions of request i (raw bytes as the chain module produces them). */
  body(txs: readonly Uint8Array[], i: number): Buffer;
  okStatus: 200 | 202;
}

/** A bundle's maximum: a bundle of 4 costs the most verification per request. */
const BUNDLE_TXS = 4;
/** Items per family A batch: well inside `evm.max_batch` (64), big enough that the per-request cost is shared. */
const EVM_BATCH_ITEMS = 16;

function bundleBody(txs: readonly Uint8Array[]): Buffer {
  const head = Buffer.alloc(1 + 2 * txs.length);
  head[0] = txs.length;
  txs.forEach((t, i) => head.writeUInt16LE(t.length, 1 + 2 * i));
  return Buffer.concat([head, ...txs]);
}

const b64 = (tx: Uint8Array) => Buffer.from(tx.buffer, tx.byteOffset, tx.length).toString('base64');
const hex = (tx: Uint8Array) => '0x' + Buffer.from(tx.buffer, tx.byteOffset, tx.length).toString('hex');

export const DOORS: Record<DoorName, Door> = {
  'solana-v2': {
    name: 'solana-v2',
    family: 'solana',
    label: 'Solana `POST /v2` (raw bytes)',
    path: () => '/v2',
    headers: (uuid) => ({ 'api-key': uuid, 'content-type': 'application/octet-stream' }),
    txPerRequest: 1,
    unitsPerRequest: 1,
    body: ([tx]) => Buffer.from(tx!),
    okStatus: 200,
  },
  'evm-text': {
    name: 'evm-text',
    family: 'evm',
    label: 'EVM plain text `POST /v2/svc_send_raw_transaction`',
    path: (uuid) => `/v2/svc_send_raw_transaction?auth=${uuid}`,
    headers: () => ({ 'content-type': 'text/plain' }),
    txPerRequest: 1,
    unitsPerRequest: 1,
    body: ([tx]) => Buffer.from(hex(tx!), 'latin1'),
    okStatus: 202,
  },
  'solana-rpc': {
    name: 'solana-rpc',
    family: 'solana',
    label: 'Solana JSON-RPC `sendTransaction` (base64)',
    path: () => '/',
    headers: (uuid) => ({ 'api-key': uuid, 'content-type': 'application/json' }),
    txPerRequest: 1,
    unitsPerRequest: 1,
    body: ([tx], i) => Buffer.from(`{"jsonrpc":"2.0","id":${i},"method":"sendTransaction","params":["${b64(tx!)}",{"encoding":"base64"}]}`),
    okStatus: 200,
  },
  'evm-rpc': {
    name: 'evm-rpc',
    family: 'evm',
    label: 'EVM JSON-RPC `eth_sendRawTransaction`',
    path: () => '/',
    headers: (uuid) => ({ authorization: `Bearer ${uuid}`, 'content-type': 'application/json' }),
    txPerRequest: 1,
    unitsPerRequest: 1,
    body: ([tx], i) => Buffer.from(`{"jsonrpc":"2.0","id":${i},"method":"eth_sendRawTransaction","params":["${hex(tx!)}"]}`),
    okStatus: 202,
  },
  'solana-bundle': {
    name: 'solana-bundle',
    family: 'solana',
    label: `Solana bundle \`POST /v2/batch\` (${BUNDLE_TXS} transactions)`,
    path: () => '/v2/batch',
    headers: (uuid) => ({ 'api-key': uuid, 'content-type': 'application/octet-stream' }),
    txPerRequest: BUNDLE_TXS,
    unitsPerRequest: 1,
    body: (txs) => bundleBody(txs),
    okStatus: 200,
  },
  'evm-batch': {
    name: 'evm-batch',
    family: 'evm',
    label: `EVM batch \`svc_sendRawTransactionBatch\` (${EVM_BATCH_ITEMS} items)`,
    path: () => '/',
    headers: (uuid) => ({ authorization: `Bearer ${uuid}`, 'content-type': 'application/json' }),
    txPerRequest: EVM_BATCH_ITEMS,
    unitsPerRequest: EVM_BATCH_ITEMS,
    body: (txs, i) => Buffer.from(`{"jsonrpc":"2.0","id":${i},"method":"svc_sendRawTransactionBatch","params":[${txs.map((t) => `"${hex(t)}"`).join(',')}]}`),
    okStatus: 202,
  },
};
