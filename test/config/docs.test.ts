/**
 * docs/configuration.md is generated from the configuration schema
 * (scripts/gen-config-docs.mjs): this fails when the two have drifted apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Compiled to dist/test/config/: the repository root is three levels up.
const root = new URL('../../../', import.meta.url);

test('docs/configuration.md is what the configuration schema generates', async () => {
  const generator = (await import(pathToFileURL(fileURLToPath(new URL('scripts/gen-config-docs.mjs', root))).href)) as { render(): string };
  const expected = generator.render();
  const actual = readFileSync(new URL('docs/configuration.md', root), 'utf8');
  assert.ok(actual === expected, 'docs/configuration.md is out of date with src/config/schema.ts: run `npm run docs:config`');
});
