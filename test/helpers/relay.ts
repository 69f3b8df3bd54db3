/**
 * Starts a real relay in-process for tests: every listener on an ephemeral
 * port, a fresh data directory, embedded defaults plus the overrides given.
 * Talks to it over real sockets only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { Relay } from '../../src/relay.js';
import type { NewAccount } from '../../src/store/accounts.js';
import { TEST_DEDUP_CAPACITY } from './dedup-size.js';

export const ADMIN_TOKEN = 'test-admin-token';

export interface TestRelay {
  relay: Relay;
  base: string;
  admin: string;
  udpPort: number;
  dataDir: string;
  createAccount(body?: Record<string, unknown>): Promise<NewAccount>;
  adminCall(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export async function startTestRelay(overrides: Record<string, any> = {}, dataDir?: string): Promise<TestRelay> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'txrelay-test-'));
  const base = {
    // TXRELAY_TEST_ACCEPTOR=node runs the suite on the node:http fallback (CI's Node 24 pass does it without asking).
    // TXRELAY_TEST_ACCEPTORS=2 runs every relay with two acceptor threads.
    http: {
      port: 0,
      ...(process.env.TXRELAY_TEST_ACCEPTOR ? { acceptor: process.env.TXRELAY_TEST_ACCEPTOR } : {}),
      ...(process.env.TXRELAY_TEST_ACCEPTORS ? { acceptors: Number(process.env.TXRELAY_TEST_ACCEPTORS) } : {}),
    },
    udp: { port: 0 },
    admin: { port: 0, token: ADMIN_TOKEN },
    storage: { data_dir: dir },
    log: { level: 'silent' },
    dedup: { capacity: TEST_DEDUP_CAPACITY },
    // The suite runs four files at once on two cores, so a check can wait a tenth of a second for CPU: the
    // production bounds would shed it (503). That is load, not what these tests check; the tests of shedding
    // and of the queue bound set their own limits.
    limits: { queue_target_ms: 1000, queue_max_ms: 10000 },
    // TXRELAY_TEST_WORKERS=0 checks everything on the main thread; TXRELAY_TEST_INLINE=never everything on the worker.
    workers: { threads: Number(process.env.TXRELAY_TEST_WORKERS ?? 1), inline: process.env.TXRELAY_TEST_INLINE ?? 'auto' },
  };
  const config = loadConfig({ env: {}, overrides: deepMerge(base, overrides) });
  const relay = await Relay.start({ config });
  const httpBase = `http://127.0.0.1:${relay.ports.http}`;
  const adminBase = `http://127.0.0.1:${relay.ports.admin}`;
  const adminCall = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(adminBase + path, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : null };
  };
  return {
    relay,
    base: httpBase,
    admin: adminBase,
    udpPort: relay.ports.udp ?? 0,
    dataDir: dir,
    adminCall,
    async createAccount(body = {}) {
      const r = await adminCall('POST', '/admin/accounts', body);
      if (r.status !== 201) throw new Error(`create account: ${r.status} ${JSON.stringify(r.json)}`);
      return r.json as NewAccount;
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(adminBase + '/metrics')).text();
      const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
      let sum = 0;
      for (const line of text.split('\n')) {
        if (!line.startsWith(name)) continue;
        const rest = line.slice(name.length);
        if (rest[0] !== ' ' && rest[0] !== '{') continue;
        if (want.every((w) => rest.includes(w))) sum += Number(line.split(' ').pop());
      }
      return sum;
    },
    async stop(opts = {}) {
      await relay.stop();
      if (!opts.keepData && !dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function deepMerge(a: any, b: any): any {
  const out = { ...a };
  for (const [k, v] of Object.entries(b ?? {})) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && typeof a[k] === 'object' ? deepMerge(a[k], v) : v;
  }
  return out;
}

/** Polls `cond` until true or `ms` elapse; for waiting on asynchronous forwarding. */
export async function eventually(cond: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A POST answered in full: status, headers, body text, and the body as JSON where it parses. */
export async function postTo(url: string, body: string | Uint8Array, headers: Record<string, string>): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const r = await fetch(url, { method: 'POST', headers, body });
  const text = await r.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}
