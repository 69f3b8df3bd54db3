/**
 * A stand-in upstream for the reliability scripts: a plain node:http JSON-RPC
 * server that answers `eth_sendRawTransaction`, `sendTransaction` and
 * `sendBundle` (single calls and arrays) and remembers which transactions it
 * answered with a result. `hang()` makes it read requests and never answer;
 * `recover()` answers again and drops the
 * held requests (the relay has timed them out by then).
 *
 * A transaction is identified by the string the relay forwards: `0x` hex for
 * EVM (lowercased), base64 for Solana, the joined base64 list for a bundle.
 */
import { createServer } from 'node:http';

export async function startUpstream() {
  let hanging = false;
  const delivered = new Set();
  const held = new Set();
  const sockets = new Set();
  const stats = { requests: 0, calls: 0, answered_calls: 0, held_requests: 0 };

  const key = (call) => {
    const p = call?.params?.[0];
    if (call?.method === 'sendBundle' && Array.isArray(p)) return p.join(',');
    return typeof p === 'string' ? (p.startsWith('0x') ? p.toLowerCase() : p) : null;
  };
  const result = (call) => ({ jsonrpc: '2.0', id: call?.id ?? null, result: call?.method === 'eth_sendRawTransaction' ? '0x' + '00'.repeat(32) : 'ok' });

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      stats.requests++;
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const calls = Array.isArray(body) ? body : [body];
      stats.calls += calls.length;
      if (hanging) {
        stats.held_requests++;
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      for (const c of calls) {
        const k = key(c);
        if (k) delivered.add(k);
      }
      stats.answered_calls += calls.length;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Array.isArray(body) ? calls.map(result) : result(body)));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/`;

  return {
    url,
    delivered,
    stats,
    hang() {
      hanging = true;
    },
    recover() {
      hanging = false;
      for (const res of held) res.destroy();
      held.clear();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
