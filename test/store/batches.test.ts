import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/db.js';
import { BatchStore, RETENTION_MS, newBatch, type NewBatch } from '../../src/store/batches.js';
import { BatchIdGenerator } from '../../src/store/ids.js';
import { E, RelayError } from '../../src/errors.js';

const CHILD = fileURLToPath(new URL('../fixtures/store-child.js', import.meta.url));
const hash = (i: number) => '0x' + i.toString(16).padStart(64, '0');

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

function open(t: TestContext, dir = tempDir(t)) {
  const store = Store.open(dir);
  t.after(() => store.close());
  return { dir, store, batches: new BatchStore(store) };
}

/** Runs the fixture to completion (or until `onLine` returns 'kill'), collecting stdout lines. */
function runChild(args: string[], onLine: (line: string, lines: string[]) => 'kill' | void = () => {}, shell?: string) {
  const argv = shell ? ['-c', `${shell}; exec "$0" "$@"`, process.execPath, CHILD, ...args] : [CHILD, ...args];
  const child = spawn(shell ? '/bin/sh' : process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      if (onLine(line, lines) === 'kill') child.kill('SIGKILL');
    }
  });
  return new Promise<{ lines: string[]; code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ lines, code, signal, stderr })),
  );
}

test('persist then get: the record reads back whole, not yet uploaded, and counts in the backlog', async (t) => {
  const { batches } = open(t);
  const rec = newBatch(7, '203.0.113.9', [hash(1), null, hash(3)]);
  await batches.persist(rec);
  assert.deepEqual(batches.get(rec.batch_id), { ...rec, items: [], version: 1, uploaded: false });
  assert.equal(Date.parse(rec.received_at) - Date.now() < 1000, true);
  assert.equal(batches.backlog(), 1);
  assert.equal(batches.get('01ARZ3NDEKTSV4RRFFQ69G5FAV'), undefined);
});

test('a malformed batch id is refused as a batch-record failure (503 -32011) without writing', async (t) => {
  const { batches } = open(t);
  await assert.rejects(batches.persist({ ...newBatch(1, '::1', []), batch_id: 'not-a-ulid' }), (e: unknown) => {
    assert.ok(e instanceof RelayError);
    assert.equal(e.spec, E.BATCH_RECORD);
    return true;
  });
  assert.equal(batches.backlog(), 0);
});

test('outcomes: visible at once, durable when updateOutcome resolves, and reopened from disk; an unknown batch rejects', async (t) => {
  const dir = tempDir(t);
  const store = Store.open(dir);
  const batches = new BatchStore(store);
  const rec = newBatch(3, '192.0.2.1', [hash(1), hash(2), hash(3)]);
  await batches.persist(rec);
  const items = [
    { status: 'queued' as const },
    { status: 'duplicate' as const, duplicate: true },
    { status: 'not-sent' as const, error_code: -32005 },
  ];
  const written = batches.updateOutcome(rec.batch_id, items);
  assert.deepEqual(batches.get(rec.batch_id)?.items, items);
  assert.equal(await written, undefined);
  await assert.rejects(batches.updateOutcome('01ARZ3NDEKTSV4RRFFQ69G5FAV', items), { code: 'TXR_BATCH_NOT_FOUND' });
  await store.close();

  const again = open(t, dir).batches;
  assert.deepEqual(again.get(rec.batch_id), { ...rec, items, version: 2, uploaded: false });
});

test('pendingUpload is in batch_id order; markUploaded empties the backlog and get reports uploaded', async (t) => {
  const { batches } = open(t);
  const recs: NewBatch[] = [];
  for (let i = 0; i < 30; i++) recs.push(newBatch(i + 1, '10.0.0.1', [hash(i)]));
  // Persist out of order: the queue still yields id order.
  await Promise.all([...recs].reverse().map((r) => batches.persist(r)));
  const first = batches.pendingUpload(10);
  assert.deepEqual(first.map((r) => r.batch_id), recs.slice(0, 10).map((r) => r.batch_id));
  await batches.markUploaded(first);
  assert.equal(batches.backlog(), 20);
  assert.equal(batches.get(recs[0]!.batch_id)?.uploaded, true);
  assert.equal(batches.get(recs[10]!.batch_id)?.uploaded, false);
  await batches.markUploaded(batches.pendingUpload(100));
  assert.equal(batches.backlog(), 0);
  assert.deepEqual(batches.pendingUpload(100), []);
});

test('an outcome written while its record is being uploaded keeps it queued in the new version', async (t) => {
  const { batches } = open(t);
  const rec = newBatch(1, '10.0.0.2', [hash(1)]);
  await batches.persist(rec);
  const taken = batches.pendingUpload(10);
  assert.equal(taken[0]!.version, 1);
  batches.updateOutcome(rec.batch_id, [{ status: 'queued' }]);
  await batches.markUploaded(taken); // the upload of version 1 completes after the update
  await batches.flush();
  assert.equal(batches.backlog(), 1);
  const again = batches.pendingUpload(10);
  assert.equal(again[0]!.version, 2);
  assert.deepEqual(again[0]!.items, [{ status: 'queued' }]);
  await batches.markUploaded(again);
  assert.equal(batches.backlog(), 0);
  // An outcome after upload queues the record again.
  batches.updateOutcome(rec.batch_id, [{ status: 'not-sent', error_code: -32006 }]);
  await batches.flush();
  assert.equal(batches.backlog(), 1);
  assert.equal(batches.get(rec.batch_id)?.uploaded, false);
});

test('prune removes uploaded records past retention, keeps unuploaded ones unless told otherwise', async (t) => {
  const { batches } = open(t);
  const now = Date.now();
  const old = new BatchIdGenerator(() => now - RETENTION_MS - 60_000);
  const mk = (id: string): NewBatch => ({ batch_id: id, received_at: new Date(now).toISOString(), account_id: 1, client_ip: '::1', tx_hashes: [] });
  const oldUploaded = Array.from({ length: 2500 }, () => mk(old.next()));
  const oldPending = mk(old.next());
  const fresh = newBatch(1, '::1', []);
  for (const r of [...oldUploaded, oldPending, fresh]) await batches.persist(r);
  await batches.markUploaded(batches.pendingUpload(2500));
  await batches.markUploaded([{ batch_id: fresh.batch_id, version: 1 }]);
  assert.equal(batches.backlog(), 1);

  assert.equal(await batches.prune({ now }), 2500);
  assert.equal(batches.get(oldUploaded[0]!.batch_id), undefined);
  assert.ok(batches.get(oldPending.batch_id));
  assert.ok(batches.get(fresh.batch_id));
  assert.equal(await batches.prune({ now, includeNotUploaded: true }), 1);
  assert.equal(batches.get(oldPending.batch_id), undefined);
  assert.equal(batches.backlog(), 0);
  assert.ok(batches.get(fresh.batch_id));
});

test('persist on a closed store rejects as a batch-record failure (503 -32011)', async (t) => {
  const dir = tempDir(t);
  const store = Store.open(dir);
  const batches = new BatchStore(store);
  await store.close();
  await assert.rejects(batches.persist(newBatch(1, '::1', [])), (e: unknown) => {
    assert.ok(e instanceof RelayError);
    assert.equal(e.code, 'TXR_BATCH_RECORD');
    assert.equal(e.spec.rpc, -32011);
    assert.equal(e.spec.http, 503);
    return true;
  });
});

test('every batch_id printed after persist resolved survives a SIGKILL of the process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  try {
    const killAfter = 400;
    const run = await runChild(['persist', dir], (_line, lines) => (lines.length === killAfter ? 'kill' : undefined));
    assert.equal(run.signal, 'SIGKILL', run.stderr);
    assert.ok(run.lines.length >= killAfter, `${run.lines.length} lines`);

    const store = Store.open(dir);
    try {
      const batches = new BatchStore(store);
      const missing = run.lines.filter((id) => batches.get(id) === undefined);
      assert.deepEqual(missing, []);
      // The reopened store keeps working.
      const rec = newBatch(1, '::1', []);
      await batches.persist(rec);
      assert.ok(batches.get(rec.batch_id));
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an awaited persist or outcome write is fdatasync\'d before it resolves, and the writes of one turn share one fdatasync', async (t) => {
  const probe = spawnSync('strace', ['-f', '-e', 'trace=fdatasync', 'true'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    t.skip(`strace not available or not permitted here (${probe.error?.message ?? probe.stderr.trim()}): skipping`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  try {
    const trace = join(dir, 'trace');
    const r = spawnSync('strace', ['-f', '-o', trace, '-e', 'trace=fdatasync,fsync,write', process.execPath, CHILD, 'sync', join(dir, 'data')], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'one\n'.repeat(5) + 'turn\n' + 'outcome-one\n'.repeat(5) + 'outcome-turn\n');
    // F: a sync syscall began; P: the child printed (after its persist resolved).
    const events = readFileSync(trace, 'utf8')
      .split('\n')
      .map((l) => (/\b(fdatasync|fsync)\(/.test(l) ? 'F' : /\bwrite\(1, "/.test(l) ? 'P' : ''))
      .join('');
    const beforeEachPrint = events.slice(0, events.lastIndexOf('P') + 1).split('P').slice(0, -1);
    assert.equal(beforeEachPrint.length, 12, events);
    for (const [i, gap] of beforeEachPrint.entries()) assert.ok(gap.length >= 1, `no sync before print ${i}: ${events}`);
    assert.equal(beforeEachPrint[5], 'F', `50 persists in one turn: one commit, one fdatasync (${events})`);
    assert.equal(beforeEachPrint[11], 'F', `50 outcome writes in one turn: one commit, one fdatasync (${events})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every batch whose outcome write resolved reopens with its items after a SIGKILL of the process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  try {
    const killAfter = 300;
    const run = await runChild(['outcome', dir], (_line, lines) => (lines.length === killAfter ? 'kill' : undefined));
    assert.equal(run.signal, 'SIGKILL', run.stderr);
    assert.ok(run.lines.length >= killAfter, `${run.lines.length} lines`);

    const store = Store.open(dir);
    try {
      const batches = new BatchStore(store);
      const empty = run.lines.filter((id) => (batches.get(id)?.items.length ?? 0) !== 3);
      assert.deepEqual(empty, [], 'acknowledged outcomes lost');
      assert.equal(batches.get(run.lines.at(-1)!)?.version, 2);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a full disk rejects persist with 503 -32011, fails closed without crashing, and loses nothing durable', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-store-'));
  try {
    // RLIMIT_FSIZE makes growing the data file fail with EFBIG, as ENOSPC would on a full disk.
    const run = await runChild(['fill', dir], undefined, 'ulimit -f 2048');
    const byKind = (k: string) => run.lines.filter((l) => l.startsWith(k + ' ')).map((l) => l.slice(k.length + 1));
    assert.equal(run.code, 0, run.stderr);
    const ok = byKind('ok');
    assert.ok(ok.length > 10, `${ok.length} records fit`);
    assert.deepEqual(byKind('rejected'), [`TXR_BATCH_RECORD ${E.BATCH_RECORD.rpc}`]);
    assert.deepEqual(byKind('again'), ['TXR_BATCH_RECORD']);
    assert.deepEqual(byKind('outcome'), ['TXR_STORE_FAILED'], 'an outcome write on a failed store rejects');
    assert.deepEqual(byKind('outcome-failures'), ['1']);
    assert.deepEqual(byKind('healthy'), ['false']);
    assert.equal(run.lines.at(-1), 'done');

    const store = Store.open(dir);
    try {
      const batches = new BatchStore(store);
      assert.deepEqual(ok.filter((id) => batches.get(id) === undefined), []);
      const rec = newBatch(1, '::1', []);
      await batches.persist(rec);
      assert.ok(batches.get(rec.batch_id));
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
