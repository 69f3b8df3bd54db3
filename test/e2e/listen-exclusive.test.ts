/**
 * A port already in use stops a relay at start-up. uWS listens with
 * SO_REUSEPORT unless told otherwise, and then a second relay started on a
 * running relay's port came up as if nothing were wrong while the kernel
 * split the connections between the two, each with its own dedup filter and
 * rate buckets (found when a benchmark left such a relay behind).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePorts } from '../../bench/e2e/relay.js';
import { startTestRelay } from '../helpers/relay.js';

// The relays below name their ports: Linux keeps a socket that took an ephemeral port (port 0) out of
// any SO_REUSEPORT group, so the bug showed only on a configured port.

test('a second relay on a running relay’s HTTP or admin port fails to start, and the first keeps answering', async () => {
  const [httpPort, adminPort] = (await freePorts(2)) as [number, number];
  const first = await startTestRelay({ http: { port: httpPort }, admin: { port: adminPort } });
  try {
    await assert.rejects(startTestRelay({ http: { port: httpPort } }), /http: cannot listen on .*:\d+ \(in use\)/);
    await assert.rejects(startTestRelay({ admin: { port: adminPort } }), /admin: cannot listen on .*:\d+ \(in use\)/);
    // Every connection still reaches the first relay: 20 fresh ones, as the kernel would have spread them.
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`${first.base}/ping`, { headers: { connection: 'close' } });
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'pong');
    }
  } finally {
    await first.stop();
  }
});

test('a second relay on a running relay’s UDP port fails to start, even where UDP sockets share a port', async () => {
  // Two sockets: on Node >= 22.12 the first relay's pool shares its port (reusePort), and another
  // process's reusePort socket could join that group without the probe bind listen() makes first.
  const [udpPort] = (await freePorts(1)) as [number];
  const first = await startTestRelay({ udp: { port: udpPort, sockets: 2 } });
  try {
    assert.equal(first.udpPort, udpPort);
    await assert.rejects(startTestRelay({ udp: { port: udpPort, sockets: 2 } }), /udp: cannot listen on 127\.0\.0\.1:\d+ \(in use\)/);
    const r = await fetch(`${first.base}/ping`);
    assert.equal(await r.text(), 'pong');
  } finally {
    await first.stop();
  }
});
