/**
 * The crypto ceiling: exactly the per-transaction checks txrelay makes, in a
 * tight loop, in a process of its own (pinned like the relay), with the same
 * libraries. Solana: decode + ed25519 verification of every signature
 * (sodium-native). EVM: hex parse + strict decode + stateless validation +
 * tx hash + signing hash + public-key recovery (libsecp256k1; the address
 * is not derived from the key, as in the relay).
 *
 *   node dist/bench/e2e/crypto-loop.js <solana|evm> <bodies file> <seconds>
 *
 * The bodies file holds raw Solana transactions or EVM `0x…` hex texts.
 * Prints one JSON line: CPU µs per transaction (process.cpuUsage, user +
 * system, same meaning as /proc utime+stime) and wall µs per transaction.
 */
import { readBodies } from './bodies.js';
import { ed25519Backend } from '../../src/chains/solana/verify.js';
import { initKeccak, keccakBackend } from '../../src/chains/evm/hash.js';
import { secpBackend } from '../../src/chains/evm/recover.js';
import { checkEvmHex, checkSolana } from './check.js';

const [family, file, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 3);
const items = readBodies(file!);
if (items.length === 0) throw new Error('no transactions');
await initKeccak();

let ok = 0;

function one(i: number): void {
  const b = items[i % items.length]!;
  if (family === 'solana' ? checkSolana(b) : checkEvmHex(b.toString('latin1'))) ok++;
}

// Warm-up: JIT and the libraries' first-call costs stay out of the figure.
const WARM = Math.min(2000, items.length);
for (let i = 0; i < WARM; i++) one(i);
ok = 0;

const c0 = process.cpuUsage();
const t0 = performance.now();
const deadline = t0 + seconds * 1000;
let n = 0;
// Check the clock every 256 transactions; reuse transactions only if the file runs out.
while (performance.now() < deadline) for (let k = 0; k < 256; k++) one(WARM + n++);
const wallUs = (performance.now() - t0) * 1000;
const c = process.cpuUsage(c0);
const cpuUs = c.user + c.system;
if (ok !== n) throw new Error(`${n - ok} of ${n} transactions failed verification: the fixture is wrong`);
process.stdout.write(
  JSON.stringify({
    family,
    n,
    reused: n + WARM > items.length,
    cpuUsPerTx: cpuUs / n,
    wallUsPerTx: wallUs / n,
    backend: family === 'solana' ? ed25519Backend : `${secpBackend}, keccak ${keccakBackend()}`,
  }) + '\n',
);
