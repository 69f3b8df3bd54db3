/**
 * An acceptor thread (`http.acceptors` > 1): one HTTP service whose uWS app
 * takes the connections the main thread's listener hands it. Its accounts
 * mirror the main thread's; its batch records are written by the main thread,
 * which owns the store. Messages: acceptors.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Writable } from 'node:stream';
import { unpack } from 'msgpackr';
import type { Config } from '../config/schema.js';
import { systemClock } from '../clock.js';
import { createLogger } from '../obs/log.js';
import { DedupFilter, type DedupHandle } from '../tables/dedup.js';
import { IpLimiter, type IpLimiterHandle } from '../tables/ip-limiter.js';
import type { TokenBucketHandle } from '../tables/token-bucket.js';
import { initKeccak } from '../chains/evm/hash.js';
import { TipAccounts } from '../chains/solana/tip.js';
import { AccountMirror, type SeatedRecord } from '../pipeline/accounts.js';
import type { BatchRecorder } from '../pipeline/evm-batch.js';
import { nextBatchId } from '../store/ids.js';
import { storedItems } from '../store/batches.js';
import { RelayError, E } from '../errors.js';
import { loadAcceptor } from './uws.js';
import { attachConnectionCaps, connectionCaps } from './conn-caps.js';
import type { StatusView } from '../status/tracker.js';
import { HttpService } from './service.js';
import { readTls } from './tls.js';
import { landingFamilies } from '../landing/families.js';
import type { ToAcceptor, FromAcceptor } from './acceptors.js';

export interface AcceptorData {
  index: number;
  /** Threads in all: each takes its share of the connection caps. */
  of: number;
  cfg: Config;
  dedup: DedupHandle;
  ipLimiter: IpLimiterHandle;
  statusReads: IpLimiterHandle;
  udpIpLimiter: IpLimiterHandle;
  buckets: TokenBucketHandle;
  /** msgpack-encoded SeatedRecord[]. */
  accounts: Uint8Array;
}

const port = parentPort!;
const d = workerData as AcceptorData;
const post = (m: FromAcceptor): void => port.postMessage(m);

const log = createLogger(
  d.cfg.log.level,
  new Writable({
    write(line: Buffer | string, _enc, done) {
      post({ t: 'log', line: String(line) });
      done();
    },
  }),
  d.cfg.node.name,
);

await initKeccak();
const cfg = d.cfg;
const accounts = new AccountMirror(d.buckets, systemClock, unpack(d.accounts) as SeatedRecord[], cfg.registry.mode === 'postgres');

/** Batch records are the main thread's to write. */
let nextCall = 0;
const calls = new Map<number, { resolve(): void; reject(e: unknown): void }>();
const call = (m: (id: number) => FromAcceptor): Promise<void> =>
  new Promise((resolve, reject) => {
    const id = nextCall++;
    calls.set(id, { resolve, reject });
    post(m(id));
  });
const asking = new Map<number, (lists: StatusView[][]) => void>();
const batches: BatchRecorder = {
  newId: nextBatchId,
  persist: (rec) => call((id) => ({ t: 'persist', id, rec })),
  updateOutcome: (batchId, outcomes) => call((id) => ({ t: 'outcome', id, batchId, items: storedItems(outcomes) })),
};

const acceptor = loadAcceptor(cfg.http.acceptor);
let landingBehind: Record<'solana' | 'evm', boolean> = { solana: false, evm: false };
const service = await HttpService.start({
  cfg,
  uws: acceptor.uws,
  clock: systemClock,
  log,
  accounts,
  dedup: DedupFilter.attach(d.dedup),
  ipLimiter: IpLimiter.attach(d.ipLimiter),
  statusReads: IpLimiter.attach(d.statusReads),
  udpIpLimiter: IpLimiter.attach(d.udpIpLimiter),
  tips: cfg.solana.tip_accounts.length > 0 ? new TipAccounts(cfg.solana.tip_accounts) : null,
  batches,
  // The acceptor threads are the node's cores: each checks its own transactions.
  threads: 0,
  name: String(d.index),
  // Each thread traces what it admitted; a status read asks the others through the main thread.
  statusesElsewhere: (account, ids, done) => {
    const id = nextCall++;
    asking.set(id, done);
    post({ t: 'statuses', id, account, ids });
  },
  // A WebSocket here may watch an account whose transactions pass through another thread.
  feedLink: {
    watch: (account, on) => post({ t: 'watch', account, on }),
    publish: (account, json) => post({ t: 'status-push', account, json }),
  },
  // The main thread checked the pair before it started the threads.
  tls: readTls('http', cfg.http.tls_cert_file, cfg.http.tls_key_file),
  // The main thread's landing follows every thread's forwarded transactions and tells this one what the chain said.
  landing: landingFamilies(cfg).size === 0 ? null : {
    tracks: (chain) => landingFamilies(cfg).has(chain),
    behind: (chain) => landingBehind[chain],
    follow: (t) => post({ t: 'follow', id: t.id, landingRef: t.landingRef!, receivedAt: t.receivedAt }),
  },
});
const caps = connectionCaps(cfg.http, acceptor, log, d.of);
if (caps) attachConnectionCaps(service.app, caps);

// Keeps the thread alive: the app has no listen socket of its own.
const alive = setInterval(() => {}, 1 << 30);

port.on('message', (m: ToAcceptor) => {
  switch (m.t) {
    case 'listening':
      caps?.listening(m.host, m.port);
      return;
    case 'account':
      accounts.apply(m.r);
      service.accountChanged(m.r.rec);
      return post({ t: 'ack', seq: m.seq });
    case 'watched':
      return service.feed.setRemote(m.account, m.on);
    case 'status-push':
      return service.feed.deliver(m.account, m.json);
    case 'landed':
      return service.landed(m.id, m.l);
    case 'landing-behind':
      landingBehind = m.behind;
      return;
    case 'stats':
      return post({ t: 'stats', id: m.id, stats: service.stats() });
    case 'statuses':
      return post({ t: 'statuses-local', id: m.id, views: service.localStatuses(m.account, m.ids) });
    case 'statuses-elsewhere': {
      const done = asking.get(m.id);
      asking.delete(m.id);
      return done?.(m.lists);
    }
    case 'record': {
      const c = calls.get(m.id);
      calls.delete(m.id);
      if (m.ok) c?.resolve();
      else c?.reject(new RelayError(E.BATCH_RECORD));
      return;
    }
    case 'tls': {
      // The main thread checked the pair just before; a file changed since is refused here too.
      let descriptor = -1;
      try {
        const pair = readTls('http', cfg.http.tls_cert_file, cfg.http.tls_key_file);
        if (pair) {
          const next = service.sslApp(pair);
          if (caps) attachConnectionCaps(next, caps);
          descriptor = next.getDescriptor!();
        }
      } catch (e) {
        log.error({ error: (e as Error).message }, 'TLS reload refused on this acceptor thread');
      }
      return post({ t: 'tls', id: m.id, descriptor });
    }
    case 'drain':
      void service.drain(m.deadline).then(({ abandoned, spill }) => post({ t: 'drained', abandoned, spill }));
      return;
    case 'close':
      void service.close().then(() => {
        clearInterval(alive);
        port.close();
      });
      return;
  }
});

post({ t: 'ready', descriptor: service.app.getDescriptor!() });
