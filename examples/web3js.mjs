// Sends a Solana transaction with @solana/web3.js 1.x: the blockhash comes
// from your own RPC, the signed transaction goes to the relay.
//   CHAIN_RPC=https://… RELAY=http://127.0.0.1:8080 UUID=<account> node examples/web3js.mjs
import { Connection, Keypair, SystemProgram, Transaction } from '@solana/web3.js';

const { CHAIN_RPC, RELAY = 'http://127.0.0.1:8080', UUID } = process.env;

const chain = new Connection(CHAIN_RPC);
const relay = new Connection(RELAY, { httpHeaders: { 'api-key': UUID } });
const payer = Keypair.generate(); // yours comes from your key file

const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight });
tx.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1000 }));
tx.sign(payer);
const signature = await relay.sendRawTransaction(tx.serialize(), { skipPreflight: true });
console.log(signature);
