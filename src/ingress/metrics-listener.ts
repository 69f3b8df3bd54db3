/**
 * `metrics.listen`: a listener that answers `GET /metrics` and nothing else,
 * so a remote Prometheus can scrape a node without the admin API being
 * reachable from its network (docs/operations.md#prometheus-across-regions).
 */
import { MetricsListenError } from '../errors.js';
import type { Metrics } from '../obs/metrics.js';
import { probeListen } from './listen.js';
import { TEXT_TYPE, type Replier } from './reply.js';
import { LISTEN_EXCLUSIVE_PORT, type TemplatedApp, type Uws, type us_listen_socket } from './uws.js';

/** `host:port` (IPv6 in brackets) into its parts; the schema's pattern already checked the shape. */
function splitListen(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  return { host: value.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(value.slice(at + 1)) };
}

/** Starts the metrics-only listener, its socket in `sockets` and its app in `apps` (closed with the relay's); resolves with the bound port. */
export async function listenMetrics(uws: Uws, metrics: Metrics, reply: Replier, value: string, sockets: us_listen_socket[], apps: TemplatedApp[]): Promise<number> {
  const { host, port } = splitListen(value);
  const app = uws.App();
  apps.push(app);
  app.get('/metrics', (r) => {
    const res = reply.guard(r);
    metrics.render().then(
      (m) => reply.send(res, 200, m.contentType, m.body),
      () => reply.send(res, 500, TEXT_TYPE, 'metrics unavailable'),
    );
  });
  app.any('/*', (r) => reply.send(reply.guard(r), 404, TEXT_TYPE, 'this listener serves only GET /metrics'));
  return new Promise<number>((resolve, reject) => {
    app.listen(host, port, LISTEN_EXCLUSIVE_PORT, (s) => {
      if (!s) return void probeListen('http', host, port).then((e) => reject(new MetricsListenError(value, e.errno)));
      sockets.push(s);
      resolve(uws.us_socket_local_port(s));
    });
  });
}
