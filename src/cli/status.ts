/**
 * `txrelay status`: what the relay did with requests after acknowledging
 * them (docs/protocol.md#status), one line per id or JSON. Exit code 0 when
 * every id is known to the node, 1 otherwise.
 */
import type { Command } from 'commander';
import { HttpTransport } from '../client/http.js';
import { fetchStatuses, type StatusObject } from '../client/status.js';

interface StatusFlags {
  url: string;
  key: string;
  json?: boolean;
}

async function status(ids: string[], o: StatusFlags): Promise<{ ok: boolean; statuses: StatusObject[] }> {
  const http = new HttpTransport(o.url, 0);
  try {
    // Either credential works on the status routes; Bearer serves both families.
    const statuses = await fetchStatuses(http, o.url, { authorization: `Bearer ${o.key}` }, ids);
    return { ok: statuses.every((s) => s.state !== 'unknown'), statuses };
  } finally {
    await http.close();
  }
}

/**
 * `<id> <state> [reason]`, then one indented line per request to an
 * upstream and one for what the chain said. `id` is the one asked for: the relay answers with the
 * transaction's own id, also when asked by request id.
 */
function formatStatus(id: string, s: StatusObject): string {
  const lines = [[id, s.state, s.reason].filter((p) => p !== null && p !== undefined && p !== '').join(' ')];
  for (const f of s.forwards ?? []) {
    const ms = f.latency_ms === null ? '-' : String(Math.round(f.latency_ms));
    let line = `  ${f.upstream} attempt ${f.attempt}: http ${f.http_status ?? '-'} in ${ms} ms`;
    if (f.upstream_error) line += f.upstream_error.code === null ? `, ${f.upstream_error.message}` : `, error ${f.upstream_error.code}: ${f.upstream_error.message}`;
    lines.push(line);
  }
  const chain = chainLine(s);
  if (chain !== null) lines.push(chain);
  return lines.join('\n');
}

/**
 * What the chain said, one indented line: `chain: slot 318220417 confirmed,
 * ok, 792 ms after the ack` (Solana), `chain: block 19 0xab…, 2
 * confirmations, reverted` (EVM), or how it is followed while it has not
 * landed (`chain: following`, `behind`, `not tracked`).
 */
function chainLine(s: StatusObject): string | null {
  const c = s.onchain;
  if (!c) return s.landing && s.landing !== 'done' ? `  chain: ${s.landing.replace('_', ' ')}` : null;
  const parts: string[] = [];
  if (c.slot !== undefined) parts.push(`slot ${c.slot}${c.confirmation ? ` ${c.confirmation}` : ''}`);
  if (c.block !== undefined) parts.push(`block ${c.block}${c.block_hash ? ` ${c.block_hash}` : ''}`);
  if (c.confirmations !== undefined) parts.push(`${c.confirmations} confirmation${c.confirmations === 1 ? '' : 's'}`);
  if (c.reason) parts.push(c.reason.replace('_', ' ') + (c.replaced_by ? ` by ${c.replaced_by}` : ''));
  else if (c.err === null || c.err === undefined) parts.push('ok');
  else parts.push(typeof c.err === 'string' ? c.err : `err ${JSON.stringify(c.err)}`);
  if (c.ack_to_landed_ms !== null) parts.push(`${Math.round(c.ack_to_landed_ms)} ms after the ack`);
  if (s.landing === 'following' || s.landing === 'behind') parts.push(`still ${s.landing}`);
  return `  chain: ${parts.join(', ')}`;
}

export function registerStatusCommand(program: Command): void {
  program
    .command('status <id...>')
    .description('what the relay did with each id after acknowledging it; an id is a transaction hash, a (first) signature, a batch id or a request id (x-svc-request-id)')
    .requiredOption('-k, --key <uuid>', 'account UUID (the one that sent them)')
    .option('-u, --url <url>', 'relay HTTP address', 'http://127.0.0.1:8080')
    .option('--json', 'print the status objects as a JSON array')
    .action(async (ids: string[], o: StatusFlags) => {
      const r = await status(ids, o);
      process.stdout.write(o.json ? JSON.stringify(r.statuses, null, 2) + '\n' : r.statuses.map((s, i) => formatStatus(ids[i]!, s)).join('\n') + '\n');
      process.exitCode = r.ok ? 0 : 1;
    });
}
