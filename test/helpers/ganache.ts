/**
 * A real EVM node for tests (ganache, from the npm registry) on an ephemeral
 * port: chain id 1, Shanghai rules, the helpers' TEST_PRIVATE_KEY funded, so
 * what the relay forwards to it is mined.
 */
import ganache from 'ganache';
import { TEST_PRIVATE_KEY } from './evm.js';

export interface TestChain {
  url: string;
  close(): Promise<void>;
}

export async function startChain(): Promise<TestChain> {
  // ganache's typings tie options to a flavor generic; its runtime API is what matters here.
  type Server = { listen(port: number, host: string): Promise<void>; address(): unknown; close(): Promise<void> };
  const node = (ganache.server as (o: unknown) => Server)({
    logging: { quiet: true },
    chain: { chainId: 1, hardfork: 'shanghai' },
    wallet: { accounts: [{ secretKey: TEST_PRIVATE_KEY, balance: '0x56BC75E2D63100000' }] },
  });
  await node.listen(0, '127.0.0.1');
  return { url: `http://127.0.0.1:${(node.address() as { port: number }).port}`, close: () => node.close() };
}

/** A JSON-RPC call to the node: its `result`. */
export async function chainCall(url: string, method: string, params: unknown[]): Promise<any> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return ((await r.json()) as { result: any }).result;
}
