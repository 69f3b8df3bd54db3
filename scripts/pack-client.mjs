#!/usr/bin/env node
// Builds the client package (packages/client, published as txrelay-client)
// from the one source in src/client and src/shared (which the server imports
// too) and packs it into DIR (default: the directory npm was started from).
// Needs only the root's installed devDependencies (tsc) and no network.
// Prints the tarball's absolute path.
//
//   npm run pack:client -- [DIR]
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';

const pkg = new URL('../packages/client/', import.meta.url).pathname;
const dest = resolve(process.env.INIT_CWD ?? process.cwd(), process.argv[2] ?? '.');
mkdirSync(dest, { recursive: true });

function npm(args, capture) {
  const r = spawnSync('npm', args, { cwd: pkg, encoding: 'utf8', stdio: ['ignore', capture ? 'pipe' : 2, 2] });
  if (r.status !== 0) {
    console.error(`npm ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(1);
  }
  return r.stdout;
}

npm(['run', '--silent', 'build'], false);
// The build ran just above; scripts are skipped so prepack does not compile a second time.
const [packed] = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dest], true));
console.log(join(dest, packed.filename));
