import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import bs58 from 'bs58';
import fc from 'fast-check';
import {
  base58Backend,
  base58Decode,
  base58Encode,
  base58EncodeAt,
  jsBase58,
  maxBase58Chars,
  nativeAddonPath,
  nativeBase58,
  nativeUnavailableReason,
  type Base58Codec,
} from '../../src/native/base58.js';

/** Solana's maximum packet (and so transaction) size. */
const SOLANA_PACKET = 1232;
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const moduleUrl = new URL('../../src/native/base58.js', import.meta.url).href;

/** Random bytes, often starting with zero bytes (they encode as leading '1's). */
const bytesArb = (maxLength: number) =>
  fc
    .tuple(fc.integer({ min: 0, max: 4 }), fc.uint8Array({ maxLength }))
    .map(([zeros, rest]) => {
      const out = new Uint8Array(zeros + rest.length);
      out.set(rest, zeros);
      return out;
    });

function codecSuite(codec: Base58Codec): void {
  test('encode agrees with bs58 on random bytes, leading zeros included', () => {
    fc.assert(
      fc.property(bytesArb(300), (b) => {
        assert.equal(codec.encode(b), bs58.encode(b));
      }),
      { numRuns: 2000 },
    );
  });

  test('decode inverts encode and agrees with bs58', () => {
    fc.assert(
      fc.property(bytesArb(300), (b) => {
        const s = bs58.encode(b);
        const d = codec.decode(s, b.length);
        assert.deepEqual(d, bs58.decode(s));
        assert.deepEqual(d, b);
      }),
      { numRuns: 2000 },
    );
  });

  test('decode agrees with bs58 on random alphabet strings', () => {
    const strArb = fc.array(fc.constantFrom(...ALPHABET), { maxLength: 400 }).map((a) => a.join(''));
    fc.assert(
      fc.property(strArb, (s) => {
        assert.deepEqual(codec.decode(s, 4096), bs58.decode(s));
      }),
      { numRuns: 1000 },
    );
  });

  test('the empty array encodes to the empty string and back', () => {
    assert.equal(codec.encode(new Uint8Array(0)), '');
    assert.deepEqual(codec.decode('', 0), new Uint8Array(0));
  });

  test("zero bytes map one-to-one to leading '1's", () => {
    assert.equal(codec.encode(new Uint8Array(3)), '111');
    assert.deepEqual(codec.decode('111', 3), new Uint8Array(3));
    assert.equal(codec.encode(Uint8Array.from([0, 0, 0x28, 0x7f, 0xb4, 0xcd])), '11233QC4');
  });

  test('64-byte signatures agree with bs58, via encode and via encodeAt at any offset', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 64, maxLength: 300 }), fc.nat(), (buf, r) => {
        const off = r % (buf.length - 63);
        const sig = buf.slice(off, off + 64);
        const want = bs58.encode(sig);
        assert.equal(codec.encode(sig), want);
        assert.equal(codec.encodeAt(buf, off, 64), want);
      }),
      { numRuns: 2000 },
    );
  });

  test('1232-byte packets (the Solana maximum) round-trip and agree with bs58', () => {
    fc.assert(
      fc.property(bytesArb(SOLANA_PACKET - 4), (rest) => {
        const b = new Uint8Array(SOLANA_PACKET);
        b.set(rest, SOLANA_PACKET - rest.length);
        const s = codec.encode(b);
        assert.equal(s, bs58.encode(b));
        assert.deepEqual(codec.decode(s, SOLANA_PACKET), b);
      }),
      { numRuns: 50 },
    );
    const ones = new Uint8Array(SOLANA_PACKET).fill(0xff);
    assert.deepEqual(codec.decode(codec.encode(ones), SOLANA_PACKET), ones);
  });

  test("decode rejects characters outside the alphabet: 0 O I l, non-ASCII, whitespace, NUL", () => {
    // U+0131 and U+0141 have low bytes '1' and 'A': a Latin-1 read would alias them to valid digits.
    const bad = ['0', 'O', 'I', 'l', '+', '/', ' ', '\n', '\0', 'é', '\u0131', '\u0141', '\u{1F600}', '\uD800'];
    fc.assert(
      fc.property(bytesArb(80), fc.constantFrom(...bad), fc.nat(), (b, ch, r) => {
        const s = bs58.encode(b);
        const at = r % (s.length + 1);
        assert.equal(codec.decode(s.slice(0, at) + ch + s.slice(at), 4096), null);
      }),
      { numRuns: 1000 },
    );
  });

  test('decode returns null when the result would exceed maxLen', () => {
    fc.assert(
      fc.property(bytesArb(200), (b) => {
        const s = bs58.encode(b);
        assert.deepEqual(codec.decode(s, b.length), b);
        if (b.length > 0) assert.equal(codec.decode(s, b.length - 1), null);
      }),
      { numRuns: 1000 },
    );
    assert.equal(codec.decode('11111', 4), null);
    assert.equal(codec.decode('2', 0), null);
  });

  test('a string longer than any encoding of maxLen bytes is refused without decoding it', () => {
    const hostile = 'z'.repeat(1_000_000);
    const t0 = performance.now();
    assert.equal(codec.decode(hostile, SOLANA_PACKET), null);
    // Decoding 1e6 digits would take minutes; the length check takes microseconds.
    assert.ok(performance.now() - t0 < 100, 'length check must run before decoding');
  });

  test('maxBase58Chars(n) bounds the encoding of every n-byte input', () => {
    for (const n of [0, 1, 2, 31, 32, 63, 64, 100, SOLANA_PACKET, 4096]) {
      assert.ok(codec.encode(new Uint8Array(n).fill(0xff)).length <= maxBase58Chars(n), `n=${n}`);
      assert.ok(codec.encode(new Uint8Array(n)).length <= maxBase58Chars(n), `n=${n}`);
    }
  });

  test('SharedArrayBuffer-backed input encodes like a copy', () => {
    const shared = new Uint8Array(new SharedArrayBuffer(4 * 64 + 7));
    shared.set(fc.sample(fc.uint8Array({ minLength: shared.length, maxLength: shared.length }), 1)[0]!);
    for (let off = 0; off + 64 <= shared.length; off += 9) {
      assert.equal(codec.encodeAt(shared, off, 64), bs58.encode(shared.slice(off, off + 64)));
    }
    assert.equal(codec.encode(shared), bs58.encode(shared.slice()));
    assert.equal(codec.encodeAt(shared, 3, 100), bs58.encode(shared.slice(3, 103)));
  });

  test('encodeAt throws RangeError for a slice outside the array', () => {
    const buf = new Uint8Array(100);
    for (const off of [-1, 37, 1.5, Number.NaN]) {
      assert.throws(() => codec.encodeAt(buf, off, 64), RangeError, `offset ${off}`);
    }
    assert.throws(() => codec.encodeAt(buf, 50, 51), RangeError);
  });

  test('decode throws TypeError for a maxLen that is not a non-negative integer', () => {
    for (const m of [-1, 1.5, Number.NaN]) assert.throws(() => codec.decode('2', m), TypeError, `maxLen ${m}`);
  });

  test('decode returns a plain Uint8Array', () => {
    assert.equal(Object.getPrototypeOf(codec.decode('2NEpo7TZRRrLZSi2U', 64)), Uint8Array.prototype);
  });

  test('inputs beyond the native stack limit still work (5000 bytes)', () => {
    const b = fc.sample(fc.uint8Array({ minLength: 5000, maxLength: 5000 }), 1)[0]!;
    const s = codec.encode(b);
    assert.equal(s, bs58.encode(b));
    assert.deepEqual(codec.decode(s, 5000), b);
  });
}

describe('JavaScript backend (bs58)', () => codecSuite(jsBase58));

const nativeSkip = nativeBase58 === null ? `native base58 addon ${nativeUnavailableReason}` : false;

describe('native backend (N-API addon)', { skip: nativeSkip }, () => {
  if (nativeBase58 === null) return;
  codecSuite(nativeBase58);

  test('is the selected backend when built', () => {
    assert.equal(base58Backend, 'native');
  });

  test('the raw addon refuses inputs over maxBytes with TypeError TXR_B58_TOO_LARGE', () => {
    const addon = createRequire(import.meta.url)(nativeAddonPath!) as { encode(b: Uint8Array): string; maxBytes: number };
    assert.throws(() => addon.encode(new Uint8Array(addon.maxBytes + 1)), { name: 'TypeError', code: 'TXR_B58_TOO_LARGE' });
    assert.throws(() => addon.encode([1, 2] as unknown as Uint8Array), { name: 'TypeError', code: 'TXR_B58_ARG' });
    assert.throws(() => addon.encode(new Uint16Array(4) as unknown as Uint8Array), { name: 'TypeError', code: 'TXR_B58_ARG' });
  });

  test('the addon loads in several worker threads at once and reads a shared buffer', async () => {
    const shared = new Uint8Array(new SharedArrayBuffer(256));
    for (let i = 0; i < shared.length; i++) shared[i] = (i * 37 + 11) & 0xff;
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.url).then(
        (m) => parentPort.postMessage({
          backend: m.base58Backend,
          sig: m.base58EncodeAt(workerData.shared, workerData.offset, 64),
        }),
        (e) => parentPort.postMessage({ error: String(e) }),
      );`;
    const run = (offset: number) =>
      new Promise<{ backend?: string; sig?: string; error?: string }>((resolve, reject) => {
        const w = new Worker(code, { eval: true, workerData: { url: moduleUrl, shared, offset } });
        w.once('message', (m) => {
          resolve(m);
          void w.terminate();
        });
        w.once('error', reject);
      });
    const offsets = [0, 64, 100, 192];
    const results = await Promise.all(offsets.map(run));
    results.forEach((r, i) => {
      assert.equal(r.error, undefined);
      assert.equal(r.backend, 'native');
      assert.equal(r.sig, bs58.encode(shared.slice(offsets[i]!, offsets[i]! + 64)));
    });
  });
});

test('TXRELAY_NO_NATIVE=1 forces the JavaScript backend', () => {
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `const m = await import(${JSON.stringify(moduleUrl)}); console.log(m.base58Backend, m.nativeUnavailableReason);`],
    { env: { ...process.env, TXRELAY_NO_NATIVE: '1' }, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'js disabled by TXRELAY_NO_NATIVE=1');
});

test('the exported functions use the selected backend and agree with bs58', () => {
  const sig = Uint8Array.from({ length: 64 }, (_, i) => (i * 7 + 1) & 0xff);
  const s = base58Encode(sig);
  assert.equal(s, bs58.encode(sig));
  assert.equal(base58EncodeAt(sig, 0, 64), s);
  assert.deepEqual(base58Decode(s, 64), sig);
  assert.equal(base58Decode(s, 63), null);
});
