#!/usr/bin/env node
// Prints signed EVM transactions for trying txrelay by hand (uses the
// devDependency viem, installed by `npm ci`), one `0x` hex per line:
//   node scripts/demo-evm-tx.mjs                  one EIP-1559 transfer on chain 1 from a throwaway key
//   node scripts/demo-evm-tx.mjs 3                three, nonces 0, 1, 2 of the same key (a batch)
//   node scripts/demo-evm-tx.mjs 1 --chain-id 5   another chain id (the relay's `evm.chain_id` must match)
// The key is new each run and holds nothing: txrelay checks signatures and
// stateless rules only, so the transactions are accepted and forwarded, and
// a real chain would refuse them for lack of funds.
import { parseArgs } from 'node:util';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

const { values, positionals } = parseArgs({ options: { 'chain-id': { type: 'string', default: '1' } }, allowPositionals: true });
const count = Number(positionals[0] ?? 1);
const chainId = Number(values['chain-id']);
if (!Number.isInteger(count) || count < 1 || count > 64 || !Number.isInteger(chainId) || chainId < 1) {
  console.error('usage: node scripts/demo-evm-tx.mjs [COUNT 1-64] [--chain-id N]');
  process.exit(2);
}
const account = privateKeyToAccount(generatePrivateKey());
for (let nonce = 0; nonce < count; nonce++) {
  const hex = await account.signTransaction({
    chainId, nonce, to: account.address, value: 1n, gas: 21000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 10n ** 9n,
  });
  console.log(hex);
}
