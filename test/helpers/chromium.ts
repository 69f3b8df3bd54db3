/**
 * Headless Chromium for the browser tests: the binary, starting it on a page
 * in its own process group, stopping the whole tree, and the small page
 * servers the tests run beside it. A test skips with one line when
 * CHROMIUM is missing (scripts/ensure-chromium.sh installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const CHROMIUM = '/usr/bin/chromium';

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
