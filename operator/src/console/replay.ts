// Replay material for the "replay" intruder: per node, the latest genuine assignment for each
// distinct set of ids it was given. A replay proves something only if its ids differ from what
// the node runs now, and such an assignment may be minutes old (before the last rollout or
// failover), so distinct sets are kept rather than the last few frames. Browser-safe.

export const LIMITS = {
  setsPerNode: 16, // distinct id sets kept per node (oldest dropped): plenty for any lab
  nodes: 64, // nodes remembered (an air carries at most 20 of one cluster)
} as const;

const setKey = (ids: readonly number[]): string => [...ids].sort((a, b) => a - b).join(' ');

export class ReplayBook {
  private readonly byNode = new Map<string, Map<string, { datagram: Uint8Array; ids: number[] }>>();

  /** A genuine (signed, fresh) assignment heard for `node`. */
  add(node: string, ids: readonly number[], datagram: Uint8Array): void {
    let sets = this.byNode.get(node);
    if (!sets) {
      if (this.byNode.size >= LIMITS.nodes) return;
      sets = new Map();
      this.byNode.set(node, sets);
    }
    const k = setKey(ids);
    sets.delete(k); // re-inserted last: the map's order is oldest → newest
    sets.set(k, { datagram: datagram.slice(), ids: [...ids] });
    if (sets.size > LIMITS.setsPerNode) {
      const oldest = sets.keys().next().value;
      if (oldest !== undefined) sets.delete(oldest);
    }
  }

  /** The newest assignment of `node` whose ids differ from `current`, or null. */
  pick(node: string, current: readonly number[]): { datagram: Uint8Array; ids: number[] } | null {
    const sets = this.byNode.get(node);
    if (!sets) return null;
    const now = setKey(current);
    const other = [...sets].filter(([k]) => k !== now);
    return other.length ? other[other.length - 1][1] : null;
  }
}
