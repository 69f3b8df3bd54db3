/**
 * The JSON-RPC answer reader (src/forward/answer.ts) reads bytes without
 * JSON.parse; it must decide exactly as JSON.parse of the UTF-8 text followed
 * by the property checks below (the model), on generated answers, on
 * mutations of them, and on arbitrary JSON.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readAnswer, type AnswerScan } from '../../src/forward/answer.js';

// ---- the model: parse, then look ------------------------------------------------

interface Verdict {
  bad: string;
  accepted: number[];
  okCount: number;
  reason: string;
  batchRefused: boolean;
}

const LONG_RUN = /[0-9A-Za-z+/=_-]{24,}/g;
function rpcReason(r: object): string {
  const e = (r as { error?: unknown }).error;
  if (e === null || typeof e !== 'object') return 'rpc error';
  const code = (e as { code?: unknown }).code;
  const message = (e as { message?: unknown }).message;
  const text = typeof message === 'string' ? message.slice(0, 640).replace(LONG_RUN, (m) => m.slice(0, 10) + '…') : '';
  return ('rpc ' + (typeof code === 'number' ? code : '?') + (text ? ': ' + text : '')).slice(0, 160);
}
const isResult = (r: object): boolean => {
  const e = (r as { error?: unknown }).error;
  return 'result' in r && (e === undefined || e === null);
};
const badVerdict = (bad: string, count: number): Verdict => ({ bad, accepted: new Array(count).fill(0), okCount: 0, reason: '', batchRefused: false });

function model(bytes: Buffer, firstId: number, count: number, batch: boolean): Verdict {
  let v: unknown;
  try {
    let text = new TextDecoder().decode(bytes); // replaces invalid UTF-8 and drops a leading BOM
    text = text.replace(/^\uFEFF/, '');
    v = JSON.parse(text);
  } catch {
    return badVerdict('answer is not JSON', count);
  }
  const accepted = new Array(count).fill(0);
  let okCount = 0;
  let reason = '';
  if (Array.isArray(v)) {
    if (!batch) return badVerdict('answer is not a JSON-RPC response', count);
    for (const r of v) {
      if (r === null || typeof r !== 'object' || Array.isArray(r)) continue;
      const id = (r as { id?: unknown }).id;
      if (typeof id !== 'number') continue;
      const k = id - firstId;
      if (!Number.isInteger(k) || k < 0 || k >= count || accepted[k] === 1) continue;
      if (isResult(r)) {
        accepted[k] = 1;
        okCount++;
      } else if (reason === '') reason = rpcReason(r);
    }
    if (okCount < count && reason === '') reason = 'batch answer lacks some ids';
    return { bad: '', accepted, okCount, reason, batchRefused: false };
  }
  if (v !== null && typeof v === 'object') {
    if (batch) {
      if (!('error' in v)) return badVerdict('batch answered by a single non-error object', count);
      return { bad: '', accepted, okCount: 0, reason: rpcReason(v), batchRefused: true };
    }
    if (isResult(v)) return { bad: '', accepted: [1, ...accepted.slice(1)], okCount: 1, reason: '', batchRefused: false };
    if ('error' in v) return { bad: '', accepted, okCount: 0, reason: rpcReason(v), batchRefused: false };
    return badVerdict('answer has neither result nor error', count);
  }
  return badVerdict('answer is not a JSON-RPC response', count);
}

function read(bytes: Buffer, firstId: number, count: number, batch: boolean): Verdict {
  const out: AnswerScan = { bad: '', accepted: new Uint8Array(count + 3).fill(7), okCount: 0, reason: '', batchRefused: false };
  // Inside a larger buffer, as the HTTP parser hands it over.
  const host = Buffer.concat([Buffer.from('xx['), bytes, Buffer.from('"]}')]);
  readAnswer(host, 3, 3 + bytes.length, firstId, count, batch, out);
  return { bad: out.bad, accepted: Array.from(out.accepted.subarray(0, count)), okCount: out.okCount, reason: out.reason, batchRefused: out.batchRefused };
}

function same(bytes: Buffer, firstId: number, count: number, batch: boolean): void {
  assert.deepEqual(read(bytes, firstId, count, batch), model(bytes, firstId, count, batch), `input ${JSON.stringify(bytes.toString('latin1'))} batch=${batch}`);
}

// ---- generators -----------------------------------------------------------------

const FIRST = 1000;
const COUNT = 8;
const ws = fc.constantFrom('', ' ', '\n', '\t', '\r\n  ');
const idArb = fc.oneof(
  fc.integer({ min: FIRST - 2, max: FIRST + COUNT + 1 }).map(String),
  fc.constantFrom(`${FIRST}.0`, `${FIRST + 1}e0`, `${(FIRST + 2) * 10}e-1`, `${FIRST}.5`, '-0', `"${FIRST}"`, 'null', '1e400'),
);
const errorArb = fc.oneof(
  fc.constant('null'),
  fc.record({ code: fc.integer({ min: -33000, max: -32000 }), message: fc.oneof(fc.string(), fc.constant('tx 0x' + 'ab'.repeat(40) + ' nonce too low')) }).map((e) => JSON.stringify(e)),
  fc.constant('"not an object"'),
);
const extraArb = fc.tuple(fc.constantFrom('"jsonrpc"', '"x"', '"\\u0069d"', '"res\\u0075lt"', '"error\\n"', '"idd"'), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)));

/** One call's answer as text: members in any order, sometimes repeated, sometimes escaped. */
const callArb = fc
  .record({
    id: fc.option(idArb, { nil: undefined }),
    result: fc.option(fc.oneof(fc.constant('"sig"'), fc.constant('null'), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))), { nil: undefined }),
    error: fc.option(errorArb, { nil: undefined }),
    extras: fc.array(extraArb, { maxLength: 3 }),
    dupId: fc.option(idArb, { nil: undefined }),
    w: ws,
  })
  .chain((c) => {
    const members: string[] = [];
    if (c.id !== undefined) members.push(`"id":${c.id}`);
    if (c.result !== undefined) members.push(`"result":${c.result}`);
    if (c.error !== undefined) members.push(`"error":${c.error}`);
    for (const [k, v] of c.extras) members.push(`${k}:${v}`);
    if (c.dupId !== undefined) members.push(`"id":${c.dupId}`);
    return fc.shuffledSubarray(members, { minLength: members.length, maxLength: members.length }).map((m) => `{${c.w}${m.join(`,${c.w}`)}${c.w}}`);
  });
const answerArb = fc.oneof(
  callArb,
  fc.array(fc.oneof({ weight: 6, arbitrary: callArb }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }).map((v) => JSON.stringify(v)) }), { maxLength: COUNT + 2 }).map((xs) => `[${xs.join(',')}]`),
);

// ---- properties -----------------------------------------------------------------

test('generated answers: the byte reader decides exactly as JSON.parse plus the model', () => {
  fc.assert(
    fc.property(answerArb, fc.boolean(), (text, batch) => same(Buffer.from(text), FIRST, COUNT, batch)),
    { numRuns: 3000 },
  );
});

test('mutated answers (a byte deleted, inserted or replaced, or cut short): valid exactly when JSON.parse says so, and then decided the same', () => {
  const significant = [...'{}[]":,\\ eE.-+0123456789tfnu\x00\x1f\x7f'].map((c) => c.charCodeAt(0)).concat([0x80, 0xc3, 0xef, 0xff]);
  fc.assert(
    fc.property(answerArb, fc.nat(), fc.constantFrom('delete', 'insert', 'replace', 'cut'), fc.constantFrom(...significant), fc.boolean(), (text, at, how, byte, batch) => {
      const b = Buffer.from(text);
      const i = at % (b.length + 1);
      let m: Buffer;
      if (how === 'delete') m = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)]);
      else if (how === 'insert') m = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
      else if (how === 'replace') m = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i + 1)]);
      else m = b.subarray(0, i);
      same(m, FIRST, COUNT, batch);
    }),
    { numRuns: 5000 },
  );
});

test('arbitrary JSON values, compact or indented, with or without a BOM', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom(undefined, 2, '\t'), fc.boolean(), fc.boolean(), (v, indent, bom, batch) => {
      const text = JSON.stringify(v, null, indent);
      same(Buffer.concat([Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []), Buffer.from(text)]), 0, 4, batch);
    }),
    { numRuns: 2000 },
  );
});

test('bytes of 0x80 and above inside strings are content (as a replacing UTF-8 decoder makes them), outside they are not JSON', () => {
  same(Buffer.from([...Buffer.from('{"id":1000,"result":"'), 0xff, 0xc0, 0xa2, ...Buffer.from('"}')]), FIRST, 1, false);
  same(Buffer.from([...Buffer.from('{"id":1000,"result":"ok"}'), 0xc2, 0xa0]), FIRST, 1, false);
  same(Buffer.from('{"id":1000,"result":"\u00e9\u2028"}'), FIRST, 1, false);
});

test('typical answers: results per id in any order, errors per item with their reason, a refused batch, junk', () => {
  const ids = (xs: string): Verdict => read(Buffer.from(xs), 5, 3, true);
  assert.deepEqual(ids('[{"jsonrpc":"2.0","id":7,"result":"c"},{"jsonrpc":"2.0","id":5,"result":"a"},{"jsonrpc":"2.0","id":6,"result":"b"}]'), {
    bad: '',
    accepted: [1, 1, 1],
    okCount: 3,
    reason: '',
    batchRefused: false,
  });
  const mixed = ids('[{"jsonrpc":"2.0","id":5,"result":"a"},{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"nonce too low"}}]');
  assert.deepEqual(mixed.accepted, [1, 0, 0]);
  assert.equal(mixed.reason, 'rpc -32000: nonce too low');
  const refused = ids('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}');
  assert.equal(refused.batchRefused, true);
  assert.equal(read(Buffer.from('<html>502 Bad Gateway</html>'), 5, 1, false).bad, 'answer is not JSON');
  assert.equal(read(Buffer.from(''), 5, 1, false).bad, 'answer is not JSON');
  assert.equal(read(Buffer.from('"ok"'), 5, 1, false).bad, 'answer is not a JSON-RPC response');
  assert.equal(read(Buffer.from('[' + '['.repeat(200) + ']'.repeat(200) + ']'), 5, 1, true).bad, 'answer is not JSON', 'nesting past MAX_DEPTH is refused');
});
