/**
 * A stand-in chain for the landing benchmarks: one JSON-RPC server that is
 * both the relay's upstream (it takes what the relay forwards, like `txrelay
 * bench sink`) and its chain read RPC (`solana.chain_rpc`, `evm.chain_rpc`),
 * so it can say that exactly what was forwarded landed. No execution: a
 * Solana signature lands in the slot after it arrived (confirmed one slot
 * later, finalized 32 slots later), an EVM hash in the next block.
 *
 * Solana: sendTransaction, sendBundle, getSignatureStatuses, isBlockhashValid
 * (always true), getSlot. EVM: eth_sendRawTransaction, eth_blockNumber,
 * eth_getBlockByNumber (with transaction bodies), eth_getTransactionReceipt.
 * `hold()` keeps what arrives from landing until `release()`, to measure
 * what a steady population of followed transactions costs.
 *
 * Run alone (bench:ab starts it pinned to the load core): `node chain.js
 * [port] [slotMs] [blockMs]` prints `READY <port>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import bs58 from 'bs58';
import { initKeccak, keccak256 } from '../../src/chains/evm/hash.js';

export interface StandinChain {
  url: string;
  port: number;
  /** Calls received, by method (JSON-RPC array items counted one each). */
  calls(): Record<string, number>;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

interface Call {
  id?: unknown;
  method?: string;
  params?: unknown[];
}

/** Signatures older than this many slots, blocks older than this many blocks, are forgotten: memory stays bounded over a long run. */
const KEEP_SLOTS = 300;
const KEEP_BLOCKS = 60;

export async function startStandinChain(o: { port?: number; slotMs?: number; blockMs?: number } = {}): Promise<StandinChain> {
  await initKeccak();
  const slotMs = o.slotMs ?? 400;
  const blockMs = o.blockMs ?? 2000;
  const calls: Record<string, number> = Object.create(null) as Record<string, number>;
  let slot = 1;
  let held = false;
  /** signature -> slot it landed in (0: arrived while held). */
  const sigs = new Map<string, number>();
  const heldSigs: string[] = [];
  let block = 1;
  const mempool: string[] = [];
  /** block number -> its transaction hashes; hash -> block. */
  const blocks = new Map<number, string[]>([[1, []]]);
  const mined = new Map<string, number>();

  const blockHash = (n: number): string => '0x' + n.toString(16).padStart(64, '0');
  const land = (sig: string): void => {
    if (held) {
      sigs.set(sig, 0);
      heldSigs.push(sig);
    } else sigs.set(sig, slot + 1);
  };
  const solanaSig = (tx: string, enc: unknown): string => {
    const b = enc === 'base64' ? Buffer.from(tx, 'base64') : Buffer.from(bs58.decode(tx));
    return bs58.encode(b.subarray(1, 65)); // after the compact-u16 signature count (1 here)
  };

  const methods: Record<string, (p: any[]) => unknown> = {
    sendTransaction: ([tx, cfg]) => {
      const sig = solanaSig(tx, cfg?.encoding);
      land(sig);
      return sig;
    },
    sendBundle: ([txs, cfg]) => {
      const all = (txs as string[]).map((t) => solanaSig(t, cfg?.encoding ?? 'base58'));
      for (const s of all) land(s);
      return all[0];
    },
    getSignatureStatuses: ([list]) => ({
      context: { slot },
      value: (list as string[]).map((s) => {
        const at = sigs.get(s);
        if (at === undefined || at === 0 || at > slot) return null;
        const confirmation = slot >= at + 32 ? 'finalized' : slot > at ? 'confirmed' : 'processed';
        return { slot: at, confirmations: confirmation === 'finalized' ? null : slot - at, err: null, status: { Ok: null }, confirmationStatus: confirmation };
      }),
    }),
    isBlockhashValid: () => ({ context: { slot }, value: true }),
    getSlot: () => slot,
    eth_sendRawTransaction: ([hex]) => {
      const hash = '0x' + Buffer.from(keccak256(Buffer.from(String(hex).slice(2), 'hex'))).toString('hex');
      mempool.push(hash);
      return hash;
    },
    eth_blockNumber: () => '0x' + block.toString(16),
    eth_getBlockByNumber: ([n]) => {
      const num = Number(BigInt(n as string));
      const hashes = blocks.get(num);
      if (!hashes) return null;
      // A sender and nonce of its own per transaction: nothing here replaces anything.
      const transactions = hashes.map((h) => ({ hash: h, from: '0x' + h.slice(2, 42), nonce: '0x0' }));
      return { number: '0x' + num.toString(16), hash: blockHash(num), transactions };
    },
    eth_getTransactionReceipt: ([h]) => {
      const b = mined.get(String(h).toLowerCase());
      return b === undefined ? null : { status: '0x1', blockNumber: '0x' + b.toString(16), blockHash: blockHash(b), transactionHash: h };
    },
  };

  const answer = (c: Call): object => {
    const m = String(c.method);
    calls[m] = (calls[m] ?? 0) + 1;
    const fn = methods[m];
    if (!fn) return { jsonrpc: '2.0', id: c.id ?? null, error: { code: -32601, message: 'Method not found' } };
    try {
      return { jsonrpc: '2.0', id: c.id ?? null, result: fn(c.params ?? []) };
    } catch (e) {
      return { jsonrpc: '2.0', id: c.id ?? null, error: { code: -32602, message: (e as Error).message } };
    }
  };

  const server = createServer({ keepAliveTimeout: 65_000 }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let out: string;
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
        out = JSON.stringify(Array.isArray(v) ? v.map(answer) : answer(v));
      } catch {
        out = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) }).end(out);
    });
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));

  const slots = setInterval(() => {
    slot++;
    if (slot % 100 === 0) for (const [s, at] of sigs) if (at !== 0 && at < slot - KEEP_SLOTS) sigs.delete(s);
  }, slotMs);
  const mine = setInterval(() => {
    block++;
    const txs = held ? [] : mempool.splice(0);
    blocks.set(block, txs);
    for (const h of txs) mined.set(h, block);
    const old = blocks.get(block - KEEP_BLOCKS);
    if (old) {
      for (const h of old) mined.delete(h);
      blocks.delete(block - KEEP_BLOCKS);
    }
  }, blockMs);
  slots.unref();
  mine.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    calls: () => ({ ...calls }),
    hold: () => void (held = true),
    release: () => {
      held = false;
      for (const s of heldSigs.splice(0)) sigs.set(s, slot + 1);
    },
    close: async () => {
      clearInterval(slots);
      clearInterval(mine);
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [port, slotMs, blockMs] = process.argv.slice(2).map(Number);
  const c = await startStandinChain({ port: port || 0, slotMs: slotMs || undefined, blockMs: blockMs || undefined });
  process.stdout.write(`READY ${c.port}\n`);
  process.once('SIGTERM', () => void c.close().then(() => process.exit(0)));
}
