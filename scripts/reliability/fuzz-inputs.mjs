/**
 * fast-check arbitraries for fuzz.mjs: one per door, each a weighted mix of
 * mutations of real signed transactions (src/bench/txgen.ts), wire-format
 * lies, and plain noise. Every input carries a `kind` (which branch made it,
 * for the per-kind counts) and, where it can be known, `forgedSolana`: the
 * Solana transaction bytes it carries that are NOT one of the signed
 * originals, so that a 200 for them would mean a forgery was accepted.
 */
import fc from 'fast-check';
import bs58 from 'bs58';

/** Byte values that sit on boundaries of the formats: compact-u16, RLP prefixes, signs. */
const EDGE_BYTES = [0x00, 0x01, 0x02, 0x7f, 0x80, 0x81, 0xb7, 0xb8, 0xbf, 0xc0, 0xf7, 0xf8, 0xfe, 0xff];
/** The UDP and bundle layouts (docs/protocol.md#udp, #solana-bundles) and the relay's size limits, so lies land on both sides of each bound. */
const MAGIC = [43, 6, 58, 10];
const MAX_TX = 1232;
const MAX_V1_TX = 4096;

/** One byte-level mutation; positions are taken modulo the length when applied. */
const op = fc.oneof(
  fc.record({ k: fc.constant('flip'), pos: fc.nat(), bit: fc.nat(7) }),
  fc.record({ k: fc.constant('set'), pos: fc.nat(), v: fc.oneof(fc.constantFrom(...EDGE_BYTES), fc.nat(255)) }),
  fc.record({ k: fc.constant('truncate'), pos: fc.nat() }),
  fc.record({ k: fc.constant('insert'), pos: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ k: fc.constant('delete'), pos: fc.nat(), len: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ k: fc.constant('append'), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
  fc.record({ k: fc.constant('dup'), pos: fc.nat(), len: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ k: fc.constant('grow'), n: fc.integer({ min: 100, max: 5000 }) }),
);

export function applyOps(base, ops) {
  let b = Buffer.from(base);
  for (const o of ops) {
    const at = b.length ? o.pos % b.length : 0;
    switch (o.k) {
      case 'flip':
        if (b.length) b[at] ^= 1 << o.bit;
        break;
      case 'set':
        if (b.length) b[at] = o.v;
        break;
      case 'truncate':
        b = b.subarray(0, at);
        break;
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), o.bytes, b.subarray(at)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + o.len)]);
        break;
      case 'append':
        b = Buffer.concat([b, o.bytes]);
        break;
      case 'dup':
        b = Buffer.concat([b.subarray(0, at + o.len), b.subarray(at)]);
        break;
      case 'grow':
        b = Buffer.concat([b, Buffer.alloc(o.n, b.length ? b[b.length - 1] : 0)]);
        break;
    }
  }
  return Buffer.from(b);
}

const mutatedFrom = (pool) => fc.tuple(fc.constantFrom(...pool), fc.array(op, { minLength: 1, maxLength: 4 })).map(([b, ops]) => applyOps(b, ops));
const noise = (max) => fc.uint8Array({ minLength: 0, maxLength: max }).map((b) => Buffer.from(b));
const w = (weight, arbitrary) => ({ weight, arbitrary });

/** Hex text of EVM transactions: valid, mutated bytes, and text-level damage. */
function hexText(evm) {
  const hex = (b) => '0x' + b.toString('hex');
  return fc.oneof(
    w(2, fc.constantFrom(...evm).map(hex)),
    w(6, mutatedFrom(evm).map(hex)),
    w(1, fc.constantFrom(...evm).map((b) => b.toString('hex'))), // no prefix
    w(1, fc.constantFrom(...evm).map((b) => '0x0x' + b.toString('hex'))),
    w(1, fc.constantFrom(...evm).map((b) => '0X' + b.toString('hex').toUpperCase())),
    w(1, fc.tuple(fc.constantFrom(...evm), fc.nat()).map(([b, n]) => {
      const h = hex(b);
      return h.slice(0, 2 + (n % (h.length - 2))) + 'g' + h.slice(2 + (n % (h.length - 2)));
    })),
    w(1, fc.constantFrom(...evm).map((b) => hex(b).slice(0, -1))), // odd length
    w(1, fc.string({ maxLength: 300 })),
    w(1, noise(300).map((b) => '0x' + b.toString('hex'))),
  );
}

/** Values for an identifying header: the good one mostly, else every way of being wrong. */
function credential(good, revoked) {
  return fc.oneof(
    w(10, fc.constant(good)),
    w(1, fc.constant(revoked)),
    w(1, fc.uuid()),
    w(1, fc.constant(good.toUpperCase())),
    w(1, fc.constant(good.slice(0, -1))),
    w(1, fc.stringMatching(/^[ -~]{0,80}$/)),
    w(1, fc.constant(undefined)),
  );
}
const contentType = fc.oneof(
  w(6, fc.constant('application/json')),
  w(1, fc.constantFrom('text/plain', 'application/octet-stream', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/jsonx', 'multipart/form-data', '')),
  w(1, fc.constant(undefined)),
);

/** A JSON text, then maybe damaged as text. */
function jsonText(valueArb) {
  return fc.tuple(valueArb, fc.oneof(w(8, fc.constant(null)), w(1, fc.array(op, { minLength: 1, maxLength: 3 })))).map(([v, ops]) => {
    const text = JSON.stringify(v) ?? 'null';
    return ops ? { body: applyOps(Buffer.from(text), ops), damaged: true } : { body: text, damaged: false };
  });
}

const jsonId = fc.oneof(w(6, fc.integer()), w(1, fc.string({ maxLength: 20 })), w(1, fc.constant(null)), w(1, fc.jsonValue({ maxDepth: 2 })));

/** `bundle` lays out 1-4 transactions as `/v2/batch` takes them; lies about count and lengths come separately. */
function bundle(txs) {
  const head = Buffer.alloc(1 + 2 * txs.length);
  head[0] = txs.length;
  txs.forEach((t, i) => head.writeUInt16LE(t.length & 0xffff, 1 + 2 * i));
  return Buffer.concat([head, ...txs]);
}

/**
 * Builds every door's arbitrary. `base` holds the signed originals
 * (sol, solTip, evm: Buffers) and credentials (key, revoked, adminToken).
 */
export function doors(base) {
  const { sol, solTip, evm, key, revoked, adminToken } = base;
  const originals = new Set([...sol, ...solTip].map((b) => b.toString('hex')));
  const forged = (txs) => txs.filter((t) => !originals.has(Buffer.from(t).toString('hex')));
  const solTx = fc.oneof(
    w(1, fc.constantFrom(...sol).map((b) => ({ k: 'valid', b }))),
    w(6, mutatedFrom(sol).map((b) => ({ k: 'mutated', b }))),
    w(2, noise(MAX_V1_TX + 100).map((b) => ({ k: 'noise', b }))),
  );

  const v2 = fc.tuple(solTx, credential(key, revoked), fc.option(fc.constantFrom('application/octet-stream', 'text/plain', 'application/json'))).map(([t, k, ct]) => ({
    kind: t.k,
    forgedSolana: forged([t.b]),
    req: { path: '/v2', method: 'POST', headers: { ...(k !== undefined ? { 'api-key': k } : {}), ...(ct ? { 'content-type': ct } : {}) }, body: t.b },
  }));

  const bundleTx = fc.oneof(w(3, fc.constantFrom(...solTip)), w(1, fc.constantFrom(...sol)), w(3, mutatedFrom([...sol, ...solTip])));
  const v2batch = fc
    .tuple(
      fc.oneof(
        w(4, fc.array(bundleTx, { minLength: 1, maxLength: 4 }).map((txs) => ({ kind: 'bundle', txs, body: bundle(txs) }))),
        w(3, fc.tuple(fc.array(fc.constantFrom(...solTip), { minLength: 1, maxLength: 4 }), fc.array(op, { minLength: 1, maxLength: 3 })).map(([txs, ops]) => ({ kind: 'mutated-layout', txs: null, body: applyOps(bundle(txs), ops) }))),
        w(2, fc.tuple(fc.constantFrom(0, 5, 255, 1, 4), fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 5 }), fc.array(fc.constantFrom(...solTip), { maxLength: 4 })).map(([count, lens, txs]) => {
          const head = Buffer.alloc(1 + 2 * lens.length);
          head[0] = count;
          lens.forEach((l, i) => head.writeUInt16LE(l, 1 + 2 * i));
          return { kind: 'layout-lie', txs: null, body: Buffer.concat([head, ...txs]) };
        })),
        w(1, noise(20_000).map((b) => ({ kind: 'noise', txs: null, body: b }))),
      ),
      credential(key, revoked),
    )
    .map(([b, k]) => ({
      kind: b.kind,
      // A mutated layout may still split into transactions: decided from the bytes by the checker.
      forgedSolana: b.txs ? forged(b.txs) : null,
      splitBundle: b.txs === null,
      req: { path: '/v2/batch', method: 'POST', headers: { ...(k !== undefined ? { 'api-key': k } : {}), 'content-type': 'application/octet-stream' }, body: b.body },
    }));

  const solRpc = fc
    .tuple(
      solTx,
      fc.oneof(w(6, fc.constant('base64')), w(2, fc.constant('base58')), w(1, fc.string({ maxLength: 10 }))),
      fc.oneof(w(6, fc.constant(null)), w(1, fc.jsonValue({ maxDepth: 3 }))),
      jsonId,
      credential(key, revoked),
      contentType,
    )
    .chain(([t, enc, replaceParams, id, k, ct]) => {
      const encoded = enc === 'base58' ? bs58.encode(t.b) : t.b.toString('base64');
      const call = { jsonrpc: '2.0', id, method: 'sendTransaction', params: replaceParams ?? [encoded, { encoding: enc }] };
      return jsonText(fc.constant(call)).map((j) => ({
        kind: `${t.k}${replaceParams !== null ? '-params' : ''}${j.damaged ? '-damaged' : ''}`,
        forgedSolana: replaceParams === null && !j.damaged && (enc === 'base64' || enc === 'base58') ? forged([t.b]) : null,
        req: { path: '/', method: 'POST', headers: { ...(k !== undefined ? { 'api-key': k } : {}), ...(ct !== undefined ? { 'content-type': ct } : {}) }, body: j.body },
      }));
    });

  const bearer = fc.oneof(w(10, fc.constant(`Bearer ${key}`)), w(1, fc.constant(`Bearer ${revoked}`)), w(1, fc.uuid().map((u) => `Bearer ${u}`)), w(1, fc.constant(`Basic ${key}`)), w(1, fc.constant(undefined)));
  const evmRpc = fc.tuple(hexText(evm), jsonId, fc.oneof(w(8, fc.constant(null)), w(1, fc.jsonValue({ maxDepth: 3 }))), bearer, contentType).chain(([h, id, replace, auth, ct]) =>
    jsonText(fc.constant({ jsonrpc: '2.0', id, method: 'eth_sendRawTransaction', params: replace ?? [h] })).map((j) => ({
      kind: `${replace !== null ? 'params' : 'hex'}${j.damaged ? '-damaged' : ''}`,
      req: { path: '/', method: 'POST', headers: { ...(auth ? { authorization: auth } : {}), ...(ct !== undefined ? { 'content-type': ct } : {}) }, body: j.body },
    })),
  );

  const evmBatch = fc
    .tuple(
      // fast-check favours short arrays: lengths past evm.max_batch (64) get their own branch.
      fc.oneof(w(6, fc.array(hexText(evm), { minLength: 0, maxLength: 70 })), w(1, fc.array(hexText(evm), { minLength: 65, maxLength: 100 })), w(1, fc.jsonValue({ maxDepth: 3 }))),
      jsonId,
      bearer,
    )
    .chain(([params, id, auth]) =>
      jsonText(fc.constant({ jsonrpc: '2.0', id, method: 'svc_sendRawTransactionBatch', params })).map((j) => ({
        kind: `${Array.isArray(params) ? `items-${params.length > 64 ? 'over-max' : params.length === 0 ? 'empty' : 'ok'}` : 'params'}${j.damaged ? '-damaged' : ''}`,
        req: { path: '/', method: 'POST', headers: { ...(auth ? { authorization: auth } : {}), 'content-type': 'application/json' }, body: j.body },
      })),
    );

  const query = fc.oneof(
    w(6, fc.constant(`?auth=${key}`)),
    w(1, fc.constant(`?auth=${key}&auth=${key}`)),
    w(1, fc.constant(`?auth=${key}&x=1`)),
    w(1, fc.constant('?auth=%ZZ')),
    w(1, fc.constant(`?auth=${encodeURIComponent(key).replace('-', '%2d')}`)),
    w(1, fc.constant(`?auth=${revoked}`)),
    w(1, fc.stringMatching(/^\?[ -~]{0,60}$/).map((q) => q.replace(/[ #]/g, '+'))),
    w(2, fc.constant('')),
  );
  const evmText = fc
    .tuple(hexText(evm), query, fc.oneof(w(3, fc.constant(undefined)), w(1, bearer)), fc.oneof(w(6, fc.constant('text/plain')), w(1, contentType)), fc.constantFrom('', ' ', '\n', '\t\r\n', '  \n  '))
    .map(([h, q, auth, ct, ws]) => ({
      kind: q === '' ? (auth ? 'bearer' : 'no-auth') : 'query',
      req: { path: '/v2/svc_send_raw_transaction' + q, method: 'POST', headers: { ...(auth ? { authorization: auth } : {}), ...(ct !== undefined ? { 'content-type': ct } : {}) }, body: ws + h + ws },
    }));

  const methods = fc.oneof(w(4, fc.constantFrom('sendTransaction', 'eth_sendRawTransaction', 'svc_sendRawTransactionBatch')), w(1, fc.string({ maxLength: 30 })));
  const rpcCall = fc.record({ jsonrpc: fc.oneof(w(4, fc.constant('2.0')), w(1, fc.jsonValue({ maxDepth: 1 }))), id: jsonId, method: methods, params: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] });
  const jsonrpc = fc
    .tuple(
      fc.oneof(
        w(3, jsonText(fc.jsonValue({ maxDepth: 5 })).map((j) => ({ kind: 'json', body: j.body }))),
        w(3, jsonText(rpcCall).map((j) => ({ kind: 'call', body: j.body }))),
        w(2, fc.array(rpcCall, { minLength: 0, maxLength: 64 }).map((a) => ({ kind: 'array', body: JSON.stringify(a) }))),
        w(1, fc.integer({ min: 65, max: 43_000 }).map((n) => ({ kind: 'array-over-max', body: '[' + Array(n).fill('{}').join(',') + ']' }))),
        w(1, fc.integer({ min: 1, max: 60_000 }).map((n) => ({ kind: 'deep-nesting', body: '['.repeat(n) + ']'.repeat(n) }))),
        w(1, noise(2000).map((b) => ({ kind: 'bytes', body: b }))),
        w(1, fc.string({ maxLength: 2000, unit: 'binary' }).map((s) => ({ kind: 'unicode', body: s }))),
      ),
      fc.oneof(w(3, fc.constant(`Bearer ${key}`)), w(1, fc.constant(undefined))),
      fc.oneof(w(1, fc.constant(key)), w(1, fc.constant(undefined))),
      contentType,
    )
    .map(([b, auth, k, ct]) => ({
      kind: b.kind,
      req: { path: '/', method: 'POST', headers: { ...(auth ? { authorization: auth } : {}), ...(k ? { 'api-key': k } : {}), ...(ct !== undefined ? { 'content-type': ct } : {}) }, body: b.body },
    }));

  // Admin API: fuzzed account bodies, ids and tokens. PATCH/DELETE aim at random ids or at accounts the fuzz
  // itself created (`created`, filled by the driver), never at the accounts the other doors use.
  const tps = fc.oneof(fc.integer({ min: 0, max: 2_000_000 }), fc.integer(), fc.double(), fc.string({ maxLength: 5 }), fc.constant(null));
  const accountBody = fc.oneof(
    w(1, fc.constant({})),
    w(1, fc.record({ plan: fc.constantFrom('free', 'paid'), evm: fc.record({ tps: fc.nat(2_000_000) }), solana: fc.record({ tps: fc.nat(2_000_000), min_tip_lamports: fc.nat() }) }, { requiredKeys: [] })),
    w(3, fc.record({ plan: fc.oneof(fc.constantFrom('free', 'paid'), fc.string({ maxLength: 6 })), evm: fc.record({ enabled: fc.oneof(fc.boolean(), fc.string({ maxLength: 3 })), tps, burst: tps }, { requiredKeys: [] }), solana: fc.record({ enabled: fc.boolean(), tps, burst: tps, min_tip_lamports: fc.oneof(fc.nat(), fc.integer(), fc.double()) }, { requiredKeys: [] }) }, { requiredKeys: [] })),
    w(1, fc.jsonValue({ maxDepth: 4 })),
  );
  const adminToken_ = fc.oneof(w(8, fc.constant(adminToken)), w(1, fc.constant(adminToken + 'x')), w(1, fc.constant(undefined)));
  const id = fc.oneof(w(2, fc.constant('CREATED')), w(1, fc.uuid()), w(1, fc.stringMatching(/^[A-Za-z0-9_.~-]{0,40}$/)));
  const admin = fc
    .tuple(
      fc.oneof(
        w(4, jsonText(accountBody).map((j) => ({ kind: 'create', method: 'POST', path: '/admin/accounts', body: j.body }))),
        w(2, fc.tuple(id, jsonText(accountBody)).map(([i, j]) => ({ kind: 'update', method: 'PATCH', path: `/admin/accounts/${i}`, body: j.body }))),
        w(1, id.map((i) => ({ kind: 'revoke', method: 'DELETE', path: `/admin/accounts/${i}` }))),
        w(1, id.map((i) => ({ kind: 'show', method: 'GET', path: `/admin/accounts/${i}` }))),
        w(1, fc.stringMatching(/^[0-9A-Za-z]{0,30}$/).map((i) => ({ kind: 'batch', method: 'GET', path: `/admin/batches/${i}` }))),
        w(1, fc.constantFrom('/metrics', '/healthz', '/admin/accounts', '/admin', '/', '/admin/accounts/').map((p) => ({ kind: 'get', method: 'GET', path: p }))),
      ),
      adminToken_,
    )
    .map(([r, t]) => ({ kind: r.kind, req: { path: r.path, method: r.method, headers: { ...(t ? { authorization: `Bearer ${t}` } : {}), 'content-type': 'application/json' }, body: r.body } }));

  const keyBytes = Buffer.from(key.replaceAll('-', ''), 'hex');
  const packet = (k, tx, len = tx.length, method = 0) => {
    const p = Buffer.alloc(23 + tx.length);
    p.set(MAGIC);
    p[4] = method;
    p.set(k, 5);
    p.writeUInt16LE(len & 0xffff, 21);
    p.set(tx, 23);
    return p;
  };
  const udp = fc.oneof(
    w(2, fc.constantFrom(...sol).map((t) => ({ kind: 'valid', datagram: packet(keyBytes, t) }))),
    w(6, mutatedFrom(sol).map((t) => ({ kind: 'mutated-tx', datagram: packet(keyBytes, t.subarray(0, MAX_TX + 50)) }))),
    w(3, fc.tuple(fc.constantFrom(...sol), fc.array(op, { minLength: 1, maxLength: 3 })).map(([t, ops]) => ({ kind: 'mutated-packet', datagram: applyOps(packet(keyBytes, t), ops).subarray(0, 65_000) }))),
    w(2, fc.tuple(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.constantFrom(...sol)).map(([k, t]) => ({ kind: 'unknown-key', datagram: packet(k, t) }))),
    w(2, noise(1400).map((b) => ({ kind: 'noise', datagram: b }))),
  );

  // Raw HTTP: mutated request heads over TCP, answered or not (framing.mjs covers the known cases one by one).
  const requests = [
    Buffer.from('GET /ping HTTP/1.1\r\nHost: relay\r\n\r\n'),
    Buffer.concat([Buffer.from(`POST /v2 HTTP/1.1\r\nHost: relay\r\napi-key: ${key}\r\nContent-Length: ${sol[0].length}\r\n\r\n`), sol[0]]),
    Buffer.from(`POST / HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nAuthorization: Bearer ${key}\r\nContent-Length: 2\r\n\r\n{}`),
    Buffer.from(`OPTIONS /v2/svc_send_raw_transaction HTTP/1.1\r\nHost: relay\r\nOrigin: http://x\r\nAccess-Control-Request-Method: POST\r\n\r\n`),
  ];
  const headerLine = fc.tuple(fc.stringMatching(/^[!-9;-~]{1,20}$/), fc.stringMatching(/^[ -~]{0,200}$/)).map(([k, v]) => `${k}: ${v}\r\n`);
  const rawHttp = fc.oneof(
    w(4, fc.tuple(fc.constantFrom(...requests), fc.array(op, { minLength: 1, maxLength: 4 })).map(([r, ops]) => ({ kind: 'mutated', bytes: applyOps(r, ops) }))),
    w(2, fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'CONNECT', 'TRACE', 'get', 'X'), fc.constantFrom('/', '/ping', '/v2', '/v2/batch', '/v2/svc_send_raw_transaction', '*', 'http://x/ping', '/%00', '/' + 'a'.repeat(5000)), fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'http/1.1', ''), fc.array(headerLine, { maxLength: 60 }), noise(200))
      .map(([m, p, v, hs, body]) => ({ kind: 'assembled', bytes: Buffer.concat([Buffer.from(`${m} ${p} ${v}\r\nHost: relay\r\n${hs.join('')}Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]) }))),
    w(1, fc.tuple(fc.constantFrom(...requests), fc.constantFrom(...requests), fc.constantFrom(...requests)).map((rs) => ({ kind: 'pipelined', bytes: Buffer.concat(rs) }))),
    w(1, noise(3000).map((b) => ({ kind: 'noise', bytes: b }))),
  );

  return {
    'solana-v2': v2,
    'solana-batch': v2batch,
    'solana-rpc': solRpc,
    'evm-rpc': evmRpc,
    'evm-batch': evmBatch,
    'evm-text': evmText,
    jsonrpc,
    admin,
    udp,
    'http-raw': rawHttp,
  };
}

/** Splits a `/v2/batch` body; null when the layout is not exact. */
export function splitBundle(body) {
  const b = Buffer.from(body);
  const count = b[0];
  if (!count || count > 4 || b.length < 1 + 2 * count) return null;
  let off = 1 + 2 * count;
  const out = [];
  for (let i = 0; i < count; i++) {
    const len = b.readUInt16LE(1 + 2 * i);
    out.push(b.subarray(off, off + len));
    off += len;
  }
  return off === b.length ? out : null;
}
