/** `txrelay bench <door>` and `txrelay bench sink`. */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import bs58 from 'bs58';
import { DEFAULT_TIP_LAMPORTS, DOORS, isDoor, type Door } from './targets.js';
import type { runBench as RunBench } from './generator.js';

/** "10s", "500ms", "2m", or a bare number of seconds → milliseconds. */
export function parseDuration(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 10s, 500ms or 2m');
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

function positiveNumber(v: string): number {
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('expected a positive number');
  return n;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function port(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number');
  return n;
}

interface BenchCliOptions {
  url: string;
  udpPort: number;
  key?: string;
  rate?: number;
  connections?: number;
  duration: number;
  warmup: number;
  count?: number;
  chainId: number;
  batch?: number;
  tipAccount?: string;
  tipLamports: number;
  json?: string;
  report?: string;
  cacheDir: string;
  cache: boolean;
  fresh?: boolean;
  adminUrl?: string;
  landed?: boolean;
  landedTimeout: number;
  statusReads: number;
  payer?: string;
  blockhash?: string;
  lamports?: number;
}

export function registerBenchCommands(program: Command): void {
  program
    .command('bench')
    .description('load generator: drive one door with pre-signed, never-seen transactions and report throughput and latency')
    .argument('<door>', `one of ${DOORS.join(', ')}, or "sink" (a stand-in upstream)`)
    .option('--url <url>', 'relay HTTP base (its host is also the UDP target)', 'http://127.0.0.1:8080')
    .option('--udp-port <port>', 'relay UDP port (solana-udp)', port, 16888)
    .option('--key <uuid>', 'account UUID (api-key / Bearer / auth, by door); env TXRELAY_BENCH_KEY')
    .option('--rate <n>', 'open loop: requests per second at fixed intended start times (default: closed loop)', positiveNumber)
    .option('--connections <n>', 'in-flight bound: open loop default 64; closed loop: workers, default 32', positiveInt)
    .addOption(new Option('--duration <d>', 'measured time (10s, 500ms, 2m)').argParser(parseDuration).default(10_000, '10s'))
    .addOption(new Option('--warmup <d>', 'time before measuring (requests sent, not counted)').argParser(parseDuration).default(2_000, '2s'))
    .option('--count <n>', 'pre-signed distinct transactions (default: what the run needs; closed loop: 10k requests/s, and if the relay answers faster the run is repeated with a pool sized to the rate it reached)', positiveInt)
    .option('--chain-id <n>', 'EVM chain id the transactions are signed for', positiveInt, 1)
    .option('--batch <n>', 'transactions per request: solana-bundle (1-4) and evm-batch; default 4', positiveInt)
    .option('--tip-account <base58>', "solana-bundle: one of the relay's solana.tip_accounts; transaction 0 of every bundle pays it")
    .option('--tip-lamports <n>', 'solana-bundle: tip per bundle', positiveInt, DEFAULT_TIP_LAMPORTS)
    .option('--json <file>', 'also write the result as JSON')
    .option('--report <file>', 'also write a self-contained HTML page: latency percentile curve, throughput and refusals per second, settings')
    .option('--cache-dir <dir>', 'where signed transactions are cached (keyed by door, count, chain id)', 'bench/.cache')
    .option('--no-cache', 'neither read nor write the transaction cache')
    .option('--fresh', 'sign new transactions even if cached ones exist (a rerun inside dedup.window_s would send duplicates)')
    .option('--admin-url <url>', "relay admin base; solana-udp reads txrelay_udp_datagrams_total before and after")
    .option('--landed', 'after the run, follow every acknowledged transaction through the status API until it lands or ends; report landing rate and ack-to-landed percentiles')
    .addOption(new Option('--landed-timeout <d>', '--landed: stop following after this long').argParser(parseDuration).default(120_000, '120s'))
    .option('--status-reads <n>', "--landed: status reads per second (100 ids each); keep under the relay's status.reads_per_s", positiveNumber, 10)
    .option('--payer <file>', 'Solana doors: sign with this funded keypair (a Solana CLI keypair file, 64-byte JSON array) instead of a fresh one; transactions are not cached')
    .option('--blockhash <base58>', 'Solana doors: a recent blockhash the chain accepts, instead of a random one per transaction')
    .option('--lamports <n>', 'Solana doors: lamports per transfer (to a fresh address: at least the rent-exempt minimum, 890880, for it to execute)', positiveInt)
    .addOption(new Option('--host <host>', 'sink: listen address').default('127.0.0.1'))
    .addOption(new Option('--port <port>', 'sink: listen port').argParser(port).default(8899))
    .addHelpText(
      'after',
      `
Examples:
  txrelay bench sink --port 8899
  txrelay bench solana-v2 --key $UUID --rate 2000 --duration 10s
  txrelay bench evm-batch --key $UUID --batch 16 --connections 8 --json out.json
  txrelay bench evm-text --key $UUID --rate 1000 --report run.html
  txrelay bench solana-udp --key $UUID --rate 5000 --admin-url http://127.0.0.1:8081
  txrelay bench solana-v2 --key $UUID --rate 200 --payer id.json --blockhash $HASH --lamports 1000000 --landed

Open loop latency counts from each request's intended start t0 + i/rate (no
coordinated omission): a request delayed by busy connections or a busy
generator keeps its intended start and counts as "late" (> 2 ms behind);
one that left within 2 ms (Node's timer jitter) counts from when it left.
JSON keys: params, mode, measuredS, requests, txs, throughput, statuses,
refusals, latencyUs {count,mean,p50,p90,p99,p999,max}, serviceTimeUs,
curves {latency,service: [{percentile,us}]}, perSecond [{s,ok,errors}],
schedule, exhausted, transactions, udp, warnings, landing {tracked, landed,
landedFailed, notLanded, notOnChain, unknown, notTracked, ackToLandedMs,
reads, readsPerS, waitedS, timeoutS} (null without --landed), generator,
startedAt, finishedAt.`,
    )
    .action(async (door: string, o: BenchCliOptions & { host: string; port: number }) => {
      if (door === 'sink') return runSink(o.host, o.port);
      if (!isDoor(door)) {
        process.stderr.write(`txrelay bench: unknown door "${door}"; one of ${DOORS.join(', ')}, sink\n`);
        process.exit(2);
      }
      await runBenchCli(door, o);
    });
}

/** `GET /ping` on the relay, or a one-line error naming the URL. */
async function mustAnswer(url: string): Promise<void> {
  try {
    const res = await fetch(new URL('/ping', url), { signal: AbortSignal.timeout(3000) });
    await res.arrayBuffer();
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`no relay answers at ${url} (${cause?.code ?? cause?.message ?? (e as Error).message}): start it, or give --url`);
  }
}

async function runBenchCli(door: Door, o: BenchCliOptions): Promise<void> {
  const key = o.key ?? process.env.TXRELAY_BENCH_KEY;
  if (!key) {
    process.stderr.write('txrelay bench: --key <uuid> (or TXRELAY_BENCH_KEY) is required\n');
    process.exit(2);
  }
  // Loaded here, not at the top: every txrelay command registers bench, and send or status
  // should not pay for the generator, undici and the histograms.
  const [{ runBench }, { claimOutputFile, formatReport, writeJsonReport }, { writeHtmlReport }] = await Promise.all([
    import('./generator.js'),
    import('./report.js'),
    import('./html.js'),
  ]);
  const tty = process.stderr.isTTY === true;
  let lastLen = 0;
  const progress = (line: string): void => {
    if (tty) {
      process.stderr.write('\r' + line.padEnd(lastLen));
      lastLen = line.length;
    } else process.stderr.write(line + '\n');
  };
  const endProgress = (): void => {
    if (tty && lastLen > 0) process.stderr.write('\n');
    lastLen = 0;
  };
  const abort = new AbortController();
  const onSigint = (): void => {
    if (abort.signal.aborted) process.exit(130);
    abort.abort();
  };
  // Output files are claimed before anything else: an unwritable path fails now, not after the run.
  const release: (() => void)[] = [];
  for (const [flag, file] of [['--json', o.json], ['--report', o.report]] as const) {
    if (!file) continue;
    try {
      release.push(claimOutputFile(file));
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why: Record<string, string> = { ENOENT: 'no such directory', EACCES: 'permission denied', EROFS: 'read-only file system', EISDIR: 'is a directory', ENOTDIR: 'a parent is not a directory' };
      process.stderr.write(`txrelay bench: cannot write ${flag} ${file}: ${why[err.code ?? ''] ?? err.message}\n`);
      for (const r of release) r();
      process.exit(2);
    }
  }
  process.on('SIGINT', onSigint);
  let wrote = false;
  try {
    // A relay that is not there fails the command at once, not after a whole run of refused connections.
    if (door !== 'solana-udp') await mustAnswer(o.url);
    const { followLanding, statusIds } = await import('./landed.js');
    const acked: string[] = [];
    const args: Parameters<typeof RunBench>[0] = {
      door,
      url: o.url,
      udpPort: o.udpPort,
      key,
      rate: o.rate,
      connections: o.connections,
      durationMs: o.duration,
      warmupMs: o.warmup,
      count: o.count,
      chainId: o.chainId,
      batch: o.batch,
      tipAccount: o.tipAccount,
      tipLamports: o.tipLamports,
      cacheDir: o.cache ? o.cacheDir : null,
      fresh: o.fresh,
      adminUrl: o.adminUrl,
      solana: solanaTxOptions(door, o),
      onAck: o.landed ? (txs) => acked.push(...statusIds(door, txs)) : undefined,
      onProgress: progress,
      onInfo: (l) => process.stderr.write(l + '\n'),
      signal: abort.signal,
    };
    let r = await runBench(args);
    const resized = o.count === undefined ? poolForRun(r, o.warmup + o.duration) : null;
    if (resized !== null && !abort.signal.aborted) {
      endProgress();
      process.stderr.write(`txrelay bench: the default pool ran out at ${Math.round(resized.rate)} requests/s; running again with --count ${resized.count}\n`);
      acked.length = 0;
      r = await runBench({ ...args, count: resized.count });
    }
    endProgress();
    if (o.landed && !abort.signal.aborted) {
      r.landing = await followLanding({ url: o.url, key, door, ids: acked, readsPerS: o.statusReads, timeoutMs: o.landedTimeout, signal: abort.signal, onProgress: progress });
      endProgress();
    }
    process.stdout.write(formatReport(r));
    if (o.json) writeJsonReport(o.json, r);
    if (o.report) writeHtmlReport(o.report, r, key);
    wrote = true;
    if (r.requests.sent > 0 && r.requests.ok === 0) {
      const said = Object.entries(r.refusals).map(([st, text]) => `${st} ${text}`);
      process.stderr.write(`txrelay bench: no request succeeded${said.length ? `; the relay said: ${said.join('; ')}` : ' (see the errors above)'}\n`);
      process.exitCode = 1;
    }
  } catch (e) {
    endProgress();
    process.stderr.write(`txrelay bench: ${(e as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    process.off('SIGINT', onSigint);
    if (!wrote) for (const r of release) r();
  }
}

/** --payer, --blockhash, --lamports: Solana transactions meant to land; undefined when none is given. */
function solanaTxOptions(door: Door, o: BenchCliOptions): Parameters<typeof RunBench>[0]['solana'] {
  if (o.payer === undefined && o.blockhash === undefined && o.lamports === undefined) return undefined;
  if (door.startsWith('evm-')) throw new Error('--payer, --blockhash and --lamports are for the Solana doors');
  let payerSeed: Uint8Array | undefined;
  if (o.payer !== undefined) {
    let k: unknown;
    try {
      k = JSON.parse(readFileSync(o.payer, 'utf8'));
    } catch (e) {
      // Not JSON.parse's message: it quotes the text, which is a secret key.
      const code = (e as NodeJS.ErrnoException).code;
      throw new Error(`--payer ${o.payer}: ${code ? `cannot read it (${code})` : 'not JSON'}`);
    }
    // Solana CLI keypair file: the 32-byte seed, then the public key. Its bytes never reach a message.
    if (!Array.isArray(k) || k.length !== 64 || !k.every((b) => Number.isInteger(b) && b >= 0 && b < 256)) throw new Error(`--payer ${o.payer}: not a keypair file (a JSON array of 64 bytes)`);
    payerSeed = Uint8Array.from(k.slice(0, 32) as number[]);
  }
  let blockhash: Uint8Array | undefined;
  if (o.blockhash !== undefined) {
    try {
      blockhash = bs58.decode(o.blockhash);
    } catch {
      blockhash = undefined;
    }
    if (blockhash?.length !== 32) throw new Error('--blockhash is not a 32-byte base58 hash');
  }
  return { payerSeed, blockhash, lamports: o.lamports === undefined ? undefined : BigInt(o.lamports) };
}

/** Most transactions a resized pool holds: about 1 GB of signed bodies. */
export const MAX_POOL = 2_000_000;

/**
 * A closed-loop run that used up its default pool ended early: the count a
 * second run needs at the rate the first one reached (twice that, as
 * margin), or null when the pool sufficed or was given with --count.
 */
export function poolForRun(
  r: { exhausted: boolean; mode: string; measuredS: number; requests: { sent: number; warmup: number }; txs: { perRequest: number }; transactions: { count: number }; startedAt: string; finishedAt: string },
  runMs: number,
): { count: number; rate: number } | null {
  if (!r.exhausted || r.mode !== 'closed') return null;
  // The measured window's rate; a pool spent inside the warm-up leaves only the whole run's.
  const wallS = Math.max((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000, 1e-3);
  const rate = r.requests.sent > 0 ? r.requests.sent / r.measuredS : r.requests.warmup / wallS;
  const count = Math.min(MAX_POOL, Math.ceil(((rate * runMs) / 1000) * 2) * r.txs.perRequest);
  return count > r.transactions.count ? { count, rate } : null;
}

async function runSink(host: string, p: number): Promise<void> {
  const { startSink } = await import('./sink.js');
  const sink = await startSink({ host, port: p });
  process.stderr.write(`bench sink listening on ${sink.url} (JSON-RPC, answers every call with success)\n`);
  let last = sink.counts();
  const timer = setInterval(() => {
    const c = sink.counts();
    const methods = Object.entries(c.byMethod)
      .map(([m, n]) => `${m} ${n - (last.byMethod[m] ?? 0)}/s`)
      .join('  ');
    process.stdout.write(`items ${c.items - last.items}/s  requests ${c.requests - last.requests}/s  total ${c.items}${methods ? '  ' + methods : ''}\n`);
    last = c;
  }, 1000);
  const stop = (): void => {
    clearInterval(timer);
    void sink.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
