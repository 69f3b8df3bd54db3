/**
 * Structured logging (pino). Credentials never reach a log line: call sites
 * never pass them, the redact paths catch the field names a careless caller
 * might use, and `scrub` removes anything shaped like a UUID from free text
 * (upstream error bodies, exception messages) before it is logged.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

const UUID_RE = /[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}/gi;

export function scrub(text: string): string {
  return text.replace(UUID_RE, '<redacted>');
}

/** Every line carries `svc` and, given one, the node's name (`node.name`): several regions' logs can be read together. */
export function createLogger(level: string, destination?: NodeJS.WritableStream, node?: string): Logger {
  return pino(
    {
      level,
      base: node === undefined ? { svc: 'txrelay' } : { svc: 'txrelay', node },
      redact: {
        paths: ['uuid', 'api_key', 'apiKey', 'auth', 'authorization', '*.uuid', '*.api_key', '*.authorization', 'req.headers.authorization', 'req.headers["api-key"]'],
        censor: '<redacted>',
      },
    },
    destination as any,
  );
}

/** A logger that drops everything (embedded use, tests). */
export const silentLogger: Logger = pino({ level: 'silent' });
