/**
 * Stand-in validators for the TPU route's tests. No Agave validator can run on
 * these machines, so a leader's TPU is a QUIC server built to Agave's
 * conventions with the same library the relay uses (@matrixai/quic): ALPN
 * `solana-tpu`, a self-signed ed25519 certificate, a client certificate
 * required (its public key is what the validator sees as the sender), each
 * unidirectional stream read to its end as one transaction. The leader
 * schedule comes from a stand-in RPC serving getEpochInfo, getLeaderSchedule,
 * getClusterNodes and getSlot, its slot moved by the test (no timers: what a
 * test checks never depends on how fast this machine is).
 */
import { createServer, type Server } from 'node:http';
import { createPublicKey, verify, webcrypto, X509Certificate } from 'node:crypto';
import dgram from 'node:dgram';
import bs58 from 'bs58';
import { loadIdentity, type TpuIdentity } from '../../src/tpu/identity.js';

let quic: typeof import('@matrixai/quic') | null = null;
export let QUIC_SKIP: string | false = false;
try {
  quic = await import('@matrixai/quic');
} catch (e) {
  QUIC_SKIP = `@matrixai/quic does not load here (${(e as Error).message.split('\n')[0]}): no QUIC stand-in`;
}

export interface Received {
  bytes: Buffer;
  /** base58 of the first signature. */
  signature: string;
  /** base58 public key in the client's certificate. */
  client: string;
}

export interface StandInValidator {
  identity: TpuIdentity;
  address: string;
  received: Received[];
  /** Streams that were not exactly one signed transaction. */
  malformed: string[];
  stop(): Promise<void>;
}

const silent: Record<string, unknown> = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
silent.getChild = () => silent;

async function hmacOps() {
  const key = await webcrypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify']);
  const raw = await webcrypto.subtle.exportKey('raw', key);
  return {
    key: raw,
    ops: {
      sign: async (_k: ArrayBuffer, d: ArrayBuffer) => webcrypto.subtle.sign('HMAC', key, d),
      verify: async (_k: ArrayBuffer, d: ArrayBuffer, s: ArrayBuffer) => webcrypto.subtle.verify('HMAC', key, s, d),
    },
  };
}

/** The transaction's length if `b` is exactly one legacy/v0 transaction whose every signature verifies, else why not. */
export function oneSignedTransaction(b: Buffer): string | null {
  let i = 0;
  let n = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = b[i++];
    if (byte === undefined) return 'truncated';
    n |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
  }
  const msg = b.subarray(i + 64 * n);
  const versioned = (msg[0]! & 0x80) !== 0;
  let k = versioned ? 1 : 0;
  const required = msg[k]!;
  if (required !== n) return `header says ${required} signatures, ${n} present`;
  k += 3;
  let keys = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = msg[k++]!;
    keys |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
  }
  for (let s = 0; s < n; s++) {
    const pub = msg.subarray(k + 32 * s, k + 32 * (s + 1));
    const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), pub]), format: 'der', type: 'spki' });
    if (!verify(null, msg, key, b.subarray(i + 64 * s, i + 64 * (s + 1)))) return `signature ${s} does not verify`;
  }
  return keys >= n ? null : 'fewer keys than signatures';
}

/**
 * Concurrent unidirectional streams a stand-in grants a client: Agave's for an
 * unstaked peer (QUIC_MAX_UNSTAKED_CONCURRENT_STREAMS); a staked one gets more.
 */
const AGAVE_UNSTAKED_STREAMS = 128;

/** A leader's TPU: every stream kept (and, when `execute` is given, run on the stand-in chain). */
export async function startValidator(execute?: (tx: Buffer) => void, streams = AGAVE_UNSTAKED_STREAMS): Promise<StandInValidator> {
  if (quic === null) throw new Error(String(QUIC_SKIP));
  const identity = loadIdentity(null);
  const received: Received[] = [];
  const malformed: string[] = [];
  const server = new quic.QUICServer({
    crypto: await hmacOps(),
    logger: silent as never,
    config: {
      key: identity.keyPem,
      cert: identity.certPem,
      applicationProtos: ['solana-tpu'],
      initialMaxStreamsUni: streams,
      initialMaxStreamsBidi: 0,
      // A client certificate is required, whoever signed it (Agave reads only its key).
      verifyPeer: true,
      verifyCallback: async () => undefined,
    },
  });
  server.addEventListener(quic.events.EventQUICServerConnection.name, (evt: Event) => {
    const conn = (evt as unknown as { detail: InstanceType<typeof quic.QUICConnection> }).detail;
    const cert = conn.getRemoteCertsChain()[0];
    const spki = cert ? new X509Certificate(Buffer.from(cert)).publicKey.export({ format: 'der', type: 'spki' }) : Buffer.alloc(0);
    const client = bs58.encode(spki.subarray(spki.length - 32));
    conn.addEventListener(quic.events.EventQUICConnectionStream.name, (se: Event) => {
      const stream = (se as unknown as { detail: InstanceType<typeof quic.QUICStream> }).detail;
      void (async () => {
        const chunks: Buffer[] = [];
        try {
          for await (const c of stream.readable) chunks.push(Buffer.from(c));
        } catch {
          return;
        }
        const bytes = Buffer.concat(chunks);
        const bad = oneSignedTransaction(bytes);
        if (bad !== null) {
          malformed.push(bad);
          return;
        }
        received.push({ bytes, signature: bs58.encode(bytes.subarray(1, 65)), client });
        execute?.(bytes);
      })();
    });
  });
  await server.start({ host: '127.0.0.1', port: 0 });
  return {
    identity,
    address: `127.0.0.1:${server.port}`,
    received,
    malformed,
    stop: () => server.stop({ force: true }),
  };
}

/** A UDP port with nothing answering on it: a leader that is down. */
export async function deadAddress(): Promise<string> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return `127.0.0.1:${port}`;
}

export interface ScheduleRpc {
  url: string;
  /** The slot getSlot and getEpochInfo report. */
  slot: number;
  close(): Promise<void>;
}

/**
 * The leader-schedule side of an RPC node: epochs of `epochLength` slots, the
 * leader of each 4-slot run from `leaderOf(epoch, run)`, the TPU addresses
 * from `nodes` (identity to `host:port`); any other method to `fallback`.
 */
export async function startScheduleRpc(o: {
  epochLength: number;
  leaderOf: (epoch: number, run: number) => string;
  nodes: () => Record<string, string>;
  /** Another node's JSON-RPC URL: the methods not served here are passed to it (a chain RPC that is also the landing one). */
  fallback?: string;
}): Promise<ScheduleRpc> {
  const st = { slot: 0 };
  const methods: Record<string, (p: any[]) => unknown> = {
    getSlot: () => st.slot,
    getEpochInfo: () => ({ absoluteSlot: st.slot, slotIndex: st.slot % o.epochLength, slotsInEpoch: o.epochLength, epoch: Math.floor(st.slot / o.epochLength) }),
    getLeaderSchedule: ([slot]) => {
      const epoch = Math.floor((slot ?? st.slot) / o.epochLength);
      const out: Record<string, number[]> = {};
      for (let i = 0; i < o.epochLength; i++) (out[o.leaderOf(epoch, Math.floor(i / 4))] ??= []).push(i);
      return out;
    },
    getClusterNodes: () => Object.entries(o.nodes()).map(([pubkey, tpuQuic]) => ({ pubkey, tpuQuic, gossip: null, tpu: null })),
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const call = JSON.parse(body) as { id: unknown; method: string; params?: any[] };
      const m = methods[call.method];
      res.setHeader('content-type', 'application/json');
      if (!m && o.fallback) {
        void fetch(o.fallback, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          .then((r) => r.text())
          .then(
            (text) => res.end(text),
            () => res.writeHead(502).end(),
          );
        return;
      }
      res.end(JSON.stringify(m ? { jsonrpc: '2.0', id: call.id, result: m(call.params ?? []) } : { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'Method not found' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return Object.assign(st, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}
