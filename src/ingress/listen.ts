/** Binding a uWS app to its port, exclusively, with the connection caps in front of accept. */
import net from 'node:net';
import dgram from 'node:dgram';
import { LISTEN_EXCLUSIVE_PORT, type TemplatedApp, type Uws, type us_listen_socket } from './uws.js';
import { attachConnectionCaps, type ConnectionCaps } from './conn-caps.js';
import { ListenError } from '../errors.js';

/**
 * uWS (and the node:http stand-in) report a failed listen without a reason:
 * binding the same address once more with node's own sockets tells it.
 */
export async function probeListen(listener: 'http' | 'admin' | 'udp', host: string, port: number, cause?: unknown): Promise<ListenError> {
  const known = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new ListenError(listener, host, port, known ?? (await bindError(listener === 'udp', host, port)));
}

function bindError(udp: boolean, host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = udp ? dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4') : net.createServer();
    s.once('error', (e: NodeJS.ErrnoException) => {
      s.close();
      resolve(e.code ?? '');
    });
    const done = () => s.close(() => resolve(''));
    if (s instanceof net.Server) s.listen({ host, port, exclusive: true }, done);
    else s.bind(port, host, done);
  });
}

/** Listens; resolves to the bound port, or rejects with a ListenError naming `what` when the port cannot be had. */
export function listenOn(uws: Uws, app: TemplatedApp, host: string, port: number, sockets: us_listen_socket[], what: 'http' | 'admin', caps: ConnectionCaps | null = null): Promise<number> {
  if (caps) attachConnectionCaps(app, caps);
  return new Promise((resolve, reject) => {
    app.listen(host, port, LISTEN_EXCLUSIVE_PORT, (s) => {
      if (!s) return void probeListen(what, host, port).then(reject);
      sockets.push(s);
      const bound = uws.us_socket_local_port(s);
      caps?.listening(host, bound);
      resolve(bound);
    });
  });
}
