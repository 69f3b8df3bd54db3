import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createLogger, createProcessLogger, scrub } from '../../src/obs/log.js';

test('scrub replaces anything shaped like an account UUID in free text, with or without dashes, any case', () => {
  const id = randomUUID();
  const text = `upstream said: bad key ${id} / ${id.replace(/-/g, '').toUpperCase()}`;
  const out = scrub(text);
  assert.equal(out, 'upstream said: bad key <redacted> / <redacted>');
  assert.equal(scrub('nothing secret here, 0x1234'), 'nothing secret here, 0x1234');
});

test('the logger censors credential fields a careless caller might pass, at the top level and one level down', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const log = createLogger('info', sink);
  const id = randomUUID();
  log.info({ uuid: id, apiKey: id, authorization: `Bearer ${id}`, account: { uuid: id, api_key: id } }, 'request');
  log.flush?.();
  const text = lines.join('');
  assert.ok(text.length > 0, 'a line was written');
  assert.ok(!text.includes(id), 'no field carried the key');
  assert.match(text, /<redacted>/);
});

/** A stand-in for standard output that keeps what is written. */
function captured(isTTY: boolean): { write(s: string): void; isTTY: boolean; lines: string[] } {
  const lines: string[] = [];
  return { isTTY, lines, write: (s: string) => void lines.push(s) };
}

test('log.format auto: JSON lines when the output is not a terminal, readable lines when it is', () => {
  const pipe = captured(false);
  const json = createProcessLogger({ level: 'info', node: 'n1', format: 'auto', hold: false, out: pipe });
  json.log.info({ port: 1 }, 'txrelay listening');
  assert.equal(json.format, 'json');
  const o = JSON.parse(pipe.lines[0]!) as Record<string, unknown>;
  assert.deepEqual([o.msg, o.svc, o.node, o.port, o.level], ['txrelay listening', 'txrelay', 'n1', 1, 30]);

  const tty = captured(true);
  const pretty = createProcessLogger({ level: 'info', node: 'n1', format: 'auto', hold: false, out: tty });
  pretty.log.warn({ port: 1 }, 'txrelay listening');
  assert.equal(pretty.format, 'pretty');
  // eslint-disable-next-line no-control-regex
  const line = tty.lines[0]!.replace(/\x1b\[[0-9;]*m/g, '');
  assert.match(line, /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: txrelay listening \{"port":1\}\n$/);

  // Asked for, either format is used whatever the output is.
  assert.equal(createProcessLogger({ level: 'info', format: 'json', hold: false, out: captured(true) }).format, 'json');
  assert.equal(createProcessLogger({ level: 'info', format: 'pretty', hold: false, out: captured(false) }).format, 'pretty');
});

test('held lines are written in order on release, or dropped on discard; later lines go straight out', () => {
  const ok = captured(false);
  const a = createProcessLogger({ level: 'info', format: 'json', hold: true, out: ok });
  a.log.info('one');
  a.log.warn('two');
  assert.equal(ok.lines.length, 0, 'held while start-up runs');
  a.release();
  a.log.info('three');
  assert.deepEqual(ok.lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['one', 'two', 'three']);

  const failed = captured(false);
  const b = createProcessLogger({ level: 'info', format: 'json', hold: true, out: failed });
  b.log.info('one');
  b.discard();
  assert.equal(failed.lines.length, 0);
});

test('JSON output never loads pino-pretty', () => {
  const code = `
    import { createRequire } from 'node:module';
    const { createProcessLogger } = await import(${JSON.stringify(new URL('../../src/obs/log.js', import.meta.url).href)});
    const out = createProcessLogger({ level: 'info', format: 'auto', hold: false, out: { write() {}, isTTY: false } });
    out.log.info('x');
    const cache = createRequire(import.meta.url).cache;
    console.log(Object.keys(cache).some((k) => k.includes('pino-pretty')));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'false');
});
