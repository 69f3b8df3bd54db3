/**
 * A stand-in Solana RPC node for tests that executes what it is sent in a real
 * SVM (the npm package `litesvm`): transfers succeed, fail on chain (landed with
 * `err`), are refused as duplicates, or never land because their blockhash
 * expired. No Agave validator runs here, so slots advance when the test says
 * (`advance`) or on a timer (`slotMs`), and one blockhash is valid at a time
 * (`expireBlockhash` moves it on), as litesvm keeps it.
 *
 * Methods: sendTransaction (base64 or base58), sendBundle (all or none),
 * getSignatureStatuses, isBlockhashValid, getLatestBlockhash, getSlot,
 * getBalance. `down()` makes every call fail with HTTP 503 until `up()`.
 */
import { createServer, type Server } from 'node:http';
import bs58 from 'bs58';
import type { LiteSVM } from 'litesvm';

/** litesvm's native build is published for some platforms only: where it does not load, the tests that need it skip with this reason. */
let Svm: typeof LiteSVM | null = null;
export let SVM_SKIP: string | false = false;
try {
  Svm = (await import('litesvm')).LiteSVM;
  new Svm();
} catch (e) {
  SVM_SKIP = `litesvm does not load here (${(e as Error).message.split('\n')[0]}): no stand-in Solana chain`;
}

interface Landed {
  slot: number;
  err: unknown;
}

export interface SvmRpc {
  url: string;
  svm: () => LiteSVM;
  slot(): number;
  /** Moves the chain `n` slots on (statuses confirm after 1 slot, finalize after `finalizeAfter`). */
  advance(n?: number): void;
  /** Funds an address (base58). */
  airdrop(address: string, lamports: bigint): void;
  /** The blockhash transactions are built with now. */
  blockhash(): string;
  expireBlockhash(): void;
  /** A JSON-RPC call to the stand-in: its result. */
  call(method: string, params: unknown[]): Promise<any>;
  /** Every method called, in order (for counting RPC calls). */
  calls: string[];
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export interface SvmRpcOptions {
  finalizeAfter?: number;
  /** Advance one slot on this interval (ms); off by default. */
  slotMs?: number;
}

type Internal = { sendLegacyTransaction(b: Uint8Array): Outcome; sendVersionedTransaction(b: Uint8Array): Outcome };
type Outcome = { err?: () => unknown };

/** The execution error as an RPC node renders it, for the errors that still put the transaction in a block. */
function executionError(e: unknown): unknown | undefined {
  const name = (e as object)?.constructor?.name;
  if (name === 'TransactionErrorInstructionError') {
    const ie = e as { index: number; err(): unknown };
    const inner = ie.err();
    const code = (inner as { code?: number })?.code;
    return { InstructionError: [ie.index, typeof code === 'number' ? { Custom: code } : inner] };
  }
  if (name === 'TransactionErrorInsufficientFundsForRent') return { InsufficientFundsForRent: { account_index: (e as { accountIndex: number }).accountIndex } };
  return undefined; // fee-payer, blockhash, duplicate, signature: never in a block
}

/** Where a wire transaction's first signature and its message start: after the compact-u16 signature count. */
function layout(b: Uint8Array): { firstSig: number; message: number } {
  let n = 0;
  let i = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = b[i++]!;
    n |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
  }
  return { firstSig: i, message: i + n * 64 };
}

export async function startSvmRpc(o: SvmRpcOptions = {}): Promise<SvmRpc> {
  if (Svm === null) throw new Error(String(SVM_SKIP));
  const L = Svm;
  let svm = new L();
  let slot = 1;
  svm.warpToSlot(BigInt(slot));
  const finalizeAfter = o.finalizeAfter ?? 3;
  const landed = new Map<string, Landed>();
  const calls: string[] = [];
  let isDown = false;

  const execute = (bytes: Uint8Array): { sig: string; landed: boolean } => {
    const at = layout(bytes);
    const sig = bs58.encode(bytes.subarray(at.firstSig, at.firstSig + 64));
    const versioned = (bytes[at.message]! & 0x80) !== 0;
    const inner = (svm as unknown as { inner: Internal }).inner;
    const r = versioned ? inner.sendVersionedTransaction(bytes) : inner.sendLegacyTransaction(bytes);
    if (typeof r.err !== 'function') {
      landed.set(sig, { slot, err: null });
      return { sig, landed: true };
    }
    const err = executionError(r.err());
    if (err === undefined) return { sig, landed: false };
    landed.set(sig, { slot, err });
    return { sig, landed: true };
  };
  const decode = (s: string, enc?: string): Uint8Array => (enc === 'base64' ? new Uint8Array(Buffer.from(s, 'base64')) : bs58.decode(s));
  const level = (s: number): string => (slot >= s + finalizeAfter ? 'finalized' : slot > s ? 'confirmed' : 'processed');

  const methods: Record<string, (p: any[]) => unknown> = {
    sendTransaction: ([tx, cfg]) => execute(decode(tx, cfg?.encoding)).sig,
    sendBundle: ([txs, cfg]) => {
      // All or none: run on a copy, keep the copy only when every transaction executed cleanly.
      const before = svm;
      svm = L.fromBytes(before.toBytes());
      const sigs: string[] = [];
      const added: string[] = [];
      let ok = true;
      for (const t of txs as string[]) {
        const r = execute(decode(t, cfg?.encoding ?? 'base58'));
        sigs.push(r.sig);
        if (r.landed) added.push(r.sig);
        if (!r.landed || (landed.get(r.sig)?.err ?? null) !== null) ok = false;
      }
      if (!ok) {
        svm = before;
        for (const s of added) landed.delete(s);
      }
      return sigs[0];
    },
    getSignatureStatuses: ([sigs]) => ({
      context: { slot },
      value: (sigs as string[]).map((s) => {
        const l = landed.get(s);
        if (!l) return null;
        const status = level(l.slot);
        return { slot: l.slot, confirmations: status === 'finalized' ? null : slot - l.slot, err: l.err, status: l.err ? { Err: l.err } : { Ok: null }, confirmationStatus: status };
      }),
    }),
    isBlockhashValid: ([hash]) => ({ context: { slot }, value: hash === svm.latestBlockhash() }),
    getLatestBlockhash: () => ({ context: { slot }, value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot + 150 } }),
    getSlot: () => slot,
    getBalance: ([addr]) => ({ context: { slot }, value: Number(svm.getBalance(addr as Parameters<LiteSVM['getBalance']>[0]) ?? 0n) }),
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (isDown) {
        res.writeHead(503).end('down');
        return;
      }
      let body: { id?: unknown; method?: string; params?: unknown[] };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      calls.push(String(body.method));
      const fn = methods[String(body.method)];
      let out: object;
      try {
        out = fn ? { jsonrpc: '2.0', id: body.id, result: fn(body.params ?? []) } : { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } };
      } catch (e) {
        out = { jsonrpc: '2.0', id: body.id, error: { code: -32002, message: (e as Error).message } };
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const advance = (n = 1): void => {
    slot += n;
    svm.warpToSlot(BigInt(slot));
  };
  const ticker = o.slotMs ? setInterval(() => advance(1), o.slotMs) : undefined;
  ticker?.unref();
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    svm: () => svm,
    slot: () => slot,
    advance,
    // litesvm types addresses and lamports as kit's branded types; the values are plain base58 and bigint.
    airdrop: (address, lamports) => void svm.airdrop(address as Parameters<LiteSVM['airdrop']>[0], lamports as Parameters<LiteSVM['airdrop']>[1]),
    blockhash: () => svm.latestBlockhash(),
    expireBlockhash: () => svm.expireBlockhash(),
    calls,
    call: async (method, params) => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
      const body = (await r.json()) as { result?: unknown; error?: { message: string } };
      if (body.error) throw new Error(body.error.message);
      return body.result;
    },
    down: () => void (isDown = true),
    up: () => void (isDown = false),
    close: () => {
      clearInterval(ticker);
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
