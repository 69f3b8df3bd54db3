/**
 * What the relay said when it refused: the first answer text for each HTTP
 * status, and whose limit a 429 was. The address bucket (`limits.ip_rps`)
 * comes before the account's (docs/protocol.md#rate-limits), so a flood from
 * one machine is often refused by it however high the account's TPS is.
 */

/** A refusal text kept at this length: enough for any of the relay's messages. */
const MAX_TEXT = 300;

/** The message of a JSON-RPC error body, else the body itself (plain-text doors), on one line. */
function messageOf(body: string): string {
  let text = body;
  try {
    const j = JSON.parse(body) as unknown;
    const one = (Array.isArray(j) ? j.find((x) => x?.error) : j) as { error?: { message?: unknown; code?: unknown } } | undefined;
    if (one?.error && typeof one.error.message === 'string') text = `${one.error.message}${one.error.code !== undefined ? ` (${one.error.code})` : ''}`;
  } catch {
    // Plain text.
  }
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_TEXT ? text.slice(0, MAX_TEXT - 3) + '...' : text || '(empty body)';
}

export class Refusals {
  /** Status → the first refusal text seen with it. */
  readonly texts: Record<string, string> = {};
  /** 429s by whose limit refused: the address bucket, the account's, or not said (plain-text doors). */
  readonly limited = { ip: 0, account: 0, unsaid: 0 };

  /** Records a refusal's answer (any status outside 2xx). */
  note(status: number, body: string): void {
    const key = String(status);
    const text = key in this.texts && status !== 429 ? '' : messageOf(body);
    if (!(key in this.texts)) this.texts[key] = text;
    if (status !== 429) return;
    if (/\bIP rate limit\b/i.test(text)) this.limited.ip++;
    else if (/\bAccount rate limit\b/i.test(text)) this.limited.account++;
    else this.limited.unsaid++;
  }

  /** Warnings for the report, given the measured statuses. */
  warnings(statuses: Record<string, number>): string[] {
    const out: string[] = [];
    const busy = statuses['503'] ?? 0;
    if (busy > 0) out.push(`${busy} requests refused with 503 (relay at capacity or upstreams failing): the offered load is above what it admits`);
    const limited = statuses['429'] ?? 0;
    if (limited === 0) return out;
    const { ip, account } = this.limited;
    if (ip > 0 && ip >= account) {
      out.push(
        `${limited} requests refused with 429, mostly by the per-address limit (limits.ip_rps, read at start-up), not the account: all requests come from this one address; restart the relay with TXRELAY_LIMITS_IP_RPS and TXRELAY_LIMITS_IP_BURST above the offered rate to measure the relay`,
      );
    } else if (account > 0) {
      out.push(`${limited} requests refused with 429 by the account's limit: raise it (txrelay accounts update <id> --evm-tps N --solana-tps N) to measure the relay, not its rate limit`);
    } else {
      out.push(`${limited} requests refused with 429 ("Exceed Rate Limit: N per second"; N is the account's TPS or limits.ip_rps, whichever refused): raise both to measure the relay, not its rate limit`);
    }
    return out;
  }
}

/** The report's lines: `  <status>: <first text>`, in status order. */
export function refusalLines(texts: Record<string, string>): string[] {
  return Object.entries(texts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([s, t]) => `  ${s}: ${t}`);
}
