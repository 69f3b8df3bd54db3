#!/usr/bin/env node
// A stand-in upstream for trying txrelay by hand: prints every JSON-RPC call
// it receives (method and the first bytes of each transaction) and answers
// success. Usage: node scripts/demo-upstream.mjs [port]   (default 8899)
import http from 'node:http';

const port = Number(process.argv[2] ?? 8899);
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let msg;
      try {
        msg = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const calls = Array.isArray(msg) ? msg : [msg];
      for (const c of calls) {
        const p = c.params?.[0];
        const shown = Array.isArray(p) ? `[${p.map((t) => String(t).slice(0, 16) + '…').join(', ')}]` : String(p).slice(0, 24) + '…';
        console.log(`${new Date().toISOString()} ${c.method} ${shown}`);
      }
      const answer = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: 'ok' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Array.isArray(msg) ? answer : answer[0]));
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`demo upstream on http://127.0.0.1:${port}`));
