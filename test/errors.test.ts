/**
 * The error table (src/errors.ts) is the one source of every error the relay
 * produces; docs/protocol.md#errors states it to users. Every code in the
 * table has its row there, with the same HTTP status and JSON-RPC code.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { E, ERROR_TABLE, RelayError, SOLANA_HEADER, TxrelayError, specOf } from '../src/errors.js';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
const section = doc.slice(doc.indexOf('\n## Errors'), doc.indexOf('\n## Limits'));
const rows = new Map(
  section
    .split('\n')
    .filter((l) => l.startsWith('| `TXR_'))
    .map((l) => {
      const cells = l.split('|').map((c) => c.trim());
      return [cells[1]!.replace(/`/g, ''), { http: cells[2]!, rpc: cells[3]! }] as const;
    }),
);
/** Errors that stop start-up: they are never an HTTP answer. */
const STARTUP = new Set([E.CONFIG, E.ACCEPTOR, E.FORWARD_CONFIG, E.REGISTRY_START, E.LISTEN, E.DATA_DIR, E.TLS]);
/** Admin API errors: a JSON body of their own, no JSON-RPC code. */
const ADMIN = new Set([E.ADMIN_AUTH, E.ACCOUNT_INVALID, E.ACCOUNT_NOT_FOUND, E.ACCOUNT_LIMIT, E.BATCH_NOT_FOUND, E.ACCOUNT_REVOKED, E.REGISTRY_UNAVAILABLE, E.STORE_FAILED]);

test('every code of the error table is documented in docs/protocol.md#errors with its HTTP status and JSON-RPC code', () => {
  for (const spec of ERROR_TABLE) {
    const row = rows.get(spec.code);
    assert.ok(row, `${spec.code} has a row`);
    if (STARTUP.has(spec)) continue;
    assert.match(row.http, new RegExp(`^${spec.http}\\b`), `${spec.code}: HTTP ${spec.http}`);
    if (!ADMIN.has(spec)) assert.equal(row.rpc, String(spec.rpc), `${spec.code}: JSON-RPC ${spec.rpc}`);
  }
  assert.equal(rows.size, new Set(ERROR_TABLE.map((s) => s.code)).size, 'and nothing documented that the table does not have');
});

test('a refusal formats its message and Solana text from the table, filling in the detail', () => {
  const e = new RelayError(E.RATE_ACCOUNT, '5', 1200);
  assert.equal(e.message, 'Account rate limit: 5 per second');
  assert.equal(e.text, 'Exceed Rate Limit: 5 per second');
  assert.equal(e.retryAfterMs, 1200);
  assert.equal(new RelayError(E.AUTH_INVALID).text, 'Invalid Api-Key');
  assert.equal(new RelayError(E.CAPACITY, 'slab full').message, 'Insufficient capacity: slab full');
});

test('what is thrown carries its table entry, so the admin API and the CLI report it from the same table', () => {
  const e = new TxrelayError(E.ACCOUNT_LIMIT, 'this node holds at most 2 live accounts');
  assert.equal(e.code, 'TXR_ACCOUNT_LIMIT');
  assert.equal(e.message, 'this node holds at most 2 live accounts');
  assert.equal(specOf(e).http, 507);
  assert.equal(specOf(new Error('anything else')), E.INTERNAL);
});

test('every code belongs to exactly one entry of the table: a client branching on a code always means one refusal', () => {
  const seen = new Map<string, number>();
  for (const s of ERROR_TABLE) seen.set(s.code, (seen.get(s.code) ?? 0) + 1);
  assert.deepEqual([...seen].filter(([, n]) => n > 1), []);
});

test('the credential refusal names the other family\'s header in both its message and its Solana text', () => {
  const r = new RelayError(E.AUTH_MISSING, SOLANA_HEADER);
  assert.match(r.message, /^Unauthorized: account UUID missing \(Solana methods take the api-key header/);
  assert.match(r.text, /^Not Found api-key \(Solana methods take the api-key header/);
  assert.equal(new RelayError(E.AUTH_MISSING).text, 'Not Found api-key');
});
