/**
 * The native Ed25519 verifier (native/ed25519.c) against libsodium
 * (sodium-native's crypto_sign_verify_detached) on every input class of the
 * signature rule in docs/protocol.md. Any difference fails. The random slice
 * is TXRELAY_TEST_ED25519_DIFF_N signatures (default 20000); the long run is
 * scripts/reliability/ed25519-diff.mjs (docs/reliability.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, arch } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { nativeAddon, nativeUnavailableReason } from '../../src/native/addon.js';
import { RFC8032_VECTORS } from '../../src/chains/solana/verify-selftest.js';

interface Sodium {
  crypto_sign_keypair(pk: Uint8Array, sk: Uint8Array): void;
  crypto_sign_seed_keypair(pk: Uint8Array, sk: Uint8Array, seed: Uint8Array): void;
  crypto_sign_detached(sig: Uint8Array, msg: Uint8Array, sk: Uint8Array): void;
  crypto_sign_verify_detached(sig: Uint8Array, msg: Uint8Array, pk: Uint8Array): boolean;
  crypto_core_ed25519_is_valid_point(p: Uint8Array): boolean;
}
const sodium = createRequire(import.meta.url)('sodium-native') as Sodium;

const skip = nativeAddon?.ed25519Verify === undefined ? `native addon ${nativeUnavailableReason ?? 'built without ed25519'}` : false;
const native = (sig: Uint8Array, msg: Uint8Array, key: Uint8Array): boolean => nativeAddon!.ed25519Verify!(sig, msg, key);
const libsodium = (sig: Uint8Array, msg: Uint8Array, key: Uint8Array): boolean => sodium.crypto_sign_verify_detached(sig, msg, key) === true;

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Every case `same` judged, for the last test, which runs each path of native/ed25519.c on all of them. */
const judged: { sig: Uint8Array; msg: Uint8Array; key: Uint8Array; want: boolean; what: string }[] = [];

/** Asserts both verifiers agree; returns the common answer. */
function same(sig: Uint8Array, msg: Uint8Array, key: Uint8Array, what: string): boolean {
  const want = libsodium(sig, msg, key);
  const got = native(sig, msg, key);
  if (got !== want) assert.fail(`${what}: native ${got}, libsodium ${want} (sig ${toHex(sig)} key ${toHex(key)} msg ${toHex(msg).slice(0, 200)})`);
  judged.push({ sig: Uint8Array.from(sig), msg: Uint8Array.from(msg), key: Uint8Array.from(key), want, what });
  return want;
}

function keypair(): { pk: Uint8Array; sk: Uint8Array } {
  const pk = new Uint8Array(32);
  const sk = new Uint8Array(64);
  sodium.crypto_sign_keypair(pk, sk);
  return { pk, sk };
}

function sign(msg: Uint8Array, sk: Uint8Array): Uint8Array {
  const sig = new Uint8Array(64);
  sodium.crypto_sign_detached(sig, msg, sk);
  return sig;
}

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const P = 2n ** 255n - 19n;
const le = (n: bigint, len = 32): Uint8Array => {
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) out[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return out;
};
const fromLe = (b: Uint8Array): bigint => b.reduceRight((acc, x) => (acc << 8n) | BigInt(x), 0n);
const mod = (a: bigint, m: bigint): bigint => ((a % m) + m) % m;

/** Every 32-byte encoding whose y is >= p (the non-canonical ones), with both sign bits. */
const NON_CANONICAL: Uint8Array[] = [];
for (let k = 0n; k < 19n; k++) {
  for (const sign of [0, 0x80]) {
    const e = le(P + k);
    e[31]! |= sign;
    NON_CANONICAL.push(e);
  }
}
const SMALL_ORDER: Uint8Array[] = ED25519_TORSION_SUBGROUP.map(hex);
const EDGE_POINTS: Uint8Array[] = [
  ...SMALL_ORDER,
  ...SMALL_ORDER.map((e) => Uint8Array.from(e, (x, i) => (i === 31 ? x ^ 0x80 : x))),
  ...NON_CANONICAL,
  new Uint8Array(32),
  new Uint8Array(32).fill(0xff),
];

test('RFC 8032 section 7.1 vectors verify with both', { skip }, () => {
  for (const [k, m, s] of RFC8032_VECTORS) assert.equal(same(hex(s), hex(m), hex(k), 'RFC 8032'), true);
});

test(`random valid and corrupted signatures: native == libsodium`, { skip }, () => {
  const n = Number(process.env.TXRELAY_TEST_ED25519_DIFF_N ?? 20000);
  let accepted = 0;
  let kp = keypair();
  for (let i = 0; i < n; i++) {
    if (i % 16 === 0) kp = keypair();
    const msg = randomBytes(i % 7 === 0 ? (i * 31) % 4097 : i % 300);
    const sig = sign(msg, kp.sk);
    const key = Uint8Array.from(kp.pk);
    switch (i % 8) {
      case 1: sig[i % 64]! ^= 1 << (i % 8); break; // one bit of R or S
      case 2: if (msg.length > 0) msg[i % msg.length]! ^= 1 << (i % 8); else sig[0]! ^= 1; break;
      case 3: key[i % 32]! ^= 1 << (i % 8); break; // another key, often not a point
      case 4: sig.set(randomBytes(32), 32); break; // random S, often >= L
      case 5: sig.set(randomBytes(32), 0); break; // random R
      case 6: key.set(randomBytes(32)); break;
      default: break; // valid
    }
    if (same(sig, msg, key, `case ${i % 8} #${i}`)) accepted++;
  }
  assert.ok(accepted >= n / 4, `valid signatures were accepted (${accepted})`);
});

test('messages of 0 to 4096 bytes, across the SHA-512 block boundaries', { skip }, () => {
  const kp = keypair();
  const lengths = [...Array(320).keys(), 1000, 1232, 2047, 2048, 2049, 4095, 4096];
  for (const len of lengths) {
    const msg = randomBytes(len);
    const sig = sign(msg, kp.sk);
    assert.equal(same(sig, msg, kp.pk, `length ${len}`), true);
    sig[63]! ^= 0x01;
    assert.equal(same(sig, msg, kp.pk, `length ${len}, bad S`), false);
  }
});

test('S >= L, S just below L, and S with the top nibble set are judged alike', { skip }, () => {
  const kp = keypair();
  const msg = randomBytes(40);
  const sig = sign(msg, kp.sk);
  const s = fromLe(sig.subarray(32));
  for (const S of [L, L + 1n, s + L, s + 2n * L, 2n ** 256n - 1n, 2n ** 253n, L - 1n, 2n ** 252n, 2n ** 252n - 1n, 0n]) {
    const bad = Uint8Array.from(sig);
    bad.set(le(S % 2n ** 256n), 32);
    same(bad, msg, kp.pk, `S = ${S}`);
  }
  assert.equal(same(sig, msg, kp.pk, 'the original'), true);
});

test('small-order, non-canonical, identity, all-zero and all-0xff encodings as key and as R', { skip }, () => {
  const kp = keypair();
  const msg = randomBytes(32);
  const sig = sign(msg, kp.sk);
  for (const e of EDGE_POINTS) {
    assert.equal(same(sig, msg, e, `key ${toHex(e)}`), false);
    const r = Uint8Array.from(sig);
    r.set(e, 0);
    assert.equal(same(r, msg, kp.pk, `R ${toHex(e)}`), false);
    for (const S of [new Uint8Array(32), le(1n), le(L - 1n)]) {
      const both = new Uint8Array(64);
      both.set(e, 0);
      both.set(S, 32);
      for (const key of EDGE_POINTS) same(both, msg, key, `R ${toHex(e)} key ${toHex(key)}`);
    }
  }
  for (const fill of [0, 0xff]) {
    const b = new Uint8Array(64).fill(fill);
    for (const m of [new Uint8Array(0), new Uint8Array(64).fill(fill)]) same(b, m, b.subarray(0, 32), `all 0x${fill.toString(16)}`);
  }
});

/** A signature built by hand: key a*B + tA, R = r*B + tR, S = r + H(R, A, M) * a. */
function mixedOrder(tA: number, tR: number, msg: Uint8Array): { sig: Uint8Array; key: Uint8Array } {
  const Pt = ed25519.Point;
  const torsion = (i: number) => Pt.fromBytes(SMALL_ORDER[i]!, true);
  const a = mod(fromLe(randomBytes(32)), L) || 1n;
  const r = mod(fromLe(randomBytes(32)), L) || 1n;
  const A = Pt.BASE.multiply(a).add(torsion(tA));
  const R = Pt.BASE.multiply(r).add(torsion(tR));
  const key = A.toBytes();
  const Rb = R.toBytes();
  const h = mod(fromLe(sha512(new Uint8Array([...Rb, ...key, ...msg]))), L);
  const sig = new Uint8Array(64);
  sig.set(Rb, 0);
  sig.set(le(mod(r + h * a, L)), 32);
  return { sig, key };
}

test('mixed-order keys and R (a torsion component on a valid point): judged alike', { skip }, () => {
  let accepted = 0;
  for (let tA = 0; tA < 8; tA++) {
    for (let tR = 0; tR < 8; tR++) {
      const msg = randomBytes(tA * 8 + tR);
      const { sig, key } = mixedOrder(tA, tR, msg);
      // Three times: a key seen again is checked through its cached split tables (native/ed25519.c).
      const first = same(sig, msg, key, `torsion ${tA} on A, ${tR} on R`);
      for (let k = 0; k < 2; k++) assert.equal(same(sig, msg, key, `torsion ${tA} on A, ${tR} on R, again`), first);
      if (first) accepted++;
      const bad = Uint8Array.from(sig);
      bad[40]! ^= 1;
      assert.equal(same(bad, msg, key, `torsion ${tA}/${tR}, bad S`), false);
    }
  }
  assert.ok(accepted > 0, 'the torsion-free pair (0, 0) is accepted');
});

test('keys that share a cache set (more than its 8 ways) are judged alike through every eviction', { skip }, () => {
  // The per-thread key cache has 16 sets of 8 ways picked by the key's first byte (native/ed25519.c):
  // 20 keys of one set cycle through insertion, table building, use and eviction of seen-once and built ways.
  const keys: { pk: Uint8Array; sk: Uint8Array }[] = [];
  while (keys.length < 20) {
    const kp = keypair();
    if (kp.pk[0]! % 16 === 5) keys.push(kp);
  }
  const msgs = keys.map((_, i) => randomBytes(40 + i));
  const sigs = keys.map((k, i) => sign(msgs[i]!, k.sk));
  let checks = 0;
  for (const order of [[0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], Array.from({ length: 20 }, (_, i) => i), [19, 0, 18, 1, 17, 2, 0, 0, 1, 1]]) {
    for (let round = 0; round < 3; round++) {
      for (const i of order) {
        assert.equal(same(sigs[i]!, msgs[i]!, keys[i]!.pk, `set-sharing key ${i}`), true);
        const bad = Uint8Array.from(sigs[i]!);
        bad[3]! ^= 0x10;
        assert.equal(same(bad, msgs[i]!, keys[i]!.pk, `set-sharing key ${i}, bad R`), false);
        // Another key's valid signature under this key: refused whichever key's tables are cached.
        const j = (i + 1) % keys.length;
        assert.equal(same(sigs[j]!, msgs[j]!, keys[i]!.pk, `key ${i} with key ${j}'s signature`), false);
        checks += 3;
      }
    }
  }
  assert.equal(checks, 3 * 3 * (4 + 10 + 20 + 10));
});

test('point decoder fuzz: native decoding matches libsodium on random 32-byte strings', { skip }, () => {
  const decode = nativeAddon!.ed25519DecodePoint!;
  const Pt = ed25519.Point;
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (e) => {
      const got = decode(e);
      // noble in ZIP-215 mode decodes the same set (y taken mod p), and the same point.
      let want: Uint8Array | null = null;
      try {
        want = Pt.fromBytes(e, true).toBytes();
      } catch {
        want = null;
      }
      assert.equal(got === null ? null : toHex(got), want === null ? null : toHex(want), toHex(e));
      // libsodium's strictest point check (canonical, not small order, prime order) implies it decodes to itself.
      if (sodium.crypto_core_ed25519_is_valid_point(e)) assert.equal(got === null ? null : toHex(got), toHex(e));
    }),
    { numRuns: 20000 },
  );
  for (const e of EDGE_POINTS) {
    const got = decode(e);
    let want: string | null = null;
    try {
      want = toHex(Pt.fromBytes(e, true).toBytes());
    } catch {
      want = null;
    }
    assert.equal(got === null ? null : toHex(got), want, toHex(e));
  }
});

test('the key and signature are read at offsets of one SharedArrayBuffer-backed array', { skip }, () => {
  const kp = keypair();
  const msg = randomBytes(100);
  const sig = sign(msg, kp.sk);
  const buf = new Uint8Array(new SharedArrayBuffer(300), 3, 296);
  buf.set(sig, 0);
  buf.set(kp.pk, 64);
  buf.set(msg, 96);
  assert.equal(nativeAddon!.ed25519VerifyAt!(buf, 0, 64, 96, 100), true);
  buf[150]! ^= 1;
  assert.equal(nativeAddon!.ed25519VerifyAt!(buf, 0, 64, 96, 100), false);
  assert.throws(() => nativeAddon!.ed25519VerifyAt!(buf, 0, 64, 96, 201), RangeError);
  assert.throws(() => nativeAddon!.ed25519VerifyAt!(buf, 240, 64, 96, 1), RangeError);
});

interface Item {
  sig: Uint8Array;
  msg: Uint8Array;
  key: Uint8Array;
}

/** The batch call's answers for `items`, packed into one array (SharedArrayBuffer-backed when asked). */
function batch(items: Item[], shared = false): number[] {
  const size = items.reduce((n, it) => n + 96 + it.msg.length, 0);
  const buf = shared ? new Uint8Array(new SharedArrayBuffer(size + 5), 5, size) : new Uint8Array(size);
  const spec = new Uint32Array(4 * items.length);
  let at = 0;
  items.forEach((it, j) => {
    buf.set(it.sig, at);
    buf.set(it.key, at + 64);
    buf.set(it.msg, at + 96);
    spec.set([at, at + 64, at + 96, it.msg.length], 4 * j);
    at += 96 + it.msg.length;
  });
  const out = new Uint8Array(items.length);
  const valid = nativeAddon!.ed25519VerifyBatchAt!(buf, spec, items.length, out);
  assert.equal(valid, out.reduce((n, x) => n + x, 0), 'the count returned is the number of ones');
  return [...out];
}

/** Every input class of the rule: valid, corrupted, S >= L, edge encodings as key and R, mixed-order points. */
function corpus(): Item[] {
  const items: Item[] = [];
  const keys = Array.from({ length: 6 }, keypair);
  for (let i = 0; i < 400; i++) {
    const kp = keys[i % keys.length]!;
    const msg = randomBytes(i % 9 === 0 ? (i * 37) % 4097 : i % 200);
    const sig = sign(msg, kp.sk);
    const key = Uint8Array.from(kp.pk);
    switch (i % 10) {
      case 1: sig[i % 64]! ^= 1 << (i % 8); break;
      case 2: if (msg.length > 0) msg[i % msg.length]! ^= 1; else sig[1]! ^= 1; break;
      case 3: key[i % 32]! ^= 1 << (i % 8); break;
      case 4: sig.set(le(fromLe(sig.subarray(32)) + L), 32); break; // S + L
      case 5: sig.set(EDGE_POINTS[i % EDGE_POINTS.length]!, 0); break;
      case 6: key.set(EDGE_POINTS[i % EDGE_POINTS.length]!); break;
      case 7: sig[31]! ^= 0x80; break; // R's sign bit: same y, the other x
      default: break;
    }
    items.push({ sig, msg, key });
  }
  for (let tA = 0; tA < 8; tA++) {
    for (let tR = 0; tR < 8; tR++) {
      const msg = randomBytes(tA + tR * 3);
      items.push({ msg, ...mixedOrder(tA, tR, msg) });
    }
  }
  return items;
}

test('batch calls of every size 1..64 answer each signature as libsodium does', { skip }, () => {
  const items = corpus();
  const want = items.map((it) => libsodium(it.sig, it.msg, it.key));
  assert.ok(want.some((w) => w) && want.some((w) => !w), 'the corpus has valid and invalid signatures');
  let from = 0;
  for (let rounds = 0; rounds < 3; rounds++) {
    for (let size = 1; size <= 64; size++) {
      const idx = Array.from({ length: size }, (_, j) => (from + j * 7) % items.length);
      from = (from + size * 13 + 1) % items.length;
      const got = batch(idx.map((i) => items[i]!), size % 2 === 0);
      idx.forEach((i, j) => {
        const it = items[i]!;
        if ((got[j] === 1) !== want[i]) assert.fail(`batch of ${size}, item ${j}: native ${got[j]}, libsodium ${want[i]} (sig ${toHex(it.sig)} key ${toHex(it.key)})`);
      });
    }
  }
});

test('a batch of one key checked first, second and cached in one call, and of all-valid and all-bad 64', { skip }, () => {
  const kp = keypair();
  const items: Item[] = Array.from({ length: 64 }, (_, i) => {
    const msg = randomBytes(i);
    return { sig: sign(msg, kp.sk), msg, key: kp.pk };
  });
  assert.deepEqual(batch(items), Array(64).fill(1));
  const bad = items.map((it) => ({ ...it, sig: Uint8Array.from(it.sig, (x, i) => (i === 40 ? x ^ 1 : x)) }));
  assert.deepEqual(batch(bad), Array(64).fill(0));
  const mixed = items.map((it, i) => (i % 3 === 0 ? bad[i]! : it));
  assert.deepEqual(batch(mixed, true), mixed.map((_, i) => (i % 3 === 0 ? 0 : 1)));
});

test('batch arguments: n over 64, spec or out too short, a range outside the array', { skip }, () => {
  const f = nativeAddon!.ed25519VerifyBatchAt!;
  const buf = new Uint8Array(200);
  assert.throws(() => f(buf, new Uint32Array(4 * 65), 65, new Uint8Array(65)), RangeError);
  assert.throws(() => f(buf, new Uint32Array(4), 2, new Uint8Array(2)), RangeError);
  assert.throws(() => f(buf, new Uint32Array(8), 2, new Uint8Array(1)), RangeError);
  assert.throws(() => f(buf, Uint32Array.from([150, 0, 0, 0]), 1, new Uint8Array(1)), RangeError);
  assert.throws(() => f(buf, Uint32Array.from([0, 64, 96, 105]), 1, new Uint8Array(1)), RangeError);
  assert.throws(() => f(buf, Uint32Array.from([0, 64, 96, 2 ** 32 - 1]), 1, new Uint8Array(1)), RangeError);
  assert.throws(() => f(buf, new Uint8Array(4) as unknown as Uint32Array, 1, new Uint8Array(1)), TypeError);
  assert.equal(f(buf, new Uint32Array(0), 0, new Uint8Array(0)), 0);
});

/** A C compiler for the path harness: the one node-gyp used to build the addon. */
function compiler(): string | null {
  for (const cc of [process.env.CC, 'cc', 'gcc']) {
    if (cc === undefined || cc === '') continue;
    if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status === 0) return cc;
  }
  return null;
}
const cc = skip === false ? compiler() : null;

test('each path alone (plain, lattice, a cached key\'s split tables), with vector and scalar arithmetic, answers as libsodium on every case above', { skip: skip !== false ? skip : cc === null ? 'no C compiler (cc, gcc) to build native/test/paths.c' : false }, () => {
  // The cache decides which path a check takes, so the tests above reach the plain path only when
  // the lattice reduction declines; native/test/paths.c forces each path on each case instead.
  const dir = mkdtempSync(join(tmpdir(), 'txr-ed25519-paths-'));
  try {
    const src = fileURLToPath(new URL('../../../native/test/paths.c', import.meta.url));
    // The addon's own flags (-march=native, so AVX-512 IFMA where the host has it), and on x64 the
    // same without IFMA, so the scalar multi-scalar multiplication is held to libsodium here too.
    const variants: [string, string[]][] = arch() === 'x64' ? [['native', ['-march=native']], ['scalar', ['-march=native', '-mno-avx512ifma']]] : [['native', []]];
    const parts: Uint8Array[] = [];
    for (const c of judged) {
      const head = new Uint8Array(4);
      new DataView(head.buffer).setUint32(0, c.msg.length, true);
      parts.push(head, c.sig, c.key, c.msg);
    }
    const input = Buffer.concat(parts);
    const names = ['plain', 'lattice', 'split'];
    for (const [variant, flags] of variants) {
      const bin = join(dir, `paths-${variant}`);
      execFileSync(cc!, ['-O2', '-std=c11', ...flags, '-o', bin, src, '-lpthread']);
      const run = spawnSync(bin, { input, maxBuffer: 1 << 26 });
      assert.equal(run.status, 0, `paths-${variant} exited ${run.status}: ${run.stderr.toString()}`);
      assert.equal(run.stderr.toString().trim(), variant === 'scalar' ? 'scalar' : (nativeAddon!.ed25519Arith ?? 'scalar'), 'built with the arithmetic the variant names');
      const out = run.stdout.toString().trim().split('\n');
      assert.equal(out.length, judged.length);
      let declined = 0;
      judged.forEach((c, i) => {
        const line = out[i]!;
        for (let p = 0; p < 3; p++) {
          if (line[p] === 'x' && p === 1) {
            declined++;
            continue;
          }
          if (line[p] !== (c.want ? '1' : '0')) assert.fail(`${c.what}: the ${names[p]} path (${variant} arithmetic) says ${line[p]}, libsodium ${c.want} (sig ${toHex(c.sig)} key ${toHex(c.key)})`);
        }
      });
      assert.ok(declined < judged.length / 100, `the lattice path declined ${declined} of ${judged.length}`);
    }
    assert.ok(judged.length > 1000, `the earlier cases were recorded (${judged.length})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
