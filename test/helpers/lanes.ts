/**
 * Lanes and stand-in upstreams for the forwarding tests. Everything made here
 * is closed, newest first, after the file's tests; and since upstream trouble
 * must never surface as an unhandled rejection (it would crash the node),
 * the file fails if one happened while its tests ran.
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { Lane } from '../../src/forward/lane.js';
import { startUpstream, type TestUpstream } from './upstream.js';

export function laneHarness() {
  const open: { close(): Promise<void> }[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  after(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
    process.off('unhandledRejection', onUnhandled);
    assert.deepEqual(unhandled, [], 'no unhandled rejections');
  });
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
  };
}
