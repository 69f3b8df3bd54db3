/**
 * A bundle's answer when its checks disagree (docs/architecture.md): an
 * invalid transaction outranks a sibling this node could not check (expired
 * in the queue, internal failure), so a bundle that can never pass is not
 * answered retry-safe. The rule is a pure function of the checks' results;
 * forcing a sibling to expire or a worker to die under one real bundle is a
 * race on any machine, so it is tested here on the results themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bundleVerdict } from '../../src/pipeline/bundle.js';
import { JobResult } from '../../src/exec/jobs.js';

const verdict = (rs: JobResult[]) => bundleVerdict(rs.length, (i) => rs[i]!);
const atFault = (r: JobResult) => r === JobResult.Invalid || r === JobResult.BadSignature || r === JobResult.Duplicate;

test('a bundle whose checks all passed has no deciding transaction', () => {
  assert.equal(verdict([JobResult.Ok]), -1);
  assert.equal(verdict([JobResult.Ok, JobResult.Ok, JobResult.Ok, JobResult.Ok]), -1);
});

test('an invalid transaction decides the bundle even behind an expired or internally failed sibling', () => {
  assert.equal(verdict([JobResult.Expired, JobResult.BadSignature]), 1);
  assert.equal(verdict([JobResult.Ok, JobResult.Internal, JobResult.Expired, JobResult.Invalid]), 3);
  assert.equal(verdict([JobResult.Expired, JobResult.Invalid, JobResult.BadSignature]), 1, 'the first at fault');
});

test('with no transaction at fault, the first one this node could not check decides (answered retry-safe)', () => {
  assert.equal(verdict([JobResult.Ok, JobResult.Expired, JobResult.Expired]), 1);
  assert.equal(verdict([JobResult.Internal, JobResult.Ok, JobResult.Expired]), 0);
});

test('any mix of 1 to 4 results: the deciding one is the first at fault, else the first not checked, else none', () => {
  const result = fc.constantFrom(JobResult.Ok, JobResult.Invalid, JobResult.BadSignature, JobResult.Internal, JobResult.Expired);
  fc.assert(
    fc.property(fc.array(result, { minLength: 1, maxLength: 4 }), (rs) => {
      const v = verdict(rs);
      const firstFault = rs.findIndex(atFault);
      const firstNotOk = rs.findIndex((r) => r !== JobResult.Ok);
      if (firstFault >= 0) assert.equal(v, firstFault);
      else assert.equal(v, firstNotOk);
    }),
  );
});
