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
export function launchChromium(url: string, profile: string): { child: ChildProcess; stderr: () => string; exited: Promise<void> } {
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
