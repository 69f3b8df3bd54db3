/**
 * The UDP socket pool: several sockets on one port with
 * SO_REUSEPORT where the runtime has it (dgram reusePort, Node >= 22.12), one
 * socket where it does not (Node 20), and every datagram admitted either way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { startTestRelay, eventually } from '../helpers/relay.js';
import { legacyTransfer } from '../helpers/solana.js';
import { udpPacket, uuidBytes } from '../../src/client/solana.js';

const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const runtimeHasReusePort = major > 22 || (major === 22 && minor >= 12);


test(`udp.sockets = 4 binds ${runtimeHasReusePort ? 'four sockets to the one port' : 'one socket (no reusePort before Node 22.12)'}; datagrams from many sources are all admitted`, async () => {
  const relay = await startTestRelay({ udp: { sockets: 4 } });
  try {
    const acct = await relay.createAccount({ solana: { tps: 1000, burst: 1000 } });
    assert.equal(await relay.metric('txrelay_udp_sockets'), runtimeHasReusePort ? 4 : 1);
    // Each sender is its own socket, so its own source port: the kernel hashes them over the pool.
    const n = 40;
    for (let i = 0; i < n; i++) {
      const s = dgram.createSocket('udp4');
      await new Promise<void>((res, rej) => s.send(udpPacket(uuidBytes(acct.uuid), legacyTransfer().bytes), relay.udpPort, '127.0.0.1', (e) => (e ? rej(e) : res())));
      s.close();
    }
    await eventually(async () => (await relay.metric('txrelay_udp_datagrams_total', { outcome: 'admitted' })) === n, 5000, 'every datagram admitted');
    if (runtimeHasReusePort) {
      const text = await fetch(relay.admin + '/metrics').then((r) => r.text());
      const used = text.split('\n').filter((l) => l.startsWith('txrelay_udp_socket_datagrams_total{') && !l.endsWith(' 0')).length;
      assert.ok(used >= 2, `the kernel spread 40 sources over ${used} socket(s)`);
    }
  } finally {
    await relay.stop();
  }
});
