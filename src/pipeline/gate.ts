/**
 * The gate: the pipeline's first stage, run before a byte of the body is kept,
 * so refused traffic never costs a signature check
 * (docs/protocol.md#capacity, #rate-limits, #authentication).
 *
 *   1. node draining?                      DRAINING      503 retry-safe
 *   2. queue controller: standing queue?   CAPACITY      503 (shed: no IP or account credit spent)
 *   3. per-IP token bucket                 RATE_IP       429 (before authentication)
 *   4. the account                         AUTH_*        401
 *   5. its lane able to forward?           UNAVAILABLE   503 (before any quota is spent)
 *   6. its token bucket                    RATE_ACCOUNT  429 (quota is spent from here on)
 *
 * Steps 2-3 are the arrival's: a JSON-RPC body passes them once, and step 4
 * for its header's credential before the body is read, then each call 4-6. An EVM batch passes 4-5 here; its record budget and items'
 * credits come later, in order (evm-batch.ts). Refusals are returned, never
 * thrown: a throw in a uWS handler makes V8 walk the stack (~2% of a shed's CPU).
 */
import { E, RelayError, unknownKey } from '../errors.js';
import type { Clock } from '../clock.js';
import type { IpLimiter } from '../tables/ip-limiter.js';
import type { Forwarder } from '../forward/forwarder.js';
import type { LaneName } from '../forward/lane.js';
import type { AccountRecord } from '../store/accounts.js';
import type { Verifier } from '../exec/verifier.js';
import { Shed } from '../exec/controller.js';
import { refusalLimits, type Accounts, type Family } from './accounts.js';
import { Kind } from './submission.js';
import type { Admission } from './admission.js';

export interface GateDeps {
  clock: Clock;
  accounts: Accounts;
  /** Per-IP buckets of the HTTP doors. */
  ipLimiter: IpLimiter;
  ipRps: number;
  /** Per-IP buckets of UDP: a spoofed source address must not drain an HTTP client's bucket. */
  udpIpLimiter: IpLimiter;
  udpIpRps: number;
  verifier: Verifier;
  forwarder: Forwarder;
  enabled: { evm: boolean; solana: boolean };
  /** `limits.shed_hold_ms` (0: answer at once). */
  shedHoldMs: number;
  /** Door sheds held and not yet answered. */
  heldRefusals: () => number;
}

/** At the door or after waiting past the bound. */
export const OVER_BOUND = 'verification queue over its bound';

/** Solana by kind, EVM by the account's plan. */
function laneFor(family: Family, rec: AccountRecord, bundle: boolean): LaneName {
  if (family === 'solana') return bundle ? 'solana-bundle' : 'solana-single';
  return rec.plan === 'paid' ? 'evm-paid' : 'evm-free';
}

export class Gate {
  draining = false;

  constructor(private readonly d: GateDeps) {}

  /**
   * Steps 1-2 for an arrival, asked by its door before anything of it is
   * read: its refusal, or null. The door then reads the head and the peer:
   * a shed answer costs no more than a bare request.
   */
  arrive(kind: Kind, family: Family): RelayError | null {
    const off = this.off(kind, family);
    return off !== null ? off : this.shed();
  }

  /** Step 1, and whether the node serves the family. A JSON-RPC body's calls are each refused DRAINING, with their own ids. */
  private off(kind: Kind, family: Family): RelayError | null {
    if (kind === Kind.Calls) return null;
    if (this.draining) return new RelayError(E.DRAINING);
    // A status read is the account's whichever family's header carried the credential (docs/protocol.md#status).
    if (!this.d.enabled[family] && kind !== Kind.Query) return new RelayError(E.NOT_FOUND);
    return null;
  }

  /**
   * Steps 3-6 for `a` (a member of a JSON-RPC body or EVM batch: 1 and 4-6):
   * its refusal, or null with `a.account` and `a.lane` set (a JSON-RPC body:
   * steps 3-4 for its header's credential).
   */
  pass(a: Admission): RelayError | null {
    const sub = a.sub;
    if (a.parent === null) {
      const limited = this.limitIp(sub.overUdp, sub.ip, 1);
      if (limited !== null) return limited;
    } else {
      const off = this.off(sub.kind, sub.family);
      if (off !== null) return off;
    }
    if (sub.kind === Kind.Calls) return this.knownCredential(a);
    if (a.account === null) {
      const refused = this.authenticate(a);
      if (refused !== null) return refused;
    }
    // A status read's body to come is refused work's to pay for while it is unread (docs/protocol.md#rate-limits).
    if (sub.kind === Kind.Query && sub.maxBody > 0) return this.refusalsLeft(a.account!);
    // A status read has its own limit (the service's), and an EVM batch takes its credits item by item.
    if (sub.kind === Kind.EvmBatch || sub.kind === Kind.Query) return null;
    return this.take(a.account!, sub.family, 1);
  }

  /** Step 3 for the rest of an arrival's credits (the calls of a JSON-RPC array past its first). */
  more(a: Admission, credits: number): RelayError | null {
    return this.limitIp(a.sub.overUdp, a.sub.ip, credits);
  }

  /** Step 6 for `n` credits of the account's `family` bucket (an EVM batch's items take theirs one by one). */
  take(rec: AccountRecord, family: Family, n: number): RelayError | null {
    const wait = this.d.accounts.take(rec, family, n);
    return wait > 0 ? new RelayError(E.RATE_ACCOUNT, String(rec[family].tps), wait) : null;
  }

  /** An EVM batch's record budget, taken before its receive record is written: a refused flood writes nothing. */
  takeRecord(rec: AccountRecord): RelayError | null {
    const wait = this.d.accounts.takeRecordCredit(rec);
    return wait > 0 ? new RelayError(E.RATE_ACCOUNT, String(rec.evm.tps), wait) : null;
  }

  private limitIp(udp: boolean, ip: string, credits: number): RelayError | null {
    const wait = (udp ? this.d.udpIpLimiter : this.d.ipLimiter).tryTake(ip, credits, this.d.clock());
    return wait > 0 ? new RelayError(E.RATE_IP, String(udp ? this.d.udpIpRps : this.d.ipRps), wait) : null;
  }

  /** Steps 4-5: the live account behind the credential, enabled for the family, with a lane that can forward. */
  private authenticate(a: Admission): RelayError | null {
    const sub = a.sub;
    let rec: AccountRecord | undefined;
    if (sub.keyBytes !== null) rec = this.d.accounts.byBytes(sub.keyBytes, sub.keyOffset);
    else if (sub.credential === null || sub.credential === '') return new RelayError(E.AUTH_MISSING);
    else rec = this.d.accounts.byText(sub.credential);
    if (rec === undefined) return unknownKey(sub.credential);
    if (sub.kind === Kind.Query) {
      // Reads are the account's, whichever family it has enabled.
      if (!rec.evm.enabled && !rec.solana.enabled) return new RelayError(E.AUTH_INVALID);
      a.account = rec;
      return null;
    }
    if (!rec[sub.family].enabled) return new RelayError(E.AUTH_INVALID);
    const lane = laneFor(sub.family, rec, sub.kind === Kind.Bundle);
    if (!this.d.forwarder.lane(lane).available()) return new RelayError(E.UNAVAILABLE, 'every upstream of this lane is failing');
    a.account = rec;
    a.lane = lane;
    return null;
  }

  /**
   * Step 4 for a JSON-RPC body, before it is read: the header's credential is
   * some live account's (each call is then authenticated for its family).
   * Without it a body is neither buffered nor parsed.
   */
  private knownCredential(a: Admission): RelayError | null {
    const sub = a.sub;
    if (sub.credential === null || sub.credential === '') return new RelayError(E.AUTH_MISSING);
    const rec = this.d.accounts.byText(sub.credential);
    if (rec === undefined) return unknownKey(sub.credential);
    if (!rec.evm.enabled && !rec.solana.enabled) return new RelayError(E.AUTH_INVALID);
    // Whose refusals the body's are (Pipeline.chargeRefusal); each call is still authenticated for its family.
    a.account = rec;
    return this.refusalsLeft(rec);
  }

  /**
   * An account whose refusals bucket is empty gets 429 before its body is
   * read or parsed: refused work is limited like accepted work
   * (docs/protocol.md#rate-limits).
   */
  private refusalsLeft(rec: AccountRecord): RelayError | null {
    const wait = this.d.accounts.refusalWait(rec);
    return wait > 0 ? new RelayError(E.RATE_ACCOUNT, String(refusalLimits(rec).tps), wait) : null;
  }

  /** Charges a refusal for the shape of a body or call to the account whose credential carried it. */
  chargeRefusal(rec: AccountRecord): void {
    this.d.accounts.takeRefusal(rec);
  }

  /** Step 2. */
  private shed(): RelayError | null {
    const v = this.d.verifier;
    const s = v.admit(this.d.clock());
    if (s === Shed.No) return null;
    const err = new RelayError(E.CAPACITY, s === Shed.Standing ? 'standing verification queue' : OVER_BOUND);
    // Held about as long as the queue and the refusals held before it take to drain
    // (docs/protocol.md#capacity): a client that resends at once comes back when there is room.
    const hold = this.d.shedHoldMs;
    if (hold > 0) err.holdMs = Math.min(hold, Math.max(v.queueMs() + v.drainMs(this.d.heldRefusals()), v.controller.targetMs));
    return err;
  }
}
