/**
 * A bundle lands as one: it has landed when every one of its signatures
 * landed in the same slot (docs/protocol.md#status). Joins its members'
 * landing events into the bundle's own, carrying each transaction's status.
 */
import type { LandingEvent } from './event.js';

export interface BundleLanding {
  readonly id: string;
  readonly event: LandingEvent;
  /** Each member's last event, in the bundle's order. */
  readonly transactions: readonly LandingEvent[];
}

interface Pending {
  readonly id: string;
  readonly members: readonly string[];
  readonly last: (LandingEvent | undefined)[];
  /** The last state reported for the bundle, so only changes are told. */
  told: string;
}

export class BundleJoin {
  private readonly byMember = new Map<string, Pending>();

  /** A bundle id and its signatures, in order (the first is usually the id). */
  add(id: string, members: readonly string[]): void {
    const p: Pending = { id, members, last: members.map(() => undefined), told: '' };
    for (const m of members) this.byMember.set(m, p);
  }

  /** Feeds a member's event; returns the bundle's when its state or confirmation changed. */
  offer(e: LandingEvent): BundleLanding | undefined {
    const p = this.byMember.get(e.id);
    if (!p) return undefined;
    p.last[p.members.indexOf(e.id)] = e;
    const joined = this.join(p);
    if (!joined) return undefined;
    if (joined.event.final) for (const m of p.members) this.byMember.delete(m);
    const key = `${joined.event.state}/${joined.event.chain.confirmation ?? ''}/${joined.event.final}`;
    if (key === p.told) return undefined;
    p.told = key;
    return joined;
  }

  get size(): number {
    return this.byMember.size;
  }

  private join(p: Pending): BundleLanding | undefined {
    const all = p.last;
    const ended = all.find((e) => e?.state === 'not_landed');
    const at = Math.max(...all.map((e) => e?.at ?? 0));
    if (ended) {
      // One member can no longer land: the bundle cannot land whole.
      return { id: p.id, event: { id: p.id, state: 'not_landed', chain: { reason: ended.chain.reason }, final: true, at }, transactions: all.filter((e): e is LandingEvent => !!e) };
    }
    if (all.some((e) => !e)) return undefined;
    const events = all as LandingEvent[];
    const slot = events[0]!.chain.slot;
    if (events.some((e) => e.chain.slot !== slot)) {
      // Landed, but not as one: not an atomic bundle landing.
      return { id: p.id, event: { id: p.id, state: 'landed_failed', chain: { slot, err: 'members landed in different slots' }, final: events.every((e) => e.final), at }, transactions: events };
    }
    const failed = events.find((e) => e.state === 'landed_failed');
    const lowest = events.reduce((lo, e) => (rank(e.chain.confirmation) < rank(lo.chain.confirmation) ? e : lo));
    return {
      id: p.id,
      event: {
        id: p.id,
        state: failed ? 'landed_failed' : 'landed',
        chain: { slot, confirmation: lowest.chain.confirmation, err: failed ? failed.chain.err : null },
        final: events.every((e) => e.final),
        at,
      },
      transactions: events,
    };
  }
}

function rank(c: string | undefined): number {
  return c === 'finalized' ? 3 : c === 'confirmed' ? 2 : c === 'processed' ? 1 : 0;
}
