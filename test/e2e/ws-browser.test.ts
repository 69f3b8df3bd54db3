/**
 * The WebSocket door (docs/protocol.md#websocket) from a real browser: a page
 * in headless Chromium, served from another origin, opens
 * `new WebSocket('ws://…/ws?api-key=KEY')` (a browser cannot set headers on a
 * WebSocket, so the key goes in the query), and
 *   - subscribes to statuses, sends a signed Solana transaction with
 *     `sendTransaction` and reads its answer (the signature), then the pushed
 *     notifications `queued` and `forwarded` (forwarded to a real upstream);
 *   - sends a message that is not JSON, gets -32700, and the socket stays open
 *     (a call after it is still answered);
 *   - with a wrong key gets no open socket: the upgrade is refused with 401,
 *     which the browser only sees as `error` and a `close` with 1006, and
 *     nothing of it is admitted.
 *
 * Layout as in browser-cors.test.ts: a page server (origin A) serves the page
 * and collects its report; the page talks straight to the relay's HTTP port
 * (origin B). The transaction's bytes are made here (test/helpers/solana.ts)
 * and handed to the page as base64.
 *
 * Needs /usr/bin/chromium (scripts/ensure-chromium.sh installs it); without
 * it the test skips with one line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { CHROMIUM, pageReport } from '../helpers/chromium.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { legacyTransfer } from '../helpers/solana.js';


/** What the page saw of the socket opened with a wrong key. */
interface Refused {
  opened: boolean;
  error: boolean;
  closeCode: number | null;
  wasClean: boolean | null;
  messages: number;
}

/** What the page saw of the socket opened with the account's key. */
interface Opened {
  subscription: unknown;
  sent: { result?: unknown; error?: unknown };
  /** Every `txrelay_status` notification, in arrival order. */
  notifications: { method: string; params: { subscription: unknown; result: { id: string; state: string; door?: string } } }[];
  /** Position of the `sendTransaction` answer and of the first notification among all messages. */
  answerAt: number;
  firstPushAt: number;
  parse: { id: unknown; error?: { code: number } } | null;
  readyStateAfterParse: number;
  afterParse: { result?: { state: string }[]; error?: unknown } | null;
  closed: { code: number } | null;
}

interface Report {
  refused?: Refused;
  opened?: Opened;
  error?: string;
}

/** The page: the refused socket first, then the real one; one same-origin report of what the browser saw. */
function pageHtml(cfg: { ws: string; key: string; wrongKey: string; txB64: string; signature: string }): string {
  // The keys travel inside the page, not in the page's URL.
  return `<!doctype html>
<meta charset="utf-8">
<title>txrelay WebSocket check</title>
<script>
const CFG = ${JSON.stringify(cfg)};
const url = (key) => CFG.ws + '?api-key=' + encodeURIComponent(key);

function refused() {
  return new Promise((resolve) => {
    const out = { opened: false, error: false, closeCode: null, wasClean: null, messages: 0 };
    const ws = new WebSocket(url(CFG.wrongKey));
    ws.onopen = () => { out.opened = true; ws.close(); };
    ws.onmessage = () => { out.messages++; };
    ws.onerror = () => { out.error = true; };
    ws.onclose = (e) => { out.closeCode = e.code; out.wasClean = e.wasClean; resolve(out); };
  });
}

function opened() {
  return new Promise((resolve, reject) => {
    const messages = [];
    const waiters = [];
    let closed = null;
    const ws = new WebSocket(url(CFG.key));
    const wake = () => { for (const w of waiters.splice(0)) w(); };
    ws.onmessage = (e) => { messages.push(JSON.parse(e.data)); wake(); };
    ws.onclose = (e) => { closed = { code: e.code }; wake(); };
    ws.onerror = () => {};
    const until = (find, what) => new Promise((res, rej) => {
      const end = Date.now() + 8000;
      const look = () => {
        const v = find();
        if (v !== undefined) return res(v);
        if (closed) return rej(new Error('socket closed (' + closed.code + ') waiting for ' + what));
        if (Date.now() > end) return rej(new Error('timed out waiting for ' + what + '; got ' + JSON.stringify(messages).slice(0, 600)));
        waiters.push(look);
        setTimeout(wake, 100);
      };
      look();
    });
    const byId = (id) => messages.find((m) => m.id === id);
    const call = (id, method, params) => {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return until(() => byId(id), 'the answer to ' + method);
    };
    const pushes = () => messages.filter((m) => m.method === 'txrelay_status' && m.params.result.id === CFG.signature);
    ws.onopen = async () => {
      try {
        const sub = await call(1, 'txrelay_subscribe', ['statuses']);
        const sent = await call(2, 'sendTransaction', [CFG.txB64, { encoding: 'base64' }]);
        await until(() => (pushes().some((p) => p.params.result.state !== 'queued') ? true : undefined), 'the notification after queued');
        const notifications = pushes();
        const answerAt = messages.indexOf(byId(2));
        const firstPushAt = messages.indexOf(notifications[0]);
        const before = messages.length;
        ws.send('this is not json {');
        const parse = await until(() => messages.slice(before).find((m) => m.id === null || m.error), 'the parse error');
        const readyStateAfterParse = ws.readyState;
        const afterParse = await call(3, 'txrelay_getStatuses', [[CFG.signature]]);
        resolve({
          subscription: sub.result,
          sent: { result: sent.result, error: sent.error },
          notifications, answerAt, firstPushAt, parse, readyStateAfterParse,
          afterParse: { result: afterParse.result, error: afterParse.error },
          closed,
        });
        ws.close(1000);
      } catch (e) {
        reject(e);
      }
    };
  });
}

(async () => {
  const out = {};
  try {
    out.refused = await refused();
    out.opened = await opened();
  } catch (e) {
    out.error = String((e && e.message) || e);
  }
  await fetch('/report', { method: 'POST', body: JSON.stringify(out) });
})();
</script>
`;
}

test('browser: a page opens /ws?api-key=, subscribes, sends a Solana transaction and gets its pushes; bad JSON is -32700 on an open socket; a wrong key opens nothing', async (t) => {
  if (!existsSync(CHROMIUM)) {
    t.skip('chromium not installed (scripts/ensure-chromium.sh installs it): skipping the browser test');
    return;
  }
  const cleanup: (() => Promise<void> | void)[] = [];
  const secrets: string[] = [];
  const redact = (s: string) => secrets.reduce((acc, k) => acc.split(k).join('<key>'), s);
  try {
    const up = await startUpstream();
    cleanup.push(() => up.close());
    const relay: TestRelay = await startTestRelay({ solana: { rpc_upstreams: [up.url] } });
    cleanup.push(() => relay.stop());
    const key = (await relay.createAccount({ plan: 'paid', solana: { tps: 100, burst: 100 } })).uuid;
    const wrongKey = randomUUID();
    secrets.push(key, wrongKey);
    const tx = legacyTransfer();

    const html = pageHtml({
      ws: relay.base.replace('http', 'ws') + '/ws',
      key,
      wrongKey,
      txB64: Buffer.from(tx.bytes).toString('base64'),
      signature: tx.signature,
    });
    const report = await pageReport<Report>(html, cleanup, redact);
    // Nothing the page reports carries a key; this keeps it so should that change.
    const shown = (v: unknown) => redact(JSON.stringify(v));

    assert.equal(report.error, undefined, `the page's socket failed: ${redact(report.error ?? '')}`);

    // The wrong key: the upgrade is refused (401) before any socket, which a browser sees as error + 1006.
    assert.deepEqual(report.refused, { opened: false, error: true, closeCode: 1006, wasClean: false, messages: 0 }, shown(report.refused));
    assert.equal(await relay.metric('txrelay_rejected_total', { code: 'TXR_AUTH_INVALID' }), 1, 'the refused upgrade counted as an unknown credential');

    const o = report.opened!;
    // The answer is the signature, and it comes before the first notification.
    assert.equal(typeof o.subscription, 'number', shown(o));
    assert.deepEqual(o.sent, { result: tx.signature }, shown(o.sent));
    assert.ok(o.answerAt >= 0 && o.answerAt < o.firstPushAt, `the answer (message ${o.answerAt}) before the first push (message ${o.firstPushAt})`);
    // Pushed: queued at admission, then forwarded once the upstream accepted it.
    assert.deepEqual(
      o.notifications.map((n) => [n.method, n.params.subscription, n.params.result.id, n.params.result.state, n.params.result.door]),
      [
        ['txrelay_status', o.subscription, tx.signature, 'queued', 'ws'],
        ['txrelay_status', o.subscription, tx.signature, 'forwarded', 'ws'],
      ],
      shown(o.notifications),
    );
    // Not JSON: -32700 with id null, and the socket is still open and still answering.
    assert.equal(o.parse?.error?.code, -32700, shown(o.parse));
    assert.equal(o.parse?.id, null);
    assert.equal(o.readyStateAfterParse, 1, 'WebSocket.OPEN after the parse error');
    assert.equal(o.afterParse?.result?.[0]?.state, 'forwarded', shown(o.afterParse));
    assert.equal(o.closed, null, 'the socket was not closed under the page');

    // Exactly one transaction reached the relay's lanes and the upstream: the page's, once.
    assert.equal(await relay.metric('txrelay_admitted_total'), 1);
    const calls = up.calls();
    assert.equal(calls.length, 1, `upstream calls: ${calls.map((c) => c.method).join(', ')}`);
    assert.equal(calls[0]!.method, 'sendTransaction');
    assert.equal(Buffer.from(calls[0]!.params[0], 'base64').toString('base64'), Buffer.from(tx.bytes).toString('base64'));
  } finally {
    // Reverse order: browser first, then servers, then the relay and the upstream.
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch {
        // Keep cleaning up; the test's own failure (if any) is what matters.
      }
    }
  }
});
