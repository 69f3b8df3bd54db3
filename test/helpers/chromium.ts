/**
 * Headless Chromium for the browser tests: the binary, starting it on a page
 * in its own process group, stopping the whole tree, and the small page
 * servers the tests run beside it. A test skips with one line when
 * CHROMIUM is missing (scripts/ensure-chromium.sh installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';

export const CHROMIUM = '/usr/bin/chromium';
/** A page that has not reported by then failed. */
const BROWSER_TIMEOUT_MS = 20_000;

/** Listens on a free loopback port; resolves to its base URL. */
export function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

export function close(server: http.Server): Promise<void> {
  // Chromium's keep-alive sockets would otherwise hold close() open.
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Starts Chromium in its own process group so the whole tree (renderer, zygote, ...) can be ended together. */
export function launchChromium(url: string, profile: string, extraArgs: string[] = []): { child: ChildProcess; stderr: () => string; exited: Promise<void> } {
  const child = spawn(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      // Without these Chromium phones home at start-up, and on this network that gets its connections refused.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      ...extraArgs,
      url,
    ],
    { detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    // Only the tail matters for a diagnosis.
    err = (err + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, stderr: () => err, exited };
}

export async function stopChromium(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const group = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // Already gone.
    }
  };
  group('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), 3000)));
  if ((await Promise.race([exited, slow])) === 'slow') {
    group('SIGKILL');
    await exited;
  }
  clearTimeout(timer);
}

/**
 * Serves `html` at a page of its own origin, opens it in Chromium and
 * resolves with the JSON the page POSTs to `/report`: whichever comes first,
 * that, Chromium dying, or the time limit. What it started goes on `cleanup`;
 * `redact` hides secrets in the Chromium stderr quoted on failure.
 */
export async function pageReport<T>(html: string, cleanup: (() => Promise<void> | void)[], redact: (s: string) => string): Promise<T> {
  let onReport!: (r: T) => void;
  const reported = new Promise<T>((resolve) => (onReport = resolve));
  const page = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(html);
    } else if (req.method === 'POST' && req.url === '/report') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(204).end();
        onReport(JSON.parse(Buffer.concat(chunks).toString()) as T);
      });
    } else {
      res.writeHead(404).end(); // favicon and the like
    }
  });
  const pageBase = await listen(page);
  cleanup.push(() => close(page));
  const profile = mkdtempSync(join(tmpdir(), 'txrelay-chromium-'));
  // Retries: Chromium's helpers may still be letting go of the profile just after the main process exits.
  cleanup.push(() => rmSync(profile, { recursive: true, force: true, maxRetries: 5 }));
  const browser = launchChromium(`${pageBase}/`, profile);
  cleanup.push(() => stopChromium(browser.child, browser.exited));
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    reported,
    browser.exited.then(() => {
      throw new Error(`chromium exited before the page reported (code ${browser.child.exitCode}); stderr tail:\n${redact(browser.stderr())}`);
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no report from the page within ${BROWSER_TIMEOUT_MS} ms; stderr tail:\n${redact(browser.stderr())}`)), BROWSER_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ---- DevTools protocol: for pages that must not talk to anything (screenshots, network audit) ----

/** A DevTools protocol session on one page: commands, and every event received so far. */
export interface DevToolsPage {
  send(method: string, params?: Record<string, unknown>): Promise<any>;
  /** Every event so far, in arrival order (e.g. Network.requestWillBeSent). */
  events: { method: string; params: any }[];
  /** Resolves with the next event of that name. */
  next(method: string): Promise<any>;
}

/**
 * Starts Chromium on about:blank with the DevTools protocol on an ephemeral
 * port and attaches to its page. What it started goes on `cleanup`.
 */
export async function devToolsPage(cleanup: (() => Promise<void> | void)[]): Promise<DevToolsPage> {
  const { WebSocket } = await import('ws');
  const profile = mkdtempSync(join(tmpdir(), 'txrelay-chromium-'));
  cleanup.push(() => rmSync(profile, { recursive: true, force: true, maxRetries: 5 }));
  const browser = launchChromium('about:blank', profile, ['--remote-debugging-port=0', '--remote-debugging-address=127.0.0.1']);
  cleanup.push(() => stopChromium(browser.child, browser.exited));
  // Chromium prints the browser endpoint on stderr once it listens.
  const end = Date.now() + BROWSER_TIMEOUT_MS;
  let port: string | undefined;
  while (!(port = /DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(browser.stderr())?.[1])) {
    if (browser.child.exitCode !== null || Date.now() > end) throw new Error(`no DevTools endpoint from chromium; stderr tail:\n${browser.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
  const page = targets.find((t) => t.type === 'page');
  if (!page) throw new Error('chromium has no page target');
  const ws = new WebSocket(page.webSocketDebuggerUrl, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  cleanup.push(() => ws.close());
  let id = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const waiters = new Map<string, ((p: any) => void)[]>();
  const events: DevToolsPage['events'] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.id !== undefined) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) p?.reject(new Error(`${m.error.message} (${m.error.code})`));
      else p?.resolve(m.result);
    } else {
      events.push({ method: m.method, params: m.params });
      const w = waiters.get(m.method);
      if (w?.length) for (const f of w.splice(0)) f(m.params);
    }
  });
  return {
    events,
    send(method, params = {}) {
      const n = ++id;
      ws.send(JSON.stringify({ id: n, method, params }));
      return new Promise((resolve, reject) => pending.set(n, { resolve, reject }));
    },
    next(method) {
      return new Promise((resolve) => waiters.set(method, [...(waiters.get(method) ?? []), resolve]));
    },
  };
}

/**
 * Decodes the PNGs Chromium's screenshots are (8-bit RGB or RGBA, not
 * interlaced) into RGBA pixels, with node:zlib: enough to look at what a
 * page rendered without an image library.
 */
export function decodePng(png: Buffer): { width: number; height: number; rgba: Buffer } {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('latin1', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const colour = data[9];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || data[12] !== 0) throw new Error(`PNG depth ${depth} colour type ${colour}: not what this decoder reads`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const cur = Buffer.alloc(stride);
  const prev = Buffer.alloc(stride);
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const filter = raw[y * (stride + 1)];
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? cur[i - channels]! : 0;
      const b = prev[i]!;
      const c = i >= channels ? prev[i - channels]! : 0;
      let v = row[i]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = v & 0xff;
    }
    for (let x = 0; x < width; x++) {
      for (let k = 0; k < 3; k++) rgba[(y * width + x) * 4 + k] = cur[x * channels + k]!;
      rgba[(y * width + x) * 4 + 3] = channels === 4 ? cur[x * channels + 3]! : 255;
    }
    cur.copy(prev);
  }
  return { width, height, rgba };
}
