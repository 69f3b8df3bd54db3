/**
 * The plain-text door's browser behaviour (docs/protocol.md#evm-single-transactions),
 * checked in a real headless Chromium: a cross-origin page POSTs a signed
 * transaction to the plain-text EVM door with `fetch`, URL auth and
 * `text/plain`, and
 *   - the browser sends it as a CORS simple request (no OPTIONS preflight),
 *   - the page can read the status, the body and the exposed
 *     `x-svc-submission-state` / `x-svc-duplicate` headers,
 *   - `Authorization: Bearer` does trigger a preflight, which the relay answers.
 *
 * Layout: page server (origin A) serves the page and collects its report;
 * a recording proxy (origin B) logs every request's method and path and
 * forwards it to an in-process relay. Two different ports make A and B
 * different origins, so CORS really applies.
 *
 * Needs /usr/bin/chromium (scripts/ensure-chromium.sh installs it); without
 * it the test skips with one line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { CHROMIUM, close, listen, pageReport } from '../helpers/chromium.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { signed1559 } from '../helpers/evm.js';

const DOOR = '/v2/svc_send_raw_transaction';

/** What the proxy saw; the query is reduced to a flag so the UUID never reaches assertion output. */
interface Seen {
  method: string;
  path: string;
  authQuery: boolean;
  authHeader: boolean;
}

interface CallResult {
  status: number;
  state: string | null;
  duplicate: string | null;
  result: unknown;
}

interface Report {
  first?: CallResult;
  second?: CallResult;
  bearer?: CallResult;
  error?: string;
}

/** Forwards every request to `target` unchanged (body streamed both ways) and records method and path. */
function recordingProxy(target: string, seen: Seen[]): { server: http.Server; agent: http.Agent } {
  const up = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    seen.push({ method: req.method ?? '', path: url.pathname, authQuery: url.searchParams.has('auth'), authHeader: req.headers.authorization !== undefined });
    const fwd = http.request(
      { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers, agent },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    fwd.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(fwd);
  });
  return { server, agent };
}

/** The page: three fetches in sequence, then one same-origin report of what the browser could read. */
function pageHtml(cfg: { proxy: string; uuid: string; hex: string; bearerHex: string }): string {
  // The UUID travels inside the page, not in the page's URL (docs/protocol.md#authentication).
  return `<!doctype html>
<meta charset="utf-8">
<title>txrelay CORS check</title>
<script>
const CFG = ${JSON.stringify(cfg)};
const DOOR = CFG.proxy + ${JSON.stringify(DOOR)};
async function call(url, headers, body) {
  const r = await fetch(url, { method: 'POST', headers, body });
  return {
    status: r.status,
    state: r.headers.get('x-svc-submission-state'),
    duplicate: r.headers.get('x-svc-duplicate'),
    result: (await r.json()).result,
  };
}
(async () => {
  const out = {};
  try {
    const urlAuth = DOOR + '?auth=' + encodeURIComponent(CFG.uuid);
    out.first = await call(urlAuth, { 'content-type': 'text/plain' }, CFG.hex);
    out.second = await call(urlAuth, { 'content-type': 'text/plain' }, CFG.hex);
    out.bearer = await call(DOOR, { 'content-type': 'text/plain', authorization: 'Bearer ' + CFG.uuid }, CFG.bearerHex);
  } catch (e) {
    out.error = String((e && e.message) || e);
  }
  await fetch('/report', { method: 'POST', body: JSON.stringify(out) });
})();
</script>
`;
}

test('browser: plain-text door with URL auth is a CORS simple request; exposed headers are readable; Bearer preflights', async (t) => {
  if (!existsSync(CHROMIUM)) {
    t.skip('chromium not installed (scripts/ensure-chromium.sh installs it): skipping the browser test');
    return;
  }
  const cleanup: (() => Promise<void> | void)[] = [];
  let uuid = '';
  const redact = (s: string) => (uuid ? s.split(uuid).join('<uuid>') : s);
  try {
    const relay: TestRelay = await startTestRelay();
    cleanup.push(() => relay.stop());
    uuid = (await relay.createAccount({ evm: { tps: 1000, burst: 1000 } })).uuid;
    const nonce = randomInt(1, 2 ** 40);
    const tx = await signed1559({ nonce });
    const bearerTx = await signed1559({ nonce: nonce + 1 });

    const seen: Seen[] = [];
    const proxy = recordingProxy(relay.base, seen);
    const proxyBase = await listen(proxy.server);
    cleanup.push(async () => {
      await close(proxy.server);
      proxy.agent.destroy();
    });

    const html = pageHtml({ proxy: proxyBase, uuid, hex: tx.hex, bearerHex: bearerTx.hex });
    const report = await pageReport<Report>(html, cleanup, redact);

    assert.equal(report.error, undefined, `the page's fetch failed: ${redact(report.error ?? '')}`);
    // First URL-auth call: accepted, and the exposed headers are visible to script.
    assert.deepEqual(report.first, { status: 202, state: 'queued', duplicate: null, result: tx.hash });
    // Same transaction again: a duplicate, readable from the page.
    assert.deepEqual(report.second, { status: 202, state: 'queued', duplicate: 'true', result: tx.hash });
    // Bearer: still succeeds (after its preflight).
    assert.deepEqual(report.bearer, { status: 202, state: 'queued', duplicate: null, result: bearerTx.hash });

    // What reached the relay, in order: two bare POSTs for URL auth (no preflight),
    // then OPTIONS before the Bearer POST (the preflight carries no credential).
    assert.deepEqual(seen, [
      { method: 'POST', path: DOOR, authQuery: true, authHeader: false },
      { method: 'POST', path: DOOR, authQuery: true, authHeader: false },
      { method: 'OPTIONS', path: DOOR, authQuery: false, authHeader: false },
      { method: 'POST', path: DOOR, authQuery: false, authHeader: true },
    ]);
  } finally {
    // Reverse order: browser first, then servers, then the relay.
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch {
        // Keep cleaning up; the test's own failure (if any) is what matters.
      }
    }
  }
});
