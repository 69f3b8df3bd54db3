/**
 * The building blocks of the configuration schema (src/config/schema.ts):
 * field shapes used by several keys, the section wrapper that gathers a
 * section's defaults, the plan section, and each pattern in words for the
 * loader's messages.
 */

export const port = { type: 'integer', minimum: 0, maximum: 65535 } as const;
export const host = { type: 'string', minLength: 1 } as const;
const URL_PATTERN = '^https?://';
const OPTIONAL_URL_PATTERN = '^$|^https?://';
export const BASE58_PATTERN = '^[1-9A-HJ-NP-Za-km-z]{32,44}$';
export const NODE_NAME_PATTERN = '^([A-Za-z0-9][A-Za-z0-9._-]*)?$';
export const LISTEN_PATTERN = '^$|^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:\\[\\]]+):[0-9]{1,5}$';
/** Each pattern of the schema in words, for the loader's messages: nobody should have to read a regex. */
export const PATTERN_WORDS: Readonly<Record<string, string>> = {
  [URL_PATTERN]: 'an http:// or https:// URL',
  [OPTIONAL_URL_PATTERN]: 'an http:// or https:// URL, or empty',
  [BASE58_PATTERN]: 'a base58 address of 32 to 44 characters',
  [NODE_NAME_PATTERN]: 'letters, digits, ".", "_" and "-", starting with a letter or digit',
  [LISTEN_PATTERN]: 'host:port (an IPv6 host in brackets), or empty',
};
const url = { type: 'string', pattern: URL_PATTERN } as const;
export const urls = { type: 'array', items: url, default: [] as string[] } as const;
/** A chain's read RPC (docs/protocol.md#status); empty: that family is not followed past `forwarded`. */
export const chainRpc = (family: string, example: string) =>
  ({
    type: 'string',
    pattern: OPTIONAL_URL_PATTERN,
    default: '',
    description: `A read JSON-RPC URL of the ${family} chain (the operator's own node or a provider, e.g. ${example}): forwarded transactions are followed on it until they land or cannot (\`landed\`, \`landed_failed\`, \`not_landed\`, docs/protocol.md#status). It is only read, never sent transactions, and off the request path: slow or down, it makes tracking fall behind, never admission. Empty: statuses end at \`forwarded\` with \`landing: "not_tracked"\`. Never logged (a provider URL may carry a key).`,
  }) as const;
// TPS up to 1M and burst up to 2M keep milli-token fixed point inside an i32.
export const tps = { type: 'integer', minimum: 0, maximum: 1_000_000 } as const;
const lamports = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

export function section(properties: Record<string, object>, description?: string): object {
  const defaults: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(properties)) {
    if ('default' in v) defaults[k] = (v as { default: unknown }).default;
    else if ((v as { type?: string }).type === 'object') defaults[k] = {};
  }
  return { type: 'object', additionalProperties: false, properties, default: defaults, ...(description ? { description } : {}) };
}

export const plan = (name: string, evmTps: number) =>
  section(
    {
      evm_tps: {
        ...tps,
        default: evmTps,
        description: `EVM transactions per second of a new ${name} account; its burst defaults to the same number.`,
      },
      solana_tps: {
        ...tps,
        default: 2, // a new account gets Solana at 2 TPS
        description: `Solana requests per second of a new ${name} account (a bundle or a UDP datagram counts as one); its burst defaults to the same number.`,
      },
      min_tip_lamports: { ...lamports, default: 1000, description: `Minimum total tip of a bundle, in lamports, for a new ${name} account.` },
    },
    `What a new account on plan \`${name}\` gets when its registration does not say otherwise.`,
  );
