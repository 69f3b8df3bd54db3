/**
 * The client as its own package (packages/client, `txrelay-client`): packed
 * from src/client by `npm run pack:client`, installed alone into an empty
 * directory, and used there by a plain ESM script against a real relay
 * started here. The installed tree must hold none of the server's
 * dependencies; its size and package count are reported as diagnostics
 * (docs/client.md quotes them).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

const run = promisify(execFile);
type Upstream = Awaited<ReturnType<typeof startUpstream>>;

const ROOT = new URL('../../../', import.meta.url).pathname;
/** Server-only packages: any of them in the client's tree means a server module leaked in. */
const SERVER_ONLY = ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial', 'uws-pack', 'uWebSockets.js', 'lmdb', 'pg', 'piscina', 'sodium-native', 'secp256k1'];

let work: string;
let app: string;
let skip: string | false = false;
let installedOnline = false;
let relay: TestRelay | undefined;
let rpcUp: Upstream | undefined;
let evmUp: Upstream | undefined;

/**
 * npm started from this process must act on `app` alone: an outer `npm test`
 * exports its own prefix and package settings, which would point the install elsewhere.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (/^npm_(package_|lifecycle_|config_(local_)?prefix$|config_global$)/i.test(k) || k === 'INIT_CWD') delete env[k];
  }
  return env;
}

async function npm(args: string[], cwd: string): Promise<{ ok: boolean; out: string }> {
  try {
    const r = await run('npm', args, { cwd, env: npmEnv(), maxBuffer: 16 << 20 });
    return { ok: true, out: r.stdout + r.stderr };
  } catch (e: any) {
    if (e.code === 'ENOENT') throw Object.assign(new Error('npm not found'), { skip: true });
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Every installed package (name -> count), nested node_modules included. */
function packages(nodeModules: string, into = new Map<string, number>()): Map<string, number> {
  if (!existsSync(nodeModules)) return into;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((n) => [`${entry}/${n}`, join(nodeModules, entry, n)]) : [[entry, join(nodeModules, entry)]];
    for (const [name, dir] of dirs) {
      if (!existsSync(join(dir!, 'package.json'))) continue;
      into.set(name!, (into.get(name!) ?? 0) + 1);
      packages(join(dir!, 'node_modules'), into);
    }
  }
  return into;
}

/** Bytes on disk, as `du` counts them (allocated blocks, symlinks not followed). */
function diskBytes(path: string): number {
  const st = lstatSync(path);
  let sum = st.blocks * 512;
  if (st.isDirectory()) for (const e of readdirSync(path)) sum += diskBytes(join(path, e));
  return sum;
}

const NETWORK = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network/i;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'txrelay-client-pkg-'));
  app = join(work, 'app');
  try {
    const packed = await run(process.execPath, [join(ROOT, 'scripts/pack-client.mjs'), join(work, 'pack')], { cwd: ROOT, env: npmEnv() });
    const tgz = packed.stdout.trim().split('\n').pop()!;
    assert.ok(existsSync(tgz), `pack:client printed ${tgz}`);
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'client-probe', private: true, type: 'module' }));
    let r = await npm(['install', '--offline', '--no-audit', '--no-fund', tgz], app);
    if (!r.ok) {
      assert.match(r.out, /ENOTCACHED/, `offline install failed for another reason than the cache:\n${r.out}`);
      r = await npm(['install', '--no-audit', '--no-fund', tgz], app);
      installedOnline = r.ok;
      if (!r.ok) {
        assert.match(r.out, NETWORK, `online install failed:\n${r.out}`);
        skip = 'the client package dependencies are not in the npm cache and the registry is unreachable: skipping';
      }
    }
  } catch (e: any) {
    if (!e.skip) throw e;
    skip = 'npm not found: skipping the client package checks';
  }
  if (skip) return;
  rpcUp = await startUpstream();
  evmUp = await startUpstream();
  relay = await startTestRelay({
    solana: { rpc_upstreams: [rpcUp.url], bundle_upstreams: [rpcUp.url], tip_accounts: [Keypair.generate().publicKey.toBase58()] },
    evm: { upstreams: { paid: [evmUp.url], free: [evmUp.url] } },
  });
});

after(async () => {
  await relay?.stop();
  await rpcUp?.close();
  await evmUp?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the installed client holds only its own dependencies, none of the server', (t) => {
  if (skip) return t.skip(skip);
  const installed = packages(join(app, 'node_modules'));
  assert.ok(installed.has('txrelay-client'));
  for (const dep of ['undici', 'bs58', '@noble/hashes', 'ws']) assert.ok(installed.has(dep), `${dep} installed`);
  for (const name of SERVER_ONLY) assert.equal(installed.has(name), false, `${name} must not be installed with the client`);
  assert.deepEqual([...installed.keys()].filter((n) => /uws|uwebsockets/i.test(n)), []);
  const count = [...installed.values()].reduce((a, b) => a + b, 0);
  const mib = diskBytes(join(app, 'node_modules')) / 2 ** 20;
  t.diagnostic(`txrelay-client install: ${mib.toFixed(1)} MiB in node_modules, ${count} packages (${[...installed.keys()].sort().join(', ')})${installedOnline ? '; installed online, the npm cache lacked a dependency' : ''}`);
  const pkg = JSON.parse(readFileSync(join(app, 'node_modules/txrelay-client/package.json'), 'utf8'));
  assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@noble/hashes', 'bs58', 'undici', 'ws']);
  // The compiled sources are the client and what it shares with the server, no server module.
  assert.deepEqual(readdirSync(join(app, 'node_modules/txrelay-client/dist')).sort(), ['client', 'shared']);
});

test('a script in the install directory sends real EVM and Solana transactions through the packaged client', async (t) => {
  if (skip) return t.skip(skip);
  const key = (await relay!.createAccount({ plan: 'paid', evm: { tps: 100, burst: 100 }, solana: { tps: 100, burst: 100 } })).uuid;
  const sol = legacyTransfer();
  const evm = await signed1559({ nonce: 0 });
  const input = join(app, 'input.json');
  writeFileSync(input, JSON.stringify({ url: relay!.base, solana: Buffer.from(sol.bytes).toString('base64'), signature: sol.signature, evm: evm.hex, hash: evm.hash }));
  // Plain JavaScript, as a user of the package writes it; it sees only the installed tree.
  writeFileSync(
    join(app, 'probe.mjs'),
    `import { readFileSync } from 'node:fs';
import { EvmClient, SolanaClient, RelaySocket } from 'txrelay-client';
const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const key = process.env.TXRELAY_KEY;
const evm = new EvmClient({ url: input.url, uuid: key, heartbeatMs: 0 });
const sol = new SolanaClient({ url: input.url, apiKey: key, heartbeatMs: 0 });
const ws = new RelaySocket({ url: input.url, apiKey: key });
const out = { resolved: import.meta.resolve('txrelay-client') };
out.solana = await sol.sendTransaction(Buffer.from(input.solana, 'base64'));
out.evm = await evm.sendRawTransaction(input.evm);
out.solanaForward = (await sol.waitForward(input.signature, { timeout: 60000 })).state;
out.evmForward = (await evm.waitForward(input.hash, { timeout: 60000 })).state;
out.socket = (await ws.statuses([input.hash, input.signature])).map((s) => s.state);
await Promise.all([evm.close(), sol.close(), ws.close()]);
console.log(JSON.stringify(out));
`,
  );
  // The key goes by environment, never on a command line or into a file.
  const r = await run(process.execPath, ['probe.mjs', input], { cwd: app, env: { PATH: process.env.PATH, TXRELAY_KEY: key } });
  const out = JSON.parse(r.stdout);
  assert.ok(out.resolved.startsWith(`file://${join(app, 'node_modules', 'txrelay-client')}/`), out.resolved);
  const { requestId: solId, ...solana } = out.solana;
  const { requestId: evmId, ...evmOut } = out.evm;
  assert.equal(typeof solId, 'string');
  assert.equal(typeof evmId, 'string');
  assert.deepEqual(solana, { kind: 'accepted', signature: sol.signature, duplicate: false });
  assert.deepEqual(evmOut, { kind: 'queued', hash: evm.hash });
  assert.equal(out.solanaForward, 'forwarded');
  assert.equal(out.evmForward, 'forwarded');
  assert.deepEqual(out.socket, ['forwarded', 'forwarded']);
  // The upstreams received exactly these transactions.
  assert.ok(rpcUp!.calls().some((c) => c.method === 'sendTransaction' && Buffer.from(c.params[0], 'base64').equals(Buffer.from(sol.bytes))));
  assert.ok(evmUp!.calls().some((c) => c.method === 'eth_sendRawTransaction' && c.params[0] === evm.hex));
});
