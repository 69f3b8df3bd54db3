/**
 * Structured logging (pino). Credentials never reach a log line: call sites
 * never pass them, the redact paths catch the field names a careless caller
 * might use, and `scrub` removes anything shaped like a UUID from free text
 * (upstream error bodies, exception messages) before it is logged.
 *
 * `txrelay serve` writes JSON lines, or on a terminal one readable line per
 * event (pino-pretty, loaded only then), and holds what start-up logs until
 * it has succeeded: a failed start is one plain line on stderr, not a page of
 * JSON (docs/operations.md#logs).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

export type { Logger };

const UUID_RE = /[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}/gi;

export function scrub(text: string): string {
  return text.replace(UUID_RE, '<redacted>');
}

const REDACT = {
  paths: ['uuid', 'api_key', 'apiKey', 'auth', 'authorization', '*.uuid', '*.api_key', '*.authorization', 'req.headers.authorization', 'req.headers["api-key"]'],
  censor: '<redacted>',
};

/** Every line carries `svc` and, given one, the node's name (`node.name`): several regions' logs can be read together. */
export function createLogger(level: string, destination?: NodeJS.WritableStream | LineSink, node?: string): Logger {
  return pino({ level, base: node === undefined ? { svc: 'txrelay' } : { svc: 'txrelay', node }, redact: REDACT }, destination as any);
}

/** A logger that drops everything (embedded use, tests). */
export const silentLogger: Logger = pino({ level: 'silent' });

export type LogFormat = 'auto' | 'json' | 'pretty';

/** What pino writes to: one serialized line per call. */
export interface LineSink {
  write(line: string): unknown;
}

export interface ProcessLogOptions {
  level: string;
  node?: string;
  /** `log.format`; `auto` is `pretty` when `out` is a terminal. */
  format: LogFormat;
  /** Keep lines until release() or discard(). */
  hold: boolean;
  /** Standard output unless given (tests). */
  out?: LineSink & { isTTY?: boolean };
}

export interface ProcessLog {
  log: Logger;
  /** `json` or `pretty`, as chosen. */
  format: 'json' | 'pretty';
  /** Writes the held lines, then every later line as it comes. */
  release(): void;
  /** Drops the held lines (a failed start says why in one line of its own); later lines are written. */
  discard(): void;
}

const require = createRequire(import.meta.url);

/** The logger of a `txrelay` process. */
export function createProcessLogger(o: ProcessLogOptions): ProcessLog {
  const tty = o.out ? o.out.isTTY === true : process.stdout.isTTY === true;
  const format = o.format === 'auto' ? (tty ? 'pretty' : 'json') : o.format;
  // The same destination pino picks when given none: JSON output is what it always was.
  const dest: LineSink = o.out ?? pino.destination(1);
  let write: (line: string) => unknown = (line) => dest.write(line);
  if (format === 'pretty') {
    // Required here, not imported at the top: JSON output never loads it.
    const { prettyFactory } = require('pino-pretty') as typeof import('pino-pretty');
    const pretty = prettyFactory({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,svc,node', singleLine: true });
    write = (line) => dest.write(pretty(line));
  }
  let held: string[] | null = o.hold ? [] : null;
  const sink: LineSink & { flush?(cb?: (e?: Error) => void): void } = {
    write: (line) => (held !== null ? held.push(line) : write(line)),
  };
  const flush = (dest as { flush?: (cb?: (e?: Error) => void) => void }).flush;
  if (flush) sink.flush = (cb) => flush.call(dest, cb);
  return {
    log: createLogger(o.level, sink, o.node),
    format,
    release() {
      const lines = held ?? [];
      held = null;
      for (const l of lines) write(l);
    },
    discard() {
      held = null;
    },
  };
}
