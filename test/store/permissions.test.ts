/**
 * The data directory holds account UUIDs, which are credentials: directory
 * 0700, lmdb files and the admin token 0600, whatever the umask and whatever
 * an older version left behind.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/db.js';
import { AccountStore } from '../../src/store/accounts.js';
import { loadConfig } from '../../src/config/load.js';
import { Relay } from '../../src/relay.js';

const mode = (p: string) => statSync(p).mode & 0o777;

/** An existing data directory left 0755, as `mkdir data` makes it. */
function looseDir(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), 'txrelay-perm-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'data');
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  return dir;
}

/** Runs `fn` under umask 000, the most permissive, restoring the old one after. */
async function permissiveUmask<T>(fn: () => Promise<T>): Promise<T> {
  const old = process.umask(0);
  try {
    return await fn();
  } finally {
    process.umask(old);
  }
}

function logSink() {
  const lines: string[] = [];
  return { lines, log: { info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`), error: (m: string) => lines.push(`error ${m}`) } };
}

test('an existing 0755 data directory is tightened to 0700, and lmdb files are created 0600 under umask 000', async (t) => {
  const dir = looseDir(t);
  await permissiveUmask(async () => {
    const { lines, log } = logSink();
    const store = Store.open(dir, { log });
    try {
      const accounts = AccountStore.open(store);
      await accounts.create({}, { free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 }, paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 } });
      assert.equal(mode(dir), 0o700);
      assert.deepEqual(readdirSync(dir).sort(), ['data.mdb', 'lock.mdb']);
      for (const f of readdirSync(dir)) assert.equal(mode(join(dir, f)), 0o600, f);
      assert.ok(lines.some((l) => l.startsWith('info ') && l.includes('0700')), lines.join('\n'));
    } finally {
      await store.close();
    }
  });
});

test('a data directory whose name has a dot (relay.data) opens, with lmdb\'s files inside it', async (t) => {
  // lmdb-js reads a path with an extension as the database file itself unless told otherwise.
  const root = mkdtempSync(join(tmpdir(), 'txrelay-perm-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const dir of [join(root, 'relay.data'), join(root, 'new.d')]) {
    if (dir.endsWith('relay.data')) mkdirSync(dir);
    const store = Store.open(dir);
    try {
      const accounts = AccountStore.open(store);
      await accounts.create({}, { free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 }, paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 } });
      assert.deepEqual(readdirSync(dir).sort(), ['data.mdb', 'lock.mdb'], dir);
      assert.equal(mode(dir), 0o700);
    } finally {
      await store.close();
    }
  }
});

test('lmdb files an older version left 0644 are made 0600 on open', async (t) => {
  const dir = looseDir(t);
  await Store.open(dir).close();
  for (const f of ['data.mdb', 'lock.mdb']) chmodSync(join(dir, f), 0o644);
  chmodSync(dir, 0o755);
  const store = Store.open(dir);
  try {
    assert.equal(mode(dir), 0o700);
    for (const f of ['data.mdb', 'lock.mdb']) assert.equal(mode(join(dir, f)), 0o600, f);
  } finally {
    await store.close();
  }
});

test("a data directory owned by another user is left alone, with a warning that names it and the mode to set", async (t) => {
  if (process.getuid?.() !== 0) {
    t.skip('needs root to make a directory owned by another user');
    return;
  }
  const dir = looseDir(t);
  chownSync(dir, 65534, 65534);
  const { lines, log } = logSink();
  const store = Store.open(dir, { log });
  try {
    assert.equal(mode(dir), 0o755, 'not ours to change');
    const warn = lines.find((l) => l.startsWith('warn '));
    assert.ok(warn && warn.includes(dir) && warn.includes('0700'), lines.join('\n'));
  } finally {
    await store.close();
  }
});

test('a relay started on an existing 0755 data directory under umask 000 leaves it 0700, its files and the generated admin token 0600', async (t) => {
  const dir = looseDir(t);
  const config = loadConfig({
    env: {},
    overrides: { http: { port: 0 }, udp: { enabled: false }, admin: { port: 0, token: '' }, storage: { data_dir: dir }, log: { level: 'silent' }, workers: { threads: 1 } },
  });
  const relay = await permissiveUmask(() => Relay.start({ config }));
  try {
    assert.equal(mode(dir), 0o700);
    assert.deepEqual(readdirSync(dir).sort(), ['admin.token', 'data.mdb', 'lock.mdb', 'txrelay.pid']);
    for (const f of readdirSync(dir)) assert.equal(mode(join(dir, f)), 0o600, f);
  } finally {
    await relay.stop();
  }
  // An admin token file left 0644 is tightened, and its token kept.
  chmodSync(join(dir, 'admin.token'), 0o644);
  const again = await Relay.start({ config });
  try {
    assert.equal(mode(join(dir, 'admin.token')), 0o600);
    assert.equal(again.adminToken, relay.adminToken);
  } finally {
    await again.stop();
  }
});
