// Sends a Solana transaction with @solana/kit: the blockhash comes from your
// own RPC, the signed transaction goes to the relay.
//   CHAIN_RPC=https://… RELAY=http://127.0.0.1:8080 UUID=<account> node examples/kit.mjs
import {
  appendTransactionMessageInstruction, createDefaultRpcTransport, createSolanaRpc, createSolanaRpcFromTransport,
  createTransactionMessage, generateKeyPairSigner, getBase64EncodedWireTransaction, pipe,
  setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash, signTransactionMessageWithSigners,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';

const { CHAIN_RPC, RELAY = 'http://127.0.0.1:8080', UUID } = process.env;

const chain = createSolanaRpc(CHAIN_RPC);
const relay = createSolanaRpcFromTransport(createDefaultRpcTransport({ url: RELAY, headers: { 'api-key': UUID } }));
const payer = await generateKeyPairSigner(); // yours comes from your key file
const destination = (await generateKeyPairSigner()).address;

const { value: latestBlockhash } = await chain.getLatestBlockhash().send();
const message = pipe(
  createTransactionMessage({ version: 0 }),
  (m) => setTransactionMessageFeePayerSigner(payer, m),
  (m) => setTransactionMessageLifetimeUsingBlockhash(latestBlockhash, m),
  (m) => appendTransactionMessageInstruction(getTransferSolInstruction({ source: payer, destination, amount: 1000n }), m),
);
const tx = await signTransactionMessageWithSigners(message);
const signature = await relay.sendTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64', skipPreflight: true }).send();
console.log(signature);
