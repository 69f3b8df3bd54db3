/**
 * `POST /`: one JSON-RPC endpoint for both families, dispatched on `method`
 * (DECISIONS 3). Handlers answer through `reply`, so the same handler serves
 * a single call and an element of a standard JSON-RPC array.
 */
import { E, RelayError } from '../../errors.js';
import { guard, readBody, send, type Headers, type LatencyTimer, type Res } from '../http.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';

export interface RpcCall {
  method: string;
  params: unknown;
  /** The request id re-serialised as JSON text (number, string or null), echoed verbatim. */
  id: string;
}

/** Request facts read synchronously from uWS before the body arrives. */
export interface RequestInfo {
  ip: string;
  apiKey: string | null;
  authorization: string | null;
  inArray: boolean;
}

export type Reply = (status: number, contentType: string, body: string, headers?: Headers) => void;
export type RpcHandler = (reply: Reply, info: RequestInfo, call: RpcCall) => void;

/** Renders a JSON-RPC error object from the catalogue. */
export function rpcErrorBody(err: RelayError, id: string, extra?: Record<string, unknown>): string {
  const data: Record<string, unknown> = { ...extra };
  if (err.spec.retry) data.retry = err.spec.retry;
  const dataJson = Object.keys(data).length ? `,"data":${JSON.stringify(data)}` : '';
  return `{"jsonrpc":"2.0","id":${id},"error":{"code":${err.spec.rpc},"message":${JSON.stringify(err.message)}${dataJson}}}`;
}

/** Methods allowed inside a standard JSON-RPC array (DECISIONS 3). */
const ARRAY_METHODS = new Set(['eth_sendRawTransaction']);

export class RpcDispatcher {
  private readonly handlers = new Map<string, RpcHandler>();

  constructor(private readonly maxBody: number) {}

  register(method: string, h: RpcHandler): void {
    this.handlers.set(method, h);
  }

  mount(app: TemplatedApp, ip: (res: HttpResponse, req: HttpRequest) => string, timer?: LatencyTimer): void {
    app.post('/', (r, req) => {
      const res = guard(r, timer);
      const info: RequestInfo = {
        ip: ip(res, req),
        apiKey: req.getHeader('api-key') || null,
        authorization: req.getHeader('authorization') || null,
        inArray: false,
      };
      const ctype = req.getHeader('content-type');
      if (ctype !== '' && !/^application\/json\s*(;|$)/i.test(ctype)) {
        return this.fail(res, new RelayError(E.UNSUPPORTED_MEDIA, 'use application/json'));
      }
      readBody(
        res,
        req,
        this.maxBody,
        (body) => this.dispatch(res, info, body),
        (n) => this.fail(res, new RelayError(E.TOO_LARGE, `body of ${n} bytes exceeds http.max_body_bytes (${this.maxBody})`)),
      );
    });
  }

  private fail(res: Res, err: RelayError, id = 'null'): void {
    send(res, err.spec.http, 'application/json', rpcErrorBody(err, id));
  }

  private dispatch(res: Res, info: RequestInfo, body: Uint8Array): void {
    let msg: unknown;
    try {
      msg = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'));
    } catch {
      return this.fail(res, new RelayError(E.PARSE, 'body is not valid JSON'));
    }
    const single: Reply = (status, contentType, text, headers) => send(res, status, contentType, text, headers);
    if (!Array.isArray(msg)) return this.call(single, info, msg);
    if (msg.length === 0) return this.fail(res, new RelayError(E.INVALID_REQUEST, 'empty array'));
    // Standard JSON-RPC array: answered as an array of single responses, in order.
    const bodies: string[] = new Array(msg.length);
    const statuses: number[] = new Array(msg.length);
    let pending = msg.length;
    const arrayInfo = { ...info, inArray: true };
    msg.forEach((m, i) => {
      const reply: Reply = (status, _ct, text) => {
        bodies[i] = text;
        statuses[i] = status;
        if (--pending === 0) send(res, arrayStatus(statuses), 'application/json', `[${bodies.join(',')}]`);
      };
      const method = (m as { method?: unknown })?.method;
      if (typeof method === 'string' && !ARRAY_METHODS.has(method) && this.handlers.has(method)) {
        const err = new RelayError(E.INVALID_REQUEST, `${method} cannot be sent inside a JSON-RPC array`);
        return reply(err.spec.http, 'application/json', rpcErrorBody(err, idOf(m)));
      }
      this.call(reply, arrayInfo, m);
    });
  }

  private call(reply: Reply, info: RequestInfo, m: unknown): void {
    const id = idOf(m);
    const err = (e: RelayError) => reply(e.spec.http, 'application/json', rpcErrorBody(e, id));
    if (typeof m !== 'object' || m === null) return err(new RelayError(E.INVALID_REQUEST, 'not a JSON-RPC object'));
    const o = m as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
    if (o.jsonrpc !== '2.0') return err(new RelayError(E.INVALID_REQUEST, 'jsonrpc must be "2.0"'));
    if (typeof o.method !== 'string') return err(new RelayError(E.INVALID_REQUEST, 'method must be a string'));
    if (o.id !== undefined && o.id !== null && typeof o.id !== 'number' && typeof o.id !== 'string') {
      return err(new RelayError(E.INVALID_REQUEST, 'id must be a number, a string or null'));
    }
    const h = this.handlers.get(o.method);
    if (!h) return err(new RelayError(E.METHOD_NOT_FOUND, o.method.slice(0, 64)));
    h(reply, info, { method: o.method, params: o.params, id });
  }
}

/**
 * The HTTP status of a JSON-RPC array answer, by the batch rule of
 * DECISIONS 6: 202 when anything was accepted, else 400 if any element was
 * invalid, else 503 for capacity, else 429, else the first element's status.
 */
export function arrayStatus(statuses: number[]): number {
  if (statuses.some((x) => x < 300)) return 202;
  for (const s of [400, 503, 429]) if (statuses.includes(s)) return s;
  return statuses[0] ?? 400;
}

function idOf(m: unknown): string {
  const id = (m as { id?: unknown } | null)?.id;
  return typeof id === 'number' || typeof id === 'string' ? JSON.stringify(id) : 'null';
}
