#!/usr/bin/env node
/**
 * Traces the calls one request makes inside the relay, from the outside, with
 * the V8 inspector (docs/architecture.md "A request's hops" quotes its output).
 *
 *   npm run trace:request                      (builds first)
 *   node scripts/trace-request.mjs [--json] [--edges] [--warmup N] [--acceptor uws|node]
 *
 * --json: the figures, files and edges as JSON; --edges: every cross-file
 * call, caller -> callee with its count; --warmup: requests of each kind
 * before the traced ones (3); --acceptor: the HTTP acceptor (the default's).
 *
 * How: this process starts a real relay (the test helpers' in-process relay:
 * embedded defaults, every listener on an ephemeral port, one HTTP thread, a
 * stand-in upstream that answers every call) on its main thread, and a worker
 * thread attaches an inspector session to the main thread. It runs on one
 * core (taskset, Linux): the relay then starts no verification workers and
 * checks every transaction on the main thread, where the inspector looks.
 * After a few warm-up requests of every kind, for each kind:
 *   1. precise coverage (call counts) around one request says which functions
 *      under dist/src ran for it;
 *   2. a breakpoint goes on the first statement of each of those functions,
 *      with a condition that records the stack and returns false: the thread
 *      never pauses (a paused thread looks overloaded and is shed). Recording
 *      still costs time, so a choice made on the clock (the verifier's 1 ms of
 *      checks per turn) can go another way than untraced: the report lists
 *      every function entered another number of times than in step 1's
 *      untraced request;
 *   3. an idle window with the breakpoints set tells which event-loop entries
 *      run without a request (the verifier's lag sampler, the upstream sweep):
 *      hits under those entries are left out;
 *   4. exactly one more request of the kind is sent; at each hit the callee
 *      is the function entered and the caller the nearest frame below it that
 *      is under dist/src (frames of node internals and libraries are skipped;
 *      none: an entry from the event loop, a timer, a socket or a promise).
 * A request counts from the moment it is sent until its answer is read, the
 * upstream has received its calls, and the relay has been quiet a moment
 * after that (the forward's answer, status changes, store writes).
 *
 * Definitions (per request; "module" = one src file):
 * - cross-file call: a call whose caller's file is not the callee's;
 * - leaf module: a module that calls no other src module during the request;
 * - call between non-leaf modules: a cross-file call whose caller's and
 *   callee's modules are both non-leaf;
 * - back up a layer: a call between non-leaf modules whose callee's layer
 *   comes before the caller's in the order of LAYERS below;
 * - files entered: src files in which at least one function was entered.
 * Calls are counted as they happen (a function called 4 times is 4 calls);
 * the distinct caller -> callee pairs are given alongside.
 */
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { Session } from 'node:inspector';
import { SourceMap } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join, relative } from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The global the breakpoints' conditions call (recorder()). */
const HIT = '__traceRequestHit';
const DIST_SRC = join(ROOT, 'dist/src') + '/';

/**
 * The layers, first to last: a call from a later layer into an earlier one
 * goes back up. Folders not listed here (errors.ts, clock.ts, relay.ts,
 * obs/, config/, native/, tables/, chains/, client/) are shared utilities
 * or wiring, in no layer: calls into or out of them never count as up.
 */
export const LAYERS = [
  ['ingress', ['ingress/', 'answers/']],
  ['pipeline', ['pipeline/']],
  ['exec', ['exec/']],
  ['forward', ['forward/']],
  ['store/status', ['store/', 'status/']],
];
const UTIL = 'util';
const UTIL_FILES = 'errors.ts, clock.ts, relay.ts, obs/, config/, native/, tables/, chains/, client/';

/** 'src/ingress/doors/solana.ts' -> 'ingress'; a utility -> 'util'. */
export function layerOf(file) {
  const rel = file.replace(/^src\//, '');
  for (const [name, prefixes] of LAYERS) if (prefixes.some((p) => rel.startsWith(p))) return name;
  return UTIL;
}
function readFileSafe(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

const rank = (layer) => LAYERS.findIndex(([n]) => n === layer);

// ---- main thread: the relay and the requests -------------------------------------

async function main() {
  const argv = process.argv.slice(2);
  const usage = 'usage: node scripts/trace-request.mjs [--json] [--edges] [--warmup N] [--acceptor uws|node]';
  const opt = { json: false, edges: false, warmup: 3, acceptor: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') opt.json = true;
    else if (a === '--edges') opt.edges = true;
    else if (a === '--warmup' && /^\d+$/.test(argv[i + 1] ?? '')) opt.warmup = Number(argv[++i]);
    else if (a === '--acceptor' && ['uws', 'node'].includes(argv[i + 1])) opt.acceptor = argv[++i];
    else {
      process.stderr.write(`trace-request: unknown or incomplete option ${a}\n${usage}\n`);
      process.exit(2);
    }
  }
  // Checks run on verification workers once the main thread looks busy, and a thread paused at
  // breakpoints looks busy: the relay runs as it does on one core, with no workers (workers.threads
  // 0 is one per core beyond the main thread), so every check stays on the traced thread.
  if (availableParallelism() > 1) {
    const cpu = (/^Cpus_allowed_list:\s*(\d+)/m.exec(readFileSafe('/proc/self/status')) ?? [])[1] ?? '0';
    const child = spawn('taskset', ['-c', cpu, process.execPath, fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' });
    child.once('error', (e) => {
      process.stderr.write(`trace-request: cannot run the relay on one core (taskset, from util-linux, is needed): ${e.message}\n`);
      process.exit(2);
    });
    child.once('exit', (code, sig) => process.exit(code ?? (sig ? 1 : 0)));
    for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
    return;
  }
  if (!existsSync(join(ROOT, 'dist/test/helpers/relay.js'))) {
    process.stderr.write('trace-request: dist/test is missing; run `npm run build` in a clone of the repository first (npm run trace:request does)\n');
    process.exit(2);
  }
  // A hard bound: a trace that hangs reports a failure instead of waiting forever.
  const bound = setTimeout(() => {
    process.stderr.write('trace-request: did not finish within 180 s; giving up\n');
    process.exit(1);
  }, 180_000);
  bound.unref();

  const { startTestRelay } = await import(join(ROOT, 'dist/test/helpers/relay.js'));
  const { startUpstream } = await import(join(ROOT, 'dist/test/helpers/upstream.js'));
  const { legacyTransfer } = await import(join(ROOT, 'dist/test/helpers/solana.js'));
  const { signed1559 } = await import(join(ROOT, 'dist/test/helpers/evm.js'));

  const up = await startUpstream();
  // One HTTP thread (the main one) and, on one core, no verification workers: the whole path
  // runs where the inspector looks.
  const relay = await startTestRelay({
    http: { acceptors: 1, ...(opt.acceptor ? { acceptor: opt.acceptor } : {}) },
    workers: { threads: 0, inline: 'auto' },
    solana: { rpc_upstreams: [up.url] },
    evm: { upstreams: { paid: [up.url], free: [up.url] } },
    // Recording at every function entry makes checks look slow to the load shedder
    // (exec/controller.ts): its bounds at their widest, so the traced request is admitted as an untraced one is.
    limits: { ip_rps: 100_000, ip_burst: 100_000, queue_target_ms: 1000, queue_max_ms: 10_000 },
  });
  const acct = await relay.createAccount({ plan: 'paid', evm: { tps: 100_000, burst: 100_000 }, solana: { tps: 100_000, burst: 100_000 } });

  let nonce = 0;
  const evmTx = () => signed1559({ nonce: nonce++ });
  const json = { 'content-type': 'application/json', authorization: `Bearer ${acct.uuid}` };
  const KINDS = [
    {
      name: 'v2',
      title: 'POST /v2 (one Solana transaction)',
      calls: 1,
      async send() {
        const r = await fetch(relay.base + '/v2', { method: 'POST', headers: { 'api-key': acct.uuid }, body: legacyTransfer().bytes });
        return { status: r.status, text: await r.text() };
      },
    },
    {
      name: 'jsonrpc-array-4',
      title: 'POST / JSON-RPC array of 4 eth_sendRawTransaction',
      calls: 4,
      async send() {
        const txs = await Promise.all([evmTx(), evmTx(), evmTx(), evmTx()]);
        const body = JSON.stringify(txs.map((t, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'eth_sendRawTransaction', params: [t.hex] })));
        const r = await fetch(relay.base + '/', { method: 'POST', headers: json, body });
        return { status: r.status, text: await r.text() };
      },
    },
    {
      name: 'svc-batch-4',
      title: 'POST / svc_sendRawTransactionBatch of 4',
      calls: 4,
      async send() {
        const txs = await Promise.all([evmTx(), evmTx(), evmTx(), evmTx()]);
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'svc_sendRawTransactionBatch', params: txs.map((t) => t.hex) });
        const r = await fetch(relay.base + '/', { method: 'POST', headers: json, body });
        return { status: r.status, text: await r.text() };
      },
    },
  ];

  const hits = recorder();
  const worker = new Worker(new URL(import.meta.url));
  const pending = new Map();
  let seq = 0;
  worker.on('message', (m) => {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.error) p.reject(new Error(m.error));
    else p.resolve(m.result);
  });
  worker.on('error', (e) => {
    process.stderr.write(`trace-request: tracer thread failed: ${e.stack ?? e}\n`);
    process.exit(1);
  });
  const ask = (op, args = {}) =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, op, ...args });
    });

  /** One request, from sending it until the relay is done with it; returns its answer and how long that took. */
  const SETTLE_MS = 250;
  const oneRequest = async (kind) => {
    const t0 = performance.now();
    const before = up.calls().length;
    const answer = await kind.send();
    if (answer.status >= 300) throw new Error(`${kind.name}: the relay answered ${answer.status} ${answer.text}`);
    await up.waitForCalls(before + kind.calls, 30_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { answer, ms: performance.now() - t0 };
  };

  try {
    await ask('start');
    for (let i = 0; i < opt.warmup; i++) for (const k of KINDS) await oneRequest(k);

    const results = [];
    for (const kind of KINDS) {
      await ask('coverage-reset');
      const { ms } = await oneRequest(kind);
      const fns = await ask('coverage-take');
      const armed = await ask('arm', { fns });
      // The same length of time with no request: what runs then is not the request's.
      const misplacedBefore = hits.misplaced;
      hits.start();
      await new Promise((r) => setTimeout(r, Math.max(ms, 500)));
      const idle = hits.stop();
      hits.start();
      const { answer } = await oneRequest(kind);
      const traced = hits.stop();
      await ask('disarm');
      armed.misplaced = hits.misplaced - misplacedBefore;
      results.push(analyse(kind, { fns, armed, idle, traced, status: answer.status }));
    }
    await ask('stop');

    const report = {
      command: 'npm run trace:request',
      node: process.version,
      cores: availableParallelism(),
      acceptor: relay.relay.acceptor ?? null,
      layers: Object.fromEntries(LAYERS.map(([n, p]) => [n, p.map((x) => 'src/' + x + '**')])),
      util: `every other src file (${UTIL_FILES}): in no layer`,
      kinds: results,
    };
    if (opt.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else print(report, opt);
  } finally {
    await worker.terminate();
    await relay.stop();
    await up.close();
    clearTimeout(bound);
  }
}

/**
 * What each breakpoint's condition calls on the relay's thread: the stack as
 * call sites, kept when recording. The condition returns false, so the thread
 * never pauses: a paused thread looks overloaded to the load shedder
 * (exec/controller.ts), which refuses the traced request.
 */
function recorder() {
  const SRC_URL = pathToFileURL(DIST_SRC).href;
  let list = null;
  const rec = {
    misplaced: 0,
    start() {
      list = [];
    },
    stop() {
      const l = list;
      list = null;
      return l;
    },
  };
  const site = (c) => ({
    url: c.getFileName(),
    line: c.getEnclosingLineNumber() - 1,
    col: c.getEnclosingColumnNumber() - 1,
    name: c.getFunctionName() ?? c.getMethodName() ?? '',
  });
  globalThis[HIT] = function hit(fn, line, col) {
    if (list === null) return;
    const prepare = Error.prepareStackTrace;
    const limit = Error.stackTraceLimit;
    Error.prepareStackTrace = (_, sites) => sites;
    Error.stackTraceLimit = 200;
    const o = {};
    Error.captureStackTrace(o, hit);
    const sites = o.stack;
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
    // Frames of node internals, libraries and the condition itself are skipped.
    const src = sites.filter((c) => c.getFileName()?.startsWith(SRC_URL));
    if (src.length === 0) return;
    const callee = site(src[0]);
    if (callee.line < line || (callee.line === line && callee.col < col)) {
      // The breakpoint resolved to a statement of an enclosing function, not the entry of its own.
      rec.misplaced++;
      return;
    }
    list.push({ fn, callee, caller: src.length > 1 ? site(src[1]) : null, root: site(src[src.length - 1]) });
  };
  return rec;
}

// ---- analysis ----------------------------------------------------------------

const sourceMaps = new Map();
/** A dist/src function location -> 'src/x/y.ts:LINE name' through the file's source map. */
function label(url, line, col, name) {
  const js = fileURLToPath(url);
  const file = 'src/' + relative(DIST_SRC, js).replace(/\.js$/, '.ts');
  let sm = sourceMaps.get(js);
  if (sm === undefined) {
    try {
      sm = new SourceMap(JSON.parse(readFileSync(js + '.map', 'utf8')));
    } catch {
      sm = null;
    }
    sourceMaps.set(js, sm);
  }
  const e = sm?.findEntry(line, col);
  const tsLine = e && typeof e.originalLine === 'number' ? e.originalLine + 1 : null;
  return { file, fn: `${file}:${tsLine ?? `js${line + 1}`} ${name || '(anonymous)'}` };
}

function analyse(kind, { fns, armed, idle, traced: pauses, status }) {
  const frameKey = (f) => `${f.url}#${f.line}:${f.col}`;
  const background = new Set(idle.map((p) => frameKey(p.root)));
  const kept = pauses.filter((p) => !background.has(frameKey(p.root)));
  const labels = new Map();
  const lab = (f) => {
    const k = frameKey(f);
    if (!labels.has(k)) labels.set(k, label(f.url, f.line, f.col, f.name));
    return labels.get(k);
  };

  const entered = new Set();
  const calls = []; // { from, to, fromFile, toFile }
  let fromLoop = 0;
  for (const p of kept) {
    const callee = lab(p.callee);
    entered.add(callee.file);
    if (!p.caller) {
      fromLoop++;
      continue;
    }
    const caller = lab(p.caller);
    calls.push({ from: caller.fn, to: callee.fn, fromFile: caller.file, toFile: callee.file });
  }
  const cross = calls.filter((c) => c.fromFile !== c.toFile);
  const nonLeafFiles = new Set(cross.map((c) => c.fromFile));
  const nonLeaf = cross.filter((c) => nonLeafFiles.has(c.fromFile) && nonLeafFiles.has(c.toFile));
  const isUp = (c) => {
    const a = layerOf(c.fromFile);
    const b = layerOf(c.toFile);
    return a !== UTIL && b !== UTIL && rank(b) < rank(a);
  };
  const up = nonLeaf.filter(isUp);

  const distinct = (list) => {
    const m = new Map();
    for (const c of list) {
      const k = c.from + ' -> ' + c.to;
      m.set(k, (m.get(k) ?? 0) + 1);
    }
    return m;
  };
  const edgeList = (list) =>
    [...distinct(list)].map(([k, n]) => {
      const [from, to] = k.split(' -> ');
      const fromFile = from.split(':')[0];
      const toFile = to.split(':')[0];
      const c = { fromFile, toFile };
      return {
        from,
        to,
        calls: n,
        fromLayer: layerOf(fromFile),
        toLayer: layerOf(toFile),
        nonLeaf: nonLeafFiles.has(fromFile) && nonLeafFiles.has(toFile),
        up: nonLeafFiles.has(fromFile) && nonLeafFiles.has(toFile) && isUp(c),
      };
    });
  // The coverage request ran untraced: a function entered another number of times under the
  // breakpoints shows where their cost changed a timing-driven choice (the verifier's turn budget).
  const traced = new Map();
  for (const p of kept) traced.set(p.fn, { n: (traced.get(p.fn)?.n ?? 0) + 1, label: lab(p.callee).fn });
  const differs = [];
  const idleFns = new Set(idle.map((p) => p.fn));
  for (const [i, t] of traced) if (fns[i].count !== t.n && !idleFns.has(i)) differs.push({ fn: t.label, untraced: fns[i].count, traced: t.n });
  differs.sort((a, b) => (a.fn < b.fn ? -1 : 1));
  const files = [...entered].sort();
  return {
    kind: kind.name,
    title: kind.title,
    answer: status,
    figures: {
      crossFileCalls: cross.length,
      nonLeafCalls: nonLeaf.length,
      upCalls: up.length,
      filesEntered: entered.size,
      calls: calls.length,
      entriesFromEventLoop: fromLoop,
      nonLeafModules: nonLeafFiles.size,
      distinct: { crossFileEdges: distinct(cross).size, nonLeafEdges: distinct(nonLeaf).size, upEdges: distinct(up).size },
    },
    trace: {
      functionsCovered: fns.length,
      callsDifferingFromUntraced: differs,
      breakpointsSet: armed.set,
      breakpointsMisplaced: armed.misplaced,
      hits: pauses.length,
      hitsLeftOutAsBackground: pauses.length - kept.length,
      backgroundEntries: [...new Set(idle.map((p) => lab(p.root).fn))].sort(),
    },
    files: files.map((f) => ({ file: f, layer: layerOf(f), leaf: !nonLeafFiles.has(f) })),
    edges: edgeList(cross).sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.to < b.to ? -1 : 1)),
  };
}

function print(report, opt) {
  const out = [];
  const rows = [
    ['cross-file calls', (k) => `${k.figures.crossFileCalls} (${k.figures.distinct.crossFileEdges})`],
    ['calls between non-leaf modules', (k) => `${k.figures.nonLeafCalls} (${k.figures.distinct.nonLeafEdges})`],
    ['  of which back up a layer', (k) => `${k.figures.upCalls} (${k.figures.distinct.upEdges})`],
    ['files entered', (k) => String(k.figures.filesEntered)],
    ['  of them non-leaf', (k) => String(k.figures.nonLeafModules)],
    ['calls within src (all)', (k) => String(k.figures.calls)],
    ['entries from the event loop', (k) => String(k.figures.entriesFromEventLoop)],
  ];
  const heads = ['', ...report.kinds.map((k) => k.kind)];
  const cells = rows.map(([name, f]) => [name, ...report.kinds.map(f)]);
  const widths = heads.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('   ');
  out.push(`Calls one request makes inside the relay (Node ${report.node}, acceptor ${report.acceptor ?? 'default'}): calls counted as made, in brackets the distinct caller -> callee pairs.`);
  for (const k of report.kinds) out.push(`  ${k.kind}: ${k.title}, answered ${k.answer}`);
  out.push('', line(heads), ...cells.map(line), '');
  out.push('Layers, first to last: ' + LAYERS.map(([n, p]) => `${n} (${p.map((x) => 'src/' + x).join(', ')})`).join(' > '));
  out.push('Every other src file is a utility or wiring, in no layer: ' + UTIL_FILES + '.');
  for (const k of report.kinds) {
    out.push('', `${k.kind}: calls back up a layer`);
    const ups = k.edges.filter((e) => e.up);
    if (ups.length === 0) out.push('  (none)');
    for (const e of ups) out.push(`  ${e.calls}x  ${e.from}  ->  ${e.to}   [${e.fromLayer} -> ${e.toLayer}]`);
    const t = k.trace;
    out.push(`  (${t.functionsCovered} functions ran, ${t.breakpointsSet} breakpoints, ${t.hits} hits, ${t.hitsLeftOutAsBackground} left out as background: ${t.backgroundEntries.join(', ') || 'none'}${t.breakpointsMisplaced ? `; ${t.breakpointsMisplaced} misplaced breakpoints ignored` : ''})`);
  }
  for (const k of report.kinds) {
    const d = k.trace.callsDifferingFromUntraced;
    if (d.length === 0) continue;
    out.push('', `${k.kind}: functions entered another number of times than in the same request untraced (coverage counts)`);
    for (const x of d) out.push(`  ${x.fn}: ${x.untraced} untraced, ${x.traced} traced`);
  }
  if (opt.edges) {
    for (const k of report.kinds) {
      out.push('', `${k.kind}: every cross-file call (caller -> callee, calls; ^ back up a layer, * between non-leaf modules)`);
      for (const e of k.edges) out.push(`  ${e.up ? '^' : e.nonLeaf ? '*' : ' '} ${String(e.calls).padStart(3)}  ${e.from}  ->  ${e.to}`);
      out.push(`  files entered: ${k.files.map((f) => f.file.replace(/^src\//, '') + (f.leaf ? '' : '*')).join(', ')}`);
    }
  }
  process.stdout.write(out.join('\n') + '\n');
}

// ---- worker thread: the inspector on the main thread ----------------------------

async function tracer() {
  const session = new Session();
  session.connectToMainThread();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

  const scripts = new Map(); // scriptId -> { lineStarts }
  let bps = new Map(); // breakpointId -> the function it is set in

  const inSrc = (url) => url.startsWith('file://') && fileURLToPath(url).startsWith(DIST_SRC);
  const lineStartsOf = async (scriptId) => {
    let s = scripts.get(scriptId);
    if (!s) {
      const { scriptSource } = await post('Debugger.getScriptSource', { scriptId });
      const starts = [0];
      for (let i = 0; i < scriptSource.length; i++) if (scriptSource.charCodeAt(i) === 10) starts.push(i + 1);
      s = { lineStarts: starts };
      scripts.set(scriptId, s);
    }
    return s.lineStarts;
  };
  const toLoc = (starts, offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { lineNumber: lo, columnNumber: offset - starts[lo] };
  };

  // The conditions never pause; anything else that would (a debugger statement) carries on.
  session.on('Debugger.paused', () => session.post('Debugger.resume'));

  const ops = {
    async start() {
      await post('Profiler.enable');
      await post('Debugger.enable');
      await post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    },
    async 'coverage-reset'() {
      await post('Profiler.takePreciseCoverage');
    },
    async 'coverage-take'() {
      const { result } = await post('Profiler.takePreciseCoverage');
      const fns = [];
      for (const s of result) {
        if (!inSrc(s.url)) continue;
        for (const fn of s.functions) {
          const r = fn.ranges[0];
          // The script's top level (offset 0) runs once, at import.
          if (r.count > 0 && !(r.startOffset === 0 && fn.functionName === '')) fns.push({ scriptId: s.scriptId, start: r.startOffset, end: r.endOffset, count: r.count });
        }
      }
      return fns;
    },
    async arm({ fns }) {
      bps = new Map();
      let set = 0;
      for (const [i, fn] of fns.entries()) {
        const starts = await lineStartsOf(fn.scriptId);
        const start = { scriptId: fn.scriptId, ...toLoc(starts, fn.start) };
        const end = { scriptId: fn.scriptId, ...toLoc(starts, fn.end) };
        const { locations } = await post('Debugger.getPossibleBreakpoints', { start, end, restrictToFunction: true });
        if (!locations.length) continue;
        try {
          const condition = `(globalThis.${HIT}?.(${i}, ${start.lineNumber}, ${start.columnNumber}), false)`;
          const { breakpointId } = await post('Debugger.setBreakpoint', { location: locations[0], condition });
          bps.set(breakpointId, fn);
          set++;
        } catch {
          // Two ranges resolving to one location: the first breakpoint stands for both.
        }
      }
      return { set };
    },
    async disarm() {
      for (const id of bps.keys()) await post('Debugger.removeBreakpoint', { breakpointId: id });
      bps = new Map();
    },
    async stop() {
      await post('Profiler.stopPreciseCoverage');
      await post('Debugger.disable');
      await post('Profiler.disable');
      session.disconnect();
    },
  };
  parentPort.on('message', async (m) => {
    try {
      parentPort.postMessage({ id: m.id, result: await ops[m.op](m) });
    } catch (e) {
      parentPort.postMessage({ id: m.id, error: String(e?.stack ?? e) });
    }
  });
}

// Last, so that every top-level binding above exists before either thread starts.
if (isMainThread) await main();
else await tracer();
