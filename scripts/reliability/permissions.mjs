#!/usr/bin/env node
/**
 * permissions: data.mdb must not be written 0644 in an existing 0755 data
 * dir, checked from outside. Under umask 022 (the usual default) and
 * umask 000 (the worst case), a relay is started on an existing 0755 data
 * directory, and again on a directory whose files an older version left
 * 0644; the modes of the directory, data.mdb, lock.mdb and admin.token are
 * read back with stat.
 *
 *   node scripts/reliability/permissions.mjs
 */
import { mkdirSync, chmodSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startRelay, tempDir, emit, deadline } from './lib.mjs';

const NAME = 'permissions';
/** The promise: the directory 0700, its files 0600, whatever the umask. */
const WANT = { dir: 0o700, file: 0o600 };
const FILES = ['data.mdb', 'lock.mdb', 'admin.token'];

deadline(NAME, 60_000);

const octal = (m) => '0' + (m & 0o777).toString(8).padStart(3, '0');
function modes(dir) {
  const out = { dir: octal(statSync(dir).mode) };
  for (const f of FILES) out[f] = existsSync(join(dir, f)) ? octal(statSync(join(dir, f)).mode) : 'absent';
  return out;
}
const good = (m) => m.dir === octal(WANT.dir) && FILES.every((f) => m[f] === octal(WANT.file));

const cases = [];
for (const umask of [0o022, 0o000]) {
  // A pre-existing 0755 directory, as `mkdir data` leaves it.
  const dir = join(tempDir(), 'data');
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const before = modes(dir);
  // The relay reads the admin token from data_dir/admin.token when none is configured.
  const env = { TXRELAY_ADMIN_TOKEN: '', TXRELAY_UDP_ENABLED: 'false' };
  const old = process.umask(umask);
  let first, second;
  try {
    const r1 = await startRelay({ env, dataDir: dir });
    await r1.stop();
    first = modes(dir);
    // What an older version left behind: everything readable by others.
    chmodSync(dir, 0o755);
    for (const f of FILES) if (existsSync(join(dir, f))) chmodSync(join(dir, f), 0o644);
    const loosened = modes(dir);
    const r2 = await startRelay({ env, dataDir: dir });
    await r2.stop();
    second = modes(dir);
    cases.push(
      { umask: octal(umask), start: 'existing 0755 directory', before, after: first, ok: good(first) },
      { umask: octal(umask), start: 'files left 0644 by an older version', before: loosened, after: second, ok: good(second) },
    );
  } finally {
    process.umask(old);
  }
}

const ok = cases.every((c) => c.ok);
emit(
  NAME,
  { ok, expected: { dir: octal(WANT.dir), files: octal(WANT.file) }, cases },
  [
    `permissions: data dir and files after a start (want dir ${octal(WANT.dir)}, files ${octal(WANT.file)})`,
    ...cases.map((c) => `  umask ${c.umask}, ${c.start}: ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)} ${c.ok ? 'ok' : 'WRONG'}`),
  ],
);
process.exit(ok ? 0 : 1);
