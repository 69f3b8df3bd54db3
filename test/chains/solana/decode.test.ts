import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { Transaction } from '@solana/web3.js';
import { DecodeError } from '../../../src/errors.js';
import { ByteReader, encodeShortU16 } from '../../../src/chains/solana/bytes.js';
import {
  MAX_V1_TX_SIZE,
  PACKET_DATA_SIZE,
  SolanaTxView,
  accountKeyAt,
  decodeSolanaTransaction,
  firstSignature,
  firstSignatureBase58,
  lastDecodeOps,
  maxSizeFor,
  messageBytes,
  signatureAt,
} from '../../../src/chains/solana/decode.js';
import * as h from '../../helpers/solana.js';

const HTTP = MAX_V1_TX_SIZE;

function decode(bytes: Uint8Array, maxSize = maxSizeFor(bytes, false)): SolanaTxView {
  return decodeSolanaTransaction(bytes, maxSize);
}

function rejects(bytes: Uint8Array, pattern: RegExp, maxSize = HTTP): void {
  assert.throws(() => decodeSolanaTransaction(bytes, maxSize), (e: unknown) => {
    assert.ok(e instanceof DecodeError, `expected DecodeError, got ${String(e)}`);
    assert.match(e.message, pattern);
    return true;
  });
}

function splice(bytes: Uint8Array, at: number, remove: number, insert: number[] = []): Uint8Array {
  return Uint8Array.from([...bytes.subarray(0, at), ...insert, ...bytes.subarray(at + remove)]);
}

describe('compact-u16 (bytes.ts)', () => {
  test('every u16 round-trips through its shortest encoding', () => {
    const r = new ByteReader();
    for (let v = 0; v <= 0xffff; v++) {
      const enc = Uint8Array.from(encodeShortU16(v));
      r.reset(enc);
      assert.equal(r.shortU16(), v);
      assert.equal(r.pos, enc.length);
    }
  });

  test('a zero continuation byte is non-canonical and rejected, at every width', () => {
    const r = new ByteReader();
    // 0x80 0x00 encodes 0 in two bytes; 0xff 0x80 0x00 encodes 127 in three.
    for (const enc of [[0x80, 0x00], [0x81, 0x00], [0xff, 0x00], [0x80, 0x80, 0x00], [0xff, 0xff, 0x00], [0x81, 0x80, 0x00]]) {
      assert.throws(() => r.reset(Uint8Array.from(enc)).shortU16(), /non-canonical/, JSON.stringify(enc));
    }
    // Exhaustively over the first two bytes (and every third byte that can
    // matter: 0, the legal 1-3, and the first illegal values): a string either
    // decodes to a value whose shortest encoding is exactly those bytes, or
    // is rejected with a DecodeError.
    const third = [0, 1, 2, 3, 4, 5, 0x7f, 0x80, 0x81, 0xff];
    let accepted = 0;
    const check = (enc: Uint8Array): void => {
      let v: number;
      try {
        v = r.reset(enc).shortU16();
      } catch (e) {
        assert.ok(e instanceof DecodeError);
        return;
      }
      accepted++;
      const canonical = encodeShortU16(v);
      if (canonical.length !== enc.length || canonical.some((x, i) => x !== enc[i])) assert.fail(`accepted ${[...enc]} as ${v}`);
    };
    for (let b0 = 0x80; b0 <= 0xff; b0++) {
      for (let b1 = 0; b1 <= 0xff; b1++) {
        check(Uint8Array.from([b0, b1]));
        if (b1 >= 0x80) for (const b2 of third) check(Uint8Array.from([b0, b1, b2]));
      }
    }
    // Exactly the values 128..65535 have a multi-byte encoding.
    assert.equal(accepted, 0x10000 - 0x80);
  });

  test('a third byte above 3 overflows u16 and is rejected', () => {
    const r = new ByteReader();
    assert.equal(r.reset(Uint8Array.from([0xff, 0xff, 0x03])).shortU16(), 0xffff);
    assert.throws(() => r.reset(Uint8Array.from([0xff, 0xff, 0x04])).shortU16(), /overflows/);
  });

  test('reads past the end are DecodeErrors, never out-of-bounds reads', () => {
    const r = new ByteReader();
    assert.throws(() => r.reset(new Uint8Array(0)).u8(), DecodeError);
    assert.throws(() => r.reset(Uint8Array.from([0x80])).shortU16(), DecodeError);
    assert.throws(() => r.reset(Uint8Array.from([0x80, 0x80])).shortU16(), DecodeError);
    assert.throws(() => r.reset(new Uint8Array(3)).u32le(), DecodeError);
    assert.throws(() => r.reset(new Uint8Array(3)).skip(4), DecodeError);
    assert.throws(() => r.reset(new Uint8Array(3)).maxByte(4), DecodeError);
    assert.throws(() => r.reset(new Uint8Array(3)).u16leAt(2), DecodeError);
  });
});

describe('versions decode with the right signature and counts', () => {
  test('legacy transfer: 1 signature, 1 required signer, 3 static keys, 1 instruction', () => {
    const tx = h.legacyTransfer({ lamports: 5 });
    const v = decode(tx.bytes);
    assert.equal(v.version, 'legacy');
    assert.equal(v.numSignatures, 1);
    assert.equal(v.numRequiredSignatures, 1);
    assert.equal(v.numReadonlySigned, 0);
    assert.equal(v.numReadonlyUnsigned, 1);
    assert.equal(v.numStaticKeys, 3);
    assert.equal(v.numLookupKeys, 0);
    assert.equal(v.numInstructions, 1);
    assert.equal(v.signaturesOffset, 1);
    assert.equal(v.messageOffset, 65);
    assert.equal(v.messageLength, tx.bytes.length - 65);
    assert.equal(firstSignatureBase58(tx.bytes, v), tx.signature);
    assert.deepEqual(firstSignature(tx.bytes, v), bs58.decode(tx.signature));
    // The instruction table points at the transfer: accounts [0, 1], 12 data bytes.
    assert.equal(v.dataLength(0), 12);
    assert.deepEqual([...tx.bytes.subarray(v.accountsOffset(0), v.accountsOffset(0) + v.accountsLength(0))], [0, 1]);
    assert.deepEqual([...tx.bytes.subarray(v.dataOffset(0), v.dataOffset(0) + 4)], [2, 0, 0, 0]);
    // The message bytes are exactly what web3.js signs.
    const parsed = Transaction.from(tx.bytes);
    assert.deepEqual(messageBytes(tx.bytes, v), Uint8Array.from(parsed.serializeMessage()));
  });

  test('v0 with a lookup table: destination is loaded, not static; lookup counts add up', () => {
    const tx = h.v0WithLookup({ tableAddresses: [h.randomAddress(), h.randomAddress()] });
    const v = decode(tx.bytes);
    assert.equal(v.version, 'v0');
    assert.equal(v.numSignatures, 1);
    assert.equal(v.numStaticKeys, 2); // payer, system program
    assert.equal(v.numLookups, 1);
    assert.equal(v.numWritableLookupKeys, 1);
    assert.equal(v.numReadonlyLookupKeys, 0);
    assert.equal(v.numAccounts, 3);
    assert.equal(tx.bytes[v.messageOffset], 0x80);
    assert.equal(firstSignatureBase58(tx.bytes, v), tx.signature);
    // Account index 2 of the transfer reaches past the static keys into the table.
    assert.equal(tx.bytes[v.accountsOffset(0) + 1], 2);
  });

  test('v1 (0x81, SIMD-0385): signatures trail the message, which starts at the version byte', () => {
    const tx = h.v1Transfer();
    const v = decode(tx.bytes);
    assert.equal(v.version, 'v1');
    assert.equal(v.numSignatures, 1);
    assert.equal(v.numRequiredSignatures, 1);
    assert.equal(v.numStaticKeys, 3);
    assert.equal(v.messageOffset, 0);
    assert.equal(v.signaturesOffset, tx.bytes.length - 64);
    assert.equal(v.messageLength, tx.bytes.length - 64);
    assert.equal(v.configMask, 0);
    assert.equal(firstSignatureBase58(tx.bytes, v), tx.signature);
    assert.equal(v.dataLength(0), 12);
  });

  test('v1 with every config value present decodes and skips the values', () => {
    const tx = h.v1Transfer({ config: { priorityFeeLamports: 10_000n, computeUnitLimit: 200_000, loadedAccountsDataSizeLimit: 65_536, heapSize: 64 * 1024 } });
    const v = decode(tx.bytes);
    assert.equal(v.configMask, 0b1_1111);
    assert.equal(v.configValuesOffset, 1 + 3 + 4 + 32 + 1 + 1 + 3 * 32);
    assert.equal(v.dataLength(0), 12);
  });

  test('multi-signer transactions expose each signature and signer key in order', () => {
    for (const version of ['legacy', 'v0', 'v1'] as const) {
      const payer = h.newKeypair();
      const other = h.newKeypair();
      const tx = h.buildTransaction(version, payer, [h.transferIx(payer.publicKey, h.randomAddress(), 1), h.transferIx(other.publicKey, h.randomAddress(), 2)], {
        signers: [other],
      });
      const v = decode(tx.bytes);
      assert.equal(v.numSignatures, 2, version);
      assert.deepEqual(accountKeyAt(tx.bytes, v, 0), payer.publicKey.toBytes());
      assert.deepEqual(accountKeyAt(tx.bytes, v, 1), other.publicKey.toBytes());
      assert.equal(signatureAt(tx.bytes, v, 1).length, 64);
      assert.throws(() => signatureAt(tx.bytes, v, 2), RangeError);
    }
  });

  test('the hand serializer used for oversized and v1 transactions matches web3.js byte for byte', () => {
    const payer = h.newKeypair();
    const ixs = [h.transferIx(payer.publicKey, h.randomAddress(), 42), h.payloadIx(10)];
    const blockhash = h.randomBlockhash();
    const byWeb3 = h.legacyTransaction(payer, ixs, { blockhash });
    const compiled = h.compileLegacy(payer, ixs, blockhash);
    const message = h.serializeLegacyMessage(compiled);
    assert.deepEqual(h.signaturesFirst(message, h.signAll(message, compiled, [payer])), byWeb3.bytes);
  });

  test('decoding a view over a SharedArrayBuffer reads the same offsets', () => {
    const tx = h.v0WithLookup();
    const shared = new Uint8Array(new SharedArrayBuffer(tx.bytes.length + 16), 16, tx.bytes.length);
    shared.set(tx.bytes);
    const v = decode(shared);
    assert.equal(firstSignatureBase58(shared, v), tx.signature);
  });
});

describe('strictness: every rule rejects', () => {
  test('compact-u16 lengths must be canonical (static key count written as 0x83 0x00)', () => {
    const tx = h.legacyTransfer();
    const v = decode(tx.bytes);
    const at = v.messageOffset + 3; // static key count follows the 3-byte header
    assert.equal(tx.bytes[at], 3);
    rejects(splice(tx.bytes, at, 1, [0x83, 0x00]), /non-canonical compact-u16/);
    // Same for an instruction's data length (12 -> 0x8c 0x00).
    const dl = v.dataOffset(0) - 1;
    assert.equal(tx.bytes[dl], 12);
    rejects(splice(tx.bytes, dl, 1, [0x8c, 0x00]), /non-canonical compact-u16/);
  });

  test('signature count must equal the header num_required_signatures', () => {
    const tx = h.legacyTransfer();
    // Two signatures for a message that requires one.
    rejects(Uint8Array.from([2, ...tx.bytes.subarray(1, 65), ...tx.bytes.subarray(1)]), /signature count 2 does not match the 1 required/);
    // Header claims two required signatures but one is attached.
    const two = Uint8Array.from(tx.bytes);
    two[65] = 2;
    rejects(two, /signature count 1 does not match the 2 required/);
  });

  test('at most 12 signatures', () => {
    rejects(Uint8Array.from([13, ...new Uint8Array(13 * 64 + 40)]), /13 signatures, at most 12/);
  });

  test('instruction account index must be below the number of accounts (legacy: static keys)', () => {
    const tx = h.legacyTransfer();
    const v = decode(tx.bytes);
    const bad = Uint8Array.from(tx.bytes);
    bad[v.accountsOffset(0) + 1] = v.numStaticKeys; // 3 of 3
    rejects(bad, /account index 3 out of range \(3 accounts\)/);
  });

  test('v0 account index may reach loaded lookup addresses, but not beyond them', () => {
    const tx = h.v0WithLookup();
    const v = decode(tx.bytes);
    assert.equal(tx.bytes[v.accountsOffset(0) + 1], 2); // the loaded address, accepted above
    const bad = Uint8Array.from(tx.bytes);
    bad[v.accountsOffset(0) + 1] = 3;
    rejects(bad, /account index 3 out of range \(3 accounts\)/);
  });

  test('v1 account index must be below NumAddresses', () => {
    const tx = h.v1Transfer();
    const v = decode(tx.bytes);
    const bad = Uint8Array.from(tx.bytes);
    bad[v.accountsOffset(0) + 1] = v.numStaticKeys;
    rejects(bad, /account index 3 out of range \(3 accounts\)/);
  });

  test('program id index must be a static key and not the fee payer', () => {
    for (const version of ['legacy', 'v0', 'v1'] as const) {
      const tx = version === 'v0' ? h.v0WithLookup() : version === 'v1' ? h.v1Transfer() : h.legacyTransfer();
      const v = decode(tx.bytes);
      const at = version === 'v1' ? v.configValuesOffset : v.accountsOffset(0) - 2; // v1: first instruction header
      assert.equal(tx.bytes[at], v.programIdIndex(0), version);
      for (const bad of [0, v.numStaticKeys]) {
        const b = Uint8Array.from(tx.bytes);
        b[at] = bad;
        rejects(b, /instruction 0: program id index/);
      }
    }
  });

  test('readonly signed accounts must be fewer than required signatures (the fee payer is writable)', () => {
    const tx = h.legacyTransfer();
    const b = Uint8Array.from(tx.bytes);
    b[66] = 1;
    rejects(b, /readonly signed accounts \(1\) must be fewer than required signatures \(1\)/);
    const v1 = Uint8Array.from(h.v1Transfer().bytes);
    v1[2] = 1;
    rejects(v1, /readonly signed accounts/);
  });

  test('readonly unsigned accounts must fit among the unsigned keys', () => {
    const tx = h.legacyTransfer(); // 3 keys, 1 signer
    const b = Uint8Array.from(tx.bytes);
    b[67] = 3;
    rejects(b, /readonly unsigned accounts \(3\) exceed the 2 unsigned account keys/);
  });

  test('required signatures need as many account keys', () => {
    const v1 = Uint8Array.from(h.v1Transfer().bytes);
    v1[1] = 4; // 4 signers, 3 addresses
    rejects(v1, /4 required signatures but only 3 account keys/);
  });

  test('a v0 lookup that loads no address is rejected', () => {
    const tx = h.v0WithLookup();
    // Last bytes: table key, cu16 writable=1, [index], cu16 readonly=0.
    const n = tx.bytes.length;
    assert.deepEqual([...tx.bytes.subarray(n - 3)], [1, 0, 0]);
    rejects(splice(tx.bytes, n - 3, 2, [0]), /lookup 0 loads no address/);
  });

  test('no trailing bytes after the transaction', () => {
    for (const tx of [h.legacyTransfer(), h.v0WithLookup(), h.v1Transfer()]) {
      rejects(Uint8Array.from([...tx.bytes, 0]), /1 trailing byte after transaction/);
      rejects(Uint8Array.from([...tx.bytes, 0, 0]), /2 trailing bytes after transaction/);
    }
  });

  test('every truncation of a valid transaction is rejected', () => {
    for (const tx of [h.legacyTransfer(), h.v0WithLookup(), h.v1Transfer({ config: { computeUnitLimit: 1 } })]) {
      for (let n = 0; n < tx.bytes.length; n++) {
        assert.throws(() => decode(tx.bytes.subarray(0, n), HTTP), DecodeError, `prefix of ${n}`);
      }
    }
  });

  test('over size: the maxSize argument is checked before anything else', () => {
    const tx = h.legacyTransfer();
    rejects(tx.bytes, new RegExp(`transaction is ${tx.bytes.length} bytes, over the 100-byte limit`), 100);
  });

  test('legacy of 1232 bytes is accepted; 1233 is rejected even when maxSize would allow it', () => {
    const ok = h.paddedTransaction('legacy', PACKET_DATA_SIZE);
    assert.equal(decode(ok.bytes, PACKET_DATA_SIZE).size, 1232);
    const big = h.paddedTransaction('legacy', PACKET_DATA_SIZE + 1);
    rejects(big.bytes, /over the 1232-byte limit/, PACKET_DATA_SIZE);
    rejects(big.bytes, /legacy\/v0 transaction is 1233 bytes, over the 1232-byte limit/, HTTP);
  });

  test('v1 of 4096 bytes is accepted over HTTP, 4097 is rejected; over UDP v1 is held to 1232', () => {
    const max = h.paddedTransaction('v1', MAX_V1_TX_SIZE);
    assert.equal(maxSizeFor(max.bytes, false), 4096);
    assert.equal(decode(max.bytes, maxSizeFor(max.bytes, false)).size, 4096);
    const over = h.paddedTransaction('v1', MAX_V1_TX_SIZE + 1);
    rejects(over.bytes, /over the 4096-byte limit/, 1 << 16);
    assert.equal(maxSizeFor(max.bytes, true), 1232);
    rejects(max.bytes, /transaction is 4096 bytes, over the 1232-byte limit/, maxSizeFor(max.bytes, true));
  });

  test('maxSizeFor: v1 over HTTP 4096, everything else 1232', () => {
    const legacy = h.legacyTransfer().bytes;
    const v0 = h.v0WithLookup().bytes;
    const v1 = h.v1Transfer().bytes;
    assert.equal(maxSizeFor(legacy, false), 1232);
    assert.equal(maxSizeFor(v0, false), 1232);
    assert.equal(maxSizeFor(v1, false), 4096);
    assert.equal(maxSizeFor(legacy, true), 1232);
    assert.equal(maxSizeFor(v1, true), 1232);
    assert.equal(maxSizeFor(new Uint8Array(0), false), 1232);
  });

  test('empty input and unknown versions are rejected', () => {
    rejects(new Uint8Array(0), /empty transaction/);
    rejects(Uint8Array.from([0x82, ...new Uint8Array(100)]), /unsupported transaction version 2/);
    rejects(Uint8Array.from([0x80, ...new Uint8Array(100)]), /v0 transaction must start with its signatures/);
    const tx = Uint8Array.from(h.v0WithLookup().bytes);
    tx[65] = 0x81; // a v1 prefix inside the signatures-first envelope
    rejects(tx, /v1 message must not follow signatures/);
    tx[65] = 0x85;
    rejects(tx, /unsupported message version 5/);
  });

  test('v1 config mask: reserved bits and a half-set priority fee are rejected', () => {
    const tx = h.v1Transfer();
    const reserved = Uint8Array.from(tx.bytes);
    reserved[4] = 0x20; // bit 5: no value follows, but the bit alone is the violation
    rejects(reserved, /reserved bits/);
    const high = Uint8Array.from(tx.bytes);
    high[7] = 0x80;
    rejects(high, /reserved bits/);
    for (const half of [0b01, 0b10]) {
      const b = Uint8Array.from(tx.bytes);
      b[4] = half;
      rejects(b, /priority fee needs both config mask bits/);
    }
  });

  test('v1 heap size must be a multiple of 1 KiB within [32 KiB, 256 KiB]', () => {
    for (const heapSize of [32 * 1024, 256 * 1024, 33 * 1024]) decode(h.v1Transfer({ config: { heapSize } }).bytes);
    for (const heapSize of [31 * 1024, 257 * 1024, 32 * 1024 + 1, 0]) {
      rejects(h.v1Transfer({ config: { heapSize } }).bytes, /heap size/);
    }
  });

  test('v1 addresses must be distinct', () => {
    const tx = Uint8Array.from(h.v1Transfer().bytes);
    const keys = 1 + 3 + 4 + 32 + 2;
    tx.copyWithin(keys + 64, keys + 32, keys + 64); // address 2 := address 1
    rejects(tx, /address 2 duplicates address 1/);
  });

  test('v1 instruction and address counts are capped at 64', () => {
    const tx = h.v1Transfer();
    const ix = Uint8Array.from(tx.bytes);
    ix[40] = 65;
    rejects(ix, /65 instructions, at most 64/);
    const addr = Uint8Array.from(tx.bytes);
    addr[41] = 65;
    rejects(addr, /65 addresses, at most 64/);
  });

  test('error messages are short and carry no transaction bytes', () => {
    const tx = h.legacyTransfer();
    const inputs = [Uint8Array.from([...tx.bytes, 9]), tx.bytes.subarray(0, 100), new Uint8Array(0)];
    for (const bad of inputs) {
      try {
        decode(bad, HTTP);
        assert.fail('should throw');
      } catch (e) {
        assert.ok(e instanceof DecodeError);
        assert.ok(e.message.length < 120, e.message);
        assert.ok(!e.message.includes(tx.signature));
      }
    }
  });
});

describe('hostile input (DoS guards)', () => {
  const valid = [
    h.legacyTransfer(),
    h.v0WithLookup({ tableAddresses: [h.randomAddress()] }),
    h.v1Transfer({ config: { priorityFeeLamports: 1n, heapSize: 64 * 1024 } }),
    h.tipTransferWithSeed(h.randomAddress(), 5),
  ].map((t) => t.bytes);

  // Each primitive read consumes at least one byte, except zero-length skips
  // (at most two per 3-byte instruction) and v1's bounded duplicate scan
  // (64 * 63 / 2 = 2016 compares).
  const opsBound = (len: number): number => 2 * len + 2100;

  function decodeOrDecodeError(bytes: Uint8Array): void {
    try {
      decodeSolanaTransaction(bytes, HTTP);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
    }
    assert.ok(lastDecodeOps() <= opsBound(bytes.length), `ops ${lastDecodeOps()} for ${bytes.length} bytes`);
  }

  test('random byte strings only ever fail with DecodeError, in operations linear in their length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4200 }), (bytes) => decodeOrDecodeError(bytes)),
      { numRuns: 2000 },
    );
    // Biased toward plausible prefixes: a small signature count or the v1 byte first.
    fc.assert(
      fc.property(fc.constantFrom(0, 1, 2, 0x81), fc.uint8Array({ maxLength: 1300 }), (first, rest) =>
        decodeOrDecodeError(Uint8Array.from([first, ...rest])),
      ),
      { numRuns: 2000 },
    );
  });

  test('random mutations of valid transactions only ever fail with DecodeError', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.constantFrom(0, 1, 0x7f, 0x80, 0x81, 0xff) }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...valid), fc.array(mutation, { minLength: 1, maxLength: 4 }), (orig, muts) => {
        let b: Uint8Array = Uint8Array.from(orig);
        for (const m of muts) {
          const at = b.length === 0 ? 0 : m.at % b.length;
          if (m.kind === 'flip') b[at] = b[at]! ^ m.xor;
          else if (m.kind === 'set') b[at] = m.value;
          else if (m.kind === 'insert') b = splice(b, at, 0, [...m.bytes]);
          else b = splice(b, at, m.n);
        }
        decodeOrDecodeError(b);
      }),
      { numRuns: 3000 },
    );
  });

  test('worst-case shapes stay linear: 1232 bytes of empty instructions, 64 v1 addresses', () => {
    // Legacy: 1 signature, 2 keys, then as many 3-byte empty instructions as fit.
    const payer = h.newKeypair();
    const compiled = h.compileLegacy(payer, [h.payloadIx(0)]);
    const n = Math.floor((PACKET_DATA_SIZE - 1 - 64 - 3 - 1 - 64 - 32 - 2) / 3);
    compiled.instructions = Array.from({ length: n }, () => ({ programIdIndex: 1, accountKeyIndexes: [], data: new Uint8Array(0) }));
    const message = h.serializeLegacyMessage(compiled);
    const bytes = h.signaturesFirst(message, h.signAll(message, compiled, [payer]));
    assert.ok(bytes.length <= PACKET_DATA_SIZE);
    const v = decode(bytes);
    assert.equal(v.numInstructions, n);
    assert.ok(lastDecodeOps() <= opsBound(bytes.length), `ops ${lastDecodeOps()}`);

    const many = h.v1Transaction(payer, Array.from({ length: 30 }, () => h.transferIx(payer.publicKey, h.randomAddress(), 1)).concat([h.payloadIx(1)]));
    const mv = decode(many.bytes);
    assert.ok(mv.numStaticKeys >= 32);
    assert.ok(lastDecodeOps() <= opsBound(many.bytes.length), `ops ${lastDecodeOps()}`);
  });

  test('a huge declared count is refused before allocating for it', () => {
    const tx = h.legacyTransfer();
    const v = decode(tx.bytes);
    // Instruction count 0xffff (3-byte cu16) in place of 1.
    const at = v.recentBlockhashOffset + 32;
    assert.equal(tx.bytes[at], 1);
    rejects(splice(tx.bytes, at, 1, [0xff, 0xff, 0x03]), /65535 instructions cannot fit/);
    assert.ok(lastDecodeOps() < 20);
  });
});
