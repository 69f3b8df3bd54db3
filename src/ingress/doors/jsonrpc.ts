/**
 * `POST /`: one JSON-RPC endpoint for both families, dispatched on `method`
 * (docs/protocol.md#doors):
 *
 *   eth_sendRawTransaction        EVM, one `0x` transaction, Bearer
 *   svc_sendRawTransactionBatch   EVM batch, 1 to evm.max_batch transactions, Bearer
 *   sendTransaction               Solana, base64 (default) or base58, api-key
 *   sendBundle                    Solana bundle (Jito's), 1 to 4 transactions, base58 (default) or base64, api-key
 *
 * Jito's paths (jito.ts) are served here too, each with its own methods and
 * Jito's credentials. Solana calls answer as Solana clients expect: every
 * error but 401 and 429 is HTTP 200 with the JSON-RPC error object
 * (docs/protocol.md#solana-json-rpc).
 *
 * The request is one Submission, read once it passed the shed and per-IP
 * checks; its calls become Submissions of their own, admitted in order and
 * answered together. A standard JSON-RPC array (of `eth_sendRawTransaction`
 * only) gets an array of single answers. An array holds at most
 * `evm.max_batch` calls, counted from its bytes before parsing: 43k
 * unauthenticated `{}` in one body cost 0.22 s of the event loop without it.
 *
 * The WebSocket door (ws.ts) hands each message here as such a body: the same
 * calls, gate and answers, with the socket's credential for every call and
 * the JSON-RPC error object where HTTP would answer a Solana caller in plain
 * text (docs/protocol.md#websocket).
 */
import { E, RelayError, SOLANA_HEADER } from '../../errors.js';
import type { Outcome } from '../../pipeline/outcome.js';
import type { Family } from '../../pipeline/accounts.js';
import { Encoding, Kind, Next, Submission, type DoorIo, type Sink } from '../../pipeline/submission.js';
import { TAKES_JITO, TAKES_RPC, tipsWords, write, rpcError, type Answer, type DoorWords } from '../../answers/answer.js';
import { Shape, renderCall, renderWhole, type Call } from '../../answers/rpc.js';
import { MAX_BUNDLE, bundleId } from '../../pipeline/bundle.js';
import { JSON_TYPE, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, bodyTo, httpIo, type DoorContext } from './context.js';
import { BEARER_FORM, bearer } from './evm.js';
import { TOO_DEEP_DETAIL, scanCall, tooDeep, topLevelElements } from './rpc-scan.js';
import { apiKeyQuery } from './api-key.js';
import { JITO_BUNDLES, JITO_BUNDLE_METHODS, JITO_STATUS_METHODS, JITO_TRANSACTIONS, JITO_TRANSACTION_METHODS, jitoHead, jitoStatusRead, jitoStatuses, type JitoStatusOp } from './jito.js';

export interface RpcCall {
  method: string;
  params: unknown;
  /** JSON text (number, string or null), echoed verbatim. */
  id: string;
}

/** The WebSocket a body came over (ws.ts): authenticated at its upgrade. */
/** What an answer over a socket says of the client's pace. */
export const enum Pace {
  /** Some call went through. */
  Ok = 0,
  /** Refused, not for the rate (malformed, invalid, capacity). */
  Refused = 1,
  /** Every call refused for the account's rate. */
  Limited = 2,
}

export interface RpcSocket {
  /** The credential the upgrade carried, used for every call. */
  readonly credential: string;
  /** False once the socket closed. */
  readonly open: boolean;
  /** True once the socket closed: what the pipeline reads (Submission.conn). */
  readonly aborted: boolean;
  readonly ip: string;
  /** The family a status read or subscription is made as: one the account has enabled. */
  readonly family: Family;
  /** Writes an answer, after `holdMs` (a held shed); nothing once the socket closed. */
  answer(body: string, holdMs: number, pace?: Pace): void;
  /** A new subscription's id, or why not. */
  subscribe(): number | RelayError;
  unsubscribe(id: number): boolean;
}

/** An HTTP path this door serves: `POST /`, or one of Jito's. */
interface RpcRoute {
  /** Metric label and status door. */
  door: string;
  methods: ReadonlySet<string>;
  /** Jito's credentials (jito.ts), and every JSON-RPC error HTTP 200. */
  jito: boolean;
}

interface RpcRequest {
  res: Res | null;
  socket: RpcSocket | null;
  route: RpcRoute;
  /** The Solana credential: the api-key header (on Jito's paths, whichever of Jito's places held it). */
  apiKey: string | null;
  authorization: string | null;
  /** Jito's `?bundleOnly=true`: `sendTransaction` as a bundle of one. */
  bundleOnly: boolean;
  array: boolean;
  /** A WebSocket message, during its callback only (uWS takes it back after). */
  message: Uint8Array | null;
  t0: number;
}

/** A socket call that is no submission: answered by the socket itself once the gate let it through. */
type SocketOp = { op: 'subscribe' } | { op: 'unsubscribe'; id: number };
/** A read answered by the door once the gate let it through: Jito's `getTipAccounts`. */
type ReadOp = SocketOp | { op: 'tips' } | JitoStatusOp;
/** A `sendTransaction` admitted as a bundle of one (`ctx` of its Submission): answered with its signature. */
const BUNDLE_OF_ONE = 'bundle-of-one';

const ARRAY_METHODS = new Set(['eth_sendRawTransaction']);
const SOLANA_METHODS = new Set(['sendTransaction', 'sendBundle', ...JITO_STATUS_METHODS]);
const METHODS = new Set(['eth_sendRawTransaction', 'svc_sendRawTransactionBatch', 'sendTransaction', 'sendBundle', 'txrelay_getStatuses', ...JITO_STATUS_METHODS]);
const SOCKET_METHODS = new Set(['txrelay_subscribe', 'txrelay_unsubscribe']);
/** The wrong family's header names the right one. */
const EVM_HEADER = ' (EVM methods take `Authorization: Bearer <uuid>`; the api-key header is for Solana methods)';
/** A read (eth_chainId, getLatestBlockhash, ...) is the usual unknown method: say where it belongs. */
const ONLY_SENDS = ' (the relay only sends transactions; send reads to your chain RPC)';
/** Ids per status read (docs/protocol.md#status). */
const MAX_STATUS_IDS = 100;

/** Admits one WebSocket message as a JSON-RPC body; its answers go back through the socket. */
export type RpcMessage = (socket: RpcSocket, message: Uint8Array) => void;

export function registerJsonRpcDoor(ctx: DoorContext): RpcMessage {
  const { app, pipeline, reply } = ctx;
  const methods = new Set([...METHODS].filter((m) => (m === 'txrelay_getStatuses' ? true : SOLANA_METHODS.has(m) ? ctx.enabled.solana : ctx.enabled.evm)));
  const maxArray = ctx.maxBatch;
  const root: RpcRoute = { door: 'jsonrpc', methods, jito: false };
  const tips = JSON.stringify(ctx.tipAccounts);
  const rootWords: DoorWords = { takes: TAKES_RPC, tips: tipsWords(ctx.tipAccounts) };
  const jitoWords: DoorWords = { takes: TAKES_JITO, tips: rootWords.tips };

  const io: DoorIo = {
    ...httpIo(ctx, (sub) => (sub.ctx as RpcRequest).res!),
    // JSON-RPC is application/json; a missing Content-Type is 415 too.
    head: (sub) => {
      const req = sub.req as HttpRequest;
      if (!/^application\/json\s*(;|$)/i.test(req.getHeader('content-type'))) return new RelayError(E.UNSUPPORTED_MEDIA, 'use application/json');
      const rq = sub.ctx as RpcRequest;
      rq.authorization = req.getHeader('authorization') || null;
      if (rq.route.jito) {
        const head = jitoHead(req);
        if (head instanceof RelayError) return head;
        rq.apiKey = head.credential;
        rq.bundleOnly = head.bundleOnly;
      } else {
        // `?api-key=` (docs/protocol.md#authentication), read with the header before the shed decision (route below).
        const query = req.getQuery();
        const fromQuery = query ? apiKeyQuery(query) : null;
        if (fromQuery instanceof RelayError) return fromQuery;
        if (fromQuery !== null && req.getHeader('api-key') !== '') return new RelayError(E.INVALID_REQUEST, 'send the account UUID in one of the api-key header or ?api-key=');
      }
      // Checked by the gate before the body is read: a stranger's body is never buffered or parsed.
      sub.credential = rq.route.jito ? rq.apiKey : (rq.apiKey ?? bearer(rq.authorization));
      if (sub.credential === '') return new RelayError(E.AUTH_MISSING, BEARER_FORM);
      // Only the EVM header on a Jito path: the refusal names the one to use, as on the other Solana doors.
      if (rq.route.jito && sub.credential === null && rq.authorization !== null) return new RelayError(E.AUTH_MISSING, SOLANA_HEADER);
      return null;
    },
    parse: (sub, body) => readCalls(sub, body),
  };
  const socketIo: DoorIo = {
    peer: (sub) => (sub.ctx as RpcRequest).socket!.ip,
    parse: (sub, body) => readCalls(sub, body),
  };

  const callOf = (rq: RpcRequest, c: RpcCall | RelayError, id: string, io: DoorIo): Submission => {
    const door = rq.socket === null ? rq.route.door : 'ws';
    if (c instanceof RelayError) return refusedCall(c, id, io, door);
    const m = c.method;
    if (SOCKET_METHODS.has(m) && rq.socket === null) return refusedCall(new RelayError(E.METHOD_NOT_FOUND, `${m} (only on the WebSocket door, /ws)`), id, io, door);
    if (!rq.route.methods.has(m) && !(rq.socket !== null && SOCKET_METHODS.has(m))) {
      return refusedCall(new RelayError(E.METHOD_NOT_FOUND, m.slice(0, 64) + ONLY_SENDS), id, io, door);
    }
    if (rq.array && !ARRAY_METHODS.has(m)) return refusedCall(new RelayError(E.INVALID_REQUEST, `${m} cannot be sent inside a JSON-RPC array`), id, io, door);
    const p = c.params;
    // Over a WebSocket every call carries the upgrade's credential; over HTTP each family's own header.
    const sk = rq.socket;
    let sub: Submission;
    if (m === 'sendBundle' || (m === 'sendTransaction' && rq.bundleOnly)) {
      sub = solanaCall(rq, Kind.Bundle, io);
      // Jito's bundleOnly: a sendTransaction as a bundle of one, with the bundle rules and lane.
      const b = m === 'sendBundle' ? sendBundleParams(p) : bundleOfOne(sendTransactionParams(p));
      if (m !== 'sendBundle') sub.ctx = BUNDLE_OF_ONE;
      if (b instanceof RelayError) sub.invalid = b;
      else {
        sub.texts = b.data;
        sub.encoding = b.encoding;
      }
    } else if (m === 'sendTransaction') {
      sub = solanaCall(rq, Kind.SolanaTx, io);
      const tx = sendTransactionParams(p);
      if (tx instanceof RelayError) sub.invalid = tx;
      else {
        sub.text = tx.data;
        sub.encoding = tx.encoding;
        // Base64 that decodes is canonical (strict decoding): the lane forwards the client's own text.
        sub.textForwarded = tx.encoding === Encoding.Base64;
      }
    } else if (m === 'getTipAccounts') {
      // Read access, as a subscription: the gate and the status reads' limit, then the door answers.
      sub = new Submission(Kind.Query, 'solana', io);
      sub.credential = rq.apiKey;
      sub.queryIds = [];
      sub.ctx = { op: 'tips' } satisfies ReadOp;
    } else if (JITO_STATUS_METHODS.has(m)) {
      sub = jitoStatusRead(solanaCall(rq, Kind.Query, io), m, p);
    } else if (m === 'txrelay_getStatuses') {
      // Either family's credential: the statuses are the account's, whichever door sent them.
      sub = new Submission(Kind.Query, sk?.family ?? (rq.apiKey !== null ? 'solana' : 'evm'), io);
      sub.credential = sk?.credential ?? rq.apiKey ?? bearer(rq.authorization);
      const ids = statusIds(Array.isArray(p) && p.length === 1 ? p[0] : undefined);
      if (ids instanceof RelayError) sub.invalid = ids;
      else sub.queryIds = ids;
    } else if (sk !== null && SOCKET_METHODS.has(m)) {
      // A subscription is read access: the gate and the status reads' limit, then the socket answers.
      sub = new Submission(Kind.Query, sk.family, io);
      sub.credential = sk.credential;
      sub.queryIds = [];
      const op = socketOp(m, p);
      if (op instanceof RelayError) sub.invalid = op;
      else sub.ctx = op;
    } else if (m === 'eth_sendRawTransaction') {
      sub = new Submission(Kind.EvmTx, 'evm', io);
      sub.credential = sk?.credential ?? bearer(rq.authorization);
      if (sub.credential === null && rq.apiKey !== null) sub.refused = new RelayError(E.AUTH_MISSING, EVM_HEADER);
      if (!Array.isArray(p) || p.length !== 1 || typeof p[0] !== 'string') sub.invalid = new RelayError(E.INVALID_PARAMS, 'params must be ["0x…"]');
      else {
        sub.text = p[0];
        sub.textForwarded = true;
      }
    } else {
      sub = new Submission(Kind.EvmBatch, 'evm', io);
      sub.credential = sk?.credential ?? bearer(rq.authorization);
      if (sub.credential === null && rq.apiKey !== null) sub.refused = new RelayError(E.AUTH_MISSING, EVM_HEADER);
      if (!Array.isArray(p) || p.length < 1 || p.length > maxArray || !p.every((x) => typeof x === 'string')) {
        sub.invalid = new RelayError(E.INVALID_PARAMS, `params must be 1 to ${maxArray} "0x…" strings`);
      } else sub.texts = p as string[];
    }
    sub.door = door;
    sub.rpcId = id;
    return sub;
  };

  /** A Solana call: the socket's credential, else the api-key header's; only the EVM header is told which one to use. */
  const solanaCall = (rq: RpcRequest, kind: Kind, io: DoorIo): Submission => {
    const sub = new Submission(kind, 'solana', io);
    sub.credential = rq.socket?.credential ?? rq.apiKey;
    if (sub.credential === null && rq.authorization !== null) sub.refused = new RelayError(E.AUTH_MISSING, SOLANA_HEADER);
    return sub;
  };

  const refusedCall = (err: RelayError, id: string, io: DoorIo, door: string): Submission => {
    const sub = new Submission(Kind.EvmTx, 'evm', io);
    sub.door = door;
    sub.refused = err;
    sub.rpcId = id;
    return sub;
  };

  /** The body's calls into `sub.calls` (DoorIo.parse), or why it is refused. */
  const readCalls = (sub: Submission, body: Uint8Array): RelayError | null => {
    const calls = parseCalls(sub, body);
    if (calls instanceof RelayError) return calls;
    sub.calls = calls;
    return null;
  };

  const parseCalls = (sub: Submission, body: Uint8Array): Submission[] | RelayError => {
    const rq = sub.ctx as RpcRequest;
    const n = topLevelElements(body, maxArray);
    if (n > maxArray) return new RelayError(E.INVALID_REQUEST, `a JSON-RPC array holds at most ${maxArray} calls`);
    if (n === 0) {
      // The usual single call, read from its bytes (rpc-scan.ts); whatever it declines is parsed below.
      const fast = scanCall(body);
      if (fast !== null) return [callOf(rq, fast, fast.id, sub.io)];
    }
    // JSON.parse of a deep body costs far more per byte than of a flat one: refused from its bytes first.
    if (tooDeep(body)) return new RelayError(E.JSON_TOO_DEEP, TOO_DEEP_DETAIL);
    let msg: unknown;
    try {
      msg = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
    } catch {
      return new RelayError(E.PARSE, 'body is not valid JSON');
    }
    if (!Array.isArray(msg)) return [callOf(rq, readCall(msg), idOf(msg), sub.io)];
    if (msg.length === 0) return new RelayError(E.INVALID_REQUEST, 'empty array');
    rq.array = true;
    return msg.map((m) => callOf(rq, readCall(m), idOf(m), sub.io));
  };

  /** What a call's answer depends on, refilled per call (answers/rpc.ts renders it). */
  const view: Call = { shape: Shape.EvmTx, rpcId: 'null', solanaWire: false, solanaClient: false, socket: false, bundleId: '', result: null };
  const answerOf = (rq: RpcRequest, c: Submission, o: Outcome): Answer => {
    const ok = o.error === null;
    view.rpcId = c.rpcId;
    view.socket = rq.socket !== null;
    view.solanaWire = rq.route.jito || c.kind === Kind.SolanaTx || c.kind === Kind.Bundle;
    view.solanaClient = rq.apiKey !== null && rq.authorization === null;
    view.bundleId = '';
    view.result = null;
    if (c.kind === Kind.EvmBatch) view.shape = Shape.EvmBatch;
    else if (c.kind === Kind.SolanaTx) view.shape = Shape.SolanaTx;
    else if (c.kind === Kind.Bundle) {
      view.shape = c.ctx === BUNDLE_OF_ONE ? Shape.BundleOfOne : Shape.Bundle;
      if (ok) view.bundleId = bundleId(c.key!);
    } else if (c.kind === Kind.Query) {
      const op = c.ctx as ReadOp | null;
      view.shape = op === null ? Shape.Statuses : Shape.Read;
      // A subscription is made (or dropped) only once the gate let the call through.
      if (op !== null && ok) {
        view.result =
          op.op === 'tips'
            ? tips
            : op.op === 'jito-statuses'
              ? jitoStatuses(o.statuses!, c.queryIds!, op.inflight)
              : resultJson(op.op === 'subscribe' ? rq.socket!.subscribe() : rq.socket!.unsubscribe(op.id));
      }
    } else view.shape = Shape.EvmTx;
    return renderCall(view, o, rq.route.jito ? jitoWords : rootWords);
  };

  const sink: Sink = (sub: Submission, o: Outcome) => {
    const rq = sub.ctx as RpcRequest;
    const calls = sub.children;
    const err = o.error;
    if (rq.socket !== null) return socketAnswer(rq, sub, o);
    const res = rq.res!;
    if (calls === null && err !== null) {
      // The request as a whole, refused before its calls were read.
      return write(reply, res, renderWhole(err, rq.apiKey !== null, rq.route.jito, rq.route.jito ? jitoWords : rootWords));
    }
    if (calls === null) return;
    // A request that queued anything carries its id, for status reads.
    res.requestId = o.requestId;
    if (!rq.array) return write(reply, res, answerOf(rq, calls[0]!, o));
    reply.send(res, o.httpStatus(202), JSON_TYPE, arrayBody(rq, calls));
  };

  /** Standard JSON-RPC array: an array of single answers, in order (over HTTP the status by the batch rule). */
  const arrayBody = (rq: RpcRequest, calls: Submission[]): string => {
    let body = '[';
    for (let i = 0; i < calls.length; i++) body += (i > 0 ? ',' : '') + answerOf(rq, calls[i]!, calls[i]!.outcome!).body;
    return body + ']';
  };

  const wsTimer = ctx.timer('ws');
  /** The HTTP answer's body, over the socket: the JSON-RPC error object even where HTTP would say it in plain text. */
  const socketAnswer = (rq: RpcRequest, sub: Submission, o: Outcome): void => {
    const calls = sub.children;
    const err = o.error;
    let body: string;
    let hold = 0;
    if (calls === null) {
      if (err === null) return;
      body = rpcError(err, 'null');
      hold = err.holdMs;
    } else {
      body = rq.array ? arrayBody(rq, calls) : answerOf(rq, calls[0]!, o).body;
    }
    // What the answer says of the client's pace: any call that went through, every call refused for the rate, or neither.
    const pace = calls === null
      ? (err!.spec === E.RATE_ACCOUNT ? Pace.Limited : Pace.Refused)
      : calls.some((c) => c.outcome?.error === null) ? Pace.Ok : calls.every((c) => c.outcome?.error?.spec === E.RATE_ACCOUNT) ? Pace.Limited : Pace.Refused;
    rq.socket!.answer(body, hold, pace);
    wsTimer?.observe((performance.now() - rq.t0) / 1000);
  };

  const route = (path: string, rt: RpcRoute): void => {
    const timer = ctx.timer(rt.door);
    app.post(path, (r: HttpResponse, req: HttpRequest) => {
      const res = reply.begin(r, timer);
      const sub = new Submission(Kind.Calls, rt.jito ? 'solana' : 'evm', io);
      sub.door = rt.door;
      // The api-key header is read before the shed decision: it says how a shed is answered (plain text for a Solana caller).
      // Jito's paths read their credential with the rest of the head (jito.ts): their sheds are plain text anyway.
      const query = rt.jito ? '' : req.getQuery();
      const apiKey = rt.jito ? null : req.getHeader('api-key') || (query ? queryKey(query) : null);
      sub.ctx = { res, socket: null, route: rt, apiKey, authorization: null, bundleOnly: false, array: false, message: null, t0: 0 } satisfies RpcRequest;
      sub.req = req;
      sub.conn = res;
      sub.maxBody = ctx.maxBody;
      admitHttp(ctx, sub, sink, res);
    });
  };
  route('/', root);
  if (ctx.enabled.solana) {
    // One door label for both of Jito's paths: the metric's label set stays fixed.
    route(JITO_BUNDLES, { door: 'jito', methods: JITO_BUNDLE_METHODS, jito: true });
    route(JITO_TRANSACTIONS, { door: 'jito', methods: JITO_TRANSACTION_METHODS, jito: true });
  }

  return (socket, message) => {
    // As for an HTTP body (body.ts): uWS flushes this callback's answers when it returns, and forwarding waits for that.
    ctx.ack.drain();
    const sub = new Submission(Kind.Calls, socket.family, socketIo);
    sub.door = 'ws';
    sub.credential = socket.credential;
    const rq: RpcRequest = { res: null, socket, route: root, apiKey: null, authorization: null, bundleOnly: false, array: false, message, t0: wsTimer ? performance.now() : 0 };
    sub.ctx = rq;
    sub.conn = socket;
    sub.ip = socket.ip;
    sub.maxBody = ctx.maxBody;
    ctx.ack.enter();
    try {
      // The message is the body: handed on here, as an HTTP door reads its body.
      if (pipeline.admit(sub, sink) === Next.Body) {
        if (message.length > sub.maxBody) sub.tooLarge(message.length);
        else bodyTo(sub).bodyBytes(message);
      }
    } finally {
      ctx.ack.leave();
      rq.message = null;
    }
  };
}

/** `?api-key=`'s value where well-formed; a malformed query is refused with the head (io.head above). */
function queryKey(query: string): string | null {
  const k = apiKeyQuery(query);
  return typeof k === 'string' ? k : null;
}

/** A subscription's id or `true`/`false` as JSON text, or why not. */
function resultJson(r: number | boolean | RelayError): string | RelayError {
  return r instanceof RelayError ? r : String(r);
}

/** `txrelay_subscribe` takes `["statuses"]`; `txrelay_unsubscribe` a subscription id. */
function socketOp(method: string, p: unknown): SocketOp | RelayError {
  if (method === 'txrelay_subscribe') {
    if (!Array.isArray(p) || p.length !== 1 || p[0] !== 'statuses') return new RelayError(E.INVALID_PARAMS, 'params must be ["statuses"]');
    return { op: 'subscribe' };
  }
  if (!Array.isArray(p) || p.length !== 1 || !Number.isSafeInteger(p[0])) return new RelayError(E.INVALID_PARAMS, 'params must be [subscription id]');
  return { op: 'unsubscribe', id: p[0] as number };
}

/**
 * `sendBundle` params, as Jito takes them: `[[transaction, ...], {encoding}]`,
 * 1 to 4 transactions, encoding base58 (the default, as Jito's) or base64.
 */
function sendBundleParams(params: unknown): { data: string[]; encoding: Encoding } | RelayError {
  const bad = (m: string) => new RelayError(E.INVALID_PARAMS, m);
  if (!Array.isArray(params) || params.length < 1 || params.length > 2) return bad('params must be [[transaction, ...], {encoding}]');
  const [txs, opts] = params as [unknown, unknown];
  if (!Array.isArray(txs) || txs.length < 1 || txs.length > MAX_BUNDLE || !txs.every((t) => typeof t === 'string')) {
    return bad(`a bundle is an array of 1 to ${MAX_BUNDLE} transactions, each a string`);
  }
  const encoding = encodingOf(opts, Encoding.Base58);
  return encoding instanceof RelayError ? encoding : { data: txs as string[], encoding };
}

/** The ids of a status read: 1 to 100 non-empty strings of at most 128 characters. */
export function statusIds(v: unknown): string[] | RelayError {
  if (!Array.isArray(v) || v.length < 1 || v.length > MAX_STATUS_IDS) return new RelayError(E.INVALID_PARAMS, `ids must be an array of 1 to ${MAX_STATUS_IDS} ids`);
  for (const id of v) if (typeof id !== 'string' || id.length === 0 || id.length > 128) return new RelayError(E.INVALID_PARAMS, 'each id must be a string of 1 to 128 characters');
  return v as string[];
}

/** `sendTransaction` params: `[transaction, {encoding}]`, encoding base64 (default) or base58. */
function sendTransactionParams(params: unknown): { data: string; encoding: Encoding } | RelayError {
  const bad = (m: string) => new RelayError(E.INVALID_PARAMS, m);
  if (!Array.isArray(params) || params.length < 1 || params.length > 2) return bad('params must be [transaction, {encoding}]');
  const [data, opts] = params as [unknown, unknown];
  if (typeof data !== 'string') return bad('transaction must be a string');
  const encoding = encodingOf(opts, Encoding.Base64);
  return encoding instanceof RelayError ? encoding : { data, encoding };
}

function bundleOfOne(tx: { data: string; encoding: Encoding } | RelayError): { data: string[]; encoding: Encoding } | RelayError {
  return tx instanceof RelayError ? tx : { data: [tx.data], encoding: tx.encoding };
}

/** `{encoding}` of a Solana send: base64 or base58, `dflt` when absent; other fields are ignored. */
function encodingOf(opts: unknown, dflt: Encoding): Encoding | RelayError {
  if (opts === undefined || opts === null) return dflt;
  if (typeof opts !== 'object' || Array.isArray(opts)) return new RelayError(E.INVALID_PARAMS, 'second parameter must be an object');
  const enc = (opts as { encoding?: unknown }).encoding;
  if (enc === undefined) return dflt;
  if (enc !== 'base64' && enc !== 'base58') return new RelayError(E.INVALID_PARAMS, 'encoding must be base64 or base58');
  return enc === 'base58' ? Encoding.Base58 : Encoding.Base64;
}

/** One parsed JSON-RPC call, or the request error it is answered with (id: `idOf`). */
export function readCall(m: unknown): RpcCall | RelayError {
  if (typeof m !== 'object' || m === null) return new RelayError(E.INVALID_REQUEST, 'not a JSON-RPC object');
  const o = m as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
  if (o.jsonrpc !== '2.0') return new RelayError(E.INVALID_REQUEST, 'jsonrpc must be "2.0"');
  if (typeof o.method !== 'string') return new RelayError(E.INVALID_REQUEST, 'method must be a string');
  if (o.id !== undefined && o.id !== null && typeof o.id !== 'number' && typeof o.id !== 'string') {
    return new RelayError(E.INVALID_REQUEST, 'id must be a number, a string or null');
  }
  return { method: o.method, params: o.params, id: idOf(m) };
}

function idOf(m: unknown): string {
  const id = (m as { id?: unknown } | null)?.id;
  return typeof id === 'number' || typeof id === 'string' ? JSON.stringify(id) : 'null';
}
