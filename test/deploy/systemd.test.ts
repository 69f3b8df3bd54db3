/**
 * deploy/systemd/txrelay.service passes `systemd-analyze verify`. The copy
 * verified differs from the committed unit in one place only: ExecStart's
 * program, /usr/local/bin/txrelay (the installed command), becomes this
 * machine's node running this tree's dist/src/cli/main.js, since verify
 * refuses a unit whose program does not exist. Any complaint about the unit,
 * warnings included (verify exits 0 on an unknown key), fails the test with
 * the tool's own words.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const UNIT = new URL('../../../deploy/systemd/txrelay.service', import.meta.url).pathname;
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const ANALYZE = '/usr/bin/systemd-analyze';
const INSTALLED = '/usr/local/bin/txrelay';

const skip = existsSync(ANALYZE) ? false : `${ANALYZE} not found: skipping the systemd unit check`;

/** `systemd-analyze verify` on `unit` (ExecStart pointed at this tree): the complaints about it, '' when none. */
function verify(unit: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-systemd-'));
  try {
    const copy = join(dir, 'txrelay.service');
    writeFileSync(copy, unit.replace(`ExecStart=${INSTALLED} `, `ExecStart=${process.execPath} ${CLI} `));
    const r = spawnSync(ANALYZE, ['verify', '--man=no', copy], { encoding: 'utf8' });
    assert.equal(r.error, undefined, String(r.error));
    const out = `${r.stdout}${r.stderr}`.trim();
    // Only lines about this unit: a host's own units may draw warnings of their own.
    const mine = out.split('\n').filter((l) => l.includes('txrelay'));
    return r.status === 0 && mine.length === 0 ? '' : `systemd-analyze verify (exit ${r.status}):\n${out}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the systemd unit passes systemd-analyze verify', { skip }, () => {
  const unit = readFileSync(UNIT, 'utf8');
  const execStart = unit.split('\n').filter((l) => l.startsWith('ExecStart='));
  assert.deepEqual(execStart, [`ExecStart=${INSTALLED} serve --config /etc/txrelay/config.toml`]);
  const complaints = verify(unit);
  assert.equal(complaints, '', complaints);
});

test('a unit with a misspelt key fails the check with the tool\'s own words', { skip }, () => {
  const complaints = verify(readFileSync(UNIT, 'utf8').replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes'));
  assert.match(complaints, /NoNewPrivilege/, complaints);
});
