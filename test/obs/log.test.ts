import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { createLogger, scrub } from '../../src/obs/log.js';

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
