#!/usr/bin/env node
// The client package compiles src/client and src/shared. tsc follows imports,
// so a client file that imported a server module would compile that module
// into dist silently; this check makes the build fail instead
// (docs/client.md: the client imports nothing from the server).
import { readdirSync } from 'node:fs';

const ALLOWED = new Set(['client', 'shared']);
const extra = readdirSync(new URL('./dist/', import.meta.url)).filter((e) => !ALLOWED.has(e));
if (extra.length > 0) {
  console.error(`txrelay-client: dist holds ${extra.join(', ')}: a file in src/client or src/shared imports from outside them`);
  process.exit(1);
}
