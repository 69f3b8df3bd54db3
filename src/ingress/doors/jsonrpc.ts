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
 * The request is one submission, its head read once it passed the shed
 * decision; its body's calls become submissions of their own, admitted in
 * order and answered together. A standard JSON-RPC array (of `eth_sendRawTransaction`
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
import { Encoding, Kind, bundle, calls, evmBatch, evmTx, query, refusedAt, solanaTx, type Sink, type Submission } from '../../pipeline/submission.js';
import { TAKES_JITO, TAKES_RPC, tipsWords, write, rpcError, type Answer, type DoorWords } from '../../answers/answer.js';
import { Shape, renderCall, renderWhole, type Call } from '../../answers/rpc.js';
import { MAX_BUNDLE } from '../../pipeline/bundle.js';
import { JSON_TYPE, type Res } from '../reply.js';
import type { HttpRequest, HttpResponse } from '../uws.js';
import { admitHttp, bodyTo, type DoorContext, type Parse } from './context.js';
import { BEARER_FORM, bearer } from './evm.js';
import { parseJsonBody, scanCall, topLevelElements } from './rpc-scan.js';
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
  /** True once the socket closed: what the pipeline reads (the submission's `conn`). */
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
  /** The body's calls, as this door read them: what its answer is made of. */
  calls: Submission[] | null;
  /** The peer's address, once read (after the shed decision). */
  ip: string;
  t0: number;
}

/** A socket call that is no submission: answered by the socket itself once the gate let it through. */
type SocketOp = { op: 'subscribe' } | { op: 'unsubscribe'; id: number };
/** A read answered by the door once the gate let it through: Jito's `getTipAccounts`. */
type ReadOp = SocketOp | { op: 'tips' } | JitoStatusOp;
/** A `sendTransaction` admitted as a bundle of one (`ctx` of its submission): answered with its signature. */
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

  /** JSON-RPC is application/json (a missing Content-Type is 415 too), and the credential: `rq` takes what the calls need of the head. */
  const headOf = (req: HttpRequest, rq: RpcRequest): string | null | RelayError => {
    if (!/^application\/json\s*(;|$)/i.test(req.getHeader('content-type'))) return new RelayError(E.UNSUPPORTED_MEDIA, 'use application/json');
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
    const credential = rq.route.jito ? rq.apiKey : (rq.apiKey ?? bearer(rq.authorization));
    if (credential === '') return new RelayError(E.AUTH_MISSING, BEARER_FORM);
    // Only the EVM header on a Jito path: the refusal names the one to use, as on the other Solana doors.
    if (rq.route.jito && credential === null && rq.authorization !== null) return new RelayError(E.AUTH_MISSING, SOLANA_HEADER);
    return credential;
  };

  /** One call of the body, as a submission of its own. */
  const callOf = (rq: RpcRequest, c: RpcCall | RelayError, rpcId: string): Submission => {
    const door = rq.socket === null ? rq.route.door : 'ws';
    const ip = rq.ip;
    if (c instanceof RelayError) return evmTx(door, { refused: c, rpcId, ip });
    const m = c.method;
    if (SOCKET_METHODS.has(m) && rq.socket === null) return evmTx(door, { refused: new RelayError(E.METHOD_NOT_FOUND, `${m} (only on the WebSocket door, /ws)`), rpcId, ip });
    if (!rq.route.methods.has(m) && !(rq.socket !== null && SOCKET_METHODS.has(m))) {
      return evmTx(door, { refused: new RelayError(E.METHOD_NOT_FOUND, m.slice(0, 64) + ONLY_SENDS), rpcId, ip });
    }
    if (rq.array && !ARRAY_METHODS.has(m)) return evmTx(door, { refused: new RelayError(E.INVALID_REQUEST, `${m} cannot be sent inside a JSON-RPC array`), rpcId, ip });
    const p = c.params;
    // Over a WebSocket every call carries the upgrade's credential; over HTTP each family's own header.
    const sk = rq.socket;
    // A Solana call: the socket's credential, else the api-key header's; only the EVM header is told which one to use.
    const solanaKey = sk?.credential ?? rq.apiKey;
    const solanaRefused = solanaKey === null && rq.authorization !== null ? new RelayError(E.AUTH_MISSING, SOLANA_HEADER) : null;
    const evmKey = sk?.credential ?? bearer(rq.authorization);
    const evmRefused = evmKey === null && rq.apiKey !== null ? new RelayError(E.AUTH_MISSING, EVM_HEADER) : null;
    if (m === 'sendBundle' || (m === 'sendTransaction' && rq.bundleOnly)) {
      // Jito's bundleOnly: a sendTransaction as a bundle of one, with the bundle rules and lane.
      const b = m === 'sendBundle' ? sendBundleParams(p) : bundleOfOne(sendTransactionParams(p));
      const ok = !(b instanceof RelayError);
      return bundle(door, {
        credential: solanaKey, refused: solanaRefused, rpcId, ip,
        invalid: ok ? null : b, texts: ok ? b.data : null, encoding: ok ? b.encoding : Encoding.Base58,
        ctx: m === 'sendBundle' ? null : BUNDLE_OF_ONE,
      });
    }
    if (m === 'sendTransaction') {
      const tx = sendTransactionParams(p);
      const ok = !(tx instanceof RelayError);
      return solanaTx(door, {
        credential: solanaKey, refused: solanaRefused, rpcId, ip,
        invalid: ok ? null : tx, text: ok ? tx.data : null, encoding: ok ? tx.encoding : Encoding.Base64,
        // Base64 that decodes is canonical (strict decoding): the lane forwards the client's own text.
        textForwarded: ok && tx.encoding === Encoding.Base64,
      });
    }
    if (m === 'getTipAccounts') {
      // Read access, as a subscription: the gate and the status reads' limit, then the door answers.
      return query(door, 'solana', { credential: rq.apiKey, rpcId, ip, queryIds: [], ctx: { op: 'tips' } satisfies ReadOp });
    }
    if (JITO_STATUS_METHODS.has(m)) {
      const r = jitoStatusRead(m, p);
      const bad = r.ids instanceof RelayError ? r.ids : null;
      return query(door, 'solana', { credential: solanaKey, refused: solanaRefused, rpcId, ip, invalid: bad, queryIds: bad ? null : (r.ids as string[]), ctx: r.op });
    }
    if (m === 'txrelay_getStatuses') {
      // Either family's credential: the statuses are the account's, whichever door sent them.
      const ids = statusIds(Array.isArray(p) && p.length === 1 ? p[0] : undefined);
      const bad = ids instanceof RelayError ? ids : null;
      return query(door, sk?.family ?? (rq.apiKey !== null ? 'solana' : 'evm'), {
        credential: sk?.credential ?? rq.apiKey ?? bearer(rq.authorization), rpcId, ip, invalid: bad, queryIds: bad ? null : (ids as string[]),
      });
    }
    if (sk !== null && SOCKET_METHODS.has(m)) {
      // A subscription is read access: the gate and the status reads' limit, then the socket answers.
      const op = socketOp(m, p);
      const bad = op instanceof RelayError ? op : null;
      return query(door, sk.family, { credential: sk.credential, rpcId, ip, queryIds: [], invalid: bad, ctx: bad ? null : op });
    }
    if (m === 'eth_sendRawTransaction') {
      const ok = Array.isArray(p) && p.length === 1 && typeof p[0] === 'string';
      return evmTx(door, {
        credential: evmKey, refused: evmRefused, rpcId, ip,
        invalid: ok ? null : new RelayError(E.INVALID_PARAMS, 'params must be ["0x…"]'), text: ok ? (p[0] as string) : null,
      });
    }
    const ok = Array.isArray(p) && p.length >= 1 && p.length <= maxArray && p.every((x) => typeof x === 'string');
    return evmBatch(door, {
      credential: evmKey, refused: evmRefused, rpcId, ip,
      invalid: ok ? null : new RelayError(E.INVALID_PARAMS, `params must be 1 to ${maxArray} "0x…" strings`), texts: ok ? (p as string[]) : null,
    });
  };

  /** The body's calls (kept by the door for its answer, and pushed to the pipeline), or why it is refused. */
  const parse: Parse = (sub, body) => {
    const rq = sub.ctx as RpcRequest;
    const calls = parseCalls(rq, body);
    if (!(calls instanceof RelayError)) rq.calls = calls;
    return calls;
  };

  const parseCalls = (rq: RpcRequest, body: Uint8Array): Submission[] | RelayError => {
    const n = topLevelElements(body, maxArray);
    if (n > maxArray) return new RelayError(E.INVALID_REQUEST, `a JSON-RPC array holds at most ${maxArray} calls`);
    if (n === 0) {
      // The usual single call, read from its bytes (rpc-scan.ts); whatever it declines is parsed below.
      const fast = scanCall(body);
      if (fast !== null) return [callOf(rq, fast, fast.id)];
    }
    const msg = parseJsonBody(body);
    if (msg instanceof RelayError) return msg;
    if (!Array.isArray(msg)) return [callOf(rq, readCall(msg), idOf(msg))];
    if (msg.length === 0) return new RelayError(E.INVALID_REQUEST, 'empty array');
    rq.array = true;
    return msg.map((m) => callOf(rq, readCall(m), idOf(m)));
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
      if (ok) view.bundleId = o.bundleId!;
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

  /** The body's answer: refused whole (`o.items` null: its calls were never read), or each call's outcome in `o.items`. */
  const sink: Sink = (sub: Submission, o: Outcome) => {
    const rq = sub.ctx as RpcRequest;
    if (rq.socket !== null) return socketAnswer(rq, o);
    const res = rq.res!;
    const items = o.items;
    if (items === null) {
      // The request as a whole, refused before its calls were read.
      return write(reply, res, renderWhole(o.error!, rq.apiKey !== null, rq.route.jito, rq.route.jito ? jitoWords : rootWords));
    }
    // A request that queued anything carries its id, for status reads.
    res.requestId = o.requestId;
    if (!rq.array) return write(reply, res, answerOf(rq, rq.calls![0]!, items[0]!));
    reply.send(res, o.httpStatus(202), JSON_TYPE, arrayBody(rq, items));
  };

  /** Standard JSON-RPC array: an array of single answers, in order (over HTTP the status by the batch rule). */
  const arrayBody = (rq: RpcRequest, items: readonly Outcome[]): string => {
    const calls = rq.calls!;
    let body = '[';
    for (let i = 0; i < calls.length; i++) body += (i > 0 ? ',' : '') + answerOf(rq, calls[i]!, items[i]!).body;
    return body + ']';
  };

  const wsTimer = ctx.timer('ws');
  /** The HTTP answer's body, over the socket: the JSON-RPC error object even where HTTP would say it in plain text. */
  const socketAnswer = (rq: RpcRequest, o: Outcome): void => {
    const items = o.items;
    const err = o.error;
    let body: string;
    let hold = 0;
    if (items === null) {
      body = rpcError(err!, 'null');
      hold = err!.holdMs;
    } else {
      body = rq.array ? arrayBody(rq, items) : answerOf(rq, rq.calls![0]!, items[0]!).body;
    }
    // What the answer says of the client's pace: any call that went through, every call refused for the rate, or neither.
    const pace =
      items === null
        ? err!.spec === E.RATE_ACCOUNT
          ? Pace.Limited
          : Pace.Refused
        : items.some((x) => x.error === null)
          ? Pace.Ok
          : items.every((x) => x.error?.spec === E.RATE_ACCOUNT)
            ? Pace.Limited
            : Pace.Refused;
    rq.socket!.answer(body, hold, pace);
    wsTimer?.observe((performance.now() - rq.t0) / 1000);
  };

  const route = (path: string, rt: RpcRoute): void => {
    const timer = ctx.timer(rt.door);
    const family: Family = rt.jito ? 'solana' : 'evm';
    app.post(path, (r: HttpResponse, req: HttpRequest) => {
      const res = reply.begin(r, timer);
      // The api-key header is read before the shed decision: it says how a shed is answered (plain text for a Solana caller).
      // Jito's paths read their credential with the rest of the head (jito.ts): their sheds are plain text anyway.
      const query = rt.jito ? '' : req.getQuery();
      const apiKey = rt.jito ? null : req.getHeader('api-key') || (query ? queryKey(query) : null);
      const rq: RpcRequest = { res, socket: null, route: rt, apiKey, authorization: null, bundleOnly: false, array: false, calls: null, ip: '', t0: 0 };
      const credential = pipeline.arrive(Kind.Calls, family) ?? headOf(req, rq);
      let sub: Submission;
      if (credential instanceof RelayError) sub = refusedAt(Kind.Calls, family, rt.door, credential, { ctx: rq, conn: res, corked: true });
      else {
        rq.ip = ctx.ip(r, req);
        sub = calls(rt.door, family, { credential, ip: rq.ip, ctx: rq, conn: res, corked: true, maxBody: ctx.maxBody });
      }
      admitHttp(ctx, sub, sink, res, req, parse);
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
    const rq: RpcRequest = { res: null, socket, route: root, apiKey: null, authorization: null, bundleOnly: false, array: false, calls: null, ip: socket.ip, t0: wsTimer ? performance.now() : 0 };
    const off = pipeline.arrive(Kind.Calls, socket.family);
    const sub =
      off !== null
        ? refusedAt(Kind.Calls, socket.family, 'ws', off, { ctx: rq, conn: socket })
        : calls('ws', socket.family, { credential: socket.credential, ip: socket.ip, ctx: rq, conn: socket, maxBody: ctx.maxBody });
    ctx.ack.enter();
    try {
      // The message is the body: pushed here, as an HTTP door pushes the body it read.
      const a = pipeline.admit(sub, sink);
      if (a !== null) {
        if (message.length > sub.maxBody) a.tooLarge(message.length);
        else bodyTo(a, parse).bodyBytes(message);
      }
    } finally {
      ctx.ack.leave();
    }
  };
}

/** `?api-key=`'s value where well-formed; a malformed query is refused with the head (`headOf` above). */
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
