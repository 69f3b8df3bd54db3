/**
 * The subscription side of `subscriptions` in a worker thread, so that
 * reading a flood of notifications does not sit on the event loop of the
 * script measuring latency. Opens `sockets` WebSockets with the attacker's
 * key, sends `perSocket` `txrelay_subscribe` calls on each, and one socket
 * with the victim's key and one subscription; then counts every
 * notification (without parsing it) until told to stop.
 *
 *   new Worker(new URL('./subscribe-worker.mjs', import.meta.url), { workerData: { url, attackerKey,
 *     victimKey, sockets, perSocket } })
 *   worker -> { ready: { made, refused, opened, failed_opens } }; main -> 'stop'; worker -> { counts }
 */
import { workerData, parentPort } from 'node:worker_threads';
import WebSocket from 'ws';

const { url, attackerKey, victimKey, sockets, perSocket } = workerData;
/** Sockets opened at once while setting up. */
const BATCH = 100;
const counts = { attacker_notifications: 0, victim_notifications: 0, close_codes: {} };
let made = 0;
let refused = 0;
let failedOpens = 0;
const open = [];

function subscribe(key, n, onPush) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { 'api-key': key }, perMessageDeflate: false });
    let answers = 0;
    let ok = 0;
    const settle = (v) => {
      resolve(v);
      settle.done = true;
    };
    ws.on('open', () => {
      for (let i = 1; i <= n; i++) ws.send(`{"jsonrpc":"2.0","id":${i},"method":"txrelay_subscribe","params":["statuses"]}`);
    });
    ws.on('message', (d) => {
      const text = d.toString();
      if (text.includes('"method":"txrelay_status"')) return onPush();
      answers++;
      if (text.includes('"result":')) ok++;
      if (answers === n && !settle.done) settle({ ws, ok, refused: n - ok });
    });
    ws.on('error', () => {});
    ws.on('close', (code) => {
      counts.close_codes[code] = (counts.close_codes[code] ?? 0) + 1;
      if (!settle.done) settle(null);
    });
  });
}

for (let i = 0; i < sockets; i += BATCH) {
  const got = await Promise.all(Array.from({ length: Math.min(BATCH, sockets - i) }, () => subscribe(attackerKey, perSocket, () => counts.attacker_notifications++)));
  for (const g of got) {
    if (g === null) failedOpens++;
    else {
      made += g.ok;
      refused += g.refused;
      open.push(g.ws);
    }
  }
}
const victim = await subscribe(victimKey, 1, () => counts.victim_notifications++);
if (victim !== null) open.push(victim.ws);
parentPort.postMessage({ ready: { made, refused, opened: sockets - failedOpens, failed_opens: failedOpens, victim_subscribed: victim?.ok === 1 } });

parentPort.on('message', (m) => {
  if (m === 'take') {
    parentPort.postMessage({ counts: { ...counts, close_codes: { ...counts.close_codes } } });
    counts.attacker_notifications = 0;
    counts.victim_notifications = 0;
    return;
  }
  if (m === 'stop') {
    for (const ws of open) ws.terminate();
    parentPort.postMessage({ stopped: true });
    parentPort.close();
  }
});
