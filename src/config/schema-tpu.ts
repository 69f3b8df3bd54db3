/**
 * The `[solana.tpu]` keys (docs/configuration.md): sending Solana transactions
 * straight to the leaders' TPU over QUIC (docs/protocol.md#straight-to-the-leaders-tpu).
 */
import { optionalWs, section } from './schema-fields.js';

export const tpuSection = section(
  {
    enabled: {
      type: 'boolean',
      default: false,
      description:
        'Also send each single Solana transaction straight to the current and next leaders\' TPU ports over QUIC (docs/protocol.md#forwarding). Needs `solana.chain_rpc` (the leader schedule and the validators\' addresses are read from it) and the QUIC library (`@matrixai/quic`, an optional dependency): without either, start-up says so in one line and the route stays off.',
    },
    identity_keypair_file: {
      type: 'string',
      default: '',
      description:
        'A Solana CLI keypair file (a JSON array of 64 bytes): the identity the QUIC client certificate carries, so a staked validator identity gets its stake-weighted share of the leader\'s connections. Empty: a new identity each start, unstaked.',
    },
    leaders_ahead: {
      type: 'integer',
      minimum: 1,
      maximum: 8,
      default: 2,
      description: 'How many distinct leaders get each transaction: the leader of the slot it is sent in and the next ones (a leader holds 4 slots, about 1.6 s).',
    },
    mode: {
      enum: ['also', 'only'],
      default: 'also',
      description:
        '`also`: TPU and the lane\'s RPC upstreams (`solana.rpc_upstreams`) both get each transaction. `only`: TPU alone (a transaction that cannot go by TPU, over 1232 bytes, is then dropped).',
    },
    slot_ws: {
      ...optionalWs,
      description: 'The RPC\'s WebSocket URL, for the current slot by `slotSubscribe` (a slot as it starts). Empty: `getSlot` on `solana.chain_rpc` every 200 ms.',
    },
  },
  'Sending Solana transactions straight to the leaders over QUIC (docs/protocol.md#forwarding).',
);
