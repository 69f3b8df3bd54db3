import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { decodeSolanaTransaction, maxSizeFor, type SolanaTxView } from '../../../src/chains/solana/decode.js';
import { TipAccounts, sumBundleTips, sumTips } from '../../../src/chains/solana/tip.js';
import * as h from '../../helpers/solana.js';

const tipKeys = [h.newKeypair().publicKey, h.newKeypair().publicKey, h.newKeypair().publicKey];
const TIP = tipKeys[0]!;
const tips = new TipAccounts(tipKeys.map((k) => k.toBase58()));

function decoded(tx: h.BuiltTx): { bytes: Uint8Array; view: SolanaTxView } {
  return { bytes: tx.bytes, view: decodeSolanaTransaction(tx.bytes, maxSizeFor(tx.bytes, false)) };
}

function tipOf(tx: h.BuiltTx): { found: boolean; lamports: bigint } {
  const { bytes, view } = decoded(tx);
  return sumTips(bytes, view, tips);
}

/** A System Program instruction with hand-written data and accounts (for malformed cases). */
function systemIx(data: number[], accounts: h.PublicKey[], signer: h.PublicKey): h.TransactionInstruction {
  return new h.TransactionInstruction({
    programId: h.SystemProgram.programId,
    keys: accounts.map((pubkey) => ({ pubkey, isSigner: pubkey.equals(signer), isWritable: true })),
    data: Buffer.from(data),
  });
}

function u64(n: bigint): number[] {
  return Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(8 * i)) & 0xffn));
}

describe('TipAccounts', () => {
  test('accepts base58 32-byte addresses and ignores duplicates', () => {
    const t = new TipAccounts([TIP.toBase58(), TIP.toBase58(), tipKeys[1]!.toBase58()]);
    assert.equal(t.size, 2);
    assert.deepEqual(t.addresses, [TIP.toBase58(), tipKeys[1]!.toBase58()]);
  });

  test('an entry that is not base58 is refused, naming the entry', () => {
    assert.throws(() => new TipAccounts([TIP.toBase58(), 'not-base58-0OIl']), /tip account #1 "not-base58-0OIl" is not valid base58/);
  });

  test('an entry that does not decode to 32 bytes is refused, naming the entry', () => {
    assert.throws(() => new TipAccounts(['3yZe7d']), /tip account #0 "3yZe7d" decodes to 4 bytes, expected 32/);
    assert.throws(() => new TipAccounts(['']), /tip account #0 is empty/);
    // A configuration error of the table's (TXR_CONFIG), as every start-up refusal.
    assert.throws(() => new TipAccounts(['']), (e: any) => e.code === 'TXR_CONFIG' && /^solana\.tip_accounts: /.test(e.message));
  });

  test('has() matches whole keys only, not a shared prefix', () => {
    const key = TIP.toBytes();
    const near = Uint8Array.from(key);
    near[31] ^= 1;
    assert.equal(tips.has(key, 0), true);
    assert.equal(tips.has(near, 0), false);
  });
});

describe('tip rule: System transfers to a tip account', () => {
  for (const version of ['legacy', 'v0', 'v1'] as const) {
    test(`Transfer to a tip account is counted (${version})`, () => {
      assert.deepEqual(tipOf(h.tipTransfer(TIP, 12_345, { version })), { found: true, lamports: 12_345n });
    });

    test(`TransferWithSeed to a tip account is counted (${version})`, () => {
      assert.deepEqual(tipOf(h.tipTransferWithSeed(TIP, 777, { version, seed: 'bundle-tip' })), { found: true, lamports: 777n });
    });
  }

  test('a tip account reached through an address lookup table is not counted', () => {
    const tx = h.v0WithLookup({ to: TIP, lamports: 50_000 });
    const { bytes, view } = decoded(tx);
    assert.equal(view.numLookupKeys, 1); // the destination really is loaded from the table
    assert.deepEqual(sumTips(bytes, view, tips), { found: false, lamports: 0n });
  });

  test('a 0-lamport transfer to a tip account is a tip instruction: found, summing to 0', () => {
    assert.deepEqual(tipOf(h.tipTransfer(TIP, 0)), { found: true, lamports: 0n });
  });

  test('a transfer to any other account is not a tip', () => {
    assert.deepEqual(tipOf(h.legacyTransfer({ lamports: 1_000_000 })), { found: false, lamports: 0n });
  });

  test('a transfer whose source is a tip account is not a tip', () => {
    const payer = h.newKeypair();
    const tx = h.legacyTransaction(payer, [systemIx([2, 0, 0, 0, ...u64(5n)], [TIP, payer.publicKey], payer.publicKey)]);
    assert.deepEqual(tipOf(tx), { found: false, lamports: 0n });
  });

  test('several tip transfers in one transaction add up, across tip accounts', () => {
    const payer = h.newKeypair();
    const tx = h.legacyTransaction(payer, [
      h.transferIx(payer.publicKey, TIP, 100),
      h.transferIx(payer.publicKey, tipKeys[1]!, 20),
      h.transferIx(payer.publicKey, h.randomAddress(), 999),
      h.transferIx(payer.publicKey, TIP, 3),
    ]);
    assert.deepEqual(tipOf(tx), { found: true, lamports: 123n });
  });

  test('lamports are summed as u64, beyond 2^53', () => {
    const big = 2n ** 63n + 5n;
    assert.deepEqual(tipOf(h.tipTransfer(TIP, big)), { found: true, lamports: big });
  });

  test('malformed Transfer data is not counted: too short, wrong variant, too few accounts', () => {
    const payer = h.newKeypair();
    const cases = [
      systemIx([2, 0, 0, 0, ...u64(5n).slice(0, 7)], [payer.publicKey, TIP], payer.publicKey), // 11 bytes
      systemIx([3, 0, 0, 0, ...u64(5n)], [payer.publicKey, TIP], payer.publicKey), // CreateAccountWithSeed tag
      systemIx([2, 0, 0, 1, ...u64(5n)], [payer.publicKey, TIP], payer.publicKey), // tag 0x01000002
      systemIx([2, 0, 0, 0, ...u64(5n)], [TIP], payer.publicKey), // only one account: `to` missing
    ];
    for (const ix of cases) {
      assert.deepEqual(tipOf(h.legacyTransaction(payer, [ix])), { found: false, lamports: 0n });
    }
  });

  test('Transfer data with trailing bytes is counted (the System Program deserializes with trailing bytes allowed)', () => {
    const payer = h.newKeypair();
    const ix = systemIx([2, 0, 0, 0, ...u64(9n), 0xaa], [payer.publicKey, TIP], payer.publicKey);
    assert.deepEqual(tipOf(h.legacyTransaction(payer, [ix])), { found: true, lamports: 9n });
  });

  test('malformed TransferWithSeed data is not counted: seed past the data, seed over 32 bytes, invalid UTF-8, owner cut short', () => {
    const base = h.newKeypair();
    const from = h.randomAddress();
    const accounts = [from, base.publicKey, TIP];
    const owner = Array.from(h.SystemProgram.programId.toBytes());
    const withSeed = (seed: number[], declared = seed.length, tail = owner) =>
      systemIx([11, 0, 0, 0, ...u64(5n), ...u64(BigInt(declared)), ...seed, ...tail], accounts, base.publicKey);
    const good = withSeed([0x61, 0x62]);
    assert.deepEqual(tipOf(h.legacyTransaction(base, [good])), { found: true, lamports: 5n });
    const cases = [
      withSeed([0x61, 0x62], 200), // declared length beyond the data
      withSeed(Array(33).fill(0x61)), // MAX_SEED_LEN is 32
      withSeed([0xc0, 0x80]), // overlong encoding
      withSeed([0xed, 0xa0, 0x80]), // UTF-16 surrogate
      withSeed([0x61], 1, owner.slice(0, 31)), // from_owner truncated
    ];
    for (const ix of cases) {
      assert.deepEqual(tipOf(h.legacyTransaction(base, [ix])), { found: false, lamports: 0n });
    }
    // A 32-byte multi-byte UTF-8 seed is fine.
    const seed32 = [...Buffer.from('é'.repeat(15) + 'ab')];
    assert.equal(seed32.length, 32);
    assert.deepEqual(tipOf(h.legacyTransaction(base, [withSeed(seed32)])), { found: true, lamports: 5n });
  });

  test('a program other than the System Program with the same data is not a tip', () => {
    const payer = h.newKeypair();
    const ix = new h.TransactionInstruction({
      programId: h.randomAddress(),
      keys: [
        { pubkey: payer.publicKey, isSigner: true, isWritable: true },
        { pubkey: TIP, isSigner: false, isWritable: true },
      ],
      data: Buffer.from([2, 0, 0, 0, ...u64(5n)]),
    });
    assert.deepEqual(tipOf(h.legacyTransaction(payer, [ix])), { found: false, lamports: 0n });
  });

  test('an empty tip list finds nothing', () => {
    const { bytes, view } = decoded(h.tipTransfer(TIP, 5));
    assert.deepEqual(sumTips(bytes, view, new TipAccounts([])), { found: false, lamports: 0n });
  });
});

describe('bundle tips (the tip may sit in any one transaction)', () => {
  test('the sum runs across the whole bundle', () => {
    const bundle = [h.legacyTransfer(), h.tipTransfer(TIP, 400, { version: 'v0' }), h.tipTransferWithSeed(tipKeys[2]!, 600, { version: 'v1' }), h.legacyTransfer()].map(decoded);
    assert.deepEqual(sumBundleTips(bundle, tips), { found: true, lamports: 1000n });
  });

  test('a bundle whose only tip is 0 lamports is found (607, not 606)', () => {
    const bundle = [h.legacyTransfer(), h.tipTransfer(TIP, 0)].map(decoded);
    assert.deepEqual(sumBundleTips(bundle, tips), { found: true, lamports: 0n });
  });

  test('a bundle without any tip transfer is not found (606)', () => {
    const bundle = [h.legacyTransfer(), h.v0WithLookup({ to: TIP })].map(decoded);
    assert.deepEqual(sumBundleTips(bundle, tips), { found: false, lamports: 0n });
  });
});
