/**
 * scripts/trace-request.mjs, the tracer docs/architecture.md's path figures
 * come from: run as a reader runs it (its own relay, stand-in upstream and
 * signed transactions), with --json. The figures depend on the code, so the
 * test checks what must hold whatever they are: every kind traced to its
 * forward, the counts nested as defined, the edges adding up to the counts,
 * the leaf and layer rules applied as the script states them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const SCRIPT = new URL('../../../scripts/trace-request.mjs', import.meta.url).pathname;
const ORDER = ['ingress', 'pipeline', 'exec', 'forward', 'store/status'];
const DOORS: Record<string, string> = {
  v2: 'src/ingress/doors/solana.ts',
  'jsonrpc-array-4': 'src/ingress/doors/jsonrpc.ts',
  'svc-batch-4': 'src/ingress/doors/jsonrpc.ts',
};

interface Edge { from: string; to: string; calls: number; fromLayer: string; toLayer: string; nonLeaf: boolean; up: boolean }

const sum = (edges: Edge[]): number => edges.reduce((n, e) => n + e.calls, 0);
const fileOf = (fn: string): string => fn.split(':')[0]!;

test('trace-request --json: the three kinds, each traced from its door to the upstream, with figures that add up', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, '--json', '--warmup', '1'], { maxBuffer: 64 << 20, timeout: 240_000 });
  const report = JSON.parse(stdout);

  assert.deepEqual(Object.keys(report.layers), ORDER, 'the layers, in their order');
  assert.deepEqual(report.kinds.map((k: any) => k.kind), ['v2', 'jsonrpc-array-4', 'svc-batch-4']);

  for (const k of report.kinds) {
    const f = k.figures;
    const edges: Edge[] = k.edges;
    assert.ok(k.answer >= 200 && k.answer < 300, `${k.kind} was accepted (${k.answer})`);
    assert.equal(k.trace.breakpointsMisplaced, 0, `${k.kind}: every breakpoint at its function's entry`);
    assert.ok(k.trace.breakpointsSet > 0 && k.trace.breakpointsSet <= k.trace.functionsCovered);

    // The counts nest as defined, and are not empty.
    assert.ok(f.filesEntered > 0, `${k.kind}: files entered`);
    assert.ok(f.crossFileCalls > 0, `${k.kind}: cross-file calls`);
    assert.ok(f.upCalls <= f.nonLeafCalls, `${k.kind}: up ${f.upCalls} <= non-leaf ${f.nonLeafCalls}`);
    assert.ok(f.nonLeafCalls <= f.crossFileCalls, `${k.kind}: non-leaf ${f.nonLeafCalls} <= cross-file ${f.crossFileCalls}`);
    assert.ok(f.crossFileCalls <= f.calls, `${k.kind}: cross-file ${f.crossFileCalls} <= all ${f.calls}`);
    assert.ok(f.distinct.upEdges <= f.upCalls && f.distinct.nonLeafEdges <= f.nonLeafCalls && f.distinct.crossFileEdges <= f.crossFileCalls);

    // The edge list is the figures' detail.
    assert.equal(sum(edges), f.crossFileCalls, `${k.kind}: the edges add up to the cross-file calls`);
    assert.equal(sum(edges.filter((e) => e.nonLeaf)), f.nonLeafCalls);
    assert.equal(sum(edges.filter((e) => e.up)), f.upCalls);
    assert.equal(edges.length, f.distinct.crossFileEdges);
    for (const e of edges) {
      assert.notEqual(fileOf(e.from), fileOf(e.to), `${e.from} -> ${e.to} crosses files`);
      assert.ok(e.calls > 0);
      if (e.up) {
        assert.ok(e.nonLeaf, `an up call is between non-leaf modules: ${e.from} -> ${e.to}`);
        assert.ok(ORDER.indexOf(e.toLayer) >= 0 && ORDER.indexOf(e.toLayer) < ORDER.indexOf(e.fromLayer), `${e.from} -> ${e.to} goes up`);
      } else if (e.nonLeaf && ORDER.includes(e.fromLayer) && ORDER.includes(e.toLayer)) {
        assert.ok(ORDER.indexOf(e.toLayer) >= ORDER.indexOf(e.fromLayer), `${e.from} -> ${e.to} is not marked up but goes up`);
      }
    }

    // Files: a leaf calls no other module, a non-leaf one does; every edge's ends were entered or are callers.
    assert.equal(k.files.length, f.filesEntered);
    const callers = new Set(edges.map((e) => fileOf(e.from)));
    for (const file of k.files) assert.equal(file.leaf, !callers.has(file.file), `${file.file}: leaf ${file.leaf}`);
    assert.equal(f.nonLeafModules, k.files.filter((x: any) => !x.leaf).length + [...callers].filter((c) => !k.files.some((x: any) => x.file === c)).length);
    for (const e of edges) assert.ok(k.files.some((x: any) => x.file === fileOf(e.to)), `${e.to}'s file was entered`);

    // The whole path: the door, the pipeline, the check, the forward to the upstream.
    const entered = new Set(k.files.map((x: any) => x.file));
    for (const file of [DOORS[k.kind]!, 'src/pipeline/admit.ts', 'src/exec/verifier.ts', 'src/forward/lane.ts', 'src/forward/upstream.ts']) {
      assert.ok(entered.has(file), `${k.kind} entered ${file}`);
    }
  }
});
