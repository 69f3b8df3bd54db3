/**
 * A closed-loop HTTP flooder in a worker thread, so that its sending does not
 * sit on the event loop of the script measuring latency. Each of
 * `connections` keep-alive connections sends the same request back to back
 * (or a body from `bodies` in turn) for `durationMs`; the worker posts back
 * request counts by status and the bytes it received.
 *
 *   new Worker(new URL('./flood-worker.mjs', import.meta.url), { workerData: { origin, path, method,
 *     headers, body | bodies, connections, durationMs, localAddress } })
 */
import { workerData, parentPort } from 'node:worker_threads';
import { Client } from 'undici';

const { origin, path, method = 'POST', headers = {}, body, bodies, connections = 1, durationMs, localAddress } = workerData;
const statuses = {};
let requests = 0;
let bytesIn = 0;
let errors = 0;
let batchIds = 0;
const end = Date.now() + durationMs;
let next = 0;

async function loop() {
  const client = new Client(origin, { pipelining: 1, connect: localAddress ? { localAddress } : undefined, headersTimeout: 30_000, bodyTimeout: 30_000 });
  try {
    while (Date.now() < end) {
      const b = bodies ? bodies[next++ % bodies.length] : body;
      try {
        const r = await client.request({ path, method, headers, body: b });
        const buf = Buffer.from(await r.body.arrayBuffer());
        requests++;
        bytesIn += buf.length;
        statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
        if (r.headers['x-svc-batch-id']) batchIds++;
      } catch {
        errors++;
      }
    }
  } finally {
    await client.close().catch(() => {});
  }
}

await Promise.all(Array.from({ length: connections }, loop));
parentPort.postMessage({ requests, statuses, bytes_in: bytesIn, errors, batch_ids: batchIds, duration_ms: durationMs });
