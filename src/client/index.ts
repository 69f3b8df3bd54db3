/** txrelay/client: typed clients for both families. */
export { EvmClient, localTxHash, type EvmClientOptions, type SendOptions, type EvmBatchOutcome } from './evm.js';
export { SolanaClient, UdpSender, bundleBody, udpPacket, uuidBytes, firstSignature, MAX_TX_BYTES, MAX_V1_TX_BYTES, type SolanaClientOptions, type UdpSenderOptions } from './solana.js';
export type { TxOutcome, BatchOutcome, RetryBudget, RetryInstruction, SolanaOutcome, BundleOutcome } from './outcome.js';
export { isRetrySafe } from './outcome.js';
export { fetchStatuses, fetchStatus, waitForward, waitForwardAll, waitLanded, StatusError, FINAL_STATES, MAX_STATUS_IDS } from './status.js';
export type { StatusObject, StatusState, StatusEvent, Forward, ForwardWait, WaitForwardOptions, WaitLandedOptions, LandedWait, OnChain, Commitment, WithRequestId, StatusTransport, StatusReadOptions } from './status.js';
export { RelaySocket } from './ws.js';
export { RelaySocketError, type RelaySocketErrorKind } from './ws-errors.js';
export { socketUrl, type WebSocketLike, type WebSocketConstructor } from './ws-transport.js';
export type { RelaySocketOptions, RelaySocketEvents, RelaySocketState, ReconnectOptions } from './ws-options.js';
