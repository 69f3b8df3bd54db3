#!/usr/bin/env node
// Writes signed Solana transactions for trying txrelay by hand (uses the
// devDependency @solana/web3.js, installed by `npm ci`):
//   node scripts/demo-solana-tx.mjs v0 tx.bin            a v0 transfer using an address lookup table
//   node scripts/demo-solana-tx.mjs tip tip.bin <TIP> N  a legacy transfer of N lamports to tip account <TIP>
// Prints the base58 signature (the id txrelay answers with).
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import web3 from '@solana/web3.js';
import bs58 from 'bs58';

const { Keypair, PublicKey, SystemProgram, TransactionMessage, VersionedTransaction, AddressLookupTableAccount } = web3;
const [kind = 'v0', out = 'tx.bin', tip, lamports = '1000'] = process.argv.slice(2);
const payer = Keypair.generate();
const blockhash = new PublicKey(randomBytes(32)).toBase58(); // any 32 bytes: txrelay does not check recency
let tx;
function usage(why) {
  console.error(`demo-solana-tx.mjs: ${why}; usage: node scripts/demo-solana-tx.mjs v0 FILE | tip FILE TIP_ACCOUNT LAMPORTS`);
  process.exit(2);
}
if (kind !== 'v0' && kind !== 'tip') usage(`unknown kind ${JSON.stringify(kind)}`);
if (kind === 'tip') {
  if (!tip) usage('the tip account is missing');
  try {
    new PublicKey(tip);
  } catch {
    usage(`the tip account ${JSON.stringify(tip)} is not a base58 address`);
  }
  if (!/^\d+$/.test(lamports)) usage(`lamports must be a whole number, got ${JSON.stringify(lamports)}`);
  const msg = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(tip), lamports: BigInt(lamports) })],
  }).compileToLegacyMessage();
  tx = new VersionedTransaction(msg);
} else {
  const to = Keypair.generate().publicKey;
  const table = new AddressLookupTableAccount({
    key: Keypair.generate().publicKey,
    state: { deactivationSlot: 2n ** 64n - 1n, lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, addresses: [to] },
  });
  const msg = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1000 })],
  }).compileToV0Message([table]);
  tx = new VersionedTransaction(msg);
}
tx.sign([payer]);
writeFileSync(out, tx.serialize());
console.log(bs58.encode(tx.signatures[0]));
