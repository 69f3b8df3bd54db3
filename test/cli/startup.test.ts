/**
 * A start that fails is one plain line on stderr, `txrelay: <what> — <what to
 * do>`, naming the key, its environment variable or the path, then a non-zero
 * exit, with nothing on stdout before it (docs/operations.md#start-up-failures).
 * A start that succeeds logs JSON lines to a pipe and readable lines to a
 * terminal. Every case runs the real CLI as a child process, except the
 * configurations it refuses: all of them take one path (loadConfig's
 * ConfigError, then startupLine, then exit 2), which one real start with an
 * unparsable file covers; the other refusals check their line from the same
 * two functions in this process, without a start each.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import dgram from 'node:dgram';
import { loadConfig } from '../../src/config/load.js';
import { startupLine } from '../../src/cli/startup.js';
import { ConfigError, E } from '../../src/errors.js';
import { TEST_DEDUP_ENV } from '../helpers/dedup-size.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const isRoot = process.getuid?.() === 0;

function tempDir(t: TestContext): string {
  const d = mkdtempSync(join(tmpdir(), 'txrelay-startup-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** The test runner's environment without its own TXRELAY_* variables, every listener on a free port. */
function baseEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TXRELAY_')) env[k] = v;
  return {
    ...env,
    TXRELAY_STORAGE_DATA_DIR: dataDir,
    ...TEST_DEDUP_ENV,
    TXRELAY_HTTP_PORT: '0',
    TXRELAY_ADMIN_PORT: '0',
    TXRELAY_UDP_PORT: '0',
    TXRELAY_WORKERS_THREADS: '1',
    TXRELAY_LOG_LEVEL: 'info',
    ...extra,
  };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `txrelay serve`; `unprivileged`: as root, with every capability dropped (see below). */
function serve(args: string[], env: NodeJS.ProcessEnv, unprivileged = false): Promise<Run> {
  return new Promise((resolve, reject) => {
    const argv = [CLI, 'serve', ...args];
    const child =
      unprivileged && isRoot
        ? spawn(SETPRIV, [...DROP_CAPS, process.execPath, ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The failure shape every case shares; returns the line. */
function oneLine(r: Run, code = 1): string {
  assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
  assert.equal(r.stdout, '', 'nothing on stdout, no JSON log line before the message');
  assert.ok(r.stderr.endsWith('\n'), r.stderr);
  const lines = r.stderr.slice(0, -1).split('\n');
  assert.equal(lines.length, 1, `exactly one line on stderr:\n${r.stderr}`);
  const line = lines[0]!;
  assert.match(line, /^txrelay: .+ — .+/, 'txrelay: <what> — <what to do>');
  assert.ok(!line.trimStart().startsWith('{') && !/\bat .+:\d+:\d+/.test(line), 'no JSON, no stack');
  return line;
}

/**
 * What `txrelay serve [-c file]` says of a configuration it refuses, from the
 * functions it runs (src/cli/main.ts: loadConfig, then exitOnStartupError):
 * the line, and exit code 2, the configuration's.
 */
function refusedConfig(file: string | undefined, env: NodeJS.ProcessEnv): string {
  try {
    loadConfig({ file, env });
  } catch (e) {
    assert.ok(e instanceof ConfigError && e.spec === E.CONFIG, `a configuration error (exit code 2): ${String(e)}`);
    const line = `txrelay: ${startupLine(e)}`;
    assert.ok(!line.includes('\n'), 'one line');
    assert.match(line, /^txrelay: .+ — .+/, 'txrelay: <what> — <what to do>');
    return line;
  }
  assert.fail('the configuration was accepted');
}

function tcpHolder(t: TestContext): Promise<number> {
  const s = net.createServer();
  t.after(() => s.close());
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port)));
}

function udpHolder(t: TestContext): Promise<number> {
  const s = dgram.createSocket('udp4');
  t.after(() => s.close());
  return new Promise((resolve) => s.bind(0, '127.0.0.1', () => resolve(s.address().port)));
}

/**
 * As root, the cases that need a process without privileges run the CLI
 * through util-linux's setpriv with every capability dropped: still uid 0, so
 * it reads the checkout wherever it lies, but it may neither bind a port
 * below 1024 nor write where the permission bits forbid its owner.
 */
const SETPRIV = '/usr/bin/setpriv';
const DROP_CAPS = ['--bounding-set=-all', '--inh-caps=-all'];

function unprivilegedSkip(): string | false {
  if (isRoot && !existsSync(SETPRIV)) return `running as root and ${SETPRIV} is missing: cannot drop privileges for this case`;
  return false;
}

/** A low port this process's child will be refused. */
function lowPortSkip(): string | false {
  let start = 1024;
  try {
    start = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  } catch {
    // Not Linux's knob: the classic rule.
  }
  if (start <= 80) return `unprivileged processes may bind port 80 here (ip_unprivileged_port_start ${start})`;
  return unprivilegedSkip();
}

describe('txrelay serve start-up', { concurrency: true }, () => {
  test('the HTTP port in use: one line naming http.port and TXRELAY_HTTP_PORT', async (t) => {
    const port = await tcpHolder(t);
    const line = oneLine(await serve([], baseEnv(join(tempDir(t), 'data'), { TXRELAY_HTTP_PORT: String(port) })));
    assert.ok(line.includes(`http.port ${port} is already in use`) && line.includes('TXRELAY_HTTP_PORT'), line);
  });

  test('the admin port in use: one line naming admin.port and TXRELAY_ADMIN_PORT', async (t) => {
    const port = await tcpHolder(t);
    const line = oneLine(await serve([], baseEnv(join(tempDir(t), 'data'), { TXRELAY_ADMIN_PORT: String(port) })));
    assert.ok(line.includes(`admin.port ${port} is already in use`) && line.includes('TXRELAY_ADMIN_PORT'), line);
  });

  test('the UDP port in use: one line naming udp.port and TXRELAY_UDP_PORT, with one socket or several', async (t) => {
    const port = await udpHolder(t);
    for (const sockets of ['1', '2']) {
      const line = oneLine(await serve([], baseEnv(join(tempDir(t), 'data'), { TXRELAY_UDP_PORT: String(port), TXRELAY_UDP_SOCKETS: sockets })));
      assert.ok(line.includes(`udp.port ${port} is already in use`) && line.includes('TXRELAY_UDP_PORT'), line);
    }
  });

  test('a port below 1024 without the privilege: one line saying so, naming http.port', async (t) => {
    const skip = lowPortSkip();
    if (skip) return t.skip(skip);
    const data = join(tempDir(t), 'data');
    const line = oneLine(await serve([], baseEnv(data, { TXRELAY_HTTP_PORT: '80' }), true));
    assert.ok(line.includes('http.port 80') && line.includes('below 1024') && line.includes('TXRELAY_HTTP_PORT'), line);
  });

  test('a data directory this user cannot write, or cannot create: one line naming storage.data_dir, TXRELAY_STORAGE_DATA_DIR and the path', async (t) => {
    const dir = tempDir(t);
    // A file where a directory should be, whoever runs it.
    writeFileSync(join(dir, 'file'), '');
    const inTheWay = oneLine(await serve([], baseEnv(join(dir, 'file', 'data'))));
    assert.ok(inTheWay.includes(`storage.data_dir ${join(dir, 'file', 'data')} cannot be created: a file is in the way`), inTheWay);
    // A place that can never hold a directory (Node's recursive mkdir loops forever on it).
    if (existsSync('/proc/self')) {
      const proc = oneLine(await serve([], baseEnv('/proc/txrelay-data')));
      assert.ok(proc.includes('storage.data_dir /proc/txrelay-data cannot be used') && proc.includes('TXRELAY_STORAGE_DATA_DIR'), proc);
    }
    const skip = unprivilegedSkip();
    if (skip) return t.skip(skip);
    // 0555 locks a directory for its owner, once the owner has no capability to override it.
    const locked = join(dir, 'locked');
    mkdirSync(locked, { mode: 0o555 });
    const notWritable = oneLine(await serve([], baseEnv(locked), true));
    assert.ok(notWritable.includes(`storage.data_dir ${locked} is not writable`) && notWritable.includes('TXRELAY_STORAGE_DATA_DIR'), notWritable);
    const below = join(locked, 'data');
    const notCreatable = oneLine(await serve([], baseEnv(below), true));
    assert.ok(notCreatable.includes(`storage.data_dir ${below} cannot be created`) && notCreatable.includes('TXRELAY_STORAGE_DATA_DIR'), notCreatable);
  });

  test('a missing or unparsable configuration file: one line with the path (and line and column), exit code 2', async (t) => {
    const dir = tempDir(t);
    const env = baseEnv(join(dir, 'data'));
    // The real CLI, once: a refused configuration is one line on stderr, nothing on stdout, exit code 2.
    const bad = join(dir, 'bad.toml');
    writeFileSync(bad, '[http]\nport = 1\n[udp\nenabled = true\n');
    const toml = oneLine(await serve(['--config', bad], env), 2);
    assert.ok(toml.includes(`config file ${bad} line 3, column`) && toml.includes('invalid TOML'), toml);
    assert.equal(refusedConfig(bad, env), toml, 'the same line in this process as from the CLI');
    const missing = refusedConfig(join(dir, 'nope.toml'), env);
    assert.ok(missing.includes(`config file ${join(dir, 'nope.toml')} does not exist`), missing);
    const badJson = join(dir, 'bad.json');
    writeFileSync(badJson, '{\n  "http": { "port": 1, }\n}\n');
    const json = refusedConfig(badJson, env);
    assert.ok(json.includes(`config file ${badJson} line 2, column`) && json.includes('invalid JSON'), json);
  });

  test('an invalid value is described in words, from the file or from the environment', (t) => {
    const dir = tempDir(t);
    const file = join(dir, 'relay.toml');
    writeFileSync(file, '[solana]\nrpc_upstreams = ["foo"]\n');
    const fromFile = refusedConfig(file, baseEnv(join(dir, 'data')));
    assert.equal(fromFile, `txrelay: solana.rpc_upstreams[0] must be an http:// or https:// URL, got "foo" — fix it in ${file} (or set TXRELAY_SOLANA_RPC_UPSTREAMS)`);
    const fromEnv = refusedConfig(undefined, baseEnv(join(dir, 'data'), { TXRELAY_HTTP_PORT: '70000' }));
    assert.equal(fromEnv, 'txrelay: http.port must be from 0 to 65535, got 70000 (from TXRELAY_HTTP_PORT) — fix or unset TXRELAY_HTTP_PORT');
  });

  test('an unknown key in the file and an unknown TXRELAY_* variable are refused with the nearest real one', (t) => {
    const dir = tempDir(t);
    const file = join(dir, 'relay.toml');
    writeFileSync(file, '[http]\nprot = 9000\n');
    const key = refusedConfig(file, baseEnv(join(dir, 'data')));
    assert.equal(key, `txrelay: unknown key http.prot in ${file} — did you mean http.port?`);
    const variable = refusedConfig(undefined, baseEnv(join(dir, 'data'), { TXRELAY_HTTP_PROT: '9000' }));
    assert.equal(variable, 'txrelay: unknown environment variable TXRELAY_HTTP_PROT — did you mean TXRELAY_HTTP_PORT?');
  });

  test('PostgreSQL registry unreachable on a first start: one line naming database.url and TXRELAY_DATABASE_URL', async (t) => {
    // A port that was free a moment ago: nothing answers there.
    const s = net.createServer();
    const port = await new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port)));
    await new Promise((r) => s.close(r));
    const env = baseEnv(join(tempDir(t), 'data'), { TXRELAY_REGISTRY_MODE: 'postgres', TXRELAY_DATABASE_URL: `postgres://txrelay@127.0.0.1:${port}/none` });
    const line = oneLine(await serve([], env));
    assert.ok(line.includes('does not answer') && line.includes('database.url (TXRELAY_DATABASE_URL)'), line);
  });

  /** Runs until `txrelay listening` is logged, then stops it with SIGTERM; resolves with everything it wrote. */
  function startAndStop(child: ChildProcess, listening: (out: string) => boolean): Promise<{ out: string; err: string; code: number | null }> {
    return new Promise((resolve, reject) => {
      let out = '';
      let err = '';
      let stopped = false;
      child.stdout!.on('data', (d) => {
        out += d;
        if (!stopped && listening(out)) {
          stopped = true;
          child.kill('SIGTERM');
        }
      });
      child.stderr!.on('data', (d) => (err += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ out, err, code }));
    });
  }

  test('an allowed TXRELAY_TEST_* variable passes; without a terminal the logs are JSON lines', async (t) => {
    const env = baseEnv(join(tempDir(t), 'data'), { TXRELAY_TEST_SOMETHING: '1', TXRELAY_NO_NATIVE: '0' });
    const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = await startAndStop(child, (out) => out.includes('"msg":"txrelay listening"'));
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trim().split('\n');
    for (const l of lines) assert.equal((JSON.parse(l) as { svc: string }).svc, 'txrelay', l);
    assert.ok(lines.some((l) => (JSON.parse(l) as { msg: string }).msg === 'txrelay listening'));
  });

  test('on a terminal the logs are readable lines, not JSON', async (t) => {
    if (spawnSync('script', ['--version']).error) return t.skip('script (util-linux) is not installed: no pseudo-terminal to run the relay on');
    const dir = tempDir(t);
    const env = baseEnv(join(dir, 'data'));
    // script gives the relay a pseudo-terminal as stdout, copies it to ours, and passes SIGTERM on.
    const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} serve`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = await startAndStop(child, (out) => out.includes('txrelay listening'));
    const line = r.out.split(/\r?\n/).find((l) => l.includes('txrelay listening'))!;
    assert.ok(!line.trimStart().startsWith('{'), line);
    // eslint-disable-next-line no-control-regex
    assert.match(line.replace(/\x1b\[[0-9;]*m/g, ''), /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: txrelay listening /);
  });
});
