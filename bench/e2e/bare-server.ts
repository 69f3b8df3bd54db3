/**
 * The acceptor ceiling: a bare uWS server (the same build txrelay loads)
 * answering txrelay's request shapes with a constant status and a body of
 * about the same size, after reading the body fully through onData as
 * txrelay's doors do. Whatever it costs per request is the floor of any uWS-based relay.
 *
 *   node dist/bench/e2e/bare-server.js <port>     prints READY <port>
 *   GET /__count → requests answered so far (read by the orchestrator).
 *
 * With BARE_CHECK=1 the single-transaction doors also run the crypto
 * ceiling's check on the body (bench/e2e/check.ts) before answering: the
 * floor of a relay that checks inline, measured as one process. Serially,
 * that floor is well above the sum of the two ceilings measured apart
 * (each in its own hot loop), and the report shows both. With
 * BARE_CHECK=turn the handlers only keep the bodies, and the turn's checks
 * and answers run together after its sockets are read (`setImmediate`), as
 * a busy txrelay does: the floor of a relay that batches per turn.
 */
import { loadUws, type HttpResponse, type HttpRequest } from '../../src/ingress/uws.js';
import { initKeccak } from '../../src/chains/evm/hash.js';
import { checkTx } from './check.js';

const CHECK = process.env.BARE_CHECK === '1' || process.env.BARE_CHECK === 'turn';
const PER_TURN = process.env.BARE_CHECK === 'turn';
if (CHECK) await initKeccak();

const port = Number(process.argv[2] ?? 0);
const { uws } = loadUws();
let count = 0;

// Same sizes as txrelay's success answers: an 88-char base58 signature / a 0x-prefixed 32-byte hash.
const SIG = '5'.repeat(88);
const HASH = '0x' + 'a'.repeat(64);
const SOLANA_OK = `{"jsonrpc":"2.0","result":"${SIG}","id":null}`;
const EVM_OK = `{"jsonrpc":"2.0","id":null,"result":"${HASH}","message":"Successfully forwarded"}`;
const BATCH_ID = '01JD' + '0'.repeat(22);
const evmItem = (i: number) =>
  `{"tx_index":${i},"tx_hash":"${HASH}","status":"queued","duplicate":false,"retry":"do_not_retry_automatically","message":"Successfully forwarded"}`;
/** Family A batch answers by item count, built once. */
const evmBatch = new Map<number, string>();
function evmBatchOk(n: number): string {
  let a = evmBatch.get(n);
  if (a === undefined) {
    a = `{"jsonrpc":"2.0","id":1,"result":{"batch_id":"${BATCH_ID}","transactions":[${Array.from({ length: n }, (_, i) => evmItem(i)).join(',')}]}}`;
    evmBatch.set(n, a);
  }
  return a;
}
const bundleOk = (n: number) => `{"jsonrpc":"2.0","id":null,"result":[${Array.from({ length: n }, () => `"${SIG}"`).join(',')}]}`;

type Answer = { status: string; body: string; headers: [string, string][] };
const EVM_HEADERS: [string, string][] = [
  ['x-svc-submission-state', 'queued'],
  ['access-control-allow-origin', '*'],
];
const SOLANA: Answer = { status: '200 OK', body: SOLANA_OK, headers: [] };
const EVM: Answer = { status: '202 Accepted', body: EVM_OK, headers: EVM_HEADERS };

/** Reads the whole body (copied, as txrelay copies it: a chunk is only valid during its callback), then answers what `decide` picks. */
function answer(res: HttpResponse, decide: (body: Buffer) => Answer): void {
  if (PER_TURN) return answerPerTurn(res, decide);
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast || aborted) return;
    count++;
    write(res, decide(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
  });
}

/** BARE_CHECK=turn: the same reading, the body kept for the end of the turn (the abort flag lives where the turn can see it). */
function answerPerTurn(res: HttpResponse, decide: (body: Buffer) => Answer): void {
  const state = { aborted: false };
  res.onAborted(() => {
    state.aborted = true;
  });
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast || state.aborted) return;
    count++;
    hold(res, state, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), decide);
  });
}

function write(res: HttpResponse, a: Answer): void {
  res.cork(() => {
    res.writeStatus(a.status).writeHeader('content-type', 'application/json');
    for (const [k, v] of a.headers) res.writeHeader(k, v);
    res.end(a.body);
  });
}

// BARE_CHECK=turn: what the turn's handlers kept, checked and answered together at its end.
const turn: { res: HttpResponse; state: { aborted: boolean }; body: Buffer; decide: (body: Buffer) => Answer }[] = [];
function hold(res: HttpResponse, state: { aborted: boolean }, body: Buffer, decide: (body: Buffer) => Answer): void {
  if (turn.push({ res, state, body, decide }) === 1) setImmediate(endTurn);
}
function endTurn(): void {
  const items = turn.splice(0);
  const answers = items.map((x) => x.decide(x.body));
  items.forEach((x, i) => {
    if (!x.state.aborted) write(x.res, answers[i]!);
  });
}

const BATCH_METHOD = Buffer.from('svc_sendRawTransactionBatch');
const HEX_ITEM = Buffer.from('"0x');

function countOf(body: Buffer, needle: Buffer): number {
  let n = 0;
  for (let i = body.indexOf(needle); i !== -1; i = body.indexOf(needle, i + needle.length)) n++;
  return n;
}

const app = uws.App();
app.post('/v2', (res) => answer(res, (body) => (CHECK ? (checkTx('solana-v2', body), SOLANA) : SOLANA)));
app.post('/v2/svc_send_raw_transaction', (res) => answer(res, (body) => (CHECK ? (checkTx('evm-text', body), EVM) : EVM)));
app.post('/v2/batch', (res) => answer(res, (body) => ({ status: '200 OK', body: bundleOk(body[0] ?? 1), headers: [] })));
app.post('/', (res, req: HttpRequest) => {
  if (req.getHeader('api-key') !== '') return answer(res, (body) => (CHECK ? (checkTx('solana-rpc', body), SOLANA) : SOLANA));
  answer(res, (body) =>
    CHECK && !body.includes(BATCH_METHOD)
      ? (checkTx('evm-rpc', body), EVM)
      : body.includes(BATCH_METHOD) ? { status: '202 Accepted', body: evmBatchOk(countOf(body, HEX_ITEM)), headers: [['x-svc-batch-id', BATCH_ID], ...EVM_HEADERS] } : EVM,
  );
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
