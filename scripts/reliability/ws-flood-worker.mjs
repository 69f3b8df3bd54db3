/**
 * A WebSocket flooder in a worker thread, so that masking and sending its
 * messages does not sit on the event loop of the script measuring latency:
 * one socket keeps `inFlight` copies of `body` unanswered for `durationMs`
 * (a new one sent per answer), opening a new socket at once whenever the
 * relay closes it; posts back the answers by error code and the closes by code.
 *
 *   new Worker(new URL('./ws-flood-worker.mjs', import.meta.url), { workerData: { url, body, inFlight, durationMs } })
 */
import { workerData, parentPort } from 'node:worker_threads';
import WebSocket from 'ws';

const { url, body, inFlight, durationMs } = workerData;
const codes = {};
const closes = {};
let answers = 0;
let flooding = true;
let ws = null;

async function connect() {
  const s = new WebSocket(url, { maxPayload: 1 << 20 });
  await new Promise((resolve, reject) => {
    s.once('open', resolve);
    s.once('error', reject);
  });
  s.on('error', () => {});
  s.on('message', (d) => {
    answers++;
    // The code sits near the start of an error answer: no need to parse the rest.
    const m = /"code":(-?\d+)/.exec(d.toString('latin1', 0, 64));
    const code = m ? m[1] : 'result';
    codes[code] = (codes[code] ?? 0) + 1;
    if (flooding && s.readyState === WebSocket.OPEN) s.send(body);
  });
  s.on('close', (code) => {
    if (!flooding) return;
    closes[code] = (closes[code] ?? 0) + 1;
    connect().catch(() => {});
  });
  ws = s;
  for (let i = 0; i < inFlight; i++) s.send(body);
}

await connect();
await new Promise((r) => setTimeout(r, durationMs));
flooding = false;
ws.close();
parentPort.postMessage({ answers, error_codes: codes, closes });
