/**
 * Family B doors (SPEC 4.4-4.7): JSON-RPC `sendTransaction`, raw `POST /v2`,
 * bundles on `POST /v2/batch`, and `GET /ping`. Each translates its wire
 * format into the admission pipeline and the outcome back into SPEC's
 * response shapes; none of them decides anything the pipeline decides.
 */
import { E, RelayError } from '../../errors.js';
import { base58Decode } from '../../native/base58.js';
import { MAX_V1_TX_SIZE } from '../../chains/solana/decode.js';
import { base64DecodedLength, decodeBase64Into } from '../../chains/solana/base64.js';
import type { Admission, Block, SolanaOutcome } from '../../pipeline/admission.js';
import { begin, fixedHeaders, readBodyTo, retryHeaders, sendHeld, sendJson, sendText, type BodyTarget, type Headers, type Res } from '../http.js';
import { rpcErrorBody } from './jsonrpc.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import type { DoorContext } from './context.js';

/** SPEC 2.5: count byte + up to 4 u16 lengths + up to 4 transactions of at most 4096 bytes (v1). */
const MAX_BUNDLE = 4;
const MAX_BUNDLE_BODY = 1 + 2 * MAX_BUNDLE + MAX_BUNDLE * MAX_V1_TX_SIZE;
/** base58 of 4096 bytes is at most ~5600 characters (log 256 / log 58 = 1.366 per byte). */
const MAX_BASE58_CHARS = Math.ceil(MAX_V1_TX_SIZE * 1.3658) + 1;

const DUPLICATE = fixedHeaders([['x-svc-duplicate', 'true']]);
const TEXT = 'text/plain; charset=utf-8';
const JSON_CT = 'application/json';

/** Family B error bodies are SPEC 7.2's plain text on every HTTP door (DECISIONS 6). */
function sendPlainError(res: Res, err: RelayError): void {
  if (err.holdMs > 0) return sendHeld(res, err.holdMs, err.spec.http, TEXT, err.text, retryHeaders(err));
  sendText(res, err.spec.http, err.text, retryHeaders(err));
}

function successJson(result: string, id: string): string {
  return `{"jsonrpc":"2.0","result":${result},"id":${id}}`;
}

export function registerSolanaDoors(ctx: DoorContext): void {
  const { app, admission } = ctx;

  app.get('/ping', (res) => {
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'text/plain; charset=utf-8').end('pong');
    });
  });

  // POST /v2: the raw bytes of one transaction (SPEC 4.5). Content-Type is ignored (DECISIONS 6).
  const v2Timer = ctx.timer('solana-v2');
  const batchTimer = ctx.timer('solana-batch');
  app.post('/v2', (r: HttpResponse, req: HttpRequest) => {
    const res = begin(r, v2Timer);
    const shed = admission.arrive('solana');
    if (shed) return sendPlainError(res, shed);
    const refused = admission.gate('solana', req.getHeader('api-key') || null, ctx.ip(res, req), 1);
    if (refused instanceof RelayError) return sendPlainError(res, refused);
    readBodyTo(res, req, MAX_V1_TX_SIZE, new V2Body(res, admission));
  });

  // POST /v2/batch: a bundle (SPEC 2.5, 4.6).
  app.post('/v2/batch', (r: HttpResponse, req: HttpRequest) => {
    const res = begin(r, batchTimer);
    const shed = admission.arrive('solana');
    if (shed) return sendPlainError(res, shed);
    const rec = admission.gate('solana', req.getHeader('api-key') || null, ctx.ip(res, req), 1, true);
    if (rec instanceof RelayError) return sendPlainError(res, rec);
    readBodyTo(res, req, MAX_BUNDLE_BODY, new BundleBody(res, admission, rec.solana.min_tip_lamports));
  });

  ctx.rpc.register('sendTransaction', (reply, info, call) => {
    const fail = (err: RelayError) => {
      // Family B: 401 and 429 carry SPEC 7.2's plain text on every door; the rest are JSON-RPC errors.
      if (err.spec.http === 401 || err.spec.http === 429) return reply(err.spec.http, TEXT, err.text, retryHeaders(err));
      reply(err.spec.http, JSON_CT, rpcErrorBody(err, call.id));
    };
    const refused = admission.gate('solana', info.apiKey, null, 1);
    if (refused instanceof RelayError) return fail(refused);
    const tx = parseSendTransactionParams(call.params);
    if (tx instanceof RelayError) return fail(tx);
    const block = decodeInto(admission, tx.data, tx.encoding);
    if (block instanceof RelayError) return fail(block);
    // Base64 that decoded is canonical (decodeInto checked the round trip): the lane forwards the client's own text.
    admission.solanaSingle(
      block,
      false,
      (o) => {
        if (!o.ok) return fail(o.error);
        reply(200, JSON_CT, successJson(`"${o.signatures[0]}"`, call.id), o.duplicate ? DUPLICATE : undefined);
      },
      tx.encoding === 'base64' ? tx.data : null,
    );
  });
}

/**
 * One `POST /v2` request's body: its bytes go straight into a slab block.
 * One object per request, where a closure per callback and their shared
 * context were (src/ingress/http.ts readBodyTo).
 */
class V2Body implements BodyTarget {
  private block: Block | null = null;

  constructor(
    private readonly res: Res,
    private readonly admission: Admission,
  ) {}

  into(len: number): Uint8Array | null {
    if (len === 0) {
      sendPlainError(this.res, new RelayError(E.SOL_DECODE, 'empty body'));
      return null;
    }
    this.block = this.admission.reserve(len);
    if (this.block === null) {
      sendPlainError(this.res, this.admission.capacityError('slab full'));
      return null;
    }
    return this.admission.view(this.block);
  }

  body(bytes: Uint8Array): void {
    let block = this.block;
    if (block === null) {
      // Chunked upload: assembled by readBodyTo, copied into the slab here.
      block = this.admission.copyIn(bytes);
      if (block === null) return sendPlainError(this.res, this.admission.capacityError('slab full'));
    } else block.length = bytes.length;
    const res = this.res;
    this.admission.solanaSingle(block, false, (o) => answerV2(res, o));
  }

  tooLarge(n: number): void {
    sendPlainError(this.res, new RelayError(E.SOL_DECODE, `transaction is ${n} bytes, more than ${MAX_V1_TX_SIZE}`));
  }
}

/** One bundle request's body (readBodyTo): one object per request instead of a closure per callback. */
class BundleBody implements BodyTarget {
  constructor(
    private readonly res: Res,
    private readonly admission: Admission,
    private readonly minTip: number,
  ) {}

  body(bytes: Uint8Array): void {
    const blocks = splitBundle(this.admission, bytes);
    if (blocks instanceof RelayError) return sendPlainError(this.res, blocks);
    const res = this.res;
    this.admission.solanaBundle(blocks, this.minTip, (o) => {
      if (!o.ok) return sendPlainError(res, o.error);
      sendJson(res, 200, successJson(JSON.stringify(o.signatures), 'null'), o.duplicate ? DUPLICATE : undefined);
    });
  }

  tooLarge(n: number): void {
    sendPlainError(this.res, new RelayError(E.BATCH_DECODE, `body is ${n} bytes, more than ${MAX_BUNDLE_BODY}`));
  }
}

function answerV2(res: Res, o: SolanaOutcome): void {
  if (!o.ok) return sendPlainError(res, o.error);
  sendJson(res, 200, successJson(`"${o.signatures[0]}"`, 'null'), o.duplicate ? DUPLICATE : undefined);
}

/** SPEC 2.5 layout: count, u16 LE lengths, concatenated transactions; total length exact. */
export function splitBundle(admission: Admission, body: Uint8Array): Block[] | RelayError {
  const bad = (m: string) => new RelayError(E.BATCH_DECODE, m);
  if (body.length < 1) return bad('empty body');
  const count = body[0]!;
  if (count < 1 || count > MAX_BUNDLE) return bad(`count must be 1 to ${MAX_BUNDLE}, got ${count}`);
  const header = 1 + 2 * count;
  if (body.length < header) return bad(`body shorter than its ${count} length fields`);
  let total = header;
  const lengths: number[] = [];
  for (let i = 0; i < count; i++) {
    const len = body[1 + 2 * i]! | (body[2 + 2 * i]! << 8);
    if (len === 0) return bad(`transaction ${i} has length 0`);
    lengths.push(len);
    total += len;
  }
  if (total !== body.length) return bad(`body length ${body.length} must equal 1 + 2*count + sum(lengths) = ${total}`);
  const blocks: Block[] = [];
  let off = header;
  for (let i = 0; i < count; i++) {
    const b = admission.copyIn(body.subarray(off, off + lengths[i]!));
    if (b === null) {
      for (const x of blocks) admission.release(x);
      return admission.capacityError('slab full');
    }
    blocks.push(b);
    off += lengths[i]!;
  }
  return blocks;
}

interface SendTxParams {
  data: string;
  encoding: 'base64' | 'base58';
}

function parseSendTransactionParams(params: unknown): SendTxParams | RelayError {
  const bad = (m: string) => new RelayError(E.INVALID_PARAMS, m);
  if (!Array.isArray(params) || params.length < 1 || params.length > 2) return bad('params must be [transaction, {encoding}]');
  const [data, opts] = params as [unknown, unknown];
  if (typeof data !== 'string') return bad('transaction must be a string');
  let encoding: 'base64' | 'base58' = 'base64';
  if (opts !== undefined && opts !== null) {
    if (typeof opts !== 'object' || Array.isArray(opts)) return bad('second parameter must be an object');
    const enc = (opts as { encoding?: unknown }).encoding;
    if (enc !== undefined) {
      if (enc !== 'base64' && enc !== 'base58') return bad('encoding must be base64 or base58');
      encoding = enc;
    }
  }
  return { data, encoding };
}

/**
 * Decodes the transaction text straight into the slab (the one copy).
 * Base64 is strict (src/chains/solana/base64.ts): standard alphabet, padded,
 * canonical, as agave's RPC decodes it.
 */
function decodeInto(admission: Admission, data: string, encoding: 'base64' | 'base58'): Block | RelayError {
  const bad = (m: string) => new RelayError(E.SOL_DECODE, m);
  if (encoding === 'base58') {
    if (data.length > MAX_BASE58_CHARS) return bad('transaction too large');
    const bytes = base58Decode(data, MAX_V1_TX_SIZE);
    if (bytes === null) return bad('invalid base58');
    return admission.copyIn(bytes) ?? admission.capacityError('slab full');
  }
  const len = base64DecodedLength(data);
  if (len < 0) return bad('invalid base64');
  if (len === 0) return bad('empty transaction');
  if (len > MAX_V1_TX_SIZE) return bad(`transaction is ${len} bytes, more than ${MAX_V1_TX_SIZE}`);
  const block = admission.reserve(len);
  if (block === null) return admission.capacityError('slab full');
  if (!admission.decodeInto(block, data, decodeBase64Into)) {
    admission.release(block);
    return bad('invalid base64');
  }
  return block;
}
