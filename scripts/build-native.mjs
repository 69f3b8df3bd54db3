#!/usr/bin/env node
// Builds native/build/Release/txrelay_native.node (base58, keccak-256, ed25519) with
// node-gyp. Run by the package's `install` script, so it must never fail the
// install: any problem prints one warning line and exits 0, and
// src/native/base58.ts falls back to the `bs58` package, src/chains/evm/hash.ts
// to hash-wasm. TXRELAY_NO_NATIVE=1
// skips the build. Works offline when Node's headers are installed locally
// (npm's `nodedir`, or include/node next to the running node binary);
// otherwise node-gyp would try to download them.
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = join(root, 'native');
const addon = join(nativeDir, 'build', 'Release', 'txrelay_native.node');
// node-gyp on this tree takes ~1 s; the limit only stops a hung toolchain from hanging npm ci.
const TIMEOUT_MS = 120_000;

function warn(reason) {
  console.warn(`txrelay: native addon (base58, keccak-256, ed25519) not built (${reason}); using the JavaScript and WebAssembly fallbacks`);
  process.exit(0);
}

/** Candidate ways to run node-gyp, best first: [command, argsPrefix, label]. */
function nodeGypCandidates() {
  const out = [];
  const viaNode = (p, label) => {
    if (p && existsSync(p)) out.push([process.execPath, [p], label]);
  };
  // npm sets this for lifecycle scripts to its bundled node-gyp.
  viaNode(process.env.npm_config_node_gyp, 'npm_config_node_gyp');
  // npm's own files: npm_execpath is .../npm/bin/npm-cli.js during lifecycle scripts.
  if (process.env.npm_execpath) {
    viaNode(join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'), 'npm bundled');
  }
  for (const prefix of [join(dirname(process.execPath), '..', 'lib'), dirname(process.execPath)]) {
    viaNode(join(prefix, 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'), 'npm bundled');
  }
  // npm puts node-gyp-bin on PATH for lifecycle scripts; also a global install.
  const win = process.platform === 'win32';
  out.push([win ? 'node-gyp.cmd' : 'node-gyp', [], 'PATH']);
  // Last resort; --no so npm never tries to download it.
  out.push([win ? 'npm.cmd' : 'npm', ['exec', '--no', '--offline', '--', 'node-gyp'], 'npm exec']);
  return out;
}

/** Local Node headers, so node-gyp needs no network. */
function nodeDir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const prefix = resolve(dirname(process.execPath), '..');
  if (existsSync(join(prefix, 'include', 'node', 'node_api.h'))) return prefix;
  // Outside an npm lifecycle the env var is absent; ask npm (slower, so last).
  const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['config', 'get', 'nodedir'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  const v = r.status === 0 ? r.stdout.trim() : '';
  return v && v !== 'undefined' && v !== 'null' ? v : undefined;
}

/** The last line that says what went wrong, for the one-line warning. */
function lastErrorLine(text) {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/^gyp (ERR!|WARN) (stack )?/, '').trim())
    .filter(Boolean);
  const pick =
    lines.find((l) => /: (fatal )?error:/.test(l)) ?? // a compiler diagnostic says the most
    lines.findLast((l) => /error[: ]/i.test(l) && !/^(cwd|node -v|node-gyp -v|not ok|System|command)\b/.test(l)) ??
    lines.at(-1) ??
    'no output';
  return pick.length > 200 ? `${pick.slice(0, 200)}...` : pick;
}

function main() {
  if (process.env.TXRELAY_NO_NATIVE === '1') {
    console.log('txrelay: native addon (base58, keccak-256, ed25519) skipped (TXRELAY_NO_NATIVE=1); using the JavaScript and WebAssembly fallbacks');
    return;
  }
  const started = performance.now();
  const dir = nodeDir();
  const args = ['rebuild', '--loglevel=warn', ...(dir ? [`--nodedir=${dir}`] : [])];
  let failure = 'node-gyp not found';
  for (const [cmd, prefix, label] of nodeGypCandidates()) {
    const r = spawnSync(cmd, [...prefix, ...args], { cwd: nativeDir, encoding: 'utf8', timeout: TIMEOUT_MS });
    if (r.error) {
      failure = r.error.code === 'ETIMEDOUT' ? `node-gyp timed out after ${TIMEOUT_MS / 1000} s` : `${label}: ${r.error.message}`;
      if (r.error.code === 'ENOENT') continue;
      break;
    }
    if (r.status === 0) {
      failure = null;
      break;
    }
    // A compile error will not go away with another copy of node-gyp.
    failure = `node-gyp failed: ${lastErrorLine(`${r.stdout}\n${r.stderr}`)}`;
    break;
  }
  if (failure) warn(failure);
  if (!existsSync(addon)) warn(`node-gyp reported success but ${addon} is missing`);

  // Refuse an addon that cannot load or answers wrongly; the fallback is correct, just slower.
  try {
    const a = createRequire(import.meta.url)(addon);
    const probe = Uint8Array.from([0, 0, 0x28, 0x7f, 0xb4, 0xcd]);
    if (a.encode(probe) !== '11233QC4' || a.decode('11233QC4', 16)?.join() !== probe.join()) throw new Error('self-check gave a wrong answer');
  } catch (err) {
    rmSync(addon, { force: true });
    warn(`built but unusable: ${err.message}`);
  }
  const secs = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`txrelay: native addon (base58, keccak-256, ed25519) built in ${secs} s (${addon})`);
}

try {
  main();
} catch (err) {
  warn(err?.message ?? String(err));
}
