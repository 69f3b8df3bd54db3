/**
 * examples/*.mjs, run as a user runs them: viem, @solana/web3.js 1.x and
 * @solana/kit, each reading from a chain RPC and sending to the relay. The
 * README shows excerpts of these files; the test checks they are excerpts,
 * so the README cannot drift from what runs.
 *
 * The EVM chain is a real node (ganache) that is also the relay's upstream,
 * so viem's transaction is mined. No Solana validator runs here: the Solana
 * chain RPC is a stand-in answering `getLatestBlockhash` only (all the
 * examples read), and the relay's Solana upstream records what it gets.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import bs58 from 'bs58';
import { startChain, chainCall, type TestChain } from '../helpers/ganache.js';
import { startTestRelay, eventually, type TestRelay } from '../helpers/relay.js';
import { startUpstream } from '../helpers/upstream.js';
import { TEST_PRIVATE_KEY } from '../helpers/evm.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const run = promisify(execFile);

let relay: TestRelay;
let node: TestChain;
let evmRpc: string;
let solRpc: Server;
let solRpcUrl: string;
let solUp: Awaited<ReturnType<typeof startUpstream>>;
let uuid: string;

before(async () => {
  node = await startChain();
  evmRpc = node.url;
  // The stand-in Solana chain RPC: a fresh blockhash for every ask, as a cluster gives.
  solRpc = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      const call = JSON.parse(body) as { id: unknown; method: string };
      res.setHeader('content-type', 'application/json');
      if (call.method !== 'getLatestBlockhash') {
        res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'stand-in: only getLatestBlockhash' } }));
        return;
      }
      const value = { blockhash: bs58.encode(randomBytes(32)), lastValidBlockHeight: 1000 };
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { context: { slot: 1 }, value } }));
    });
  });
  await new Promise<void>((r) => solRpc.listen(0, '127.0.0.1', r));
  solRpcUrl = `http://127.0.0.1:${(solRpc.address() as { port: number }).port}`;
  solUp = await startUpstream();
  relay = await startTestRelay({ evm: { upstreams: { free: [evmRpc] } }, solana: { rpc_upstreams: [solUp.url] } });
  uuid = (await relay.createAccount({ plan: 'free', evm: { tps: 10, burst: 10 }, solana: { tps: 10, burst: 10 } })).uuid;
});

after(async () => {
  await relay?.stop();
  await solUp?.close();
  await new Promise((r) => solRpc?.close(r));
  await node?.close();
});

async function example(name: string, chainRpc: string): Promise<string> {
  const env = { ...process.env, CHAIN_RPC: chainRpc, RELAY: relay.base, UUID: uuid, PRIVATE_KEY: TEST_PRIVATE_KEY };
  const { stdout } = await run(process.execPath, [`examples/${name}`], { cwd: ROOT, env, timeout: 60_000 });
  return stdout.trim();
}

/** Every line of the README block that follows `marker` appears in the example file, so the block is an excerpt. */
function assertExcerpt(marker: string, file: string): void {
  const readme = readFileSync(ROOT + 'README.md', 'utf8');
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, `README names ${marker}`);
  const block = readme.slice(at).match(/```(?:js|ts)\n([\s\S]*?)```/)![1]!;
  const source = readFileSync(ROOT + 'examples/' + file, 'utf8');
  for (const line of block.split('\n').map((l) => l.trim())) {
    if (line === '' || line === '// …') continue;
    assert.ok(source.includes(line), `README line not in examples/${file}: ${line}`);
  }
}

test('viem: prepared from the chain node, sent to the relay, mined under the hash viem computed', async () => {
  assertExcerpt('examples/viem.mjs', 'viem.mjs');
  const hash = await example('viem.mjs', evmRpc);
  assert.match(hash, /^0x[0-9a-f]{64}$/);
  let receipt: { status: string } | null = null;
  await eventually(async () => (receipt = await chainCall(evmRpc, 'eth_getTransactionReceipt', [hash])) !== null, 10_000, 'receipt');
  assert.equal(receipt!.status, '0x1');
});

for (const [name, file] of [['@solana/web3.js', 'web3js.mjs'], ['@solana/kit', 'kit.mjs']] as const) {
  test(`${name}: blockhash from the chain RPC, sent to the relay, forwarded as signed`, async () => {
    assertExcerpt(`examples/${file}`, file);
    const seen = solUp.calls().length;
    const signature = await example(file, solRpcUrl);
    assert.match(signature, /^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    await solUp.waitForCalls(seen + 1);
    const call = solUp.calls()[seen]!;
    assert.equal(call.method, 'sendTransaction');
    const bytes = Buffer.from((call.params as [string])[0], 'base64');
    assert.equal(bs58.encode(bytes.subarray(1, 65)), signature, 'the upstream got the transaction the client signed');
  });
}

test('@solana/kit and viem see the relay\'s refusal code and message, not a bare HTTP error', async () => {
  const kit = await import('@solana/kit');
  const relayRpc = kit.createSolanaRpcFromTransport(kit.createDefaultRpcTransport({ url: relay.base, headers: { 'api-key': uuid } }));
  const garbage = Buffer.alloc(100, 7).toString('base64') as Parameters<typeof relayRpc.sendTransaction>[0];
  await assert.rejects(relayRpc.sendTransaction(garbage, { encoding: 'base64' }).send(), (e: any) => {
    assert.equal(e.context?.__code, -32602, String(e));
    assert.match(e.message, /Transaction Decode Error/);
    return true;
  });
  // A transaction whose message was changed after signing: its signature no longer verifies.
  const { legacyTransfer } = await import('../helpers/solana.js');
  const forged = Buffer.from(legacyTransfer().bytes);
  forged[forged.length - 1]! ^= 1;
  await assert.rejects(relayRpc.sendTransaction(forged.toString('base64') as typeof garbage, { encoding: 'base64' }).send(), (e: any) => {
    assert.equal(e.context?.__code, -32003, String(e));
    return true;
  });

  // A read sent to the relay by mistake says where reads go.
  await assert.rejects(relayRpc.getLatestBlockhash().send(), (e: any) => {
    assert.equal(e.context?.__code, -32601, String(e));
    assert.match(e.message, /only sends transactions; send reads to your chain RPC/);
    return true;
  });

  const viem = await import('viem');
  const evm = viem.createPublicClient({ transport: viem.http(relay.base, { fetchOptions: { headers: { authorization: `Bearer ${uuid}` } } }) });
  await assert.rejects(evm.sendRawTransaction({ serializedTransaction: '0x02c0' }), (e: any) => {
    const cause = e.walk((x: any) => typeof x?.code === 'number');
    assert.equal(cause?.code, -32602, String(e));
    return true;
  });
});
