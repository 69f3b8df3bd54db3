/**
 * Connection caps for the HTTP listener (docs/reliability.md): a total cap
 * below the open-files limit keeps a descriptor free for accept(), a per-IP
 * cap keeps one client from taking the total. Over a cap, a connection is
 * closed as soon as it is accepted.
 *
 * node:http names the address of every close, so its per-IP counts are exact.
 * uWS cannot (the descriptor is closed first), so its counts only grow between
 * censuses: when an address reaches its cap, or the table outgrows the total,
 * they are recounted from /proc/net/tcp{,6}, at most once a second and off the
 * main thread. Counts are never below the truth: a client is never let past
 * its cap, at worst refused for a second after its connections closed.
 */
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { endianness } from 'node:os';
import { addressBytes } from './node-exchange.js';
import type { Acceptor, TemplatedApp } from './uws.js';
import type { Logger } from '../obs/log.js';

/** Descriptors kept back for everything else: upstream pools, admin, UDP, the store, workers, PostgreSQL, stdio. */
export const FD_RESERVE = 1024;
/** When the open-files limit cannot be read (not Linux). */
const UNKNOWN_LIMIT_CAP = 16_384;
/** Warn when fewer clients than this, each at the per-IP cap, fill the total. */
const MIN_FULL_CLIENTS = 4;
/** The kernel prints every TCP socket of the namespace (~4 µs each). */
const CENSUS_INTERVAL_MS = 1000;
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/** The kernel's live connections per client address to `port` (and `local`, unless a wildcard); null when unreadable. */
type Census = (port: number, local: string | null) => Promise<Map<string, number> | null>;

interface CapsOptions {
  maxConnections: number;
  /** 0: no per-IP cap. */
  maxPerIp: number;
  now?: () => number;
  /** Present when closes cannot name their address (uWS). */
  census?: Census;
}

export class ConnectionCaps {
  live = 0;
  refusedTotal = 0;
  refusedPerIp = 0;
  /** Idle connections closed to make room at the total cap (node:http). */
  evicted = 0;
  censuses = 0;
  onRefused: (() => void) | null = null;
  private perIp = new Map<string, number>();
  /** Closes without an address since the last census: the per-IP counts are upper bounds. */
  private unattributed = 0;
  private lastCensus = -Infinity;
  /** While a census is read: connections admitted and closes without an address since it started. */
  private pending: { opened: Map<string, number>; unattributed: number } | null = null;
  private port = 0;
  private local: string | null = null;
  private readonly now: () => number;

  constructor(private readonly o: CapsOptions) {
    this.now = o.now ?? Date.now;
  }

  listening(host: string, port: number): void {
    this.port = port;
    // A wildcard listener takes every local address; a name cannot be compared with the kernel's table.
    this.local = isIP(host) && host !== '0.0.0.0' && host !== '::' ? addressKey(addressBytes(host)) : null;
  }

  /** True if a connection from `key` may stay (it is counted), false if it must be closed. */
  open(key: string): boolean {
    if (this.live >= this.o.maxConnections) {
      this.refusedTotal++;
      return false;
    }
    const max = this.o.maxPerIp;
    if (max > 0) {
      const n = this.perIp.get(key) ?? 0;
      if (n >= max) {
        // On uWS the count may include connections already closed: have the kernel recount.
        if (this.o.census) this.startCensus();
        this.refusedPerIp++;
        return false;
      }
      this.perIp.set(key, n + 1);
      if (this.pending) this.pending.opened.set(key, (this.pending.opened.get(key) ?? 0) + 1);
      // Unattributed closes leave stale addresses behind: recount before the table outgrows the live total.
      if (this.unattributed > 0 && this.perIp.size > this.o.maxConnections) this.startCensus();
    }
    this.live++;
    return true;
  }

  /** The total cap is reached, and `key` is under its own: a connection evicted would make room for it. */
  fullFor(key: string): boolean {
    return this.live >= this.o.maxConnections && (this.o.maxPerIp === 0 || (this.perIp.get(key) ?? 0) < this.o.maxPerIp);
  }

  /** A counted connection closed; `key` null when the acceptor cannot tell its address. */
  close(key: string | null): void {
    if (this.live > 0) this.live--;
    if (this.o.maxPerIp === 0) return;
    if (key !== null) return this.set(key, (this.perIp.get(key) ?? 1) - 1);
    this.unattributed++;
    if (this.pending) this.pending.unattributed++;
  }

  /** Connections counted for an address (an upper bound on uWS between censuses). */
  count(key: string): number {
    return this.perIp.get(key) ?? 0;
  }

  /** For tests. */
  async settled(): Promise<void> {
    while (this.pending) await new Promise((r) => setImmediate(r));
  }

  private set(key: string, n: number): void {
    if (n > 0) this.perIp.set(key, n);
    else this.perIp.delete(key);
  }

  /** Connections admitted during the census are added on top: maybe counted twice, never missed. */
  private startCensus(): void {
    const t = this.now();
    if (this.pending || t - this.lastCensus < CENSUS_INTERVAL_MS) return;
    this.lastCensus = t;
    const pending = { opened: new Map<string, number>(), unattributed: 0 };
    this.pending = pending;
    const done = (counted: Map<string, number> | null) => {
      this.pending = null;
      if (counted === null) return;
      this.censuses++;
      for (const [k, n] of pending.opened) counted.set(k, (counted.get(k) ?? 0) + n);
      this.perIp = counted;
      this.unattributed = pending.unattributed;
    };
    this.o.census!(this.port, this.local).then(done, () => done(null));
  }
}

/** Dotted IPv4 for 4-byte and IPv4-mapped addresses (one key per client on dual-stack sockets), else 32 hex digits. */
export function addressKey(addr: ArrayBuffer): string {
  const b = new Uint8Array(addr);
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  if (b.length !== 16) return '';
  let mapped = b[10] === 0xff && b[11] === 0xff;
  for (let i = 0; mapped && i < 10; i++) mapped = b[i] === 0;
  if (mapped) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  return Buffer.from(b).toString('hex');
}

const capsOf = new WeakMap<TemplatedApp, ConnectionCaps>();

/**
 * A connection that became a WebSocket closed: uWS reports no -1 for it (its
 * filter sees only HTTP closes), so the WebSocket door gives its place back.
 */
export function upgradedClosed(app: TemplatedApp, key: string): void {
  capsOf.get(app)?.close(key);
}

/** False when the app has no filter. A connection refused in its +1 call gets its -1 inside `close()`: not counted. */
export function attachConnectionCaps(app: TemplatedApp, caps: ConnectionCaps): boolean {
  if (typeof app.filter !== 'function') return false;
  capsOf.set(app, caps);
  let refusing = false;
  app.filter((conn, count) => {
    if (count > 0) {
      const key = addressKey(conn.getRemoteAddress());
      // At the total cap, the acceptor that can (node:http) makes room by closing its longest-idle connection.
      if (app.evictIdle !== undefined && caps.fullFor(key) && app.evictIdle()) caps.evicted++;
      if (caps.open(key)) return;
      refusing = true;
      try {
        conn.close();
      } finally {
        refusing = false;
      }
      caps.onRefused?.();
      return;
    }
    if (refusing) return;
    const addr = conn.getRemoteAddress();
    caps.close(addr.byteLength > 0 ? addressKey(addr) : null);
  });
  return true;
}

// --------------------------------------------------------------- the kernel's view

/** TCP states that still hold our descriptor: ESTABLISHED (01) and CLOSE_WAIT (08, the peer closed first). */
const LIVE_STATES = new Set(['01', '08']);

/** A Census from /proc/net/tcp and tcp6 (Linux), read in libuv's thread pool. */
export async function kernelCensus(port: number, local: string | null = null): Promise<Map<string, number> | null> {
  const out = new Map<string, number>();
  const portHex = ':' + port.toString(16).toUpperCase().padStart(4, '0');
  const texts = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((f) => readFile(f, 'latin1').catch(() => null)));
  if (texts.every((t) => t === null)) return null;
  for (const text of texts) if (text !== null) parseProcNetTcp(text, portHex, local, out);
  return out;
}

function kernelCensusReadable(): boolean {
  try {
    readFileSync('/proc/net/tcp', 'latin1');
    return true;
  } catch {
    return false;
  }
}

/**
 * Rows are fixed-width after the slot number, addresses 32-bit words in host byte order:
 *   "   0: 0100007F:1F90 0100007F:A2B4 01 ..." (tcp6: 32 hex digits per address)
 */
export function parseProcNetTcp(text: string, portHex: string, local: string | null, out: Map<string, number>): void {
  let pos = text.indexOf('\n') + 1; // the header line
  while (pos > 0 && pos < text.length) {
    const eol = text.indexOf('\n', pos);
    const end = eol < 0 ? text.length : eol;
    const at = text.indexOf(':', pos) + 2;
    const next = eol < 0 ? text.length : eol + 1;
    if (at < 2 || at >= end) {
      pos = next;
      continue;
    }
    const width = text.charCodeAt(at + 8) === 0x3a ? 13 : 37; // ':' after 8 hex digits: IPv4
    if (text.startsWith(portHex, at + width - 5) && LIVE_STATES.has(text.slice(at + 2 * width + 2, at + 2 * width + 4))) {
      const ok = local === null || addressKey(procAddress(text.slice(at, at + width - 5))) === local;
      if (ok) {
        const key = addressKey(procAddress(text.slice(at + width + 1, at + 2 * width - 4)));
        out.set(key, (out.get(key) ?? 0) + 1);
      }
    }
    pos = next;
  }
}

const LITTLE_ENDIAN = endianness() === 'LE';

function procAddress(hex: string): ArrayBuffer {
  const b = new Uint8Array(hex.length / 2);
  for (let w = 0; w < b.length; w += 4) {
    for (let i = 0; i < 4; i++) {
      const byte = parseInt(hex.slice(2 * (w + i), 2 * (w + i) + 2), 16);
      b[LITTLE_ENDIAN ? w + 3 - i : w + i] = byte;
    }
  }
  return b.buffer;
}

// --------------------------------------------------------------- configuration

export function openFilesLimit(text?: string): { soft: number; hard: number } | null {
  try {
    const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text ?? readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return null;
    const n = (s: string) => (s === 'unlimited' ? Infinity : Number(s));
    return { soft: n(m[1]!), hard: n(m[2]!) };
  } catch {
    return null;
  }
}

interface CapLimits {
  maxConnections: number;
  maxPerIp: number;
  warnings: string[];
}

/** Node raises its soft open-files limit to the hard one at start-up, so `nofile` is the soft one. */
export function capLimits(http: { max_connections: number; max_connections_per_ip: number }, nofile: number | null): CapLimits {
  const warnings: string[] = [];
  const raise = 'raise it with `ulimit -n` (hard limit) or systemd `LimitNOFILE=`, see docs/operations.md#open-files-limit';
  let room = UNKNOWN_LIMIT_CAP;
  if (nofile === null) warnings.push(`cannot read the open-files limit; the total connection cap defaults to ${UNKNOWN_LIMIT_CAP}`);
  else room = Number.isFinite(nofile) ? Math.max(1, nofile > 2 * FD_RESERVE ? nofile - FD_RESERVE : Math.floor(nofile / 2)) : 10_000_000;
  let max = http.max_connections > 0 ? http.max_connections : room;
  if (max > room) {
    warnings.push(`http.max_connections = ${http.max_connections} is above what the open-files limit (${nofile}) leaves for clients; capped at ${room}: ${raise}`);
    max = room;
  }
  const perIp = http.max_connections_per_ip;
  if (http.max_connections === 0 && perIp > 0 && max < MIN_FULL_CLIENTS * perIp) {
    warnings.push(
      `the open-files limit (${nofile}) allows ${max} HTTP connections: ${fillers(max, perIp)} at the per-IP cap (${perIp}) fill it; ${raise}`,
    );
  }
  return { maxConnections: max, maxPerIp: perIp, warnings };
}

function fillers(max: number, perIp: number): string {
  const n = Math.ceil(max / perIp);
  return n === 1 ? 'a single client' : `${n} clients`;
}

interface HttpCapsConfig {
  max_connections: number;
  max_connections_per_ip: number;
}

/** Null when the acceptor cannot enforce caps. Each of `share` threads enforces its share: connections are handed out in turn. */
export function connectionCaps(http: HttpCapsConfig, acceptor: Acceptor, log: Logger, share = 1): ConnectionCaps | null {
  const nofile = openFilesLimit();
  const node = capLimits(http, nofile?.soft ?? null);
  const limits = share === 1 ? node : { ...node, maxConnections: Math.ceil(node.maxConnections / share), maxPerIp: Math.ceil(node.maxPerIp / share) };
  for (const w of limits.warnings) log.warn({ component: 'http' }, w);
  if (!acceptor.filter) {
    log.warn(
      { component: 'http' },
      `connection caps unavailable: ${acceptor.name} has no connection filter; past the open-files limit (${nofile?.soft}) new connections stall until idle ones close (~10 s)`,
    );
    return null;
  }
  let census: Census | undefined;
  let perIp = limits.maxPerIp;
  if (acceptor.kind === 'uws' && perIp > 0) {
    if (!kernelCensusReadable()) {
      log.warn({ component: 'http' }, 'per-IP connection cap unavailable: uWS needs /proc/net/tcp to count connections per address');
      perIp = 0;
    } else census = share === 1 ? kernelCensus : async (port, local) => shareOf(await kernelCensus(port, local), share);
  }
  log.info(
    { component: 'http', max_connections: limits.maxConnections, max_connections_per_ip: perIp, open_files: nofile?.soft ?? null },
    `connection caps: ${limits.maxConnections} in total, ${perIp || 'no cap'} per IP`,
  );
  const caps = new ConnectionCaps({ maxConnections: limits.maxConnections, maxPerIp: perIp, ...(census ? { census } : {}) });
  caps.onRefused = refusalLogger(caps, log);
  return caps;
}

/** Rounded up: never below the truth for a thread holding its share. */
function shareOf(counts: Map<string, number> | null, share: number): Map<string, number> | null {
  if (counts === null) return null;
  for (const [k, n] of counts) counts.set(k, Math.ceil(n / share));
  return counts;
}

/** Logs the first refusal at once, then what followed at most once a minute. */
export function refusalLogger(caps: ConnectionCaps, log: Logger, intervalMs = REFUSAL_LOG_INTERVAL_MS): () => void {
  let total = 0;
  let perIp = 0;
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    const overTotal = caps.refusedTotal - total;
    const overPerIp = caps.refusedPerIp - perIp;
    total = caps.refusedTotal;
    perIp = caps.refusedPerIp;
    if (overTotal + overPerIp === 0) return false;
    log.warn({ component: 'http', over_total: overTotal, over_per_ip: overPerIp, live: caps.live }, 'closed connections over the connection caps');
    return true;
  };
  return () => {
    if (timer) return;
    flush();
    const tick = () => {
      timer = flush() ? setTimeout(tick, intervalMs).unref() : null;
    };
    timer = setTimeout(tick, intervalMs).unref();
  };
}
