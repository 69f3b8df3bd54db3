/**
 * The acceptor ceiling: a bare uWS server (the same build txrelay loads)
 * answering txrelay's request shapes with a constant status and a body of the
 * same size, after reading the body fully through onData as txrelay's doors
 * do. Whatever it costs per request is the floor of any uWS-based relay.
 *
 *   node dist/bench/e2e/bare-server.js <port>     prints READY <port>
 *   GET /__count → requests answered so far (read by the orchestrator).
 */
import { loadUws, type HttpResponse, type HttpRequest } from '../../src/server/uws.js';

const port = Number(process.argv[2] ?? 0);
const { uws } = loadUws();
let count = 0;

// Same sizes as txrelay's success answers: an 88-char base58 signature / a 0x-prefixed 32-byte hash.
const SIG = '5'.repeat(88);
const HASH = '0x' + 'a'.repeat(64);
const SOLANA_OK = `{"jsonrpc":"2.0","result":"${SIG}","id":null}`;
const EVM_OK = `{"jsonrpc":"2.0","id":null,"result":"${HASH}","message":"Successfully forwarded"}`;

function answer(res: HttpResponse, status: string, body: string, evm: boolean): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  let len = 0;
  res.onData((chunk, isLast) => {
    // Copy like txrelay does (the chunk is only valid during the callback).
    len += Buffer.from(new Uint8Array(chunk)).length;
    if (!isLast || aborted) return;
    count++;
    res.cork(() => {
      res.writeStatus(status).writeHeader('content-type', 'application/json');
      if (evm) res.writeHeader('x-svc-submission-state', 'queued').writeHeader('access-control-allow-origin', '*');
      res.end(body);
    });
  });
}

const app = uws.App();
app.post('/v2', (res) => answer(res, '200 OK', SOLANA_OK, false));
app.post('/v2/svc_send_raw_transaction', (res) => answer(res, '202 Accepted', EVM_OK, true));
app.post('/', (res, req: HttpRequest) => {
  const solana = req.getHeader('api-key') !== '';
  answer(res, solana ? '200 OK' : '202 Accepted', solana ? SOLANA_OK : EVM_OK, !solana);
});
app.get('/__count', (res) => {
  res.cork(() => res.end(String(count)));
});
app.any('/*', (res) => {
  res.cork(() => res.writeStatus('404 Not Found').end());
});
app.listen('127.0.0.1', port, (s) => {
  if (!s) {
    process.stderr.write(`bare-server: cannot listen on ${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`READY ${uws.us_socket_local_port(s)}\n`);
});
process.on('SIGTERM', () => process.exit(0));
