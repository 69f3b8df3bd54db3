/**
 * Where checks run: inline on the acceptor while it has headroom,
 * answered before `run` returns; at the end of its event-loop turn, back to
 * back, once it is busy; on the workers through the shared ring too when
 * there are any, with the acceptor taking its share; and a worker that dies
 * never leaves a transaction unanswered (an infrastructure fault is a
 * retry-safe failure, not "invalid transaction").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slab } from '../../src/tables/slab.js';
import { DedupFilter } from '../../src/tables/dedup.js';
import { systemClock } from '../../src/clock.js';
import { initKeccak } from '../../src/chains/evm/hash.js';
import { Verifier, type VerifierOptions } from '../../src/exec/verifier.js';
import { batchesSignatures } from '../../src/exec/check.js';
import { JobKind, JobResult, JobTable, S_RESULT } from '../../src/exec/jobs.js';
import { legacyTransfer } from '../helpers/solana.js';
import { signed1559 } from '../helpers/evm.js';

await initKeccak();

function setup(opts: Partial<VerifierOptions> = {}, slots = 1024) {
  const slab = Slab.create({ capacity: 4 << 20 });
  const jobs = JobTable.create(slots);
  const dedup = DedupFilter.create({ windowMs: 60_000, capacity: 100_000 });
  // The queue bound is 60 s unless a test is about it: a busy CI machine must not turn a slow check into a refusal.
  const v = new Verifier({ threads: 1, jobs, slab, dedup, chainId: 1n, clock: systemClock, controller: { maxMs: 60_000 }, ...opts });
  const job = (kind: JobKind, bytes: Uint8Array): number => {
    const off = slab.alloc(bytes.length);
    slab.bytes.set(bytes, off);
    const s = jobs.acquire();
    jobs.set(s, kind, off, bytes.length, 0);
    return s;
  };
  /**
   * Runs a job and resolves with its result; also reports whether the answer
   * came before run() returned, and whether it came in the turn that
   * submitted it (before an immediate queued after run()).
   */
  const check = (kind: JobKind, bytes: Uint8Array) =>
    new Promise<{ result: JobResult; sync: boolean; sameTurn: boolean }>((resolve) => {
      let returned = false;
      let later = false;
      const s = job(kind, bytes);
      v.run(s, () => {
        const result = jobs.field(s, S_RESULT) as JobResult;
        jobs.release(s);
        resolve({ result, sync: !returned, sameTurn: !later });
      });
      returned = true;
      setImmediate(() => (later = true));
    });
  return { v, jobs, slab, dedup, check, job };
}

function forgedOf(tx: Uint8Array): Uint8Array {
  const forged = Uint8Array.from(tx);
  forged[forged.length - 1]! ^= 1; // message changed, signature kept
  return forged;
}

test('a lightly loaded acceptor checks inline and has the answer before run() returns: no hop to a worker', async () => {
  const { v, check } = setup();
  await v.start();
  try {
    const r = await check(JobKind.SolanaTx, legacyTransfer().bytes);
    assert.deepEqual(r, { result: JobResult.Ok, sync: true, sameTurn: true });
    assert.equal(v.stats.acceptor, 1);
    assert.equal(v.stats.workers, 0);
  } finally {
    await v.close();
  }
});

test('a serial client is checked inline while its own work keeps the loop busy: no hop to an idle worker', async () => {
  const { v, check } = setup();
  await v.start();
  try {
    // Each round keeps the event loop busy for 8 ms (over the 5 ms utilisation window, as a serial
    // client's own checks and answers do), then submits one transaction alone in its turn.
    for (let i = 0; i < 12; i++) {
      const until = performance.now() + 8;
      while (performance.now() < until);
      const r = await check(JobKind.SolanaTx, legacyTransfer().bytes);
      assert.deepEqual(r, { result: JobResult.Ok, sync: true, sameTurn: true }, `round ${i}: answered before run() returned`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(v.stats.workers, 0, 'no check went to the worker');
    assert.equal(v.stats.acceptor, 12);
  } finally {
    await v.close();
  }
});

test('once turns carry several requests, a turn\'s checks run back to back after it, in submission order, answered in that turn', async () => {
  // This is about order and turns, not time: a wide slice keeps a slow or busy CI machine from
  // spilling checks into the next turn (the slice has its own test below).
  const { v, jobs, job, check } = setup({ threads: 0, sliceMs: 10_000 });
  await v.start();
  try {
    // A turn with three submissions: the first is checked inline, the other two after the turn.
    const first = await Promise.all([0, 1, 2].map(() => check(JobKind.SolanaTx, legacyTransfer().bytes)));
    assert.deepEqual(
      first.map((r) => r.sync),
      [true, false, false],
    );
    assert.ok(first.every((r) => r.result === JobResult.Ok && r.sameTurn));
    // The next turn follows a busy one: none of its checks runs inside a handler.
    const order: number[] = [];
    let handlersDone = false;
    const answered = new Promise<void>((resolve) => {
      for (let i = 0; i < 5; i++) {
        const s = job(JobKind.SolanaTx, legacyTransfer().bytes);
        v.run(s, () => {
          // Not one check runs inside a handler: the turn's requests are all read first.
          assert.ok(handlersDone, 'checked after the turn that submitted it');
          assert.equal(jobs.field(s, S_RESULT), JobResult.Ok);
          jobs.release(s);
          order.push(i);
          if (order.length === 5) resolve();
        });
      }
      handlersDone = true;
    });
    let later = false;
    setImmediate(() => (later = true));
    await answered;
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    assert.equal(later, false, 'answered before an immediate queued after the submissions');
    assert.equal(v.stats.acceptor, 8);
  } finally {
    await v.close();
  }
});

test('with an owner, turn ends run the owner\'s, around answers made then; without a callback an answer joins its settled list', async () => {
  const events: string[] = [];
  const settled: number[] = [];
  const owner = {
    settled,
    turn: () => {
      events.push('before');
      v.tick();
      events.push('after');
    },
    wake: () => v.wake(),
  };
  const { v, jobs, job } = setup({ threads: 0, sliceMs: 10_000, owner });
  await v.start();
  try {
    const submit = (i: number) => {
      const s = job(JobKind.SolanaTx, legacyTransfer().bytes);
      return v.run(s, () => {
        jobs.release(s);
        events.push(`answer ${i}`);
      });
    };
    assert.equal(submit(0), true, 'alone in its turn: inline, answered inside run()');
    assert.deepEqual(events, ['answer 0']);
    await new Promise((r) => setImmediate(r));
    events.length = 0;
    submit(1);
    submit(2);
    submit(3);
    await new Promise((r) => setImmediate(r));
    // The first of the turn is inline; the other two at the turn's end, inside the owner's.
    assert.deepEqual(events, ['answer 1', 'before', 'answer 2', 'answer 3', 'after']);
    // A turn of one makes the next one's first check inline again.
    const one = job(JobKind.SolanaTx, legacyTransfer().bytes);
    v.run(one);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, [one]);
    settled.length = 0;
    jobs.release(one);
    const quiet = [job(JobKind.SolanaTx, legacyTransfer().bytes), job(JobKind.SolanaTx, legacyTransfer().bytes)];
    assert.equal(v.run(quiet[0]!), true, 'inline: the caller goes on with the slot itself');
    assert.equal(v.run(quiet[1]!), false);
    assert.deepEqual(settled, [], 'nothing settled before the turn ends');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(settled, [quiet[1]], 'the second answered at the turn end, into the list');
    assert.equal(jobs.field(quiet[1]!, S_RESULT), JobResult.Ok);
    for (const s of quiet) jobs.release(s);
  } finally {
    await v.close();
  }
});

test('the turn-end sweep checks waiting jobs together (native batch calls) with the verdicts each gets alone', async () => {
  const { v, jobs, job } = setup({ threads: 0, sliceMs: 10_000 });
  // How many jobs went through batch calls: the private method, watched on this instance.
  let batched = 0;
  const inner = v as unknown as { checkBatchHere(slots: readonly number[]): void };
  const own = inner.checkBatchHere.bind(v);
  inner.checkBatchHere = (slots) => {
    batched += slots.length;
    own(slots);
  };
  await v.start();
  try {
    const sol = legacyTransfer().bytes;
    const evm = (await signed1559({ nonce: 9 })).raw;
    // A lone valid job first (checked inline), then a turn of mixed jobs that the sweep takes together:
    // a copy of the first (duplicate), forged ones, one valid twice in the same batch, malformed, EVM.
    const twice = legacyTransfer().bytes;
    const cases: [JobKind, Uint8Array, JobResult][] = [
      [JobKind.SolanaTx, sol, JobResult.Ok],
      [JobKind.SolanaTx, sol, JobResult.Duplicate],
      [JobKind.SolanaTx, forgedOf(legacyTransfer().bytes), JobResult.BadSignature],
      [JobKind.SolanaTx, twice, JobResult.Ok],
      [JobKind.SolanaTx, twice, JobResult.Duplicate],
      [JobKind.SolanaTx, Uint8Array.of(1, 2, 3), JobResult.Invalid],
      [JobKind.EvmTx, evm, JobResult.Ok],
      ...Array.from({ length: 12 }, (_, i): [JobKind, Uint8Array, JobResult] => (i % 3 === 2 ? [JobKind.SolanaTx, forgedOf(legacyTransfer().bytes), JobResult.BadSignature] : [JobKind.SolanaTx, legacyTransfer().bytes, JobResult.Ok])),
    ];
    const got = await new Promise<JobResult[]>((resolve) => {
      const out: JobResult[] = new Array(cases.length);
      let left = cases.length;
      cases.forEach(([kind, bytes], i) => {
        const s = job(kind, bytes);
        v.run(s, () => {
          out[i] = jobs.field(s, S_RESULT) as JobResult;
          jobs.release(s);
          if (--left === 0) resolve(out);
        });
      });
    });
    assert.deepEqual(got, cases.map((c) => c[2]));
    assert.equal(v.stats.acceptor, cases.length, 'every job checked on this thread, once');
    // The first is checked inline; the sweep takes the rest 16 at a time where the native verifier batches.
    assert.equal(batched, batchesSignatures ? cases.length - 1 : 0);
  } finally {
    await v.close();
  }
});

test('valid, forged, duplicate and malformed transactions get the same verdicts inline and on a worker', async () => {
  for (const inline of ['auto', 'never'] as const) {
    const { v, check } = setup({ inline, threads: inline === 'never' ? 1 : 0 });
    await v.start();
    try {
      const sol = legacyTransfer().bytes;
      const evm = (await signed1559({ nonce: 7 })).raw;
      assert.equal((await check(JobKind.SolanaTx, forgedOf(sol))).result, JobResult.BadSignature, inline);
      assert.equal((await check(JobKind.SolanaTx, sol)).result, JobResult.Ok, inline);
      assert.equal((await check(JobKind.SolanaTx, sol)).result, JobResult.Duplicate, `${inline}: second submission`);
      assert.equal((await check(JobKind.SolanaTx, Uint8Array.of(1, 2, 3))).result, JobResult.Invalid, inline);
      assert.equal((await check(JobKind.EvmTx, evm)).result, JobResult.Ok, inline);
      assert.equal((await check(JobKind.EvmTx, evm)).result, JobResult.Duplicate, inline);
      assert.equal((await check(JobKind.EvmTx, evm.subarray(0, evm.length - 1))).result, JobResult.Invalid, `${inline}: truncated`);
      assert.equal(v.stats.acceptor + v.stats.workers, 7, `${inline}: each check counted once`);
      // With no worker the acceptor checks everything. A worker's checks count their time (its utilisation);
      // how many it gets is a race with the acceptor's turn-end sweep, so only the pairing is fixed.
      if (inline === 'auto') assert.equal(v.stats.workers, 0);
      assert.equal(v.stats.workerBusyMs > 0, v.stats.workers > 0, `worker checks ${v.stats.workers}, busy ${v.stats.workerBusyMs} ms`);
    } finally {
      await v.close();
    }
  }
});

test('a forged copy never takes the dedup key of the genuine transaction, before it or alongside it', async () => {
  const { v, check } = setup({ inline: 'never' });
  await v.start();
  try {
    const genuine = legacyTransfer().bytes;
    assert.equal((await check(JobKind.SolanaTx, forgedOf(genuine))).result, JobResult.BadSignature, 'forged first');
    assert.equal((await check(JobKind.SolanaTx, genuine)).result, JobResult.Ok, 'then the genuine one is admitted');
    // In flight together: the genuine one is admitted whichever is checked first; the forged one never is.
    const other = legacyTransfer().bytes;
    const [f, g] = await Promise.all([check(JobKind.SolanaTx, forgedOf(other)), check(JobKind.SolanaTx, other)]);
    assert.equal(g.result, JobResult.Ok);
    assert.ok(f.result === JobResult.BadSignature || f.result === JobResult.Duplicate, `forged: ${f.result}`);
  } finally {
    await v.close();
  }
});

test('two identical submissions in flight at once: both are verified, exactly one wins the claim', async () => {
  const { v, check } = setup({ inline: 'never', threads: 2 });
  await v.start();
  try {
    const tx = legacyTransfer().bytes;
    const results = (await Promise.all([check(JobKind.SolanaTx, tx), check(JobKind.SolanaTx, tx), check(JobKind.SolanaTx, tx)])).map((r) => r.result);
    assert.deepEqual(results.slice().sort(), [JobResult.Ok, JobResult.Duplicate, JobResult.Duplicate]);
  } finally {
    await v.close();
  }
});

test('past its per-turn slice the acceptor leaves checks to the following turns instead of one long turn', async () => {
  const { v, check } = setup({ threads: 0 });
  await v.start();
  try {
    const txs = Array.from({ length: 200 }, () => legacyTransfer().bytes);
    // 200 ed25519 checks is ~10 ms of work: all arrive in one turn, as when 200 connections are readable at once.
    let turns = 0;
    let ended = false;
    const counter = (): void => {
      turns++;
      if (!ended) setImmediate(counter);
    };
    setImmediate(counter);
    const results = await Promise.all(txs.map((t) => check(JobKind.SolanaTx, t)));
    ended = true;
    assert.ok(results.every((r) => r.result === JobResult.Ok));
    assert.ok(results.some((r) => r.sameTurn), 'a slice in the turn that submitted them');
    assert.ok(results.some((r) => !r.sameTurn), 'the rest in later turns');
    assert.equal(v.stats.acceptor, 200);
    assert.ok(turns >= 3, `the work was spread over ${turns} turns`);
  } finally {
    await v.close();
  }
});

test('offloaded work the worker cannot keep up with is partly checked by the acceptor at the end of its turn', async () => {
  const { v, check } = setup({ inline: 'never' });
  await v.start();
  try {
    const txs = Array.from({ length: 300 }, () => legacyTransfer().bytes);
    const results = await Promise.all(txs.map((t) => check(JobKind.SolanaTx, t)));
    assert.ok(results.every((r) => r.result === JobResult.Ok));
    assert.equal(v.stats.acceptor + v.stats.workers, 300);
    assert.ok(v.stats.acceptor > 0, 'the acceptor took its share');
    assert.ok(v.stats.workers > 0, 'the worker did its share');
  } finally {
    await v.close();
  }
});

test('a busy acceptor leaves the checks a worker has room for to the worker', async () => {
  const { v, jobs, job } = setup();
  await v.start();
  try {
    // Each turn: 3 ms of other work (reading sockets, answering), then 16 checks submitted at its end,
    // as a saturated acceptor does. The worker has time for all of them during the next turn's work.
    const TURNS = 120;
    const PER_TURN = 16;
    const txs = Array.from({ length: TURNS * PER_TURN }, () => legacyTransfer().bytes);
    let answered = 0;
    let lastTurns = { acceptor: 0, workers: 0 };
    await new Promise<void>((resolve) => {
      let turn = 0;
      const step = (): void => {
        const until = performance.now() + 3;
        while (performance.now() < until);
        // The last third is measured, after the share has had the first 80 turns to settle.
        if (turn === TURNS - 40) lastTurns = { acceptor: v.stats.acceptor, workers: v.stats.workers };
        for (let i = 0; i < PER_TURN; i++) {
          const s = job(JobKind.SolanaTx, txs[turn * PER_TURN + i]!);
          v.run(s, () => {
            assert.equal(jobs.field(s, S_RESULT), JobResult.Ok);
            jobs.release(s);
            if (++answered === TURNS * PER_TURN) resolve();
          });
        }
        if (++turn < TURNS) setImmediate(step);
      };
      setImmediate(step);
    });
    const acceptor = v.stats.acceptor - lastTurns.acceptor;
    const workers = v.stats.workers - lastTurns.workers;
    // Jobs the worker still held when the window opened finish inside it.
    assert.ok(acceptor + workers >= 40 * PER_TURN);
    assert.ok(workers > acceptor, `the worker checked ${workers} of the last ${40 * PER_TURN}, the acceptor ${acceptor}`);
  } finally {
    await v.close();
  }
});

test('a worker that dies mid-check leaves no transaction unanswered: its job fails retry-safe, the worker restarts', async () => {
  const died = new SharedArrayBuffer(4);
  const errors: number[] = [];
  const { v, check } = setup({
    inline: 'never',
    worker: { filename: new URL('../fixtures/dying-verify-worker.js', import.meta.url), data: { died } },
    onWorkerError: (i) => errors.push(i),
  });
  await v.start();
  try {
    // Enough work that the acceptor, helping 1 ms a turn, cannot take it all before the worker claims one.
    const txs = Array.from({ length: 200 }, () => legacyTransfer().bytes);
    const results = (await Promise.all(txs.map((t) => check(JobKind.SolanaTx, t)))).map((r) => r.result);
    assert.equal(results.filter((r) => r === JobResult.Internal).length, 1, 'exactly the job it held');
    assert.equal(results.filter((r) => r === JobResult.Ok).length, 199);
    assert.deepEqual(errors, [0]);
    assert.equal(v.workerRestarts, 1);
    assert.equal(v.stats.internal, 1);
    // The restarted worker serves (given more than the acceptor's 1 ms slice, it gets a share) once its
    // thread has loaded; until then the acceptor checks everything itself.
    const before = v.stats.workers;
    for (let round = 0; round < 20 && v.stats.workers === before; round++) {
      // Signed before any is submitted: signing one takes milliseconds, and jobs submitted while the rest
      // are signed in the same turn would wait that long.
      const moreTxs = Array.from({ length: 50 }, () => legacyTransfer().bytes);
      const more = await Promise.all(moreTxs.map((t) => check(JobKind.SolanaTx, t)));
      assert.ok(more.every((r) => r.result === JobResult.Ok), JSON.stringify(more.map((r) => r.result)));
    }
    assert.ok(v.stats.workers > before, 'the restarted worker checked some');
  } finally {
    await v.close();
  }
});

test('a worker that dies right after its dedup claim leaves the transaction resubmittable: the resend after the 503 is checked, not a duplicate', async () => {
  // Signed before a round is submitted, so a round arrives in one turn and the worker takes some (the acceptor
  // helps only 1 ms a turn). On a loaded host the worker may get no CPU before the acceptor has checked a whole
  // round, so rounds go on until the worker has died on one (at most 20).
  const families: [JobKind, (round: number) => Promise<Uint8Array[]>][] = [
    [JobKind.SolanaTx, async () => Array.from({ length: 100 }, () => legacyTransfer().bytes)],
    [JobKind.EvmTx, (round) => Promise.all(Array.from({ length: 100 }, async (_, i) => (await signed1559({ nonce: 100 + 100 * round + i })).raw))],
  ];
  for (const [kind, sign] of families) {
    const died = new SharedArrayBuffer(4);
    const { v, jobs, check } = setup({
      inline: 'never',
      worker: { filename: new URL('../fixtures/claim-then-die-worker.js', import.meta.url), data: { died } },
    });
    await v.start();
    try {
      while (!jobs.hasSleeper()) await new Promise((r) => setTimeout(r, 5));
      const txs: Uint8Array[] = [];
      const results: JobResult[] = [];
      for (let round = 0; round < 20 && !results.includes(JobResult.Internal); round++) {
        const batch = await sign(round);
        txs.push(...batch);
        results.push(...(await Promise.all(batch.map((t) => check(kind, t)))).map((r) => r.result));
      }
      const lost = results.indexOf(JobResult.Internal);
      assert.ok(lost >= 0, 'the job the worker died on is answered retry-safe');
      assert.equal(results.filter((r) => r === JobResult.Ok).length, txs.length - 1);
      // The client resends it, as the 503 says it may: checked afresh, then a duplicate like any other.
      assert.equal((await check(kind, txs[lost]!)).result, JobResult.Ok, 'the resend is checked, not a duplicate');
      assert.equal((await check(kind, txs[lost]!)).result, JobResult.Duplicate);
      assert.equal(v.workerRestarts, 1);
    } finally {
      await v.close();
    }
  }
});

test('a check that waited past limits.queue_max_ms before it started is refused retry-safe, unchecked; a resend is checked afresh', async () => {
  let now = 1_000_000;
  const { v, jobs, job, check } = setup({ threads: 0, sliceMs: 10_000, clock: () => now, controller: { maxMs: 100 } });
  await v.start();
  try {
    const txs = Array.from({ length: 3 }, () => legacyTransfer().bytes);
    const results: JobResult[] = [];
    const answered = new Promise<void>((resolve) => {
      for (const tx of txs) {
        const s = job(JobKind.SolanaTx, tx);
        v.run(s, () => {
          results.push(jobs.field(s, S_RESULT) as JobResult);
          jobs.release(s);
          if (results.length === txs.length) resolve();
        });
      }
    });
    // The turn's first check ran inline; the other two wait for the end of the turn, which comes 150 ms later.
    now += 150;
    await answered;
    assert.deepEqual(results, [JobResult.Ok, JobResult.Expired, JobResult.Expired]);
    assert.equal(v.stats.expired, 2);
    // Never checked, so never claimed a dedup key: the same transaction sent again is accepted, not a duplicate.
    assert.equal((await check(JobKind.SolanaTx, txs[1]!)).result, JobResult.Ok);
    assert.equal((await check(JobKind.SolanaTx, txs[0]!)).result, JobResult.Duplicate);
  } finally {
    await v.close();
  }
});

test('on the worker too, a job that waited past the bound is refused unchecked and the rest are checked', async () => {
  // A 1 ms bound and 300 checks (~15 ms of work) offered at once: the later ones wait longer than that.
  const { v, check } = setup({ inline: 'never', controller: { targetMs: 1, maxMs: 1 } });
  await v.start();
  try {
    const txs = Array.from({ length: 300 }, () => legacyTransfer().bytes);
    const results = (await Promise.all(txs.map((t) => check(JobKind.SolanaTx, t)))).map((r) => r.result);
    const expired = results.filter((r) => r === JobResult.Expired).length;
    assert.equal(results.filter((r) => r === JobResult.Ok).length + expired, 300);
    assert.ok(expired > 0, 'some waited past 1 ms');
    assert.equal(v.stats.expired, expired);
    // Resent one at a time, again while it expires, as a client should: five offered at once on a busy
    // CI host had all waited past 1 ms again. Every attempt is checked afresh, none is a duplicate.
    for (const t of txs.filter((_, i) => results[i] === JobResult.Expired).slice(0, 5)) {
      let r = (await check(JobKind.SolanaTx, t)).result;
      for (let i = 0; r === JobResult.Expired && i < 50; i++) r = (await check(JobKind.SolanaTx, t)).result;
      assert.equal(r, JobResult.Ok, 'an expired transaction is not a duplicate when resent: it is checked and accepted');
    }
  } finally {
    await v.close();
  }
});

test('a standing backlog is priced at its measured drain pace, and no longer once it is gone', async () => {
  // 4000 checks: a backlogged turn checks for up to 5 ms, some 350 new-key checks with the native
  // verifier, so the backlog stands for about 11 turns (~230 ms), several times the 50 ms it takes to be
  // trusted; 1000 drained in about 3 turns, at that window's edge.
  const { v, job, jobs } = setup({ threads: 0 }, 4096);
  await v.start();
  const spin = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  let reading = true;
  // Every turn also spends 15 ms elsewhere, as an overloaded acceptor does reading and refusing requests:
  // checks (at most 5 ms a turn) then get about a quarter of it.
  const reader = (): void => {
    spin(15);
    if (reading) setImmediate(reader);
  };
  try {
    const txs = Array.from({ length: 4000 }, () => legacyTransfer().bytes);
    let left = txs.length;
    const all = new Promise<void>((resolve) => {
      for (const tx of txs) {
        const s = job(JobKind.SolanaTx, tx);
        v.run(s, () => {
          jobs.release(s);
          if (--left === 0) resolve();
        });
      }
    });
    setImmediate(reader);
    // Past BACKLOG_TRUST_MS (50 ms) of standing backlog: the controller samples between turns, so when
    // exactly depends on the turns (~20 ms each here); waited for, not timed.
    const t0 = performance.now();
    while (v.drainMs(1) === 0 && jobs.waiting() > 0 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 5));
    const waiting = jobs.waiting();
    assert.ok(waiting > 100, `still a backlog once its pace is known (${waiting} waiting)`);
    // The pace itself is DrainMeter's (test/exec/controller.test.ts, deterministic); here, that the
    // ring's backlog is measured and the door's estimate takes it: on an idle machine this backlog is
    // estimated ~2.5x the checks' own pace would say (82 against 246 ms measured without it).
    const atPace = v.drainMs(waiting);
    assert.ok(atPace > 0, 'a standing backlog has a measured pace');
    assert.ok(v.queueMs() >= atPace, `the estimate (${v.queueMs().toFixed(1)} ms) is at least the measured pace's (${atPace.toFixed(1)} ms)`);
    await all;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(v.drainMs(100), 0, 'no backlog, no pace to price anything at');
  } finally {
    reading = false;
    await v.close();
  }
});
