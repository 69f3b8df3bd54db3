/** The relay's UDP counters, read before and after a solana-udp run. */

/** txrelay_udp_datagrams_total by outcome, from the relay's /metrics. */
export async function udpMetrics(adminUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(new URL('/metrics', adminUrl))).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('txrelay_udp_datagrams_total{')) continue;
    const m = /outcome="([^"]*)"\}\s+(\S+)/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}
