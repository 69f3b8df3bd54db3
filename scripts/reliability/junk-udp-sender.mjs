/**
 * The UDP blaster of junk-udp.mjs, in its own process so its sending does not
 * share an event loop with the measuring client. Builds a pool of datagrams
 * (fast-check arbitraries and mutations of real signed transactions), then
 * sends them round-robin from one socket per address of `addrs` (one per-IP
 * bucket each) as fast as the kernel takes them for `seconds`.
 * Prints one JSON line: datagrams sent, by kind, and send errors.
 *
 *   node junk-udp-sender.mjs '{"port":16888,"seconds":10,"addrs":["127.0.0.10"],"abuserKey":"<32 hex>","seed":1}'
 */
import dgram from 'node:dgram';
import fc from 'fast-check';
import { solanaTransfers } from '../../dist/src/bench/txgen.js';

const { port, seconds, addrs, abuserKey, seed } = JSON.parse(process.argv[2]);
/** Distinct datagrams in the pool: enough variety, small enough to build in about a second. */
const POOL = 20_000;
/** Sends handed to a socket before yielding to the event loop, and the queue depth at which it waits. */
const BURST = 64;
const MAX_QUEUED = 1024;
/** The UDP packet layout and size limit (docs/protocol.md#udp). */
const MAGIC = [43, 6, 58, 10];
const HEADER = 23;
const MAX_TX = 1232;

const txs = solanaTransfers(256);
const abuser = Buffer.from(abuserKey, 'hex');

function packet(key, tx, lenField = tx.length, method = 0) {
  const p = Buffer.alloc(HEADER + tx.length);
  p.set(MAGIC);
  p[4] = method;
  p.set(key, 5);
  p.writeUInt16LE(lenField & 0xffff, 21);
  p.set(tx, HEADER);
  return p;
}

const bytes = (min, max) => fc.uint8Array({ minLength: min, maxLength: max });
const aTx = fc.constantFrom(...txs);
/** Each kind aims at one outcome of src/ingress/udp.ts, from the cheapest refusal to a full signature check. */
const kinds = {
  random: bytes(0, 1300).map((b) => Buffer.from(b)),
  bad_method: fc.tuple(fc.integer({ min: 1, max: 255 }), bytes(16, 16), aTx).map(([m, k, t]) => packet(k, t, t.length, m)),
  bad_length: fc.tuple(bytes(16, 16), aTx, fc.integer({ min: 1, max: MAX_TX })).filter(([, t, l]) => l !== t.length).map(([k, t, l]) => packet(k, t, l)),
  too_large: fc.tuple(bytes(16, 16), fc.integer({ min: MAX_TX + 1, max: 0xffff })).map(([k, l]) => packet(k, Buffer.alloc(16), l)),
  unknown_key: fc.tuple(bytes(16, 16), aTx).map(([k, t]) => packet(k, t)),
  known_key_bad_signature: fc.tuple(aTx, fc.integer({ min: 1, max: 64 })).map(([t, i]) => {
    const bad = Buffer.from(t);
    bad[i] ^= 0x01;
    return packet(abuser, bad);
  }),
  known_key_garbage_tx: bytes(1, MAX_TX).map((t) => packet(abuser, Buffer.from(t))),
};
const names = Object.keys(kinds);
/** Weights: mostly cheap junk, some of everything that reaches account lookup, decoding and verification. */
const weights = { random: 30, bad_method: 10, bad_length: 10, too_large: 5, unknown_key: 25, known_key_bad_signature: 10, known_key_garbage_tx: 10 };
const arb = fc.oneof(...names.map((n) => ({ arbitrary: kinds[n].map((d) => [n, d]), weight: weights[n] })));
const pool = fc.sample(arb, { numRuns: POOL, seed });

const socks = await Promise.all(
  addrs.map(
    (addr) =>
      new Promise((resolve) => {
        const s = dgram.createSocket('udp4');
        s.on('error', () => {});
          s.bind(0, addr, () => resolve(s));
      }),
  ),
);

const sentByKind = Object.fromEntries(names.map((n) => [n, 0]));
let sent = 0;
let errors = 0;
let next = 0;
const end = performance.now() + seconds * 1000;
const t0 = performance.now();
await new Promise((resolve) => {
  const tick = () => {
    if (performance.now() >= end) return resolve();
    for (const s of socks) {
      if (s.getSendQueueCount() > MAX_QUEUED) continue;
      for (let i = 0; i < BURST; i++) {
        const [kind, d] = pool[next++ % POOL];
        s.send(d, port, '127.0.0.1', (e) => {
          if (e) errors++;
          else {
            sent++;
            sentByKind[kind]++;
          }
        });
      }
    }
    setImmediate(tick);
  };
  tick();
});
// Let queued sends finish before counting.
while (socks.some((s) => s.getSendQueueCount() > 0)) await new Promise((r) => setTimeout(r, 5));
const elapsed = (performance.now() - t0) / 1000;
for (const s of socks) s.close();
process.stdout.write(JSON.stringify({ sent, errors, seconds: elapsed, by_kind: sentByKind }) + '\n');
