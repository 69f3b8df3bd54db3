/**
 * Lanes and stand-in upstreams for the forwarding tests, tracked so that one
 * `closeAll()` in the file's `after` closes them, newest first.
 */
import { Lane } from '../../src/forward/lane.js';
import { startUpstream, type TestUpstream } from './upstream.js';

export function laneHarness() {
  const open: { close(): Promise<void> }[] = [];
  return {
    async upstream(...args: Parameters<typeof startUpstream>): Promise<TestUpstream> {
      const u = await startUpstream(...args);
      open.push(u);
      return u;
    },
    lane<N extends ConstructorParameters<typeof Lane>[0]>(name: N, opts: ConstructorParameters<typeof Lane>[1]): Lane<N> {
      const l = new Lane(name, opts);
      open.push(l);
      return l;
    },
    /** Anything else to close with them (a Forwarder). */
    track<T extends { close(): Promise<void> }>(c: T): T {
      open.push(c);
      return c;
    },
    async closeAll(): Promise<void> {
      for (const o of open.splice(0).reverse()) await o.close();
    },
  };
}
