/**
 * `txrelay send`: submits one transaction (or a bundle / batch) to any door
 * through the client library and prints the typed outcome as JSON. Exit code
 * 0 when the relay acknowledged it (queued, duplicate, accepted), 1 otherwise.
 * With `--wait`, it then waits for the forward outcome (docs/protocol.md#status),
 * prints it as `forward`, and exits 0 only when it is `forwarded`; with
 * `--wait landed`, for what the chain said (the node needs a chain RPC for
 * the family), printed as `landing`, exit 0 only when `landed`.
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import bs58 from 'bs58';
import { EvmClient, SolanaClient, UdpSender, firstSignature, waitForwardAll, type ForwardWait, type LandedWait } from '../client/index.js';

const SEND_DOORS = ['evm-rpc', 'evm-text', 'evm-batch', 'solana-rpc', 'solana-v2', 'solana-bundle', 'solana-udp'] as const;
type SendDoor = (typeof SEND_DOORS)[number];

/**
 * A transaction argument: `@path` reads a file (raw bytes, or text holding
 * hex / base64 / base58), `0x…` is hex, otherwise base64 or base58 text.
 */
function readTx(arg: string, family: 'evm' | 'solana'): { bytes: Uint8Array; hex: string } {
  let text: string | null = arg;
  let bytes: Uint8Array | null = null;
  if (arg.startsWith('@')) {
    const raw = readFileSync(arg.slice(1));
    const asText = raw.toString('latin1').trim();
    if (/^(0x[0-9a-fA-F]*|[A-Za-z0-9+/=]+)$/.test(asText)) text = asText;
    else {
      bytes = raw;
      text = null;
    }
  }
  if (text !== null) {
    if (/^0x/i.test(text)) bytes = Buffer.from(text.slice(2), 'hex');
    else if (family === 'solana' && /^[1-9A-HJ-NP-Za-km-z]+$/.test(text) && !/[+/=]/.test(text) && text.length % 4 !== 0) bytes = bs58.decode(text);
    else bytes = Buffer.from(text, 'base64');
  }
  if (!bytes || bytes.length === 0) throw new Error(`cannot read a transaction from ${arg.startsWith('@') ? arg : 'the argument'}`);
  return { bytes, hex: '0x' + Buffer.from(bytes).toString('hex') };
}

interface SendFlags {
  url: string;
  key: string;
  udpHost: string;
  udpPort: number;
  via?: string;
  /** `true` (no value) is `forwarded`. */
  wait?: boolean | 'forwarded' | 'landed';
  /** Milliseconds, for `--wait`. */
  timeout?: number;
}

/** `10s`, `500ms`, `2m`, or a bare number of seconds. */
function durationMs(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 10s, 500ms or 2m');
  const n = Number(m[1]);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

function waitUntil(v: string): 'forwarded' | 'landed' {
  if (v !== 'forwarded' && v !== 'landed') throw new InvalidArgumentError('expected forwarded or landed');
  return v;
}

/**
 * The id to wait on: the request id names this very request, but a
 * duplicate's request is final at once, so it waits on the hash or signature,
 * whose status is the first request's.
 */
function waitId(o: { kind: string; duplicate?: boolean; requestId?: string; hash?: string; signature?: string; signatures?: string[] }): string | undefined {
  const key = o.hash ?? o.signature ?? o.signatures?.[0];
  return o.kind === 'duplicate' || o.duplicate === true ? key : (o.requestId ?? key);
}

/** A failed wait must not hide the acknowledgement already received: it is printed as `forward.error`. */
function settle<T extends ForwardWait | ForwardWait[] | LandedWait | LandedWait[]>(p: Promise<T>): Promise<T | { error: string }> {
  return p.catch((e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }));
}

async function send(door: SendDoor, txArgs: string[], o: SendFlags): Promise<{ ok: boolean; outcome: unknown }> {
  const family = door.startsWith('evm') ? 'evm' : 'solana';
  const txs = txArgs.map((a) => readTx(a, family));
  if (txs.length === 0) throw new Error('give at least one transaction');
  if (door !== 'evm-batch' && door !== 'solana-bundle' && txs.length > 1) throw new Error(`${door} takes one transaction`);
  const acked = (k: string) => k === 'queued' || k === 'duplicate' || k === 'accepted';
  const until = o.wait === 'landed' ? 'landed' : 'forwarded';
  // Landing takes slots or blocks after the forward: a longer default.
  const waitOpts = { timeout: o.timeout ?? (until === 'landed' ? 60_000 : 10_000) };
  const key = until === 'landed' ? 'landing' : 'forward';
  const forwarded = (w: ForwardWait | { error: string } | null) => w !== null && 'state' in w && w.state === until;
  const waitOne = (c: EvmClient | SolanaClient, id: string, extra: { waitWhileUnknown?: boolean } = {}) =>
    settle(until === 'landed' ? c.waitLanded(id, { ...waitOpts, ...extra }) : c.waitForward(id, { ...waitOpts, ...extra }));
  // Without --wait the acknowledgement is the answer; with it, the forward (or landing) outcome is.
  const afterAck = async (c: EvmClient | SolanaClient, out: Parameters<typeof waitId>[0]) => {
    if (!o.wait || !acked(out.kind)) return { ok: acked(out.kind), outcome: out };
    const id = waitId(out);
    const forward = id ? await waitOne(c, id) : null;
    return { ok: forwarded(forward), outcome: { ...out, [key]: forward } };
  };
  if (family === 'evm') {
    const c = new EvmClient({ url: o.url, uuid: o.key, heartbeatMs: 0 });
    try {
      if (door === 'evm-batch') {
        const b = await c.sendBatch(txs.map((t) => t.hex));
        const ok = b.items.some((i) => acked(i.kind));
        if (!o.wait || !ok) return { ok, outcome: b };
        // Acknowledged items are waited on by hash, all in one read per round; null for the others.
        const ids = b.items.map((i) => (acked(i.kind) ? waitId(i) : undefined));
        const want = ids.filter((x): x is string => x !== undefined);
        const waited = await settle(until === 'landed' ? Promise.all(want.map((x) => c.waitLanded(x, waitOpts))) : waitForwardAll((x) => c.status(x), want, waitOpts));
        const forward = ids.map((id) => (id === undefined ? null : Array.isArray(waited) ? waited.shift()! : waited));
        return { ok: forward.every((w, k) => !acked(b.items[k]!.kind) || forwarded(w)), outcome: { ...b, [key]: forward } };
      }
      const out = await c.sendRawTransaction(txs[0]!.hex, { via: door === 'evm-text' ? 'text' : 'jsonrpc' });
      return await afterAck(c, out);
    } finally {
      await c.close();
    }
  }
  if (door === 'solana-udp') {
    const u = await UdpSender.create({ host: o.udpHost, port: o.udpPort, apiKey: o.key });
    try {
      await u.send(txs[0]!.bytes);
      // UDP has no answer: "sent" is all that can be said.
      const sent = { kind: 'sent', bytes: txs[0]!.bytes.length };
      if (!o.wait) return { ok: true, outcome: sent };
      // The node has no request id to give back, but knows the signature once the datagram arrived.
      const signature = firstSignature(txs[0]!.bytes);
      if (!signature) return { ok: false, outcome: sent };
      const c = new SolanaClient({ url: o.url, apiKey: o.key, heartbeatMs: 0 });
      try {
        const forward = await waitOne(c, signature, { waitWhileUnknown: true });
        return { ok: forwarded(forward), outcome: { ...sent, signature, [key]: forward } };
      } finally {
        await c.close();
      }
    } finally {
      await u.close();
    }
  }
  const c = new SolanaClient({ url: o.url, apiKey: o.key, heartbeatMs: 0 });
  try {
    const out =
      door === 'solana-bundle'
        ? await c.sendBundle(txs.map((t) => t.bytes))
        : door === 'solana-rpc'
          ? await c.sendTransaction(txs[0]!.bytes)
          : await c.sendRaw(txs[0]!.bytes);
    return await afterAck(c, out);
  } finally {
    await c.close();
  }
}

export function registerSendCommand(program: Command): void {
  program
    .command('send <door> <tx...>')
    .description(
      `submit a transaction through a door (${SEND_DOORS.join(', ')}); tx is 0x-hex, base64, base58 or @file (raw bytes or text); several for evm-batch / solana-bundle`,
    )
    .requiredOption('-k, --key <uuid>', 'account UUID (api-key / Bearer / auth)')
    .option('-u, --url <url>', 'relay HTTP address', 'http://127.0.0.1:8080')
    .option('--udp-host <host>', 'relay UDP host (resolved once)', '127.0.0.1')
    .option('--udp-port <port>', 'relay UDP port', (v) => Number(v), 16888)
    .option('--wait [until]', 'after the acknowledgement, wait for the forward outcome (printed as `forward`, exit 0 only when forwarded), or with `landed` for what the chain said (printed as `landing`, exit 0 only when landed)', waitUntil)
    .option('--timeout <duration>', 'how long --wait waits: 10s (default; 60s for landed), 500ms, 2m', durationMs)
    .action(async (door: string, txArgs: string[], o: SendFlags) => {
      if (!(SEND_DOORS as readonly string[]).includes(door)) throw new Error(`unknown door ${door}; one of ${SEND_DOORS.join(', ')}`);
      const r = await send(door as SendDoor, txArgs, o);
      process.stdout.write(JSON.stringify(r.outcome, null, 2) + '\n');
      process.exitCode = r.ok ? 0 : 1;
    });
}
