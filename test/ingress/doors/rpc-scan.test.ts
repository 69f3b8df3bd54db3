/**
 * The JSON-RPC fast path (src/ingress/doors/rpc-scan.ts) against the general
 * one (JSON.parse, then the dispatcher's `readCall`): on any body, the scan
 * either declines or reads exactly the call the general path reads. And it
 * does read the calls real clients send, or it would save nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { RelayError } from '../../../src/errors.js';
import { readCall, type RpcCall } from '../../../src/ingress/doors/jsonrpc.js';
import { MAX_JSON_DEPTH, scanCall, tooDeep } from '../../../src/ingress/doors/rpc-scan.js';
import { signed1559, signedLegacy } from '../../helpers/evm.js';

/** What the general path makes of `body`: the call, or null when it answers with an error. */
function general(body: Uint8Array): RpcCall | null {
  let m: unknown;
  try {
    m = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    return null;
  }
  if (Array.isArray(m)) return null;
  const c = readCall(m);
  return c instanceof RelayError ? null : c;
}

function agrees(body: Uint8Array): void {
  const fast = scanCall(body);
  if (fast === null) return;
  const slow = general(body);
  assert.notEqual(slow, null, `the scan read a call the general path refuses: ${Buffer.from(body).toString('utf8')}`);
  assert.deepStrictEqual(fast, slow, Buffer.from(body).toString('utf8'));
}

const enc = (s: string) => new TextEncoder().encode(s);

test('the calls clients send are read by the scan, as the general path reads them', async () => {
  const evm = [(await signed1559()).hex, (await signedLegacy()).hex];
  const from = Keypair.generate();
  const tx = new Transaction({ feePayer: from.publicKey, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(
    SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1000 }),
  );
  tx.sign(from);
  const b64 = tx.serialize().toString('base64');
  const bodies = [
    // viem's shape, and the bench's (id before method).
    ...evm.map((h) => JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_sendRawTransaction', params: [h] })),
    ...evm.map((h) => `{"jsonrpc":"2.0","id":12,"method":"eth_sendRawTransaction","params":["${h}"]}`),
    // @solana/web3.js sendEncodedTransaction: method, params, then jsonrpc and a string id.
    JSON.stringify({ method: 'sendTransaction', params: [b64, { encoding: 'base64' }], jsonrpc: '2.0', id: 'a3c2f1e0-0b1c-4d2e-9f3a-000000000001' }),
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [b64, { encoding: 'base64', skipPreflight: true, preflightCommitment: 'processed', maxRetries: 0 }] }),
    // Pretty-printed, and without an id (a notification: answered with id null).
    JSON.stringify({ jsonrpc: '2.0', id: -7, method: 'eth_sendRawTransaction', params: [evm[0]] }, null, 2),
    `{"jsonrpc":"2.0","method":"eth_sendRawTransaction","params":["${evm[0]}"]}`,
  ];
  for (const body of bodies) {
    const fast = scanCall(enc(body));
    assert.notEqual(fast, null, `the scan declined: ${body}`);
    assert.deepStrictEqual(fast, general(enc(body)));
  }
  assert.equal(scanCall(enc(bodies.at(-1)!))!.id, 'null');
});

test('forms outside the scan are declined, not read differently', () => {
  const h = '0x02f8';
  const declined = [
    `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["\\u0030x02"]}`, // an escape
    `{"jsonrpc":"2.0","id":1.0,"method":"m","params":[]}`, // JSON.stringify(1.0) is 1
    `{"jsonrpc":"2.0","id":1e2,"method":"m","params":[]}`,
    `{"jsonrpc":"2.0","id":-0,"method":"m","params":[]}`, // echoed as 0
    `{"jsonrpc":"2.0","id":1234567890123456789,"method":"m","params":[]}`, // not exact as a double
    `{"jsonrpc":"2.0","id":"é","method":"m","params":[]}`, // non-ASCII
    `{"jsonrpc":"2.0","id":1,"method":"m","method":"n","params":[]}`, // JSON.parse keeps the last
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[{"a":1,"a":2}]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[{"__proto__":1}]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[[1]]}`, // nesting
    `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":["${h}"],"extra":1}`,
    `{"jsonrpc":"2.0","id":1,"method":"m"}`, // no params
    `{"jsonrpc":"2.00","id":1,"method":"m","params":[]}`,
    `{"jsonrpc":2.0,"id":1,"method":"m","params":[]}`,
    `{"jsonrpc":"2.0","id":true,"method":"m","params":[]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[]} x`,
    `\uFEFF{"jsonrpc":"2.0","id":1,"method":"m","params":[]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[01]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":[1,]}`,
    `{"jsonrpc":"2.0","id":1,"method":"m","params":["${h}"]`,
    `[{"jsonrpc":"2.0","id":1,"method":"m","params":[]}]`,
    ``,
  ];
  for (const body of declined) assert.equal(scanCall(enc(body)), null, body);
});

/** Text of a JSON value with random whitespace, so the scan's tokeniser meets every spacing. */
const space = fc.constantFrom('', '', '', ' ', '\n', '\t ', '\r\n  ');
const key = fc.constantFrom('jsonrpc', 'method', 'params', 'id', 'encoding', 'extra', '__proto__', 'a', 'é', 'a\\"b', 'jsonrpc ');
const plain = fc.stringMatching(/^[ !#-[\]-~]{0,16}$/);
const str = fc.oneof(
  { arbitrary: plain, weight: 3 },
  fc.constantFrom('2.0', '2.00', '', 'eth_sendRawTransaction', 'sendTransaction', '0x02f86b01', 'AQID', 'base64', 'é', '\\n', '\\u0041', '\\"'),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);
const num = fc.oneof(
  fc.integer(),
  fc.constantFrom('0', '-0', '1.0', '1e3', '-1', '01', '123456789012345', '1234567890123456', '-123456789012345', '9007199254740993'),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
function quoted(s: string): string {
  // Either valid JSON text of s, or s between quotes as it stands (possibly an invalid escape).
  return s.includes('\\') ? `"${s}"` : JSON.stringify(s);
}
const scalarText = fc.oneof(
  str.map(quoted),
  num.map((n) => (typeof n === 'string' ? n : JSON.stringify(n))),
  fc.constantFrom('true', 'false', 'null', 'nul', 'tru'),
);
const flatText = fc
  .array(fc.tuple(key, scalarText, space), { maxLength: 4 })
  .map((kv) => `{${kv.map(([k, v, w]) => `${w}${quoted(k)}${w}:${v}`).join(',')}}`);
const valueText: fc.Arbitrary<string> = fc.oneof(
  scalarText,
  flatText,
  fc.array(fc.oneof(scalarText, flatText), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`),
  fc.array(fc.array(scalarText, { maxLength: 2 }).map((xs) => `[${xs.join(',')}]`), { maxLength: 2 }).map((xs) => `[${xs.join(',')}]`),
);
const memberText = fc.oneof(
  fc.tuple(fc.constant('jsonrpc'), fc.oneof(fc.constant('"2.0"'), scalarText)),
  fc.tuple(fc.constant('method'), fc.oneof(fc.constant('"eth_sendRawTransaction"'), scalarText)),
  fc.tuple(fc.constant('params'), valueText),
  fc.tuple(fc.constant('id'), fc.oneof(scalarText, valueText)),
  fc.tuple(key, valueText),
);
/** Mostly the accepted form's members (so the comparison is often made), sometimes anything, in any order. */
const often = <T>(good: T, other: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(good), weight: 4 }, { arbitrary: other, weight: 1 });
const usualParams = fc.oneof(
  fc.array(fc.oneof(str.map(quoted), flatText), { minLength: 1, maxLength: 2 }).map((xs) => `[${xs.join(',')}]`),
  valueText,
);
const bodyText = fc
  .tuple(
    often<[string, string]>(['jsonrpc', '"2.0"'], memberText),
    fc.tuple(fc.constant('method'), often('"eth_sendRawTransaction"', scalarText)),
    fc.tuple(fc.constant('params'), usualParams),
    fc.option(fc.tuple(fc.constant('id'), fc.oneof({ arbitrary: fc.integer().map(String), weight: 2 }, { arbitrary: plain.map(quoted), weight: 2 }, scalarText, valueText))),
    often<[string, string][]>([], fc.array(memberText, { maxLength: 2 })),
    fc.array(fc.tuple(space, space, fc.nat()), { minLength: 6, maxLength: 6 }),
    space,
    often('', fc.constantFrom(' ', 'x', ']', '}', ',')),
  )
  .map(([j, m, p, id, extra, ws, w, tail]) => {
    const ms = [j, m, p, ...(id ? [id] : []), ...extra];
    const order = ms.map((x, i) => [ws[i % ws.length]![2], i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const text = order.map(([, i]) => {
      const [k, v] = ms[i]!;
      const [a, b] = ws[i % ws.length]!;
      return `${a}${quoted(k)}${b}:${a}${v}${b}`;
    });
    return `${w}{${text.join(',')}}${w}${tail}`;
  });

test('on generated bodies, the scan declines or reads what JSON.parse and readCall read', () => {
  let read = 0;
  fc.assert(
    fc.property(bodyText, (t) => {
      agrees(enc(t));
      if (scanCall(enc(t)) !== null) read++;
    }),
    { numRuns: 20_000 },
  );
  // The generator reaches the accepted form often enough for the comparison to mean something.
  assert.ok(read > 2000, `only ${read} generated bodies were read by the scan`);
});

test('on mutated client bodies and on arbitrary bytes, the same holds', async () => {
  const base = `{"jsonrpc":"2.0","id":5,"method":"sendTransaction","params":["AQID",{"encoding":"base64","skipPreflight":false,"maxRetries":3}]}`;
  const evm = `{"jsonrpc":"2.0","id":"x","method":"eth_sendRawTransaction","params":["${(await signed1559()).hex}"]}`;
  const mutated = fc
    .tuple(fc.constantFrom(base, evm), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean()), { minLength: 1, maxLength: 3 }))
    .map(([t, ms]) => {
      const b = [...enc(t)];
      for (const [at, v, insert] of ms) {
        const i = at % (b.length + 1);
        if (insert) b.splice(i, 0, v);
        else if (i < b.length) b[i] = v;
      }
      return Uint8Array.from(b);
    });
  fc.assert(fc.property(mutated, agrees), { numRuns: 20_000 });
  fc.assert(fc.property(fc.uint8Array({ maxLength: 80 }), agrees), { numRuns: 5_000 });
  fc.assert(fc.property(fc.json(), (j) => agrees(enc(j))), { numRuns: 5_000 });
});

/** Nesting depth of a parsed value: what the byte scan must agree with. */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

test('the depth scan agrees with the parsed depth on generated JSON, strings with brackets and escapes included', () => {
  const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é') });
  const value = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small', maxDepth: 40 }, text, fc.integer(), fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(text, tie('node'), { maxKeys: 3 })),
  })).node;
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 40 }), (v, max) => {
      const body = Buffer.from(JSON.stringify(v));
      assert.equal(tooDeep(body, max), depthOf(v) > max);
    }),
    { numRuns: 2000 },
  );
  const nested = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n));
  assert.equal(tooDeep(nested(MAX_JSON_DEPTH)), false);
  assert.equal(tooDeep(nested(MAX_JSON_DEPTH + 1)), true);
  assert.equal(tooDeep(nested(65_000)), true);
});
