/**
 * The admission pipeline without a socket: real tables, a real job table and
 * verifier (checks inline), real forwarding lanes with no upstream (they
 * admit and discard), a real store on disk for accounts and batch records.
 * A door here is a stand-in that builds the submission and pushes its whole
 * body at once when told to; everything behind it is the relay's own code.
 */
import { bodyTo, type Parse } from '../../src/ingress/doors/context.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock.js';
import { Slab } from '../../src/tables/slab.js';
import { DedupFilter } from '../../src/tables/dedup.js';
import { IpLimiter } from '../../src/tables/ip-limiter.js';
import { JobTable } from '../../src/exec/jobs.js';
import { Verifier } from '../../src/exec/verifier.js';
import { Replier } from '../../src/ingress/reply.js';
import { AckFirst } from '../../src/ingress/ack-first.js';
import { Forwarder } from '../../src/forward/forwarder.js';
import { Store } from '../../src/store/db.js';
import { AccountStore, type NewAccount } from '../../src/store/accounts.js';
import { Tracker } from '../../src/status/tracker.js';
import { BatchStore, storedItems } from '../../src/store/batches.js';
import { nextBatchId } from '../../src/store/ids.js';
import { AccountRegistry } from '../../src/pipeline/accounts.js';
import { TipAccounts } from '../../src/chains/solana/tip.js';
import { initKeccak } from '../../src/chains/evm/hash.js';
import { Pipeline } from '../../src/pipeline/admit.js';
import { Outcome as OutcomeClass, type Outcome } from '../../src/pipeline/outcome.js';
import { solanaTx, type SolanaTxSubmission, type Submission } from '../../src/pipeline/submission.js';
import type { Admission } from '../../src/pipeline/admission.js';
import * as sol from './solana.js';

const PLANS = {
  free: { evm_tps: 5, solana_tps: 2, min_tip_lamports: 1000 },
  paid: { evm_tps: 50, solana_tps: 2, min_tip_lamports: 1000 },
};
export const TIP = sol.randomAddress().toBase58();

export interface Harness {
  pipeline: Pipeline;
  tracker: Tracker;
  slab: Slab;
  jobs: JobTable;
  verifier: Verifier;
  forwarder: Forwarder;
  batches: BatchStore;
  account(input?: Record<string, unknown>): Promise<NewAccount>;
  /** Admits a submission (with the body its door pushes when told to) and resolves with the outcomes its sink got (more than one would be a bug). */
  admit(sent: Submission | Sent): Promise<Outcome[]>;
  close(): Promise<void>;
}

export async function harness(opts: { ipRps?: number; ipBurst?: number; slabBytes?: number } = {}): Promise<Harness> {
  await initKeccak();
  const dir = mkdtempSync(join(tmpdir(), 'txrelay-pipeline-'));
  const db = Store.open(dir);
  const accounts = AccountStore.open(db);
  const batches = new BatchStore(db);
  const clock = systemClock;
  const slab = Slab.create({ capacity: opts.slabBytes ?? 1 << 20 });
  const jobs = JobTable.create(64);
  const dedup = DedupFilter.create({ windowMs: 60_000, capacity: 4096 });
  // The relay's scheduler, as the service wires it (src/ingress/service.ts).
  const reply = new Replier({ coalesce: true, ack: new AckFirst(), node: 'test' });
  const verifier = new Verifier({ threads: 0, jobs, slab, dedup, chainId: 1n, clock, owner: { settled: reply.commits, turn: reply.turn, wake: reply.wake } });
  await verifier.start();
  const forwarder = new Forwarder({ lanes: {} });
  const registry = AccountRegistry.create(accounts, clock);
  const ip = () => IpLimiter.create({ nowMs: clock(), rate: opts.ipRps ?? 1000, burst: opts.ipBurst ?? 2000 });
  const tracker = new Tracker({ retentionMs: 60_000, maxEntries: 1000, node: 'test' });
  const pipeline = new Pipeline({
    clock,
    accounts: registry,
    ipLimiter: ip(),
    ipRps: opts.ipRps ?? 1000,
    udpIpLimiter: ip(),
    udpIpRps: 1000,
    verifier,
    forwarder,
    enabled: { evm: true, solana: true },
    shedHoldMs: 0,
    heldRefusals: () => 0,
    dedup,
    slab,
    jobs,
    tips: new TipAccounts([TIP]),
    evmChainId: 1n,
    batches: {
      newId: nextBatchId,
      persist: (r) => batches.persist(r),
      updateOutcome: (id, o) => batches.updateOutcome(id, storedItems(o)),
    },
    maxBody: 131072,
    tracker,
    statuses: (account, ids, done) => done(OutcomeClass.answered(ids.map((id) => tracker.status(id, account.id)))),
    turn: reply,
  });
  reply.drive({ verifier, checked: pipeline.onChecked });
  return {
    pipeline,
    tracker,
    slab,
    jobs,
    verifier,
    forwarder,
    batches,
    account: (input = {}) => accounts.create(input, PLANS),
    admit: (sent) =>
      new Promise((resolve) => {
        const s = 'sub' in sent ? sent : { sub: sent };
        const got: Outcome[] = [];
        const a = pipeline.admit(s.sub, (_s, o) => {
          got.push(o);
          // Any second call would land in `got` before the next turn.
          setImmediate(() => resolve(got));
        });
        // What an HTTP door does (src/ingress/doors/context.ts admitHttp).
        if (a !== null) pushWhole(a, s.body ?? new Uint8Array(0), s.parse);
      }),
    async close() {
      await verifier.close();
      reply.runCommits();
      await forwarder.close();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A submission, the body its door pushes when the pipeline says to read it, and the door's reading of a JSON body. */
export interface Sent {
  sub: Submission;
  body?: Uint8Array;
  parse?: Parse;
}

/** The peer address stand-in doors read. */
export const PEER = '192.0.2.1';

/** What an HTTP door's body reader does (src/ingress/body.ts) into the door's target, with the whole body here at once. */
function pushWhole(a: Admission, body: Uint8Array, parse?: Parse): void {
  const t = bodyTo(a, parse);
  if (body.length > a.sub.maxBody) return t.tooLarge(body.length);
  if (t.wantsInto) {
    const into = t.into(body.length);
    if (into === null) return;
    into.set(body);
    return t.bodyBytes(into);
  }
  t.bodyBytes(body);
}

/** `POST /v2` of `tx` with `key` as its credential. */
export function v2(tx: Uint8Array, key: string | null, more: Partial<SolanaTxSubmission> = {}): Sent {
  return { sub: solanaTx('solana-v2', { credential: key, ip: PEER, maxBody: 4096, ...more }), body: tx };
}

/** Nothing a settled submission held is still held. */
export function assertNothingHeld(h: Harness): void {
  assert.equal(h.slab.live, 0, 'every slab block given back');
  assert.equal(h.jobs.available, h.jobs.slots, 'every job slot given back');
}
