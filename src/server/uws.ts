/**
 * Loads uWebSockets.js. Its authors do not publish to the npm registry, so two
 * pinned registry mirrors of the official builds are tried in order
 * (DECISIONS 1): the newer one needs glibc >= 2.38, the older one loads on
 * Debian 12. The older package silently falls back to a slow JavaScript
 * shim when its binary does not load, so its binary is required directly.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
export type Uws = typeof UWS;

const require = createRequire(import.meta.url);

interface Candidate {
  name: string;
  load: () => Uws;
}

const CANDIDATES: Candidate[] = [
  { name: '@btc-vision/uwebsockets.js@20.57.0', load: () => require('@btc-vision/uwebsockets.js') as Uws },
  {
    name: '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0',
    load: () => {
      const dir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
      const bin = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
      return require(join(dir, 'binaries', bin)) as Uws;
    },
  },
];

let loaded: { uws: Uws; name: string } | undefined;

export function loadUws(): { uws: Uws; name: string } {
  if (loaded) return loaded;
  const failures: string[] = [];
  for (const c of CANDIDATES) {
    try {
      const uws = c.load();
      if (typeof uws.App !== 'function') throw new Error('module has no App()');
      loaded = { uws, name: c.name };
      return loaded;
    } catch (e) {
      failures.push(`${c.name}: ${String((e as Error).message).split('\n')[0]}`);
    }
  }
  throw new Error(
    `uWebSockets.js could not be loaded for Node ${process.version} on ${process.platform}-${process.arch}. Tried:\n  ` +
      failures.join('\n  '),
  );
}
