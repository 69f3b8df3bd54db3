/** What every door gets: the uWS app, the pipeline, the JSON-RPC dispatcher, config. */
import type { Admission } from '../../pipeline/admission.js';
import type { Config } from '../../config/schema.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from '../uws.js';
import type { LatencyTimer } from '../http.js';
import type { RpcDispatcher } from './jsonrpc.js';
import type { BatchRecorder } from './evm.js';

export interface DoorContext {
  app: TemplatedApp;
  admission: Admission;
  rpc: RpcDispatcher;
  config: Config;
  ip(res: HttpResponse, req: HttpRequest): string;
  batches: BatchRecorder | null;
  /** Accept-latency histogram child for a door label. */
  timer(door: string): LatencyTimer | undefined;
}
