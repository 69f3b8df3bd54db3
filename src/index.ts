/**
 * txrelay as a library: start a relay in-process (the CLI's `serve` does the
 * same), load configuration, and the error catalogue. The client library is
 * the separate export `txrelay/client`, also packed alone as `txrelay-client`
 * (packages/client, docs/client.md).
 */
export const VERSION = '0.1.0';
export { Relay, type RelayOptions, type RelayPorts } from './relay.js';
export { loadConfig, describeKeys, type LoadOptions } from './config/load.js';
export type { Config } from './config/schema.js';
export { E as Errors, RelayError, DecodeError, ConfigError, type ErrorSpec } from './errors.js';
