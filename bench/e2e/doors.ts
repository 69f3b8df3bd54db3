/**
 * The entry points the end-to-end benchmark drives, each as the exact HTTP
 * request a client sends (path, headers, body built from one signed
 * transaction) and the status txrelay answers on acceptance. The bare uWS
 * server (the acceptor ceiling) answers the same requests with the same
 * status and a body of the same size.
 */
export type DoorName = 'solana-v2' | 'evm-text' | 'solana-rpc' | 'evm-rpc';
export type Family = 'solana' | 'evm';

export interface Door {
  name: DoorName;
  family: Family;
  label: string;
  /** Path with query, given the account UUID. */
  path(uuid: string): string;
  headers(uuid: string): Record<string, string>;
  /** Wire body for one signed transaction (raw bytes as the chain module produces them). */
  body(tx: Uint8Array, i: number): Buffer;
  okStatus: 200 | 202;
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
    body: (tx) => Buffer.from(tx),
    okStatus: 200,
  },
  'evm-text': {
    name: 'evm-text',
    family: 'evm',
    label: 'EVM plain text `POST /v2/svc_send_raw_transaction`',
    path: (uuid) => `/v2/svc_send_raw_transaction?auth=${uuid}`,
    headers: () => ({ 'content-type': 'text/plain' }),
    body: (tx) => Buffer.from(hex(tx), 'latin1'),
    okStatus: 202,
  },
  'solana-rpc': {
    name: 'solana-rpc',
    family: 'solana',
    label: 'Solana JSON-RPC `sendTransaction` (base64)',
    path: () => '/',
    headers: (uuid) => ({ 'api-key': uuid, 'content-type': 'application/json' }),
    body: (tx, i) => Buffer.from(`{"jsonrpc":"2.0","id":${i},"method":"sendTransaction","params":["${b64(tx)}",{"encoding":"base64"}]}`),
    okStatus: 200,
  },
  'evm-rpc': {
    name: 'evm-rpc',
    family: 'evm',
    label: 'EVM JSON-RPC `eth_sendRawTransaction`',
    path: () => '/',
    headers: (uuid) => ({ authorization: `Bearer ${uuid}`, 'content-type': 'application/json' }),
    body: (tx, i) => Buffer.from(`{"jsonrpc":"2.0","id":${i},"method":"eth_sendRawTransaction","params":["${hex(tx)}"]}`),
    okStatus: 202,
  },
};
