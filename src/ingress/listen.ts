/** Binding a uWS app to its port, exclusively, with the connection caps in front of accept. */
import { LISTEN_EXCLUSIVE_PORT, type TemplatedApp, type Uws, type us_listen_socket } from './uws.js';
import { attachConnectionCaps, type ConnectionCaps } from './conn-caps.js';

/** Listens; resolves to the bound port, or rejects naming `what` when the port cannot be had. */
export function listenOn(uws: Uws, app: TemplatedApp, host: string, port: number, sockets: us_listen_socket[], what: string, caps: ConnectionCaps | null = null): Promise<number> {
  if (caps) attachConnectionCaps(app, caps);
  return new Promise((resolve, reject) => {
    app.listen(host, port, LISTEN_EXCLUSIVE_PORT, (s) => {
      if (!s) return reject(new Error(`${what}: cannot listen on ${host}:${port} (in use or not permitted)`));
      sockets.push(s);
      const bound = uws.us_socket_local_port(s);
      caps?.listening(host, bound);
      resolve(bound);
    });
  });
}
