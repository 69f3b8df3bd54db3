// Sends an EVM transaction with viem: reads (chain id, nonce, gas, fees) go to
// your own node, the signed transaction goes to the relay.
//   CHAIN_RPC=http://127.0.0.1:8545 RELAY=http://127.0.0.1:8080 UUID=<account> PRIVATE_KEY=0x… node examples/viem.mjs
import { createPublicClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

const { CHAIN_RPC, RELAY = 'http://127.0.0.1:8080', UUID, PRIVATE_KEY } = process.env;

const chain = createPublicClient({ transport: http(CHAIN_RPC) });
const relay = createPublicClient({ transport: http(RELAY, { fetchOptions: { headers: { authorization: `Bearer ${UUID}` } } }) });
const account = privateKeyToAccount(PRIVATE_KEY);

const request = await chain.prepareTransactionRequest({ account, to: account.address, value: 1n, chainId: await chain.getChainId() });
const serializedTransaction = await account.signTransaction(request);
const hash = await relay.sendRawTransaction({ serializedTransaction });
console.log(hash);
